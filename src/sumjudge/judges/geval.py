"""G-Eval (Liu et al. 2023), a single-agent baseline the papers share: the form-filling prompt of the
aspect and a probability-weighted score.

- ``mode=probs``: score = sum over the scale's points s of p(s) x s, p from the engine's option scoring
  (hf: from the logits; openai: exact on vLLM, first-token ``top_logprobs`` elsewhere), renormalised over
  the scale's points. The points must hold at least ``min_coverage`` (0.5) of the probability: below it the
  renormalised numbers are not a distribution the model gave, and the aspect is unreadable (``probs``) or
  scored by sampling (``auto``). The coverage is recorded per aspect.
- ``mode=samples``: G-Eval's estimate for APIs without log-probabilities, ``samples`` answers (20),
  averaged. ``protocol`` says which G-Eval: ``paper`` (the paper: temperature 1, the prompt as the user
  message, 16 tokens, unreadable answers left out of the mean and counted) or ``repository`` (the released
  ``gpt4_eval.py`` / ``meta_eval_summeval.py`` of github.com/nlpyang/geval: temperature 2, the prompt as the
  system message, 5 tokens, an unreadable answer scored 0 and kept in the mean). The protocol that ran is
  recorded per aspect.
- ``mode=auto`` (default): probs, and samples where the backend cannot give log-probabilities or the
  coverage is too low (recorded per aspect as ``source``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sumjudge.data.records import RatedExample
from sumjudge.judges.aspects import Aspect, score_aspects
from sumjudge.judges.base import fit_prompt, user
from sumjudge.judges.settings import Generation
from sumjudge.llm import ChatRequest, OptionScoringError
from sumjudge.llm.engine import Calls
from sumjudge.llm.parsing import ParseError, scale_score

# protocol -> (temperature, max_new_tokens, the prompt's message role, what an unreadable sample counts as)
PROTOCOLS: dict[str, tuple[float, int, str, float | None]] = {
    "paper": (1.0, 16, "user", None),
    "repository": (2.0, 5, "system", 0.0),
}


@dataclass
class GEvalConfig(Generation):  # fallback is not used: G-Eval's score is a probability-weighted mean already
    max_new_tokens: int | None = None  # samples mode; None = the protocol's
    temperature: float | None = None  # samples mode; None = the protocol's
    aspects: Any = None  # list or comma-separated names; None = every aspect of the dataset
    mode: str = "auto"  # probs | samples | auto
    protocol: str = "paper"  # samples mode: paper | repository (PROTOCOLS)
    samples: int = 20
    min_coverage: float = 0.5  # probs mode: the least probability the scale's points must hold

    def sampling(self) -> tuple[float, int, str, float | None]:
        temp, tokens, role, unreadable = PROTOCOLS[self.protocol]
        return (temp if self.temperature is None else self.temperature,
                tokens if self.max_new_tokens is None else self.max_new_tokens, role, unreadable)


async def geval_aspect(example: RatedExample, a: Aspect, llm: Calls, config: GEvalConfig) -> tuple[float | None, dict]:
    tag = f"{example.id}/{a.name}/g-eval"
    temperature, max_new_tokens, role, unreadable = config.sampling()
    prompt, fit = await fit_prompt(llm, a.template, a.fields(example), max_new_tokens=max_new_tokens,
                             policy=config.truncate, tag=tag, shrink=a.shrink)
    info: dict[str, Any] = dict(fit)
    if config.mode in ("probs", "auto"):
        try:
            sc = await llm.score_options(user(prompt), a.options, tag=tag)
        except OptionScoringError as e:
            if config.mode == "probs":
                raise
            info["probs_unavailable"] = str(e)
        else:
            info.update(probs=sc.probs, coverage=sc.coverage, method=sc.method)
            if sc.coverage >= config.min_coverage:
                return sc.expectation(), {**info, "source": "probs"}
            info["low_coverage"] = True
            if config.mode == "probs":  # too little of the distribution on the scale: unreadable, not a guess
                return None, {**info, "source": "unparsed"}
    req = ChatRequest(messages=[{"role": role, "content": prompt}], max_new_tokens=max_new_tokens,
                      temperature=temperature, seed=config.seed, tag=tag)
    resps = await llm.sample(req, config.samples)
    values: list[float | None] = []
    failed = 0
    for r in resps:
        try:
            values.append(scale_score(r.text, a.lo, a.hi, a.name))
        except ParseError:
            values.append(unreadable)
            failed += 1
    ok = [v for v in values if v is not None]
    return (sum(ok) / len(ok) if ok else None), {
        **info, "source": "samples", "protocol": config.protocol, "temperature": temperature, "message_role": role,
        "samples": values, "unparsed_samples": failed}


async def g_eval(example: RatedExample, llm: Calls, config: GEvalConfig):
    return await score_aspects(example, config.aspects, lambda a: geval_aspect(example, a, llm, config))

