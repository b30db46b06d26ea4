"""Single-LLM baselines, MADISSE Section 5.2: (1) zero-shot (Table 26 prompt), (2) chain of thought
(Table 27), (3) self-consistency (n sampled chains of thought, majority vote)."""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass

from ..data.records import FaithExample
from ..llm.engine import LLM
from ..llm.parsing import ParseError, binary_label, xml_tag
from ..prompts import variant
from .base import Judgement, MethodSpec, fit_prompt, register, request


@dataclass
class ZeroShotConfig:
    template: str = "madisse/table26_zero_shot"
    max_new_tokens: int = 512
    temperature: float = 0.0
    seed: int = 0
    truncate: str = "error"  # error | truncate (cut the document's end to fit the context)
    fallback: str = "none"  # none | option_scores: an unparseable answer gets the likelier of "0"/"1" after "<label>"
    doc_first: bool = True  # the paper's <doc> block first (same wording), so prompts share a prefix


def parse_label_and_explanation(text: str) -> tuple[int, str]:
    label = binary_label(text)
    try:
        expl = xml_tag(text, "explanation")
    except ParseError:
        expl = ""
    return label, expl


async def label_with_fallback(llm: LLM, req, fallback: str) -> tuple[int | None, str, str, dict]:
    """Ask, parse (with the engine's retries); optionally fall back to option scoring. Returns
    (label, explanation, label_source, details)."""
    res = await llm.chat_parsed(req, parse_label_and_explanation)
    details = {"attempts": res.attempts, "raw": res.response.text}
    if res.ok:
        label, expl = res.value
        return label, expl, "parsed", details
    details["parse_error"] = res.error
    if fallback == "option_scores":
        sc = await llm.score_fallback(req.messages, ["0", "1"], prefix="<label>", tag=req.tag)
        details["option_probs"] = sc.probs
        return int(sc.best()), "", "option_scores", details
    return None, "", "unparsed", details


async def zero_shot(example: FaithExample, llm: LLM, config: ZeroShotConfig) -> Judgement:
    prompt, fit = fit_prompt(llm, variant(config.template, config.doc_first),
                             {"doc": example.document, "summary": example.summary},
                             max_new_tokens=config.max_new_tokens, policy=config.truncate, tag=example.id)
    req = request(prompt, max_new_tokens=config.max_new_tokens, temperature=config.temperature, seed=config.seed,
                  tag=f"{example.id}/zero-shot")
    label, expl, source, details = await label_with_fallback(llm, req, config.fallback)
    return Judgement(example_id=example.id, label=label, explanation=expl, parsed=source == "parsed",
                     label_source=source, details={**details, **fit})


register(MethodSpec(name="zero-shot", paper="madisse", kind="faithfulness", config_cls=ZeroShotConfig,
                    judge=zero_shot, description="Zero-shot single LLM, MADISSE Table 26 prompt"))


@dataclass
class CoTConfig(ZeroShotConfig):
    template: str = "madisse/table27_cot"
    max_new_tokens: int = 1024


register(MethodSpec(name="cot", paper="madisse", kind="faithfulness", config_cls=CoTConfig, judge=zero_shot,
                    description="Zero-shot chain of thought, MADISSE Table 27 prompt"))


@dataclass
class SelfConsistencyConfig(CoTConfig):
    samples: int = 5  # n paths; the paper does not give its n
    temperature: float = 0.7


def majority(labels: list[int | None], rng: random.Random) -> tuple[int | None, dict[int, int]]:
    """Majority of the readable labels; a tie is broken by a seeded coin (recorded by the caller's seed).
    None when no label is readable."""
    counts = Counter(x for x in labels if x is not None)
    if not counts:
        return None, {}
    top = max(counts.values())
    best = sorted(k for k, v in counts.items() if v == top)
    return (best[0] if len(best) == 1 else rng.choice(best)), dict(counts)


async def self_consistency(example: FaithExample, llm: LLM, config: SelfConsistencyConfig) -> Judgement:
    prompt, fit = fit_prompt(llm, variant(config.template, config.doc_first),
                             {"doc": example.document, "summary": example.summary},
                             max_new_tokens=config.max_new_tokens, policy=config.truncate, tag=example.id)
    reqs = [request(prompt, max_new_tokens=config.max_new_tokens, temperature=config.temperature, seed=config.seed,
                    sample_index=i, tag=f"{example.id}/self-consistency#{i}") for i in range(config.samples)]
    import asyncio

    results = await asyncio.gather(*(label_with_fallback(llm, r, config.fallback) for r in reqs))
    labels = [r[0] for r in results]
    label, counts = majority(labels, random.Random(f"{config.seed}|{example.id}"))
    expl = next((r[1] for r in results if r[0] == label and r[1]), "")
    return Judgement(example_id=example.id, label=label, explanation=expl, parsed=label is not None,
                     label_source="majority" if label is not None else "unparsed",
                     details={"sample_labels": labels, "sample_sources": [r[2] for r in results], "counts": counts,
                              **fit})


register(MethodSpec(name="self-consistency", paper="madisse", kind="faithfulness", config_cls=SelfConsistencyConfig,
                    judge=self_consistency, description="Self-consistency: n sampled chains of thought, majority vote"))
