"""MESA's self-training mechanism (Section 2.5): feedback reports learned on a training split.

One iteration: run MESA (with the current reports) on the training summaries; for every (summary, error
type) with a human annotation, an LLM judge (``mesa/s25_feedback_judge``) rates MESA's reasoning trace on
completeness, overlap with the human reasoning and logic (1-5) and labels the score difference
(``DIFFERENCES``: "no difference" ... "major difference", "critical disagreement" when the two disagree on
whether the error exists); a second call per error type (``mesa/s25_feedback_report``) condenses that
type's feedback into one report. The reports steer the next iteration: MESA appends them to every step
prompt of their type (``MesaConfig.feedback``). ``iterations=n`` gives the reports of "MESA-n" (n = 1 is
the paper's Single-1 / Multi-1).

Training and test never meet: the result records the training summaries and their meetings, and MESA
refuses to assess a summary of those meetings with these reports (use the ``train`` / ``test`` splits of
``meeting-errors``). The human side is what the dataset has: yes/no labels, 0-5 Likert scores and reasoning
where annotated; what is missing is told to the judge as unavailable. Unreadable judge answers are retried,
then counted (``unparsed``) and left out of the report; a type without any human annotation gets no report.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from ..data.records import MeetingErrorExample
from ..llm.engine import LLM
from ..llm.parsing import ParseError, json_number, lenient_json
from ..prompts import render
from .base import request
from .mesa import MesaConfig, error_types, mesa

DIFFERENCES = ("no difference", "minor difference", "moderate difference", "major difference",
               "critical disagreement")


@dataclass
class SampleFeedback:
    example_id: str
    code: str
    completeness: float
    overlap: float
    logic: float
    score_difference: str
    feedback: str


@dataclass
class FeedbackRound:
    iteration: int  # the reports of this round are used by MESA-<iteration>
    reports: dict[str, str]
    samples: list[SampleFeedback] = field(default_factory=list)
    unparsed: int = 0
    no_human_annotation: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        diff = {d: sum(s.score_difference == d for s in self.samples) for d in DIFFERENCES}
        mean = {k: (sum(getattr(s, k) for s in self.samples) / len(self.samples) if self.samples else None)
                for k in ("completeness", "overlap", "logic")}
        return {"iteration": self.iteration, "judged": len(self.samples), "unparsed": self.unparsed,
                "score_difference": diff, "mean": mean, "reports": sorted(self.reports),
                "no_human_annotation": self.no_human_annotation}


def parse_judge(text: str) -> dict[str, Any]:
    data = lenient_json(text)
    if not isinstance(data, dict):
        raise ParseError("expected a JSON object")
    out: dict[str, Any] = {}
    for k in ("completeness", "overlap", "logic"):
        if k not in data:
            raise ParseError(f"no 1-5 number for '{k}'")
        out[k] = json_number(data[k], 1, 5, k)
    label = " ".join(str(data.get("score_difference", "")).lower().replace("_", " ").split())
    if label not in DIFFERENCES:
        raise ParseError(f"score_difference {label!r} is not one of {DIFFERENCES}")
    out["score_difference"] = label
    out["feedback"] = str(data.get("feedback", "")).strip()
    return out


def parse_report(text: str) -> str:
    if not text.strip():
        raise ParseError("empty report")
    return text.strip()


def human_annotation(ex: MeetingErrorExample, code: str) -> str | None:
    """What the annotators said about ``code`` for ``ex`` (None: nothing to learn from)."""
    label, likert, why = ex.labels.get(code), ex.likert.get(code), ex.reasoning.get(code, "")
    if label is None and likert is None:
        return None
    return "\n".join([
        f"- Error present: {'not annotated' if label is None else ('yes' if label else 'no')}",
        f"- Impact (Likert 0-5): {'unavailable (this dataset has yes/no labels only)' if likert is None else f'{likert:g}'}",
        f"- Reasoning: {why or 'unavailable (this dataset has no annotator reasoning)'}"])


def assessment_text(a: dict[str, Any]) -> str:
    kept = [{k: x.get(k) for k in ("instance", "severity", "reasoning")} for x in a.get("rated", []) if x.get("error_exists")]
    return json.dumps({"error_instances": kept, "rating": a.get("rating"), "confidence": a.get("confidence"),
                       "reasoning": a.get("reasoning", "")}, ensure_ascii=False, indent=1)


async def feedback_round(train: list[MeetingErrorExample], llm: LLM, config: MesaConfig, iteration: int,
                         max_new_tokens: int = 512, judge: str | None = None) -> FeedbackRound:
    """Assess ``train`` with ``config`` (which carries the previous reports), judge, condense: the reports
    of MESA-``iteration``."""
    types = error_types(config.criteria)
    judgements = await asyncio.gather(*(mesa(ex, llm.scoped(ex.id), config) for ex in train))
    jobs, missing = [], set()
    for ex, j in zip(train, judgements):
        for code, a in j.details["types"].items():
            human = human_annotation(ex, code)
            if human is None:
                missing.add(code)
            elif a.get("rating") is not None:
                prompt = render("mesa/s25_feedback_judge", criteria=types[code].definition, summary=ex.summary,
                                assessment=assessment_text(a), human=human)
                jobs.append((ex.id, code, request(prompt, max_new_tokens=max_new_tokens, seed=config.seed,
                                                  tag=f"{ex.id}/{code}/self-training{iteration}/judge")))
    judge_llm = llm.companion(judge) if judge else llm
    answers = await asyncio.gather(*(judge_llm.chat_parsed(req, parse_judge) for _, _, req in jobs))
    samples = [SampleFeedback(example_id=i, code=c, **r.value) for (i, c, _), r in zip(jobs, answers) if r.ok]
    codes = sorted({s.code for s in samples})

    async def condense(code: str):
        lines = "\n".join(f"- [{s.score_difference}] {s.feedback}" for s in samples if s.code == code)
        prompt = render("mesa/s25_feedback_report", criteria=types[code].definition, feedback=lines)
        return await judge_llm.chat_parsed(request(prompt, max_new_tokens=max_new_tokens, seed=config.seed,
                                             tag=f"{code}/self-training{iteration}/report"), parse_report)

    reports = await asyncio.gather(*(condense(c) for c in codes))
    return FeedbackRound(iteration=iteration, reports={c: r.value for c, r in zip(codes, reports) if r.ok},
                         samples=samples, unparsed=sum(not r.ok for r in answers) + sum(not r.ok for r in reports),
                         no_human_annotation=sorted(missing - {s.code for s in samples}))


async def self_train(train: list[MeetingErrorExample], llm: LLM, config: MesaConfig, iterations: int = 1,
                     max_new_tokens: int = 512, judge: str | None = None) -> dict[str, Any]:
    """The feedback for MESA-``iterations`` (a mapping for ``MesaConfig.feedback``; ``save`` writes it).
    ``iterations=0`` returns {} (MESA-0, no feedback). ``judge``: another model for the two judge calls
    ("backend:model[@base_url]", the paper uses GPT-4); default the run's model."""
    feedback: dict[str, Any] = {}
    history = []
    meetings = sorted({ex.meeting for ex in train})
    for it in range(1, iterations + 1):
        previous = {"iteration": it - 1, "reports": feedback["reports"]} if feedback else None  # no refusal list here
        rnd = await feedback_round(train, llm, replace(config, feedback=previous), it, max_new_tokens, judge)
        history.append({**rnd.summary(), "samples": [asdict(s) for s in rnd.samples]})
        feedback = {"iteration": it, "reports": rnd.reports, "train_ids": [ex.id for ex in train],
                    "train_meetings": meetings, "history": history}
    return feedback


def save(feedback: dict[str, Any], path: str | Path) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(feedback, indent=2, ensure_ascii=False), encoding="utf-8")
    return p
