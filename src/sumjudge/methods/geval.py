"""G-Eval (Liu et al. 2023), the DEBATE paper's single-agent baseline: the form-filling prompt of the
aspect (Appendix G.2 format) and a probability-weighted score.

- ``mode=probs``: score = sum over the scale's points s of p(s) x s, p from the engine's option scoring
  (hf: from the logits; openai: from ``top_logprobs``), renormalised over the scale's points;
- ``mode=samples``: G-Eval's estimate for APIs without log-probabilities: ``samples`` answers sampled at
  ``temperature`` (G-Eval: n = 20, temperature 1), score = mean of the readable ones (unreadable
  samples are counted in the judgement);
- ``mode=auto`` (default): probs, and samples where the backend cannot give log-probabilities (recorded
  per aspect as ``source``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..data.records import RatedExample
from ..llm import OptionScoringError
from ..llm.engine import LLM
from ..llm.parsing import ParseError, scale_score
from .aspects import Aspect, score_aspects
from .base import MethodSpec, fit_prompt, register, request, user


@dataclass
class GEvalConfig:
    aspects: Any = None  # list or comma-separated names; None = every aspect of the dataset
    mode: str = "auto"  # probs | samples | auto
    samples: int = 20
    temperature: float = 1.0  # samples mode
    max_new_tokens: int = 16  # samples mode (G-Eval asks for the score only)
    seed: int = 0
    truncate: str = "error"
    fallback: str = "none"  # not used: G-Eval's score is a probability-weighted mean already


async def geval_aspect(example: RatedExample, a: Aspect, llm: LLM, config: GEvalConfig) -> tuple[float | None, dict]:
    tag = f"{example.id}/{a.name}/g-eval"
    prompt, fit = fit_prompt(llm, a.template, a.fields(example), max_new_tokens=config.max_new_tokens,
                             policy=config.truncate, tag=tag, shrink=a.shrink)
    info: dict[str, Any] = dict(fit)
    if config.mode in ("probs", "auto"):
        try:
            sc = await llm.score_options(user(prompt), a.options, tag=tag)
            return sc.expectation(), {**info, "source": "probs", "probs": sc.probs, "coverage": sc.coverage}
        except OptionScoringError as e:
            if config.mode == "probs":
                raise
            info["probs_unavailable"] = str(e)
    resps = await llm.sample(request(prompt, max_new_tokens=config.max_new_tokens, temperature=config.temperature,
                                     seed=config.seed, tag=tag), config.samples)
    values: list[float | None] = []
    for r in resps:
        try:
            values.append(scale_score(r.text, a.lo, a.hi, a.name))
        except ParseError:
            values.append(None)
    ok = [v for v in values if v is not None]
    return (sum(ok) / len(ok) if ok else None), {**info, "source": "samples", "samples": values,
                                                 "unparsed_samples": len(values) - len(ok)}


async def g_eval(example: RatedExample, llm: LLM, config: GEvalConfig):
    return await score_aspects(example, config.aspects, lambda a: geval_aspect(example, a, llm, config))


register(MethodSpec(name="g-eval", paper="debate", kind="rated", config_cls=GEvalConfig, judge=g_eval,
                    description="G-Eval baseline: form-filling prompt, probability-weighted score (DEBATE Table 1)"))
