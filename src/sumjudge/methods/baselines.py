"""Single-LLM baselines. MADISSE Section 5.2: (1) zero-shot single LLM (Table 26 prompt)."""

from __future__ import annotations

from dataclasses import dataclass

from ..data.records import FaithExample
from ..llm.engine import LLM
from ..llm.parsing import ParseError, binary_label, xml_tag
from .base import Judgement, MethodSpec, fit_prompt, register, request


@dataclass
class ZeroShotConfig:
    template: str = "madisse/table26_zero_shot"
    max_new_tokens: int = 512
    temperature: float = 0.0
    seed: int = 0
    truncate: str = "error"  # error | truncate (cut the document's end to fit the context)
    fallback: str = "none"  # none | option_scores: an unparseable answer gets the likelier of "0"/"1" after "<label>"


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
        sc = await llm.score_options(req.messages, ["0", "1"], prefix="<label>", tag=req.tag + "#fallback")
        details["option_probs"] = sc.probs
        return int(sc.best()), "", "option_scores", details
    return None, "", "unparsed", details


async def zero_shot(example: FaithExample, llm: LLM, config: ZeroShotConfig) -> Judgement:
    prompt, fit = fit_prompt(llm, config.template, {"doc": example.document, "summary": example.summary},
                             max_new_tokens=config.max_new_tokens, policy=config.truncate, tag=example.id)
    req = request(prompt, max_new_tokens=config.max_new_tokens, temperature=config.temperature, seed=config.seed,
                  tag=f"{example.id}/zero-shot")
    label, expl, source, details = await label_with_fallback(llm, req, config.fallback)
    return Judgement(example_id=example.id, label=label, explanation=expl, parsed=source == "parsed",
                     label_source=source, details={**details, **fit})


register(MethodSpec(name="zero-shot", paper="madisse", kind="faithfulness", config_cls=ZeroShotConfig,
                    judge=zero_shot, description="Zero-shot single LLM, MADISSE Table 26 prompt"))
