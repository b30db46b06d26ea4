"""MESA on binary faithfulness: ``mesa-faithfulness``, the adaptation the judge arena compares with the other papers'
judges (not in the paper, which assesses QMSum Mistake's meeting summaries; MESA's three steps never met TofuEval).

A faithfulness example's document is the transcript; MESA assesses the error types that make a summary
unfaithful, each on its own (single-aspect, three steps by default, ``protocol.mesa`` unchanged), and Table 1's
detection rule decides: the summary is unfaithful (0) when a type is detected (step 2 keeps an instance; one step:
the rating is above 0), faithful (1) when every type is scored and none is detected, and has no label when no
type is detected and one is unscored (counted, never guessed). MESA's overall quality (Eq. 2) is kept as the
judgement's score, its per-type ratings as ``scores``.

Types: hallucination and coreference (``types=HAL,COR``): content the transcript does not support, and statements
or actions attributed to the wrong participant or entity. The other six (omission, redundancy, incoherence,
language, structure, irrelevance) concern a summary's quality, not its faithfulness.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sumjudge.data.records import FaithExample, MeetingErrorExample
from sumjudge.judges.base import Judgement
from sumjudge.llm.engine import Calls
from sumjudge.papers.mesa.protocol import MesaConfig, mesa, preflight, step_role
from sumjudge.run.methods import AsPrinted, MethodSpec, register


@dataclass
class MesaFaithfulnessConfig(MesaConfig):
    types: Any = "HAL,COR"  # the error types of unfaithfulness (see the module docstring)


def as_meeting(example: FaithExample) -> MeetingErrorExample:
    """The faithfulness example as MESA reads one: its document is the transcript (no human labels per type)."""
    return MeetingErrorExample(id=example.id, dataset=example.dataset, transcript=example.document,
                               summary=example.summary, labels={})


def verdict(types: dict[str, dict[str, Any]]) -> int | None:
    """0 when a type is detected, 1 when every type is scored and none is, else None (a type unscored)."""
    detected = [t["detected"] for t in types.values()]
    if any(d is True for d in detected):
        return 0
    return 1 if detected and all(d is False for d in detected) else None


async def mesa_faithfulness(example: FaithExample, llm: Calls, config: MesaFaithfulnessConfig) -> Judgement:
    j = await mesa(as_meeting(example), llm, config)
    types = j.details["types"]
    j.label = verdict(types)
    j.parsed = j.label is not None
    fallback = any(t["score_source"] == "option_scores" for t in types.values())
    j.label_source = "unparsed" if j.label is None else "option_scores" if fallback else "parsed"
    j.details["decision"] = "unfaithful when an error type is detected (Table 1's rule)"
    return j


async def mesa_faithfulness_preflight(examples: list[FaithExample], llm: Calls, config: MesaFaithfulnessConfig) -> None:
    await preflight([as_meeting(e) for e in examples], llm, config)


register(MethodSpec(name="mesa-faithfulness", paper="mesa", kind="faithfulness", config_cls=MesaFaithfulnessConfig,
                    judge=mesa_faithfulness, preflight=mesa_faithfulness_preflight, roles=step_role,
                    as_printed=(AsPrinted("MESA's error-type definitions: the authors' criteria files (as run) vs "
                                          "Table 9's short definitions as printed", (), (("criteria", "printed"),)),),
                    description="MESA adapted to binary faithfulness: hallucination and coreference assessed in "
                                "three steps, unfaithful when one is detected"))
