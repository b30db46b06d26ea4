"""Metrics shared by the four papers (thin wrappers over scikit-learn / scipy / krippendorff).

Faithfulness convention (the papers' and LLM-AggreFact's): labels are 1 = faithful, 0 = unfaithful, and the
*positive* class is "contains an error" (label 0). FPR = FP / (FP + TN): faithful summaries
flagged as unfaithful; FNR = FN / (FN + TP): unfaithful summaries passed as faithful.
BAcc = 1 - (FPR + FNR) / 2.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np


@dataclass
class BinaryReport:
    n: int
    bacc: float
    fpr: float
    fnr: float
    tp: int
    fp: int
    tn: int
    fn: int
    unparsed: int = 0

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def confusion(y_true: Sequence[int], y_pred: Sequence[int]) -> tuple[int, int, int, int]:
    """(tp, fp, tn, fn) with positive = error = label 0."""
    t = np.asarray(y_true, dtype=int)
    p = np.asarray(y_pred, dtype=int)
    tp = int(((t == 0) & (p == 0)).sum())
    fp = int(((t == 1) & (p == 0)).sum())
    tn = int(((t == 1) & (p == 1)).sum())
    fn = int(((t == 0) & (p == 1)).sum())
    return tp, fp, tn, fn


def _rate(a: int, b: int) -> float:
    return a / (a + b) if a + b else float("nan")


def binary_report(y_true: Sequence[int], y_pred: Sequence[int | None]) -> BinaryReport:
    """BAcc/FPR/FNR over the examples that have a prediction; ``unparsed`` counts those that do not."""
    pairs = [(t, p) for t, p in zip(y_true, y_pred) if p is not None]
    unparsed = len(y_true) - len(pairs)
    tp, fp, tn, fn = confusion([t for t, _ in pairs], [p for _, p in pairs])
    fpr, fnr = _rate(fp, tn), _rate(fn, tp)
    return BinaryReport(n=len(pairs), bacc=1 - (fpr + fnr) / 2, fpr=fpr, fnr=fnr, tp=tp, fp=fp, tn=tn, fn=fn,
                        unparsed=unparsed)


def balanced_accuracy(y_true: Sequence[int], y_pred: Sequence[int]) -> float:
    return binary_report(y_true, y_pred).bacc


def krippendorff_alpha(y_true: Sequence[int], y_pred: Sequence[int | None], level: str = "nominal") -> float:
    """Agreement between system and human labels (two 'coders'); a missing prediction is a missing value."""
    import krippendorff

    data = np.array([[float(v) for v in y_true], [np.nan if v is None else float(v) for v in y_pred]])
    paired = ~np.isnan(data).any(axis=0)
    if not paired.any() or np.all(data[:, paired] == data[0, paired][0]):
        return float("nan")  # no example with both labels, or one value everywhere: alpha undefined
    return float(krippendorff.alpha(reliability_data=data, level_of_measurement=level))


def bootstrap_ci(values: Sequence, statistic: Callable, n_resamples: int = 1000, confidence: float = 0.95,
                 seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap CI of ``statistic(*columns)`` over rows (scipy.stats.bootstrap, paired)."""
    from scipy.stats import bootstrap

    cols = tuple(np.asarray(c) for c in values)
    res = bootstrap(cols, statistic, paired=True, vectorized=False, n_resamples=n_resamples,
                    confidence_level=confidence, method="percentile", random_state=np.random.default_rng(seed))
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


# ---- summary-level correlation (G-Eval's meta-evaluation) ---------------------------------------------

CORRELATIONS = ("pearson", "spearman", "kendall")


def correlation(x: Sequence[float], y: Sequence[float], method: str) -> float:
    """Pearson r, Spearman rho or Kendall tau-b (scipy); NaN where undefined."""

    from scipy import stats

    fn = {"pearson": stats.pearsonr, "spearman": stats.spearmanr, "kendall": stats.kendalltau}.get(method)
    if fn is None:
        raise ValueError(f"unknown correlation {method!r}; expected one of {CORRELATIONS}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(fn(np.asarray(x, float), np.asarray(y, float))[0])


@dataclass
class GroupedCorrelation:
    """Mean of per-group correlations. ``undefined_groups``: groups left out because the correlation is
    undefined there (fewer than two scored items, or human or predicted scores constant)."""

    method: str
    mean: float
    n_groups: int
    undefined_groups: int
    ci: tuple[float, float] | None
    per_group: dict[str, float]

    def as_dict(self) -> dict:
        return {"mean": self.mean, "n_groups": self.n_groups, "undefined_groups": self.undefined_groups,
                "ci": list(self.ci) if self.ci else None}


def grouped_correlation(groups: Sequence[str], human: Sequence[float], pred: Sequence[float | None], method: str,
                        *, ci: bool = True, n_resamples: int = 1000, seed: int = 0) -> GroupedCorrelation:
    """Summary-level correlation as G-Eval's meta-evaluation computes it: the correlation between predicted and
    human scores within each group (SummEval: a source document's 16 summaries; Topical-Chat: a dialogue
    context's 6 responses), averaged over groups.

    Rule for undefined groups (G-Eval's meta-evaluation code does the same): items without a prediction
    are dropped; a group with fewer than two items, or whose human or predicted scores are all equal,
    has no correlation and is left out of the average; such groups are counted. ``mean`` is NaN when
    no group is defined. ``ci``: percentile bootstrap over the defined groups (None below two groups).
    """
    by: dict[str, tuple[list[float], list[float]]] = {}
    for g, h, p in zip(groups, human, pred):
        if p is not None:
            by.setdefault(str(g), ([], []))
            by[str(g)][0].append(float(h))
            by[str(g)][1].append(float(p))
    all_groups = list(dict.fromkeys(str(g) for g in groups))
    per: dict[str, float] = {}
    for g in all_groups:
        h, p = by.get(g, ([], []))
        if len(h) >= 2 and len(set(h)) > 1 and len(set(p)) > 1:
            per[g] = correlation(p, h, method)
    vals = [v for v in per.values() if v == v]
    mean = float(np.mean(vals)) if vals else float("nan")
    interval = None
    if ci and len(vals) >= 2:
        interval = (mean, mean) if len(set(vals)) == 1 else bootstrap_ci([vals], np.mean, n_resamples=n_resamples,
                                                                           seed=seed)
    return GroupedCorrelation(method=method, mean=mean, n_groups=len(vals), undefined_groups=len(all_groups) - len(vals),
                              ci=interval, per_group=per)


def mean_of_grouped_ci(per_group: Sequence[dict[str, float]], n_resamples: int = 1000, seed: int = 0
                       ) -> tuple[float, float] | None:
    """95% interval of a mean over aspects of grouped correlations (Table 1's Average column): a percentile
    bootstrap over the groups, every aspect's per-group correlations (``GroupedCorrelation.per_group``)
    resampled with the same groups; an aspect's undefined groups stay out of its own mean, as in
    ``grouped_correlation``, whose interval this is for one aspect. None below two defined groups."""
    groups = list(dict.fromkeys(g for per in per_group for g, v in per.items() if v == v))
    if len(groups) < 2:
        return None
    cols = [[per.get(g, float("nan")) for g in groups] for per in per_group]
    finite = {v for c in cols for v in c if v == v}

    def statistic(*columns) -> float:
        means = [float(np.mean(c[~np.isnan(c)])) for c in map(np.asarray, columns) if (~np.isnan(c)).any()]
        return float(np.mean(means)) if means else float("nan")

    if len(finite) == 1:
        return statistic(*cols), statistic(*cols)
    return bootstrap_ci(cols, statistic, n_resamples=n_resamples, seed=seed)


def score_distribution(values: Sequence[float | None], lo: int, hi: int) -> dict[int, float]:
    """Percentage of scores at each point of the scale lo..hi. Non-integer scores (means
    of annotators, probability-weighted scores) are rounded half up to the nearest point and clipped to
    the scale; missing scores are left out."""

    pts = [min(hi, max(lo, math.floor(v + 0.5))) for v in values if v is not None]
    return {k: (100.0 * pts.count(k) / len(pts) if pts else float("nan")) for k in range(lo, hi + 1)}


def point_biserial(labels: Sequence[int], scores: Sequence[float]) -> tuple[float, float, int]:
    """(r, p, n): point-biserial correlation between a binary label and a score (equal to
    Pearson's r with the label as 0/1). NaN where undefined (one class only, or constant scores)."""

    from scipy import stats

    n = len(labels)
    if n < 3 or len(set(labels)) < 2 or len(set(scores)) < 2:
        return float("nan"), float("nan"), n
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r, p = stats.pointbiserialr(np.asarray(labels, float), np.asarray(scores, float))
    return float(r), float(p), n


def correlation_test(x: Sequence[float], y: Sequence[float], method: str) -> tuple[float, float, int]:
    """(coefficient, p, n) of Spearman rho or Kendall tau-b, with significance; NaN where
    undefined (fewer than 3 pairs, or either side constant)."""

    from scipy import stats

    n = len(x)
    fn = {"spearman": stats.spearmanr, "kendall": stats.kendalltau, "pearson": stats.pearsonr}.get(method)
    if fn is None:
        raise ValueError(f"unknown correlation {method!r}; expected one of {CORRELATIONS}")
    if n < 3 or len(set(x)) < 2 or len(set(y)) < 2:
        return float("nan"), float("nan"), n
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r, p = fn(np.asarray(x, float), np.asarray(y, float))[:2]
    return float(r), float(p), n


def error_type_f1(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]], types: Sequence[str]
                  ) -> dict[str, dict[str, float]]:
    """Per error type, precision / recall / F1 of "the summary has this type" over all
    summaries (a factually correct one has no type); NaN where undefined (no gold and no predicted instance)."""
    out = {}
    for t in types:
        tp = sum(t in g and t in p for g, p in zip(gold, pred))
        fp = sum(t not in g and t in p for g, p in zip(gold, pred))
        fn = sum(t in g and t not in p for g, p in zip(gold, pred))
        prec, rec = _rate(tp, fp), _rate(tp, fn)
        f1 = 2 * tp / (2 * tp + fp + fn) if (2 * tp + fp + fn) else float("nan")
        out[t] = {"precision": prec, "recall": rec, "f1": f1, "support": tp + fn, "predicted": tp + fp}
    return out


def error_type_f1_ci(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]], error_type: str,
                     n_resamples: int = 1000, confidence: float = 0.95, seed: int = 0) -> tuple[float, float] | None:
    """Percentile bootstrap CI of one type's F1 over the summaries (resampled whole: a summary's gold and
    predicted types stay together); None where the type is neither in the gold nor predicted, or below 4 summaries."""
    g = np.array([error_type in x for x in gold], dtype=bool)
    p = np.array([error_type in x for x in pred], dtype=bool)
    if len(g) < 4 or not (g.any() or p.any()):
        return None
    idx = np.random.default_rng(seed).integers(0, len(g), (n_resamples, len(g)))
    gs, ps = g[idx], p[idx]
    tp, wrong = (gs & ps).sum(axis=1), (gs ^ ps).sum(axis=1)
    f1 = np.where(2 * tp + wrong > 0, 2 * tp / np.maximum(2 * tp + wrong, 1), np.nan)
    f1 = f1[~np.isnan(f1)]
    return percentile_interval(f1, confidence) if len(f1) else None


def wilson_ci(share_pct: float | None, n: int | None, confidence: float = 0.95) -> tuple[float, float] | None:
    """Wilson's interval of a share given in % over ``n`` items, in %; None without items."""
    from scipy.stats import norm

    if share_pct is None or n is None or n < 1 or share_pct != share_pct:
        return None
    z, k = norm.ppf(0.5 + confidence / 2), share_pct / 100
    centre = (k + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(k * (1 - k) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return 100 * (centre - half), 100 * (centre + half)


def error_type_criteria(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> dict[str, float]:
    """Four matching criteria over the factually incorrect summaries (non-empty gold types), in %: (i) exact match,
    (ii) predicted types a non-empty subset of the gold types, (iii) predicted types contain one of the gold
    types (overlap), (iv) predicted types contain all gold types (superset)."""
    pairs = [(set(g), set(p)) for g, p in zip(gold, pred) if g]
    n = len(pairs)
    share = (lambda k: 100.0 * k / n if n else float("nan"))
    return {"exact": share(sum(p == g for g, p in pairs)), "subset": share(sum(bool(p) and p <= g for g, p in pairs)),
            "overlap": share(sum(bool(p & g) for g, p in pairs)), "superset": share(sum(g <= p for g, p in pairs)),
            "n": n}


def pooled_balanced_accuracy(parts: Sequence[tuple[Sequence[int], Sequence[int | None]]]) -> float:
    """Balanced accuracy over the pooled examples of several datasets (AggreFact's domain score, the
    "micro average" over domains); unparsed predictions are left out as everywhere."""
    y = [a for ys, _ in parts for a in ys]
    p = [b for _, ps in parts for b in ps]
    return binary_report(y, p).bacc


def length_buckets(lengths: Sequence[int], y_true: Sequence[int], y_pred: Sequence[int | None],
                   edges: Sequence[int]) -> list[dict[str, float]]:
    """Accuracy per summary-length bucket [edges[i], edges[i+1]) (the last is open)."""
    out = []
    bounds = list(edges) + [None]
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        idx = [i for i, n in enumerate(lengths) if n >= lo and (hi is None or n < hi) and y_pred[i] is not None]
        acc = sum(y_true[i] == y_pred[i] for i in idx) / len(idx) if idx else float("nan")
        out.append({"bucket": f"{lo}-{hi - 1}" if hi is not None else f"{lo}+", "lo": lo, "n": len(idx), "accuracy": acc})
    return out


def mcnemar_exact(correct_a: dict[str, bool], correct_b: dict[str, bool]) -> dict[str, float | int]:
    """Exact (binomial) McNemar test of two judges on the same examples: ``b`` examples only judge A got right,
    ``c`` only judge B; two-sided p = min(1, 2 P(X <= min(b, c))), X ~ Binomial(b + c, 1/2) (p = 1 when they never
    disagree). ``correct_*`` map example id -> whether the judge's label is right (an unreadable label is not).
    Judges on different example sets are refused: a paired test needs the same examples."""
    if set(correct_a) != set(correct_b):
        only_a, only_b = sorted(set(correct_a) - set(correct_b)), sorted(set(correct_b) - set(correct_a))
        raise ValueError(f"a paired test needs the same examples: {len(only_a)} only in the first "
                         f"({', '.join(only_a[:3])}), {len(only_b)} only in the second ({', '.join(only_b[:3])})")
    b = sum(1 for k in correct_a if correct_a[k] and not correct_b[k])
    c = sum(1 for k in correct_a if correct_b[k] and not correct_a[k])
    n = b + c
    if n == 0:
        return {"b": 0, "c": 0, "n": len(correct_a), "p": 1.0}
    tail = sum(math.comb(n, k) for k in range(min(b, c) + 1)) / 2 ** n
    return {"b": b, "c": c, "n": len(correct_a), "p": min(1.0, 2 * tail)}


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment of ``p_values`` (family-wise error), in their own order: the i-th smallest is
    multiplied by (m - i + 1), then made non-decreasing along the sorted order, capped at 1."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def roc_auc(y_true: Sequence[int], scores: Sequence[float]) -> float:
    """Area under the ROC curve of ``scores`` (higher = label 1) against binary ``y_true``: the chance that a random
    positive scores above a random negative, a tie counting one half (Mann-Whitney U over n1 x n0); nan with one
    class only."""
    pos = [s for y, s in zip(y_true, scores) if y == 1]
    neg = [s for y, s in zip(y_true, scores) if y == 0]
    if not pos or not neg:
        return float("nan")
    return sum((p > n) + 0.5 * (p == n) for p in pos for n in neg) / (len(pos) * len(neg))


def best_threshold(y_true: Sequence[int], scores: Sequence[float]) -> tuple[float, float] | None:
    """The threshold t of highest balanced accuracy when label = int(score >= t), over the scores seen (the lowest t
    among ties), and that BAcc; None with one class only (no threshold can be chosen)."""
    if len(set(y_true)) < 2:
        return None
    best: tuple[float, float] | None = None
    for t in sorted(set(scores)):
        b = balanced_accuracy(list(y_true), [int(s >= t) for s in scores])
        if best is None or b > best[1]:
            best = (t, b)
    return best


def labels_said(y_pred: Sequence[int | None]) -> dict[str, int]:
    """How many readable predictions say 1 and how many 0: a judge that says one label to every example (whose
    BAcc is 50 by construction) shows here."""
    return {"1": sum(p == 1 for p in y_pred if p is not None), "0": sum(p == 0 for p in y_pred if p is not None)}


# The one resampling seed of every BAcc interval (not the seed that drew the examples): with the interval a function
# of the confusion counts (``balanced_accuracy_resamples``), the same judgements give the same interval on every page
BOOTSTRAP_SEED = 0


def readable_bacc_ci(y_true: Sequence[int], y_pred: Sequence[int | None], seed: int = BOOTSTRAP_SEED
                     ) -> tuple[float, float] | None:
    """``balanced_accuracy_ci`` over the examples with a readable label (those BAcc is computed on); None where it
    says nothing: fewer than four readable examples, or one gold class only among them."""
    pairs = readable_pairs(y_true, y_pred)
    return None if pairs is None else balanced_accuracy_ci(*pairs, seed=seed)


def bacc_cell(y_true: Sequence[int], y_pred: Sequence[int | None]) -> dict[str, Any]:
    """A BAcc cell as every table shows it: ``bacc`` over the readable labels (NaN where a gold class is missing
    among them), ``n`` the readable labels it rests on, ``n_examples`` the examples judged (unreadable ones too),
    ``ci`` its 95% interval (``readable_bacc_ci``, the one seed ``BOOTSTRAP_SEED``; None where it says nothing)."""
    rep = binary_report(y_true, y_pred)
    return {"bacc": rep.bacc, "n": rep.n, "n_examples": len(y_true), "ci": readable_bacc_ci(y_true, y_pred)}


def readable_pairs(y_true: Sequence[int], y_pred: Sequence[int | None]) -> tuple[list[int], list[int]] | None:
    """(gold, predicted) over the examples with a readable label; None where an interval over them says nothing:
    fewer than four, or one gold class only."""
    pairs = [(t, p) for t, p in zip(y_true, y_pred) if p is not None]
    if len(pairs) < 4 or len({t for t, _ in pairs}) < 2:
        return None
    return [t for t, _ in pairs], [p for _, p in pairs]


def stratified_resamples(y: np.ndarray, n_resamples: int, rng: np.random.Generator
                         ) -> tuple[np.ndarray, np.ndarray] | None:
    """Bootstrap resamples of the positions of each gold class (1s, then 0s: ``n_resamples`` rows each), so that
    every resample keeps both classes; None with one class."""
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    if not len(pos) or not len(neg):
        return None
    return (pos[rng.integers(0, len(pos), (n_resamples, len(pos)))],
            neg[rng.integers(0, len(neg), (n_resamples, len(neg)))])


def binary_alpha_ci(y_true: Sequence[int], y_pred: Sequence[int | None], n_resamples: int = 1000,
                    confidence: float = 0.95, seed: int = 0) -> tuple[float, float] | None:
    """Percentile bootstrap interval of Krippendorff's nominal alpha between gold and predicted binary labels, over
    the examples with a readable label, resampled within each gold class (as ``balanced_accuracy_ci``). Two coders
    and no missing value give alpha in closed form: with N units, d of them disagreeing, and n0 / n1 the counts of
    each value among all 2N, alpha = 1 - (2N - 1) d / (n0 n1) (equal to ``krippendorff_alpha``). None where
    ``readable_bacc_ci`` is None; a resample with one value everywhere (alpha undefined) is left out."""
    pairs = readable_pairs(y_true, y_pred)
    if pairs is None:
        return None
    y, p = np.asarray(pairs[0]), np.asarray(pairs[1])
    idx = np.concatenate(stratified_resamples(y, n_resamples, np.random.default_rng(seed)), axis=1)
    alpha = binary_alpha_rows(y[idx], p[idx])
    alpha = alpha[~np.isnan(alpha)]
    return percentile_interval(alpha, confidence) if len(alpha) else None


def binary_alpha_rows(y_true: np.ndarray, y_pred: np.ndarray) -> np.ndarray:
    """Krippendorff's nominal alpha of each row's (gold, predicted) binary labels, in closed form (see
    ``binary_alpha_ci``); NaN for a row with one value everywhere."""
    units = y_true.shape[1]
    ones = (y_true == 1).sum(axis=1) + (y_pred == 1).sum(axis=1)
    zeros = 2 * units - ones
    d = (y_true != y_pred).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(ones * zeros > 0, 1 - (2 * units - 1) * d / np.maximum(ones * zeros, 1), np.nan)


def error_rate_cis(report: "BinaryReport", confidence: float = 0.95
                   ) -> tuple[tuple[float, float] | None, tuple[float, float] | None]:
    """Wilson intervals of a report's FPR (over its FP + TN gold-faithful examples) and FNR (over FN + TP), as
    shares (0-1); None where a rate has no example."""
    def one(rate: float, n: int) -> tuple[float, float] | None:
        ci = wilson_ci(100 * rate if rate == rate else None, n, confidence)
        return None if ci is None else (float(ci[0]) / 100, float(ci[1]) / 100)
    return one(report.fpr, report.fp + report.tn), one(report.fnr, report.fn + report.tp)


# Variance of Fisher's z of each correlation on n pairs (Fieller, Hartley and Pearson, 1957: Spearman and Kendall).
FISHER_Z_VARIANCE = {"pearson": lambda n: 1 / (n - 3), "spearman": lambda n: 1.06 / (n - 3),
                     "kendall": lambda n: 0.437 / (n - 4)}


def fisher_ci(r: float | None, n: int | None, method: str = "pearson", confidence: float = 0.95
              ) -> tuple[float, float] | None:
    """The Fisher-z interval of a correlation ``r`` on ``n`` pairs (pearson, point-biserial; spearman and kendall
    with Fieller's variances); None below five pairs or for an undefined r."""
    from scipy.stats import norm

    if r is None or n is None or r != r or n < 5:
        return None
    if abs(r) >= 1:
        return float(r), float(r)
    half = norm.ppf(0.5 + confidence / 2) * math.sqrt(FISHER_Z_VARIANCE[method](n))
    z = math.atanh(r)
    return math.tanh(z - half), math.tanh(z + half)


def balanced_accuracy_ci(y_true: Sequence[int], y_pred: Sequence[int], n_resamples: int = 1000,
                         confidence: float = 0.95, seed: int = BOOTSTRAP_SEED) -> tuple[float, float]:
    """Percentile bootstrap CI of balanced accuracy, resampling within each gold class (stratified: every resample
    keeps both classes, so no resample leaves BAcc undefined, as an unstratified one can on a few examples)."""
    resampled = balanced_accuracy_resamples(y_true, y_pred, n_resamples, seed)
    if resampled is None:
        return float("nan"), float("nan")
    return percentile_interval(resampled, confidence)


def balanced_accuracy_resamples(y_true: Sequence[int], y_pred: Sequence[int], n_resamples: int = 1000,
                                seed: int = BOOTSTRAP_SEED) -> np.ndarray | None:
    """``balanced_accuracy_ci``'s bootstrap resamples of BAcc (within each gold class); None with one class.
    Resampling a gold class's n examples, k of them labelled right, gives a Binomial(n, k / n) count of right ones:
    each class's recall is drawn as that count, the same distribution as drawing the examples themselves, and a
    function of the confusion counts alone, so that the same counts give the same interval whatever the examples'
    order (a table's, a pooled domain's) and whichever of them were the right ones."""
    y, p = np.asarray(y_true), np.asarray(y_pred)
    sizes = [int((y == c).sum()) for c in (1, 0)]
    if not all(sizes):
        return None
    right = [int(((y == c) & (p == c)).sum()) for c in (1, 0)]
    rng = np.random.default_rng(seed)
    return sum(rng.binomial(n, k / n, n_resamples) / n for n, k in zip(sizes, right)) / 2


def fisher_resamples(r: float, n: int, method: str = "pearson", n_resamples: int = 1000, seed: int = 0
                     ) -> np.ndarray | None:
    """Draws of a correlation from ``fisher_ci``'s sampling distribution (normal on Fisher's z), to combine with
    other resampled scores; None where ``fisher_ci`` is None."""
    if r is None or n is None or r != r or n < 5:
        return None
    if abs(r) >= 1:
        return np.full(n_resamples, float(r))
    z = np.random.default_rng(seed).normal(math.atanh(r), math.sqrt(FISHER_Z_VARIANCE[method](n)), n_resamples)
    return np.tanh(z)


def mean_ci(values: Sequence[float], n_resamples: int = 1000, confidence: float = 0.95, seed: int = 0
            ) -> tuple[float, float] | None:
    """Percentile bootstrap interval of a mean over ``values`` (e.g. per-summary rating differences); None below
    four values."""
    v = np.asarray([x for x in values if x is not None and x == x], dtype=float)
    if len(v) < 4:
        return None
    rng = np.random.default_rng(seed)
    return percentile_interval(v[rng.integers(0, len(v), (n_resamples, len(v)))].mean(axis=1), confidence)


def t_interval(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float] | None:
    """Student's t interval of the mean of a few repeated measurements (runs with different seeds); None below
    two."""
    from scipy.stats import t

    v = np.asarray([x for x in values if x is not None and x == x], dtype=float)
    if len(v) < 2:
        return None
    half = t.ppf(0.5 + confidence / 2, len(v) - 1) * v.std(ddof=1) / math.sqrt(len(v))
    return float(v.mean() - half), float(v.mean() + half)


def sd_interval(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float] | None:
    """The chi-square interval of a standard deviation over a few repeated measurements (normal theory); None
    below two."""
    from scipy.stats import chi2

    v = np.asarray([x for x in values if x is not None and x == x], dtype=float)
    if len(v) < 2:
        return None
    df, var = len(v) - 1, v.var(ddof=1)
    alpha = (1 - confidence) / 2
    return float(math.sqrt(df * var / chi2.ppf(1 - alpha, df))), float(math.sqrt(df * var / chi2.ppf(alpha, df)))


def percentile_interval(resampled: np.ndarray, confidence: float = 0.95) -> tuple[float, float]:
    """The central ``confidence`` interval of a statistic's bootstrap resamples (the percentile method)."""
    alpha = (1 - confidence) / 2
    low, high = np.quantile(resampled, [alpha, 1 - alpha])
    return float(low), float(high)
