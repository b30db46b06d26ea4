"""Metrics of a finished run, one function per kind of method (``KINDS``, a ``registry.Registry`` of ``MethodKind``):
the core's faithfulness (BAcc, alpha, FPR/FNR) and rated aspects (summary-level correlations and score
distributions); a paper registers the kinds of its own tasks. A method may bring its own metrics
(``MethodSpec.metrics``)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

from sumjudge.data import registry as data_registry
from sumjudge.judges.aspects import aspect
from sumjudge.judges.base import Judgement
from sumjudge.metrics import (
    bacc_cell,
    binary_alpha_ci,
    binary_report,
    correlation_test,
    error_rate_cis,
    grouped_correlation,
    krippendorff_alpha,
    labels_said,
    mean_of_grouped_ci,
    score_distribution,
)
from sumjudge.registry import Registry


def faithfulness_metrics(examples, judgements: list[Judgement]) -> dict[str, Any]:
    """Binary labels: BAcc and friends. Score-labelled data (GovReport, SQuALITY: ``example.score``, no label):
    Pearson (the metric long-document benchmarks report) between the human score and the method's ``score``."""
    if any(getattr(ex, "score", None) is not None for ex in examples) and all(ex.label is None for ex in examples):
        out = score_metrics([ex.score for ex in examples], judgements)
    else:
        out = binary_metrics([ex.label for ex in examples], judgements)
    return out


def score_metrics(human: list[float | None], judgements: list[Judgement]) -> dict[str, Any]:
    """Pearson (with p) and, for reference, Spearman and Kendall between human and method scores over the
    examples where both exist. A method that gives only a verdict (zero-shot, CoT) is scored by its label
    (1 faithful / 0 not: the correlation is then point-biserial), counted as ``score_from_label``; examples
    with neither (unreadable verdicts) are counted, not guessed. ``bacc`` is None: there is no binary label."""

    method_scores = [j.score if j.score is not None else j.label for j in judgements]
    pairs = [(h, s) for h, s in zip(human, method_scores) if h is not None and s is not None]
    x, y = [h for h, _ in pairs], [s for _, s in pairs]
    out: dict[str, Any] = {"bacc": None, "n": len(pairs), "unparsed": sum(s is None for s in method_scores),
                           "score_from_label": sum(j.score is None and j.label is not None for j in judgements),
                           "label_sources": count_by(j.label_source for j in judgements)}
    for method in ("pearson", "spearman", "kendall"):
        r, p, n = correlation_test(x, y, method)
        out[method] = {"r": r, "p": p, "n": n}
    return out


def binary_scores(y: list[int], p: list[int | None]) -> dict[str, Any]:
    """BAcc, K-alpha, FPR, FNR of predicted labels ``p`` (None: unreadable) against gold ``y``, each with its 95%
    interval, the labels said, the gold labels of the same (readable) examples and the confusion counts."""

    rep, cell = binary_report(y, p), bacc_cell(y, p)  # the BAcc cell every table shows (value, n, interval)
    alpha_ci = binary_alpha_ci(y, p)
    fpr_ci, fnr_ci = error_rate_cis(rep)
    listed = (lambda c: list(c) if c else None)
    return {"bacc": cell["bacc"], "bacc_ci": listed(cell["ci"]), "k_alpha": krippendorff_alpha(y, p),
            "k_alpha_ci": listed(alpha_ci), "fpr": rep.fpr, "fpr_ci": listed(fpr_ci), "fnr": rep.fnr,
            "fnr_ci": listed(fnr_ci), "n": cell["n"], "said": labels_said(p),
            "gold": labels_said([t for t, q in zip(y, p) if q is not None]),
            "unparsed": rep.unparsed, "confusion": {"tp": rep.tp, "fp": rep.fp, "tn": rep.tn, "fn": rep.fn}}


def binary_metrics(y: list[int], judgements: list[Judgement]) -> dict[str, Any]:
    out = {**binary_scores(y, [j.label for j in judgements]),
           "label_sources": count_by(j.label_source for j in judgements)}
    variants = sorted({k for j in judgements for k in j.scores})  # e.g. a debate's agents vote / debates vote
    if variants:
        out["variants"] = {k: binary_scores(y, [j.scores.get(k) for j in judgements]) for k in variants}
    return out


def count_by(items) -> dict[str, int]:
    out: dict[str, int] = {}
    for x in items:
        out[x] = out.get(x, 0) + 1
    return out


def rated_metrics(examples, judgements: list[Judgement],
                  details_stats: Callable[[list[dict[str, Any]]], dict[str, Any]] | None = None) -> dict[str, Any]:
    """Per aspect: the dataset's summary-level correlations (SummEval: Spearman and Kendall
    per document; Topical-Chat: Pearson and Spearman per dialogue context; averaged over groups;
    undefined groups counted), unparsed scores, the score distributions of humans and the method
    (Table 2, each on its own scale: the method's scale is the one its judgements record), and what the
    method's details show (``protocol_stats``: G-Eval's coverage; a protocol's own ``details_stats``);
    ``average``: the mean over aspects, as Table 1's Average column."""

    methods = data_registry.get(examples[0].dataset).correlations if examples else ()
    names = list(dict.fromkeys(k for j in judgements for k in j.scores))
    per: dict[str, Any] = {}
    per_group: dict[str, list[dict[str, float]]] = {m: [] for m in methods}  # each aspect's, for the average's interval
    for name in names:
        a = aspect(examples[0].dataset, name)
        details = [j.details.get("aspects", {}).get(name, {}) for j in judgements]
        lo, hi = next((tuple(d["scale"]) for d in details if d.get("scale")), (a.lo, a.hi))
        human = [ex.scores[name] for ex in examples]
        pred = [j.scores.get(name) for j in judgements]
        groups = [ex.group_id for ex in examples]
        hs = [h for h in human if h is not None]
        h_lo, h_hi = int(min(hs)) if hs else a.lo, int(max(hs)) if hs else a.hi
        corr = {m: grouped_correlation(groups, human, pred, m) for m in methods}
        for m in methods:
            per_group[m].append(corr[m].per_group)
        per[name] = {**{m: c.as_dict() for m, c in corr.items()},
                     "n": sum(p is not None for p in pred), "n_human": len(hs),
                     "unparsed": sum(p is None for p in pred), "scale": [lo, hi], **protocol_stats(details),
                     **(details_stats(details) if details_stats else {}),
                     "distribution": {"human": score_distribution(human, min(h_lo, a.lo), max(h_hi, a.hi)),
                                      "method": score_distribution(pred, lo, hi)}}
    average = {m: _mean([per[n][m]["mean"] for n in names]) for m in methods}
    average_ci = {m: list(ci) if average[m] == average[m] and (ci := mean_of_grouped_ci(per_group[m])) else None
                  for m in methods}
    return {"correlations": list(methods), "aspects": per, "average": average, "average_ci": average_ci,
            "n_groups": len({ex.group_id for ex in examples}), "unparsed": sum(per[n]["unparsed"] for n in names),
            "score_sources": count_by(str(d.get("final_source", d.get("source"))) for j in judgements
                                    for d in j.details.get("aspects", {}).values())}


def protocol_stats(details: list[dict[str, Any]]) -> dict[str, Any]:
    """What a rated method's per-aspect details say about how its scores came about: G-Eval's mean coverage
    of the scale's points and how many fell below the floor, and the protocol variants recorded."""
    out: dict[str, Any] = {}
    covered = [d["coverage"] for d in details if d.get("coverage") is not None]
    if covered:
        out["coverage"] = {"mean": sum(covered) / len(covered), "min": min(covered), "n": len(covered),
                           "below_floor": sum(bool(d.get("low_coverage")) for d in details)}
    protocols = sorted({d["protocol"] for d in details if d.get("protocol")})
    if protocols:
        out["protocol"] = protocols
    return out


def _mean(values: list[float]) -> float:
    ok = [v for v in values if v == v]
    return sum(ok) / len(ok) if ok and len(ok) == len(values) else float("nan")


@dataclass(frozen=True)
class MethodKind:
    """A kind of method (``MethodSpec.kind``): the kind of data it judges (``DatasetSpec.kind``; its own name where
    ``data`` is empty), its run's metrics over the judged examples and their judgements (a method may bring its own:
    ``MethodSpec.metrics``), and ``check(method, dataset, examples)``, which raises a ConfigError where the examples
    lack what the kind needs beyond their data's kind (annotations of its own)."""

    name: str
    metrics: Callable[[list, list], dict[str, Any]]
    data: str = ""
    check: Callable[[str, str, list], None] | None = None

    @property
    def judges(self) -> str:
        """The kind of data its methods judge."""
        return self.data or self.name


# the kinds of method: the core's below; a paper registers the kinds of its own tasks when it is imported (looked
# for in the plug-in packages on a miss)
KINDS: Registry[MethodKind] = Registry("kind of method")


def register_kind(kind: MethodKind) -> MethodKind:
    return KINDS.add(kind.name, kind)


register_kind(MethodKind("faithfulness", faithfulness_metrics))
register_kind(MethodKind("rated", rated_metrics))


SAID_COLUMN = "labels said"
GOLD_COLUMN = "gold labels"


def said_column(said: dict[str, int] | None, gold: dict[str, int] | None = None) -> dict[str, Any]:
    """How many readable examples a judge labelled 1 and 0 (``metrics["said"]``, ``metrics.labels_said``) as a table
    column, ``"15 × 1, 5 × 0"``: a judge that says one label to everything shows there (``results_notes`` says so
    in words). Given ``gold`` (``metrics["gold"]``), also how many of those examples the gold labels call 1 and 0
    (``gold labels``): a rate over one gold class (FPR, FNR) rests on that class's count alone."""
    counts = (lambda c: None if c is None else f"{c.get('1', 0)} × 1, {c.get('0', 0)} × 0")
    return {SAID_COLUMN: counts(said), **({} if gold is None else {GOLD_COLUMN: counts(gold)})}


def cell_sizes(metrics: dict[str, Any], n_examples: int | None) -> dict[str, int | None]:
    """A BAcc cell's sizes as table columns: ``n`` the readable labels its number rests on (``binary_scores``' n,
    as ``metrics.bacc_cell``), ``n_examples`` the examples judged (unreadable answers too)."""
    return {"n": metrics.get("n"), "n_examples": n_examples}


def one_label_said(cell: str | None) -> str | None:
    """The label ("1" or "0") a ``said_column`` cell shows given to every readable example; None where both were
    said, or nothing."""

    m = re.match(r"^(\d+) × 1, (\d+) × 0$", (cell or "").strip())
    if not m or (int(m.group(1)) == 0) == (int(m.group(2)) == 0):
        return None
    return "1" if int(m.group(1)) else "0"


# What the columns above mean, in words a table's key gives below it (``report.column_key``), keyed by the columns
# that must all be present
COLUMN_WORDS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("n", "n_examples"), "`n` is the examples with a readable label that a row's numbers rest on, `n_examples` the "
                          "examples the row counts, unreadable answers included"),
    (("parsed_first_%", "parsed_%"), "`parsed_first_%` and `parsed_%` are the shares (%) of the answers the method "
                                     "had to read (not of examples: a debate reads several answers an example) that "
                                     "were read on the first try and after retries"),
    (("fallback_examples",), "`fallback_examples` the examples whose verdict used option scoring in place of an "
                             "unreadable answer (only a profile with `label_fallback: option_scores` allows it)"),
    (("label_sources",), "`label_sources` how many verdicts came from each source (`parsed`: read from the "
                         "answer; `unparsed`: none readable, left out; any other: the method's own, as its docs say)"),
    (("k_alpha",), "`k_alpha` is Krippendorff's alpha of the judge's labels against the gold labels (1: the same on "
                   "every example, 0: no more agreement than chance gives, below 0: less), beside its 95% interval"),
    (("wall_s_per_example",), "`wall_s_per_example` the seconds a model took per example where it answered during "
                              "the run, empty where every answer came from the response cache or a recording"),
    (("transcript_kept_%",), "`transcript_kept_%` the mean share (%) of a transcript's words the judge was shown, the "
                             "rest cut from its end to fit the model's context"),
)


def parse_columns(metrics: dict[str, Any]) -> dict[str, Any]:
    """A run's parse rates as table columns (``metrics["parse_rates"]``): the % of answers read on the first
    try and after retries, and the examples whose verdict used an option-scoring fallback."""
    pr = metrics.get("parse_rates") or {}
    pct = (lambda v: None if v is None else round(100 * v, 1))
    return {"parsed_first_%": pct(pr.get("first_try")), "parsed_%": pct(pr.get("after_retries")),
            "fallback_examples": pr.get("examples_with_fallback")}
