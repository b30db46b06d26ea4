"""MESA's run metrics: per error type against the human annotations (point-biserial r, BAcc, Likert
correlations and gap), mean quality and how much of the transcripts the prompts kept."""

from __future__ import annotations

from typing import Any

from sumjudge.judges.base import Judgement
from sumjudge.metrics import binary_report, correlation_test, labels_said, mean_ci, point_biserial, readable_bacc_ci
from sumjudge.run.metrics import MethodKind, count_by, register_kind


def meeting_error_metrics(examples, judgements: list[Judgement]) -> dict[str, Any]:
    """MESA per error type against the human annotations:

    - yes/no labels: point-biserial correlation between error presence and the type's score (Table 3; the
      score is 5 - impact rating, so that, as in the paper, a negative r means errors lower the score),
      balanced accuracy of error identification (Table 1);
    - 0-5 Likert impact scores, where the dataset has them: Spearman and Kendall between the score and the
      human impact (Table 4: negative = higher impact, lower score) and the gap of the mean LLM rating to
      the mean human rating over the same summaries (Table 5, signed: positive = the LLM rates the impact
      higher); on yes/no-only data these are reported as unavailable;
    - always: mean impact rating (Table 2's quantity). A type without any human label is unavailable."""

    types = list(dict.fromkeys(k for j in judgements for k in j.scores))
    per: dict[str, Any] = {}
    for t in types:
        rows = [(ex.labels.get(t), j.scores.get(t), j.details.get("types", {}).get(t, {}).get("detected"),
                 ex.likert.get(t)) for ex, j in zip(examples, judgements)]
        ratings = [s for _, s, _, _ in rows if s is not None]
        ci = mean_ci(ratings)
        common = {"mean_rating": sum(ratings) / len(ratings) if ratings else None,
                  "mean_rating_ci": list(ci) if ci else None, "scored": len(ratings),
                  "unscored": len(rows) - len(ratings), "likert": likert_metrics([(h, s) for _, s, _, h in rows])}
        labelled = [(y, s, d) for y, s, d, _ in rows if y is not None]
        if not labelled:
            per[t] = {"available": False, "reason": "the dataset has no human label for this error type", **common}
            continue
        scored = [(y, s) for y, s, _ in labelled if s is not None]
        r, p, n = point_biserial([y for y, _ in scored], [5 - s for _, s in scored])
        det = [(y, int(d)) for y, _, d in labelled if d is not None]
        rep = binary_report([y for y, _ in det], [d for _, d in det])
        per[t] = {"available": True, "n": len(labelled), "errors": sum(y for y, _, _ in labelled),
                  "point_biserial": {"r": r, "p": p, "n": n}, "bacc": rep.bacc,
                  "bacc_ci": readable_bacc_ci([y for y, _ in det], [d for _, d in det]), "detected_n": rep.n,
                  "said": labels_said([d for _, d in det]), "gold": labels_said([y for y, _ in det]), **common}
    q = [j.details.get("quality") for j in judgements if j.details.get("quality") is not None]
    return {"types": per, "unparsed": sum(v is None for j in judgements for v in j.scores.values()),
            "mean_quality": sum(q) / len(q) if q else None, "transcript": transcript_stats(judgements),
            "score_sources": count_by(str(d.get("score_source")) for j in judgements
                                    for d in j.details.get("types", {}).values())}


def transcript_stats(judgements: list[Judgement]) -> dict[str, Any]:
    """How much of the transcripts the method read: mean words, mean share of words kept, examples cut."""
    pairs = [(j.details["transcript_words"], j.details["transcript_words_kept"]) for j in judgements
             if j.details.get("transcript_words")]
    if not pairs:
        return {"available": False}
    return {"available": True, "mean_words": sum(w for w, _ in pairs) / len(pairs),
            "kept_share": sum(k / w for w, k in pairs) / len(pairs), "cut": sum(k < w for w, k in pairs),
            "n": len(pairs)}


def likert_metrics(pairs: list[tuple[float | None, float | None]]) -> dict[str, Any]:
    """Tables 4-5 for one error type from (human Likert, LLM rating) pairs."""

    if all(h is None for h, _ in pairs):
        return {"available": False, "reason": "no human Likert scores (the dataset has yes/no labels only)"}
    both = [(h, s) for h, s in pairs if h is not None and s is not None]
    out: dict[str, Any] = {"available": True, "n": len(both)}
    for m in ("spearman", "kendall"):
        r, p, n = correlation_test([h for h, _ in both], [5 - s for _, s in both], m)
        out[m] = {"r": r, "p": p, "n": n}
    out["mean_human"] = sum(h for h, _ in both) / len(both) if both else None
    out["mean_llm"] = sum(s for _, s in both) / len(both) if both else None
    out["gap"] = out["mean_llm"] - out["mean_human"] if both else None
    out["gap_ci"] = mean_ci([s - h for h, s in both])  # a bootstrap over the summaries' rating differences
    return out


def transcript_columns(metrics: dict[str, Any]) -> dict[str, Any]:
    """A MESA run's share of transcript words its prompts kept (``metrics["transcript"]``), as a table column."""
    t = metrics.get("transcript") or {}
    return {"transcript_kept_%": round(100 * t["kept_share"], 1) if t.get("available") else None}


# MESA's task, meeting-summary errors by type: a kind of method of its own, judging meeting-error data
register_kind(MethodKind("meeting-errors", meeting_error_metrics))
