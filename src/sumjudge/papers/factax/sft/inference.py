"""Inference with a FacTax fine-tuned model (Section 5.2): ``factax-sft`` with ``inference=binary``
(INF-Binary: the Binary Completion prompt, the model completes Factually_Correct / Factually_Incorrect) or
``inference=taxonomy`` (INF-Taxonomy: the Error Type Completion prompt; correct only when it completes
Factually_Correct with no error type). Greedy, through the engine like every method; an unreadable
completion is retried, then counted; ``fallback=option_scores`` picks the likelier label and records it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sumjudge.data.records import FaithExample
from sumjudge.errors import ConfigError
from sumjudge.judges.base import Judgement, fit_prompt, request
from sumjudge.judges.settings import Generation
from sumjudge.llm.engine import Calls
from sumjudge.llm.parsing import ParseError, complete_lines
from sumjudge.papers.factax.metrics import factax_metrics
from sumjudge.papers.factax.protocol import LABELS, NEGATING_PREFIX, parse_factax
from sumjudge.run.methods import MethodSpec, register

PROMPTS = {"binary": "factax/s51_binary_completion", "taxonomy": "factax/s51_error_type_completion"}


@dataclass
class SFTInferenceConfig(Generation):  # greedy, as the fine-tuned model was evaluated
    max_new_tokens: int = 24
    inference: str = "binary"  # binary (INF-Binary) | taxonomy (INF-Taxonomy)


def parse_binary(text: str) -> int:
    """INF-Binary: the answer's Factually_Correct / Factually_Incorrect; a negated one ("not
    Factually_Correct") or both named is unreadable."""
    found = {0 if m.group(1) else 1 for m in re.finditer(r"factually[ _-]*(in)?correct", text, re.I)}
    if not found:
        raise ParseError("no Factually_Correct / Factually_Incorrect")
    if len(found) > 1:
        raise ParseError("both Factually_Correct and Factually_Incorrect named")
    if re.search(r"(?:\bnot|\bno|n[\'’]t)[ \t]+(?:\w+[ \t]+){0,2}factually", text, re.I) or \
            any(NEGATING_PREFIX.search(text[:m.start()]) for m in re.finditer(r"factually", text, re.I)):
        raise ParseError(f"negated label: {text.strip()[:60]!r}")
    return found.pop()


async def factax_sft(example: FaithExample, llm: Calls, config: SFTInferenceConfig) -> Judgement:
    if config.inference not in PROMPTS:
        raise ConfigError(f"inference={config.inference!r}: expected binary or taxonomy")
    prompt, fit = await fit_prompt(llm, PROMPTS[config.inference], {"document": example.document, "summary": example.summary},
                             max_new_tokens=config.max_new_tokens, policy=config.truncate, tag=example.id,
                             shrink="document")
    # a user turn, as in training (factax_sft.tokenize_pair)
    req = request(prompt, max_new_tokens=config.max_new_tokens, temperature=config.temperature, seed=config.seed,
                  tag=f"{example.id}/factax-sft-{config.inference}")
    if config.inference == "binary":
        parse = parse_binary
    else:
        parse = lambda t: parse_factax("- Label: " + t)[0]  # noqa: E731
    res = await llm.chat_parsed(req, parse, cut_parse=complete_lines(parse))
    types: list[str] = []
    if res.ok:
        label = res.value if config.inference == "binary" else int(res.value == ["Factually_Correct"])
        types = [] if config.inference == "binary" else sorted(LABELS[x] for x in res.value if x != "Factually_Correct")
        source = "parsed"
    elif config.fallback == "option_scores":
        sc = await llm.score_fallback(req.messages, [" Factually_Correct", " Factually_Incorrect"], tag=req.tag)
        label, source = int(sc.best() == " Factually_Correct"), "option_scores"
    else:
        label, source = None, "unparsed"
    return Judgement(example_id=example.id, label=label, parsed=label is not None, label_source=source,
                     details={**fit, "raw": res.response.text, "predicted_types": types,
                              "inference": config.inference})


register(MethodSpec(name="factax-sft", paper="factax", kind="faithfulness", config_cls=SFTInferenceConfig,
                    judge=factax_sft, metrics=factax_metrics, description="FacTax fine-tuned model: INF-Binary or INF-Taxonomy"))
