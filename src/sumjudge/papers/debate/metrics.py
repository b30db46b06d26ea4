"""DEBATE's run metrics: the rated-aspect metrics plus what the debates' details show."""

from __future__ import annotations

from typing import Any

from sumjudge.judges.base import Judgement
from sumjudge.run.metrics import rated_metrics


def debate_stats(details: list[dict[str, Any]]) -> dict[str, Any]:
    """The share of debates the Critic ended with NO ISSUE, the mean number of Critic reviews, reminded
    answers and unreadable final scores (with how many had a readable earlier score)."""
    out: dict[str, Any] = {}
    debates = [d for d in details if "stopped" in d]
    if debates:
        out["debate"] = {"debates": len(debates),
                         "no_issue_share": sum(d["stopped"] == "no_issue" for d in debates) / len(debates),
                         "mean_iterations": sum(d.get("iterations", 0) for d in debates) / len(debates),
                         "reminded_turns": sum(bool(t.get("reminded")) for d in debates for t in d.get("turns", [])),
                         "final_unreadable": sum(d.get("final_source") == "unparsed" for d in debates),
                         "final_unreadable_with_earlier_score": sum(d.get("final_source") == "unparsed"
                                                                    and d.get("earlier_score") is not None
                                                                    for d in debates)}
    return out


def debate_metrics(examples, judgements: list[Judgement]) -> dict[str, Any]:
    """Per-aspect correlations and distributions (``rated_metrics``) with the debates' statistics."""
    return rated_metrics(examples, judgements, details_stats=debate_stats)
