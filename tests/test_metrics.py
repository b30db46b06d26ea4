"""Metrics against independent computations (scikit-learn, krippendorff by hand) and hand-worked cases."""

import math

import numpy as np
import pytest
from sklearn.metrics import balanced_accuracy_score, confusion_matrix

from sumjudge.metrics import balanced_accuracy, binary_report, bootstrap_ci, krippendorff_alpha


def test_hand_worked_confusion_with_error_as_positive():
    # label 1 = faithful, 0 = unfaithful; positive = contains an error (label 0)
    y = [0, 0, 0, 0, 1, 1, 1, 1, 1, 1]
    p = [0, 0, 0, 1, 1, 1, 1, 1, 0, 0]
    r = binary_report(y, p)
    assert (r.tp, r.fn, r.tn, r.fp) == (3, 1, 4, 2)
    assert r.fnr == pytest.approx(1 / 4) and r.fpr == pytest.approx(2 / 6)
    assert r.bacc == pytest.approx(1 - (1 / 4 + 2 / 6) / 2)


@pytest.mark.parametrize("seed", range(5))
def test_bacc_fpr_fnr_match_sklearn(seed):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, 200)
    p = np.where(rng.random(200) < 0.7, y, 1 - y)
    r = binary_report(list(y), list(p))
    assert r.bacc == pytest.approx(balanced_accuracy_score(y, p))
    tn, fp, fn, tp = confusion_matrix(y, p, labels=[1, 0]).ravel()  # labels order: negative (1), positive (0)
    assert r.fpr == pytest.approx(fp / (fp + tn)) and r.fnr == pytest.approx(fn / (fn + tp))
    assert balanced_accuracy(list(y), list(p)) == pytest.approx(r.bacc)


def test_unparsed_predictions_are_counted_not_scored():
    r = binary_report([0, 1, 1, 0], [0, None, 1, None])
    assert r.n == 2 and r.unparsed == 2 and r.bacc == 1.0


def _alpha_nominal_by_hand(a, b):
    """Krippendorff's alpha, nominal, two coders, no missing values: 1 - D_o / D_e via the coincidence matrix."""
    values = sorted(set(a) | set(b))
    idx = {v: i for i, v in enumerate(values)}
    o = np.zeros((len(values), len(values)))
    for x, y in zip(a, b):
        o[idx[x], idx[y]] += 1
        o[idx[y], idx[x]] += 1
    n_c = o.sum(1)
    n = n_c.sum()
    d_o = (o.sum() - np.trace(o)) / n
    d_e = (n * n - (n_c ** 2).sum()) / (n * (n - 1))
    return 1 - d_o / d_e


@pytest.mark.parametrize("seed", range(4))
def test_krippendorff_matches_hand_computation(seed):
    rng = np.random.default_rng(seed)
    y = list(rng.integers(0, 2, 60))
    p = [v if rng.random() < 0.75 else 1 - v for v in y]
    assert krippendorff_alpha(y, p) == pytest.approx(_alpha_nominal_by_hand(y, p))


def test_krippendorff_edge_cases():
    assert krippendorff_alpha([0, 1, 0, 1], [0, 1, 0, 1]) == pytest.approx(1.0)
    assert math.isnan(krippendorff_alpha([1, 1], [1, 1]))  # one value everywhere: undefined
    assert math.isnan(krippendorff_alpha([0, 1], [None, None]))  # nothing to compare
    # a missing prediction is a missing value, not a disagreement
    assert krippendorff_alpha([0, 1, 0, 1, 1], [0, 1, 0, 1, None]) == pytest.approx(1.0)


def test_bootstrap_ci_brackets_the_estimate_and_is_seeded():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 300)
    p = np.where(rng.random(300) < 0.8, y, 1 - y)
    est = balanced_accuracy(list(y), list(p))
    lo, hi = bootstrap_ci([y, p], lambda a, b: balanced_accuracy(list(a), list(b)), n_resamples=300, seed=1)
    assert lo < est < hi and hi - lo < 0.2
    assert (lo, hi) == bootstrap_ci([y, p], lambda a, b: balanced_accuracy(list(a), list(b)), n_resamples=300, seed=1)
