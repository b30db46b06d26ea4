"""The openai backend's option scoring: exact, from ``prompt_logprobs`` of the completions endpoint over the
chat-template tokens (as the hf backend scores), or from the first token's ``top_logprobs`` with a coverage floor."""

from __future__ import annotations

import asyncio
import math
import time

from sumjudge.llm.errors import OptionScoringError
from sumjudge.llm.openai_chat import OpenAIChat
from sumjudge.llm.types import OptionRequest, OptionScores, normalise_logprobs

OPTION_SCORING = ("auto", "prompt_logprobs", "top_logprobs")


class OpenAIScoring(OpenAIChat):
    """Option scoring, exact where the server returns ``prompt_logprobs``."""

    top_logprobs: int
    min_coverage: float
    option_scoring: str  # as configured: prompt_logprobs or top_logprobs

    def option_sequences(self, r: OptionRequest) -> tuple[list[list[int]], int]:
        """Token ids of prompt + prefix + option for each option, and where the option tokens start; the
        boundary rule is the hf backend's (an option merged into the prefix by tokenization is tokenized
        on its own after the prefix)."""
        prompt = self.encode(r.messages)
        pre = self._tokens_of_text(r.prefix) if r.prefix else []
        seqs = []
        for opt in r.options:
            full = self._tokens_of_text(r.prefix + opt)
            if full[: len(pre)] != pre:
                full = pre + self._tokens_of_text(opt)
            seqs.append(prompt + full)
        return seqs, len(prompt) + len(pre)

    async def _score_exact(self, r: OptionRequest) -> OptionScores:
        """log p(option | prompt, prefix) summed over the option's tokens, from ``prompt_logprobs`` of the
        completions endpoint: one request per option set (one prompt per option; vLLM's prefix cache
        computes the shared prompt once)."""
        t0 = time.perf_counter()
        seqs, start = await asyncio.to_thread(self.option_sequences, r)
        for ids in seqs:
            self._check_fits(r.tag, len(ids), 1)
        resp = await self._call(self.client.completions.create, check=self._check_any, prompt=seqs, max_tokens=1,
                                temperature=0.0, extra_body={"prompt_logprobs": 0})
        raw: dict[str, float] = {}
        by_index = {getattr(c, "index", i): c for i, c in enumerate(resp.choices)}
        for k, (opt, ids) in enumerate(zip(r.options, seqs)):
            plp = getattr(by_index.get(k), "prompt_logprobs", None)
            if not isinstance(plp, list) or len(plp) != len(ids):
                raise OptionScoringError(f"{self.where} returned no prompt_logprobs for option {opt!r} of {r.tag!r}")
            total = 0.0
            for pos in range(start, len(ids)):
                entry = (plp[pos] or {}).get(str(ids[pos]))
                if not isinstance(entry, dict) or "logprob" not in entry:
                    raise OptionScoringError(f"{self.where} left out the logprob of token {ids[pos]} of option "
                                             f"{opt!r} of {r.tag!r}")
                total += float(entry["logprob"])
            raw[opt] = total
        return OptionScores(probs=normalise_logprobs(raw), logprobs=raw, method="prompt_logprobs", backend="openai",
                            model=self.model, latency_s=time.perf_counter() - t0,
                            coverage=min(1.0, sum(math.exp(v) for v in raw.values())))

    async def _score_top(self, r: OptionRequest) -> OptionScores:
        """First-token probabilities from ``top_logprobs`` (servers without ``prompt_logprobs``): an option's
        mass is the sum over returned tokens whose text (stripped) equals it. Options outside the top list get
        probability 0, so ``coverage`` (the options' mass) must reach ``min_coverage`` or the scoring fails."""
        t0 = time.perf_counter()
        messages = list(r.messages)
        extra = {}
        if r.prefix:  # continue a partial assistant turn (vLLM extension)
            messages = messages + [{"role": "assistant", "content": r.prefix}]
            extra = {"extra_body": {"continue_final_message": True, "add_generation_prompt": False}}
        resp = await self._call(self.client.chat.completions.create, check=self._check_any, messages=messages,
                                temperature=0.0, max_tokens=1, logprobs=True, top_logprobs=self.top_logprobs, **extra)
        content = resp.choices[0].logprobs.content if resp.choices[0].logprobs else None
        if not content:
            raise OptionScoringError(f"{self.where} returned no logprobs for {r.tag!r}")
        mass = {o: 0.0 for o in r.options}
        for t in content[0].top_logprobs:
            tok = t.token.strip()
            if tok in mass:
                mass[tok] += math.exp(t.logprob)
        cov = sum(mass.values())
        if cov < self.min_coverage or cov == 0:
            raise OptionScoringError(f"the options {r.options} hold {cov:.3g} of the probability among the top "
                                     f"{self.top_logprobs} tokens for {r.tag!r} (min_coverage {self.min_coverage}); "
                                     "renormalising that would not be a probability")
        raw = {o: (math.log(p) if p > 0 else None) for o, p in mass.items()}
        return OptionScores(probs={o: p / cov for o, p in mass.items()}, logprobs=raw, method="top_logprobs",
                            backend="openai", model=self.model, latency_s=time.perf_counter() - t0, coverage=cov)

    async def score(self, reqs: list[OptionRequest], on_results=None,
                    sessions: list[str | None] | None = None) -> list[OptionScores | Exception]:
        fn = self._score_exact if self.option_scoring == "prompt_logprobs" else self._score_top
        return await self._each(fn, reqs, on_results, sessions)
