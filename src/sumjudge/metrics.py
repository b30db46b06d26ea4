"""Metrics shared by the four papers (thin wrappers over scikit-learn / scipy / krippendorff).

Faithfulness convention (MADISSE A.2.1): labels are 1 = faithful, 0 = unfaithful, and the
*positive* class is "contains an error" (label 0). FPR = FP / (FP + TN): faithful summaries
flagged as unfaithful; FNR = FN / (FN + TP): unfaithful summaries passed as faithful.
BAcc = 1 - (FPR + FNR) / 2.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

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
