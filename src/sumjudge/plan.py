"""``sumjudge plan``: what the paper profile's runs will cost before any model is called: calls, prompt tokens
(counted with the model's tokenizer on the real data, chat template included) and completion tokens (the
answer caps, an upper bound), and from them hours at a given throughput and dollars at given prices.

Each run is executed in full against ``PlanBackend``, an in-process stand-in that answers in forms the protocols'
parsers read (``standin.answer``) and reports every answer at its cap. Where the number of calls depends on the
answers, the stand-in takes the longest path: an agent given a stance answers against it (so it is asked again, as
often as the protocol allows), other labels alternate, so a debate's agents never all agree and every round and
adjudicator runs; a step that lists error instances always finds one, so the step that rates them always runs. Parse retries are not
planned (every answer reads), so a run makes at most ``calls x (1 + parse_retries)`` chat calls, and, for protocols
whose calls do not depend on the answers, exactly ``calls`` when every answer reads. Answers the stand-in cannot
write for a protocol are counted as ``unreadable`` (their retries are in ``calls``): the plan then says so.
"""

from __future__ import annotations

import json
import re
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .llm.backend import Capabilities
from .llm.types import BackendInfo, ChatRequest, ChatResponse, OptionRequest, OptionScores, prompt_digest


# an agent told its stance (the stance-initialised debate's first round): answering against it is the longest path
STANCE = re.compile(r"You \(Agent \d+\): The summary is factually (in)?consistent")


class PlanBackend:
    """Answers at once in parseable forms, every answer at its token cap; counts prompts with ``tokenizer``."""

    name = "plan"

    def __init__(self, tokenizer, model: str, context_length: int):
        self.tokenizer, self.context_length = tokenizer, context_length
        self.info = BackendInfo(name="plan", model=model)
        self._turn = 0
        self._counts: dict[str, int] = {}

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(option_scoring="exact", tokenizer="local", context_length=self.context_length,
                            max_inflight=1)

    def count_tokens(self, text: str) -> int:
        return len(self.tokenizer(text, add_special_tokens=False).input_ids)

    def prompt_tokens(self, messages: list[dict[str, str]]) -> int:
        """Counted once per distinct prompt (samples of one prompt share it), keyed by a digest of it."""
        key = prompt_digest(messages)
        if key not in self._counts:
            text = self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
            self._counts[key] = len(self.tokenizer(text, add_special_tokens=False).input_ids)
        return self._counts[key]

    def decode_stats(self) -> None:
        return None

    def server_counters(self) -> None:
        return None

    def _answer(self, req: ChatRequest) -> str:
        """The stand-in's answer, with labels alternating from call to call (the longest debates)."""
        from .standin import answer

        self._turn += 1
        text = answer(req.messages)
        if "<label>" in text:
            given = STANCE.search(str(req.messages[-1].get("content", "")))
            label = (0 if given.group(1) is None else 1) if given else self._turn % 2  # against a given stance
            text = text.rsplit("<label>", 1)[0] + f"<label>{label}</label>"
        if text == "[]":  # a first step that lists error instances: always one, so that the rating step runs
            text = json.dumps([{"instance": "planned", "reasoning": "planned", "certainty": "60"}])
        return text

    async def generate(self, reqs: list[ChatRequest], on_results=None) -> list[ChatResponse | Exception]:
        return [ChatResponse(text=self._answer(r), finish_reason="stop", prompt_tokens=self.prompt_tokens(r.messages),
                             completion_tokens=r.max_new_tokens, latency_s=0.0, backend="plan", model=self.info.model)
                for r in reqs]

    async def score(self, reqs: list[OptionRequest], on_results=None) -> list[OptionScores | Exception]:
        return [OptionScores(probs={o: 1 / len(r.options) for o in r.options}, logprobs=dict.fromkeys(r.options),
                             method="plan", backend="plan", model=self.info.model) for r in reqs]


@dataclass
class PlannedRun:
    run: str
    method: str
    dataset: str
    examples: int
    calls: int  # chat calls, every answer read at the first try
    calls_with_retries_at_most: int
    option_calls: int
    prompt_tokens: int
    completion_tokens_at_most: int  # the answer caps
    unreadable: int  # answers the planner could not write for this protocol (their retries are in calls)
    hours: float
    dollars: float


def plan_run(name: str, spec: dict[str, Any], *, profile: str, tokenizer, model: str, context_length: int,
             limit: int | None, tokens_per_s: float, prefill_tokens_per_s: float, price_in: float,
             price_out: float) -> PlannedRun:
    from .llm import NullCache
    from .llm.engine import LLM
    from .profiles import load
    from .runs import RunConfig, run

    prof = load(profile)
    rc = RunConfig(method=spec["method"], dataset=spec["dataset"], level=spec.get("level"), limit=limit,
                   backend="openai", model=model, base_url="http://plan.invalid/v1",
                   settings=prof.settings_for(spec["method"]))
    llm = LLM(PlanBackend(tokenizer, model, context_length), cache=NullCache(), parse_retries=prof.parse_retries)
    with tempfile.TemporaryDirectory() as tmp:
        m = run(rc, Path(tmp) / "run", llm=llm, progress=False)
    u = m["engine"]
    calls = u["calls"] - u["parse_retries"]
    prompt = u["prompt_tokens"] + u["option_prompt_tokens"]
    completion = u["completion_tokens"]
    return PlannedRun(run=name, method=spec["method"], dataset=spec["dataset"], examples=m["n_examples"],
                      calls=calls, calls_with_retries_at_most=calls * (1 + prof.parse_retries),
                      option_calls=u["option_calls"], prompt_tokens=prompt, completion_tokens_at_most=completion,
                      unreadable=u["parse_failures"],
                      hours=round((prompt / prefill_tokens_per_s + completion / tokens_per_s) / 3600, 2),
                      dollars=round(prompt / 1e6 * price_in + completion / 1e6 * price_out, 2))


def plan(runs: list[str], *, profile: str = "paper", tokenizer: str | None = None, model: str | None = None,
         context_length: int = 131072, limit: int | None = None, tokens_per_s: float = 2500.0,
         prefill_tokens_per_s: float = 25000.0, price_in: float = 0.0, price_out: float = 0.0) -> list[dict]:
    """One ``PlannedRun`` per run of ``scale.paper_runs()`` named in ``runs`` (as dicts), and a total row."""
    from .llm.models import llama3_tokenizer
    from .profiles import load
    from .scale import paper_runs

    if tokenizer:
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(tokenizer)
    else:
        tok = llama3_tokenizer()
    tok.model_max_length = 10 ** 9  # counting, not feeding a model: no warning for a long meeting
    model = model or load(profile).model
    rows = [asdict(plan_run(name, paper_runs()[name], profile=profile, tokenizer=tok, model=model,
                            context_length=context_length, limit=limit, tokens_per_s=tokens_per_s,
                            prefill_tokens_per_s=prefill_tokens_per_s, price_in=price_in, price_out=price_out))
            for name in runs]
    total = {k: (sum(r[k] for r in rows) if isinstance(rows[0][k], (int, float)) else "") for k in rows[0]} if rows else {}
    if total:
        total.update(run="total", hours=round(total["hours"], 2), dollars=round(total["dollars"], 2))
    return rows + ([total] if total else [])
