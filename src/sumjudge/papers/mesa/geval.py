"""MESA's G-Eval-4 baseline (Section 3.1: "a modified version of the LLM-based G-Eval-4 prompted with our
eight evaluation criteria and access to the transcript"): DEBATE's G-Eval code (``geval_aspect``: probability-
weighted score, or the mean of samples where the server has no log-probabilities) with one form-filling
prompt per error type (``mesa/s31_geval4``, sumjudge's wording), on MESA's 0-5 impact scale so that its
Likert scores compare with MESA's and the annotators' (Table 5). The error types run independently and
reach the backend together. A type counts as detected (Table 1's sense) when the score rounds above 0.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from dataclasses import replace as dc_replace
from typing import Any

from sumjudge.data.records import MeetingErrorExample
from sumjudge.judges.aspects import FIELDS, Aspect
from sumjudge.judges.base import Judgement
from sumjudge.judges.geval import GEvalConfig, geval_aspect
from sumjudge.llm.engine import Calls
from sumjudge.llm.fitting import longest_prefix
from sumjudge.papers.mesa.protocol import MesaConfig, count_words
from sumjudge.run.methods import MethodSpec, register

TEMPLATE = "mesa/s31_geval4"


@dataclass
class MeetingGEvalConfig(GEvalConfig):
    types: Any = None  # error-type codes; None = every type of the criteria file
    criteria: str = "authors"  # as MesaConfig.criteria: authors | printed | table9 | a YAML file | a JSON folder
    transcript_tokens: int | None = None  # cut the transcript to this many tokens first (a comparison's shared
    # budget, so that G-Eval-4 reads the text the MESA variants read); None = cut only to fit


# a meeting summary's G-Eval prompt reads the example's transcript and summary (the transcript cut first)
FIELDS.add("meeting-errors", {"transcript": "transcript", "summary": "summary"})


def type_aspects(config: MeetingGEvalConfig) -> list[Aspect]:
    return [Aspect(dataset="meeting-errors", name=t.code, template=TEMPLATE, lo=0, hi=5,
                   constants=(("name", t.name.capitalize()), ("criteria", t.definition)))
            for t in MesaConfig(types=config.types, criteria=config.criteria).selected()]


async def mesa_g_eval(example: MeetingErrorExample, llm: Calls, config: MeetingGEvalConfig) -> Judgement:
    aspects = type_aspects(config)
    words = len(example.transcript.split())
    kept = words
    if config.transcript_tokens is not None:
        count = llm.count_tokens if llm.counts_tokens else count_words
        if await count(example.transcript) > config.transcript_tokens:
            text, kept = await longest_prefix(example.transcript, config.transcript_tokens, count)
            example = dc_replace(example, transcript=text)
    results = await asyncio.gather(*(geval_aspect(example, a, llm, config) for a in aspects))
    scores = {a.name: v for a, (v, _) in zip(aspects, results)}
    types = {a.name: {**info, "code": a.name, "rating": v, "detected": None if v is None else round(v) > 0,
                      "score_source": info.get("source", "")}
             for a, (v, info) in zip(aspects, results)}
    ok = all(v is not None for v in scores.values())
    cut = max((info.get("truncated_words", 0) for _, info in results), default=0)  # a cut to fit the context
    return Judgement(example_id=example.id, scores=scores, parsed=ok, label_source="parsed" if ok else "unparsed",
                     details={"types": types, "variant": "G-Eval-4", "transcript_words": words,
                              "transcript_words_kept": kept - cut})


register(MethodSpec(name="mesa-g-eval", paper="mesa", kind="meeting-errors", config_cls=MeetingGEvalConfig,
                    judge=mesa_g_eval, description="MESA's G-Eval-4 baseline: eight error-type criteria, transcript, "
                                                   "0-5 impact, probability-weighted"))
