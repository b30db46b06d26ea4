"""Metrics of a finished run, one function per kind of method (``METRICS_BY_KIND``): faithfulness and
ambiguity detection (BAcc, alpha, FPR/FNR), rated aspects (DEBATE's summary-level correlations and score
distributions), meeting-summary error types (MESA's per-type point-biserial correlation and BAcc)."""

from __future__ import annotations

from typing import Any

from .data import registry as data_registry
from .judges.base import Judgement


def faithfulness_metrics(examples, judgements: list[Judgement]) -> dict[str, Any]:
    """Binary labels: BAcc and friends. Score-labelled data (GovReport, SQuALITY: ``example.score``, no label):
    Pearson (FacTax's metric there) between the human score and the method's ``score``."""
    if any(getattr(ex, "score", None) is not None for ex in examples) and all(ex.label is None for ex in examples):
        out = score_metrics([ex.score for ex in examples], judgements)
    else:
        out = binary_metrics([ex.label for ex in examples], judgements)
    if any("predicted_types" in j.details for j in judgements) and any(ex.error_types for ex in examples):
        out["error_types"] = error_type_metrics(examples, judgements)
    return out


def score_metrics(human: list[float | None], judgements: list[Judgement]) -> dict[str, Any]:
    """Pearson (with p) and, for reference, Spearman and Kendall between human and method scores over the
    examples where both exist. A method that gives only a verdict (zero-shot, CoT) is scored by its label
    (1 faithful / 0 not: the correlation is then point-biserial), counted as ``score_from_label``; examples
    with neither (unreadable verdicts) are counted, not guessed. ``bacc`` is None: there is no binary label."""
    from .metrics import correlation_test

    method_scores = [j.score if j.score is not None else j.label for j in judgements]
    pairs = [(h, s) for h, s in zip(human, method_scores) if h is not None and s is not None]
    x, y = [h for h, _ in pairs], [s for _, s in pairs]
    out: dict[str, Any] = {"bacc": None, "n": len(pairs), "unparsed": sum(s is None for s in method_scores),
                           "score_from_label": sum(j.score is None and j.label is not None for j in judgements),
                           "label_sources": _count(j.label_source for j in judgements)}
    for method in ("pearson", "spearman", "kendall"):
        r, p, n = correlation_test(x, y, method)
        out[method] = {"r": r, "p": p, "n": n}
    return out


def error_type_metrics(examples, judgements: list[Judgement]) -> dict[str, Any]:
    """FacTax Tables 6-7 on data with (converted) error types: per-type F1 and the four matching criteria,
    over the summaries with a readable verdict. Summaries whose gold types include one FacTax could not
    map (DiaSumFact "Others", FacEval "Other Error": mapped by hand in the paper) are left out and counted."""
    from .data.factax_types import FACTAX_TYPES, UNMAPPED_TYPES
    from .metrics import error_type_criteria, error_type_f1

    keep = [(ex.error_types, j.details.get("predicted_types", [])) for ex, j in zip(examples, judgements)
            if j.label is not None and not set(UNMAPPED_TYPES) & set(ex.error_types)]
    gold, pred = [g for g, _ in keep], [p for _, p in keep]
    return {"f1": error_type_f1(gold, pred, FACTAX_TYPES), "criteria": error_type_criteria(gold, pred),
            "n": len(keep), "left_out_unmapped": sum(bool(set(UNMAPPED_TYPES) & set(ex.error_types)) for ex in examples)}


def ambiguity_metrics(examples, judgements: list[Judgement]) -> dict[str, Any]:
    """Ambiguity detection against the human ambiguity labels. binary_report's positive class is label 0,
    so both sides are flipped: "positive" = ambiguous, FNR = missed ambiguous sentences."""
    flip = (lambda v: None if v is None else 1 - v)
    flipped = [Judgement(example_id=j.example_id, label=flip(j.label), label_source=j.label_source,
                         scores={k: flip(v) for k, v in j.scores.items()}) for j in judgements]
    return binary_metrics([flip(int(ex.ambiguity.ambiguous)) for ex in examples], flipped)


def binary_metrics(y: list[int], judgements: list[Judgement]) -> dict[str, Any]:
    from .metrics import binary_report, krippendorff_alpha

    def report(p: list[int | None]) -> dict[str, Any]:
        rep = binary_report(y, p)
        return {"bacc": rep.bacc, "k_alpha": krippendorff_alpha(y, p), "fpr": rep.fpr, "fnr": rep.fnr, "n": rep.n,
                "unparsed": rep.unparsed, "confusion": {"tp": rep.tp, "fp": rep.fp, "tn": rep.tn, "fn": rep.fn}}

    out = {**report([j.label for j in judgements]), "label_sources": _count(j.label_source for j in judgements)}
    variants = sorted({k for j in judgements for k in j.scores})  # e.g. MADISSE's agents vote / debates vote
    if variants:
        out["variants"] = {k: report([j.scores.get(k) for j in judgements]) for k in variants}
    return out


def _count(items) -> dict[str, int]:
    out: dict[str, int] = {}
    for x in items:
        out[x] = out.get(x, 0) + 1
    return out


def rated_metrics(examples, judgements: list[Judgement]) -> dict[str, Any]:
    """Per aspect: the dataset's summary-level correlations (DEBATE Table 1: SummEval Spearman and
    Kendall per document, Topical-Chat Pearson and Spearman per dialogue context, averaged over groups;
    undefined groups counted), unparsed scores, the score distributions of humans and the method
    (Table 2, each on its own scale: the method's scale is the one its judgements record), and what the
    method's details show (``protocol_stats``: DEBATE's stops and iterations, G-Eval's coverage);
    ``average``: the mean over aspects, as Table 1's Average column."""
    from .judges.aspects import aspect
    from .metrics import grouped_correlation, score_distribution

    methods = data_registry.get(examples[0].dataset).correlations if examples else ()
    names = list(dict.fromkeys(k for j in judgements for k in j.scores))
    per: dict[str, Any] = {}
    for name in names:
        a = aspect(examples[0].dataset, name)
        details = [j.details.get("aspects", {}).get(name, {}) for j in judgements]
        lo, hi = next((tuple(d["scale"]) for d in details if d.get("scale")), (a.lo, a.hi))
        human = [ex.scores[name] for ex in examples]
        pred = [j.scores.get(name) for j in judgements]
        groups = [ex.group_id for ex in examples]
        hs = [h for h in human if h is not None]
        h_lo, h_hi = int(min(hs)) if hs else a.lo, int(max(hs)) if hs else a.hi
        per[name] = {**{m: grouped_correlation(groups, human, pred, m).as_dict() for m in methods},
                     "n": sum(p is not None for p in pred), "unparsed": sum(p is None for p in pred),
                     "scale": [lo, hi], **protocol_stats(details),
                     "distribution": {"human": score_distribution(human, min(h_lo, a.lo), max(h_hi, a.hi)),
                                      "method": score_distribution(pred, lo, hi)}}
    average = {m: _mean([per[n][m]["mean"] for n in names]) for m in methods}
    return {"correlations": list(methods), "aspects": per, "average": average,
            "n_groups": len({ex.group_id for ex in examples}), "unparsed": sum(per[n]["unparsed"] for n in names),
            "score_sources": _count(str(d.get("final_source", d.get("source"))) for j in judgements
                                    for d in j.details.get("aspects", {}).values())}


def protocol_stats(details: list[dict[str, Any]]) -> dict[str, Any]:
    """What a rated method's per-aspect details say about how its scores came about: DEBATE's share of debates
    the Critic ended with NO ISSUE, the mean number of Critic reviews, reminded answers and unreadable final
    scores (with how many had a readable earlier score); G-Eval's mean coverage of the scale's points and
    how many fell below the floor."""
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
    covered = [d["coverage"] for d in details if d.get("coverage") is not None]
    if covered:
        out["coverage"] = {"mean": sum(covered) / len(covered), "min": min(covered), "n": len(covered),
                           "below_floor": sum(bool(d.get("low_coverage")) for d in details)}
    protocols = sorted({d["protocol"] for d in details if d.get("protocol")})
    if protocols:
        out["protocol"] = protocols
    return out


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
    from .metrics import binary_report, point_biserial

    types = list(dict.fromkeys(k for j in judgements for k in j.scores))
    per: dict[str, Any] = {}
    for t in types:
        rows = [(ex.labels.get(t), j.scores.get(t), j.details.get("types", {}).get(t, {}).get("detected"),
                 ex.likert.get(t)) for ex, j in zip(examples, judgements)]
        ratings = [s for _, s, _, _ in rows if s is not None]
        common = {"mean_rating": sum(ratings) / len(ratings) if ratings else None, "scored": len(ratings),
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
                  "point_biserial": {"r": r, "p": p, "n": n}, "bacc": rep.bacc, "detected_n": rep.n, **common}
    q = [j.details.get("quality") for j in judgements if j.details.get("quality") is not None]
    return {"types": per, "unparsed": sum(v is None for j in judgements for v in j.scores.values()),
            "mean_quality": sum(q) / len(q) if q else None, "transcript": transcript_stats(judgements),
            "score_sources": _count(str(d.get("score_source")) for j in judgements
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
    from .metrics import correlation_test

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
    return out


def _mean(values: list[float]) -> float:
    ok = [v for v in values if v == v]
    return sum(ok) / len(ok) if ok and len(ok) == len(values) else float("nan")


METRICS_BY_KIND = {"faithfulness": faithfulness_metrics, "ambiguity": ambiguity_metrics, "rated": rated_metrics,
                   "meeting-errors": meeting_error_metrics}


def transcript_columns(metrics: dict[str, Any]) -> dict[str, Any]:
    """A MESA run's share of transcript words its prompts kept (``metrics["transcript"]``), as a table column."""
    t = metrics.get("transcript") or {}
    return {"transcript_kept_%": round(100 * t["kept_share"], 1) if t.get("available") else None}


def parse_columns(metrics: dict[str, Any]) -> dict[str, Any]:
    """A run's parse rates as table columns (``metrics["parse_rates"]``): the % of answers read on the first
    try and after retries, and the examples whose verdict used an option-scoring fallback."""
    pr = metrics.get("parse_rates") or {}
    pct = (lambda v: None if v is None else round(100 * v, 1))
    return {"parsed_first_%": pct(pr.get("first_try")), "parsed_%": pct(pr.get("after_retries")),
            "fallback_examples": pr.get("examples_with_fallback")}

