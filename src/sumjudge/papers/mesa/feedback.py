"""MESA's self-training mechanism (Section 2.5): feedback reports learned on a training split.

One iteration, as the authors' ``fitting.py`` (github.com/FKIRSTE/coling2025-MESA @ adb7e6f) runs it: MESA
(with the current reports) assesses the training summaries; for every (summary, error type) with a human
annotation the *score difference* is a rule, not a model's opinion (``difference``: the gap between MESA's
0-5 rating and the human impact, 0 "No Difference", 1 "Minor", 2 "Moderate", 3 or more "Major Difference",
and "Error Detection Discrepancy" when one side sees an error and the other does not); an LLM compares
MESA's reasoning with the annotators' reasoning where the dataset has it (``s25_fitting_reasoning_*``, a
0-100 quality with its chain of thought); a second call per error type turns that type's comparisons into a
report (``s25_fitting_report_*``: score similarity and reasoning quality feedback). The reports steer the
next iteration: MESA appends them to every step prompt of their type (``MesaConfig.feedback``).
``iterations=n`` gives the reports of "MESA-n" (n = 1 is the paper's Single-1 / Multi-1).

The human side is what the dataset has. With 0-5 Likert impacts (QMSum Mistake, ``mistek-qmsum``) the gap
is computed as above; with yes/no labels only (``meeting-errors``) "no error" is impact 0, and an error of
unknown impact agrees with any rating above 0 ("Presence Agrees"); without annotator reasoning no
reasoning comparison is asked for. A type without any human annotation gets no report.

Training and test never meet: the result records the training summaries and their meetings, and MESA
refuses to assess a summary of those meetings with these reports (use the ``train`` / ``test`` splits).
Unreadable answers are retried, then counted (``unparsed``) and left out.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from sumjudge.data.records import MeetingErrorExample
from sumjudge.llm import ChatRequest
from sumjudge.llm.engine import Calls
from sumjudge.llm.parsing import ParseError, lenient_json, scale_score
from sumjudge.papers.mesa.protocol import MesaConfig, mesa
from sumjudge.prompts import render

DIFFERENCES = ("No Difference", "Minor Difference", "Moderate Difference", "Major Difference",
               "Error Detection Discrepancy", "Presence Agrees")


def difference(rating: float, impact: float | None, label: int | None) -> tuple[str, str] | None:
    """(label, explanation) of MESA's 0-5 rating against the human annotation, by the authors' rule
    (``fitting.py`` ``likert_score_feedback``); yes/no-only annotations: "no error" is impact 0, and an error of
    unknown impact only tells whether the two agree on its presence. None without any annotation."""
    if impact is None:
        if label is None:
            return None
        if label == 0:
            impact = 0.0
        elif rating == 0:
            return "Error Detection Discrepancy", "Metric: 0 vs. Human: error (impact not annotated)."
        else:
            return "Presence Agrees", f"Both see an error (Metric: {rating:g}; the human impact is not annotated)."
    gap = abs(rating - impact)
    if rating == 0 and impact >= 1:
        return "Error Detection Discrepancy", f"Metric: 0 vs. Human: {impact:g} (Human detects an error)."
    if rating >= 1 and impact == 0:
        return "Error Detection Discrepancy", f"Metric: {rating:g} vs. Human: 0 (Metric detects an error)."
    if gap == 0:
        return "No Difference", f"Scores match exactly. (Human: {impact:g}; Metric: {rating:g})"
    if gap <= 1:
        return "Minor Difference", f"Scores differ by 1 point. (Human: {impact:g}; Metric: {rating:g})"
    if gap <= 2:
        return "Moderate Difference", f"Scores differ by 2 points. (Human: {impact:g}; Metric: {rating:g})"
    return "Major Difference", f"Scores differ by >= 3 points. (Human: {impact:g}; Metric: {rating:g})"


@dataclass
class SampleFeedback:
    example_id: str
    code: str
    score_difference: str
    explanation: str
    reasoning_quality: float | None = None  # 0-100, where annotator reasoning exists
    reasoning_comparison: str = ""


@dataclass
class FeedbackRound:
    iteration: int  # the reports of this round are used by MESA-<iteration>
    reports: dict[str, str]
    samples: list[SampleFeedback] = field(default_factory=list)
    unparsed: int = 0
    no_human_annotation: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        diff = {d: sum(s.score_difference == d for s in self.samples) for d in DIFFERENCES}
        q = [s.reasoning_quality for s in self.samples if s.reasoning_quality is not None]
        return {"iteration": self.iteration, "judged": len(self.samples), "unparsed": self.unparsed,
                "score_difference": diff, "reasoning_compared": len(q),
                "mean_reasoning_quality": sum(q) / len(q) if q else None, "reports": sorted(self.reports),
                "no_human_annotation": self.no_human_annotation}


def parse_quality(text: str) -> tuple[float, str]:
    """The reasoning comparison: (0-100 quality, the judge's text)."""
    return scale_score(text, 0, 100), text.strip()


def parse_report(text: str) -> str:
    """The report of one error type: its score-similarity and reasoning-quality feedback."""
    data = lenient_json(text)
    if not isinstance(data, dict) or not all(str(data.get(k, "")).strip() for k in ("score_similarity",
                                                                                     "reasoning_quality")):
        raise ParseError("expected a JSON object with score_similarity and reasoning_quality feedback")
    return f"Score similarity: {str(data['score_similarity']).strip()}\nReasoning quality: " \
           f"{str(data['reasoning_quality']).strip()}"


def ask(system: str, user: str, max_new_tokens: int, seed: int, tag: str) -> ChatRequest:
    return ChatRequest(messages=[{"role": "system", "content": render(system)}, {"role": "user", "content": user}],
                       max_new_tokens=max_new_tokens, seed=seed, tag=tag)


async def feedback_round(train: list[MeetingErrorExample], llm: Calls, config: MesaConfig, iteration: int,
                         max_new_tokens: int = 512, judge: str | None = None) -> FeedbackRound:
    """Assess ``train`` with ``config`` (which carries the previous reports), compare with the annotations,
    condense: the reports of MESA-``iteration``."""
    judgements = await asyncio.gather(*(mesa(ex, llm.scoped(ex.id), config) for ex in train))
    judge_llm = llm.companion(judge) if judge else llm
    samples, jobs, missing = [], [], set()
    for ex, j in zip(train, judgements):
        for code, a in j.details["types"].items():
            diff = difference(a["rating"], ex.likert.get(code), ex.labels.get(code)) if a.get("rating") is not None \
                else None
            if diff is None:
                missing.add(code) if a.get("rating") is not None else None
                continue
            samples.append(SampleFeedback(example_id=ex.id, code=code, score_difference=diff[0], explanation=diff[1]))
            if ex.reasoning.get(code, "").strip() and a.get("reasoning", "").strip():
                user = render("mesa/s25_fitting_reasoning_user", candidate=a["reasoning"], human=ex.reasoning[code])
                jobs.append((samples[-1], ask("mesa/s25_fitting_reasoning_system", user, max_new_tokens, config.seed,
                                              f"{ex.id}/{code}/self-training{iteration}/reasoning")))
    answers = await asyncio.gather(*(judge_llm.chat_parsed(req, parse_quality) for _, req in jobs))
    for (sample, _), r in zip(jobs, answers):
        if r.ok:
            sample.reasoning_quality, sample.reasoning_comparison = r.value
    codes = sorted({s.code for s in samples})

    async def condense(code: str):
        comparisons = [{"difference": s.score_difference, "explanation": s.explanation,
                        **({"reasoning_quality": s.reasoning_quality, "reasoning_comparison": s.reasoning_comparison}
                           if s.reasoning_quality is not None else {})} for s in samples if s.code == code]
        user = render("mesa/s25_fitting_report_user", comparisons=json.dumps(comparisons, ensure_ascii=False, indent=1))
        return await judge_llm.chat_parsed(ask("mesa/s25_fitting_report_system", user, max_new_tokens, config.seed,
                                               f"{code}/self-training{iteration}/report"), parse_report)

    reports = await asyncio.gather(*(condense(c) for c in codes))
    return FeedbackRound(iteration=iteration, reports={c: r.value for c, r in zip(codes, reports) if r.ok},
                         samples=samples, unparsed=sum(not r.ok for r in answers) + sum(not r.ok for r in reports),
                         no_human_annotation=sorted(missing - {s.code for s in samples}))


async def self_train(train: list[MeetingErrorExample], llm: Calls, config: MesaConfig, iterations: int = 1,
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
