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


# ---- summary-level correlation (DEBATE) ----------------------------------------------------------

def _hand_groups():
    groups = ["a"] * 3 + ["b"] * 3 + ["c"] * 4 + ["d"] * 2 + ["e"] * 3
    human = [1, 2, 3, 1, 2, 3, 1, 2, 3, 4, 2, 2, 1, 2, 3]
    pred = [1, 2, 3, 3, 2, 1, 1, 3, 2, 4, 1, 5, None, 5, 5]
    return groups, human, pred


@pytest.mark.parametrize("method,c_value", [("spearman", 0.8), ("kendall", 4 / 6), ("pearson", 0.8)])
def test_grouped_correlation_hand_worked(method, c_value):
    from sumjudge.metrics import grouped_correlation

    g = grouped_correlation(*_hand_groups(), method)
    # a: perfect (1), b: reversed (-1), c: one swapped pair; d: constant human, e: constant prediction
    # once the missing one is dropped -> both undefined, left out and counted
    assert g.per_group == pytest.approx({"a": 1.0, "b": -1.0, "c": c_value})
    assert g.mean == pytest.approx((1 - 1 + c_value) / 3)
    assert (g.n_groups, g.undefined_groups) == (3, 2)
    assert g.ci is not None and g.ci[0] <= g.mean <= g.ci[1]


def test_grouped_correlation_equals_scipy_per_group_average():
    from scipy import stats

    from sumjudge.metrics import grouped_correlation

    rng = np.random.default_rng(3)
    groups = [f"doc{i}" for i in range(20) for _ in range(16)]
    human = rng.integers(1, 6, size=len(groups)).astype(float) + rng.random(len(groups)) / 3
    pred = human + rng.normal(0, 1.5, size=len(groups))
    for method, fn in (("spearman", stats.spearmanr), ("kendall", stats.kendalltau), ("pearson", stats.pearsonr)):
        expected = np.mean([fn(pred[i * 16:(i + 1) * 16], human[i * 16:(i + 1) * 16])[0] for i in range(20)])
        g = grouped_correlation(groups, human, list(pred), method)
        assert g.mean == pytest.approx(expected) and g.n_groups == 20 and g.undefined_groups == 0


def test_the_average_over_aspects_has_a_bootstrap_interval_over_the_same_groups():
    from sumjudge.metrics import grouped_correlation, mean_of_grouped_ci

    rng = np.random.default_rng(5)
    groups = [f"doc{i}" for i in range(8) for _ in range(6)]
    human = rng.integers(1, 6, size=len(groups)).astype(float)
    a = grouped_correlation(groups, human, list(human + rng.normal(0, 1.0, size=len(groups))), "spearman")
    b = grouped_correlation(groups, human, list(rng.normal(0, 1.0, size=len(groups))), "spearman")
    # one aspect: exactly that aspect's own interval
    assert mean_of_grouped_ci([a.per_group]) == pytest.approx(a.ci)
    low, high = mean_of_grouped_ci([a.per_group, b.per_group])
    assert low < (a.mean + b.mean) / 2 < high and (low, high) != pytest.approx(a.ci)
    # an aspect undefined in a group keeps the others' value there; below two defined groups: none
    b.per_group.pop("doc0")
    assert mean_of_grouped_ci([a.per_group, b.per_group]) is not None
    assert mean_of_grouped_ci([{"doc0": 0.5}, {"doc0": 0.1}]) is None


def test_grouped_correlation_with_nothing_defined_is_nan_and_counted():
    from sumjudge.metrics import grouped_correlation

    g = grouped_correlation(["a", "a", "b", "b"], [1, 2, 3, 4], [3, 3, None, None], "spearman")
    assert g.mean != g.mean and g.n_groups == 0 and g.undefined_groups == 2 and g.ci is None


def test_score_distribution_rounds_half_up_and_clips():
    from sumjudge.metrics import score_distribution

    d = score_distribution([1.0, 1.5, 2.49, 4.6667, 3.3333, None, 7], 1, 5)
    assert d == pytest.approx({1: 100 / 6, 2: 200 / 6, 3: 100 / 6, 4: 0.0, 5: 200 / 6})


def test_point_biserial_equals_pearson_on_0_1_labels_and_is_nan_when_undefined():
    from scipy import stats

    from sumjudge.metrics import point_biserial

    y = [0, 0, 1, 1, 1, 0, 1]
    s = [4.5, 4.0, 2.0, 3.0, 1.0, 5.0, 2.5]
    r, p, n = point_biserial(y, s)
    assert r == pytest.approx(stats.pearsonr(y, s)[0]) and r < 0 and 0 < p < 1 and n == 7
    assert math.isnan(point_biserial([1, 1, 1], [1, 2, 3])[0]) and math.isnan(point_biserial([0, 1, 0], [2, 2, 2])[0])


def test_exact_mcnemar_against_hand_worked_values():
    from sumjudge.metrics import mcnemar_exact

    # 10 examples: A alone right on 1 (b = 1), B alone right on 5 (c = 5), both right on 4.
    # P(X <= 1), X ~ Bin(6, 1/2) = (1 + 6) / 64 = 7/64; two-sided p = 14/64 = 0.21875
    a = {f"e{i}": ok for i, ok in enumerate([True] * 5 + [False] * 5)}
    b = {f"e{i}": ok for i, ok in enumerate([True] * 4 + [False] + [True] * 5)}
    got = mcnemar_exact(a, b)
    assert (got["b"], got["c"], got["n"]) == (1, 5, 10) and got["p"] == pytest.approx(14 / 64)
    # b = 0, c = 8: 2 / 2**8 = 0.0078125; never disagreeing: p = 1; symmetric in the judges
    a8 = {f"e{i}": False for i in range(8)}
    b8 = {f"e{i}": True for i in range(8)}
    assert mcnemar_exact(a8, b8)["p"] == pytest.approx(2 / 256) == mcnemar_exact(b8, a8)["p"]
    assert mcnemar_exact(a8, a8)["p"] == 1.0
    # b = c = 3: P(X <= 3), X ~ Bin(6, 1/2) = 42/64 > 1/2: capped at 1
    a3 = {f"e{i}": i < 3 for i in range(6)}
    b3 = {f"e{i}": i >= 3 for i in range(6)}
    assert mcnemar_exact(a3, b3)["p"] == 1.0


def test_a_paired_test_of_judges_on_different_examples_is_refused():
    from sumjudge.metrics import mcnemar_exact

    with pytest.raises(ValueError, match=r"same examples: 1 only in the first \(e9\), 0 only in the second"):
        mcnemar_exact({"e1": True, "e9": False}, {"e1": False})


def test_holm_against_hand_worked_values():
    from sumjudge.metrics import holm

    # sorted 0.01, 0.02, 0.03, 0.5 (m = 4): 0.04, 0.06, 0.06 (0.03 x 2 raised to the running max), 0.5
    assert holm([0.03, 0.5, 0.01, 0.02]) == pytest.approx([0.06, 0.5, 0.04, 0.06])
    assert holm([0.4, 0.6]) == pytest.approx([0.8, 0.8]) and holm([]) == []
    assert holm([0.9, 0.8]) == pytest.approx([1.0, 1.0])  # capped at 1


def test_roc_auc_and_the_best_threshold_against_hand_worked_values():
    from sumjudge.metrics import best_threshold, roc_auc

    # positives score 4, 3; negatives 3, 1: pairs (4,3) (4,1) (3,1) won, (3,3) a tie -> 3.5 / 4
    assert roc_auc([1, 1, 0, 0], [4, 3, 3, 1]) == 0.875
    assert roc_auc([0, 1], [2, 1]) == 0.0 and roc_auc([1, 1], [1, 2]) != roc_auc([1, 1], [1, 2])  # one class: nan
    # t=1: all faithful, BAcc 0.5; t=3: [1,1,1,0], 0.75; t=4: [1,0,0,0], 0.75: the lowest of the tie
    assert best_threshold([1, 1, 0, 0], [4, 3, 3, 1]) == (3, 0.75)
    # t=4: [1,0,1,1], 0.75; t=4.5: [1,0,0,1], 0.5; t=5: [1,0,0,0], 0.75
    assert best_threshold([1, 0, 1, 0], [5, 2, 4, 4.5]) == (4, 0.75)
    assert best_threshold([1, 1], [1, 2]) is None


def test_balanced_accuracy_ci_resamples_within_each_class():
    from sumjudge.metrics import balanced_accuracy, balanced_accuracy_ci

    assert balanced_accuracy_ci([1, 1, 0, 0], [1, 1, 0, 0]) == (1.0, 1.0)
    assert balanced_accuracy_ci([1, 1, 0, 0, 0], [1, 1, 1, 1, 1]) == (0.5, 0.5)  # defined in every resample
    y, p = [1] * 10 + [0] * 10, [1] * 7 + [0] * 3 + [0] * 6 + [1] * 4
    low, high = balanced_accuracy_ci(y, p, seed=1)
    assert 0.3 < low < balanced_accuracy(y, p) == 0.65 < high < 0.95
    assert balanced_accuracy_ci(y, p, seed=1) == (low, high)  # seeded
    lo1, hi1 = balanced_accuracy_ci([1, 1, 1], [1, 0, 1])
    assert lo1 != lo1 and hi1 != hi1  # one class: nan


def test_every_bacc_of_a_run_comes_with_its_interval_and_correlations_with_fishers():
    """A run's BAcc carries a 95% bootstrap interval over its readable examples (None where it says nothing), tables
    show it as one column; a correlation's interval is Fisher's z (textbook: r = 0.5 on 30 pairs -> [0.17, 0.73])."""
    from sumjudge.judges.base import Judgement
    from sumjudge.metrics import fisher_ci, readable_bacc_ci
    from sumjudge.report import comparison
    from sumjudge.run.metrics import binary_metrics

    y = [0, 1] * 20
    labels = [t if i % 5 else 1 - t for i, t in enumerate(y)]
    labels[3] = None
    m = binary_metrics(y, [Judgement(example_id=str(i), label=v, label_source="parsed") for i, v in enumerate(labels)])
    low, high = m["bacc_ci"]
    assert low < m["bacc"] < high and high - low < 0.5 and m["n"] == 39
    assert readable_bacc_ci([0, 1, 1], [0, 1, 1]) is None and readable_bacc_ci([1] * 8, [1] * 8) is None
    assert [round(v, 2) for v in fisher_ci(0.5, 30)] == [0.17, 0.73]
    assert fisher_ci(0.5, 30, "kendall")[0] > fisher_ci(0.5, 30)[0]  # Kendall's z varies less (0.437 / (n - 4))
    assert fisher_ci(0.5, 4) is None and fisher_ci(float("nan"), 40) is None
    df = comparison([{"metric": "BAcc (%)", "paper": 60.0, "reproduced": 80.0, "ci": (70.04, 88.9)},
                     {"metric": "K-alpha", "paper": 0.3, "reproduced": 0.5, "ci": None}])
    assert list(df.columns[:4]) == ["metric", "paper", "reproduced", "95% CI"]
    assert df["95% CI"][0] == "[70, 88.9]" and df["95% CI"].isna()[1]


@pytest.mark.parametrize("seed", range(6))
def test_binary_alpha_in_closed_form_equals_krippendorff(seed):
    """Two coders, binary labels, no missing value: alpha = 1 - (2N - 1) d / (n0 n1), the same as the krippendorff
    package's (the bootstrap of K-alpha's interval computes it that way over a thousand resamples at once)."""
    from sumjudge.metrics import binary_alpha_rows

    rng = np.random.default_rng(seed)
    y, p = rng.integers(0, 2, 15), rng.integers(0, 2, 15)
    expected = krippendorff_alpha(list(y), list(p))
    got = binary_alpha_rows(y[None, :], p[None, :])[0]
    assert got == pytest.approx(expected) if expected == expected else got != got
    assert np.isnan(binary_alpha_rows(np.ones((1, 4)), np.ones((1, 4)))[0])  # one value everywhere: undefined


def test_k_alpha_fpr_and_fnr_of_a_run_come_with_intervals():
    """K-alpha's interval is a stratified bootstrap (as BAcc's), FPR's and FNR's are Wilson's over the gold-faithful
    and gold-unfaithful examples a rate is a share of (textbook: 1 of 4 -> [4.6, 69.9]); a judge that answers one
    label to every example gets a zero-width FPR or FNR interval only where the share is not 0 or 1."""
    from sumjudge.judges.base import Judgement
    from sumjudge.metrics import binary_alpha_ci, binary_report, error_rate_cis
    from sumjudge.run.metrics import binary_metrics

    y = [0, 1] * 20
    labels = [t if i % 5 else 1 - t for i, t in enumerate(y)]
    m = binary_metrics(y, [Judgement(example_id=str(i), label=v, label_source="parsed") for i, v in enumerate(labels)])
    for key in ("k_alpha", "fpr", "fnr"):
        low, high = m[f"{key}_ci"]
        assert low < m[key] < high, key
    rep = binary_report([1, 1, 1, 1, 0, 0], [0, 1, 1, 1, 0, 0])  # 1 of 4 faithful flagged; no error missed
    fpr_ci, fnr_ci = error_rate_cis(rep)
    assert [round(100 * v, 1) for v in fpr_ci] == [4.6, 69.9]
    assert fnr_ci[0] == 0 and 0 < fnr_ci[1] < 1
    assert binary_alpha_ci([1, 1, 1], [1, 0, 1]) is None and binary_alpha_ci([0, 1, 1, 0], [None] * 4) is None
    assert binary_alpha_ci(y, labels, seed=3) == binary_alpha_ci(y, labels, seed=3)  # seeded
    assert error_rate_cis(binary_report([1, 1], [1, 1]))[1] is None  # no gold error: FNR has no interval


def test_error_type_f1_and_matching_criteria_come_with_intervals():
    """FacTax's Tables 6-7: a per-type F1 with a bootstrap interval over summaries (a summary's gold and predicted
    types resampled together), the criteria's shares with Wilson's (textbook: 50% of 100 -> [40.4, 59.6])."""
    from sumjudge.metrics import error_type_f1, error_type_f1_ci, wilson_ci

    gold = [["Entity_Error"], [], ["Entity_Error", "Predicate_Error"], [], ["Predicate_Error"]] * 6
    pred = [["Entity_Error"], ["Entity_Error"], ["Entity_Error"], [], []] * 6
    f1 = error_type_f1(gold, pred, ["Entity_Error", "Predicate_Error"])
    low, high = error_type_f1_ci(gold, pred, "Entity_Error")
    assert low < f1["Entity_Error"]["f1"] < high <= 1
    assert error_type_f1_ci(gold, pred, "Predicate_Error") == (0.0, 0.0)  # never predicted: F1 0 in every resample
    assert error_type_f1_ci(gold, pred, "Circumstance_Error") is None  # in neither
    assert [round(v, 1) for v in wilson_ci(50.0, 100)] == [40.4, 59.6]
    assert wilson_ci(float("nan"), 10) is None and wilson_ci(50.0, 0) is None
