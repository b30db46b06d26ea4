"""Figures drawn from a table show the table's own intervals, its n, a labelled chance line and the dataset."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from sumjudge import plots, report  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def planted():
    return pd.DataFrame([
        {"evaluator": "judge A", "dataset": "planted-set", "subset": "all", "reproduced": 62.5, "95% CI": "[50, 87.5]",
         "n": 20},
        {"evaluator": "judge B", "dataset": "planted-set", "subset": "all", "reproduced": 43.8, "95% CI": "[31.2, 50]",
         "n": 20},
        {"evaluator": "judge A", "dataset": "planted-set", "subset": "kept", "reproduced": 55.1, "95% CI": None,
         "n": 16},
        {"evaluator": "judge B", "dataset": "planted-set", "subset": "kept", "reproduced": 40.0,
         "95% CI": "[-1.5e+01, 6.2e+01]", "n": 16},
    ])


def test_parse_ci_reads_the_table_text():
    assert plots.parse_ci("[37.5, 93.8]") == (37.5, 93.8)
    assert plots.parse_ci("[-0.193, 0.83]") == (-0.193, 0.83)
    assert plots.parse_ci("[-1.5e+01, 6.2e+01]") == (-15.0, 62.0)
    assert plots.parse_ci((0.1, 0.2)) == (0.1, 0.2)
    for none in (None, float("nan"), "", "[nan, nan]", (None, None)):
        assert plots.parse_ci(none) is None


def test_n_and_title():
    assert plots.n_text([12, 12, None]) == "n = 12"
    assert plots.n_text([20, 16]) == "n = 16-20"
    assert plots.n_text([24], noun="judged texts") == "24 judged texts"
    assert plots.n_text([]) is None
    assert plots.title("BAcc", ["b-set", "a-set", "b-set", None], [12]) == "BAcc\nb-set, a-set (n = 12)"
    assert plots.title("BAcc", []) == "BAcc"


def test_bars_draw_the_tables_intervals_chance_line_and_dataset():
    table = planted()
    fig, ax = plt.subplots()
    cats = plots.bars(ax, table, category="evaluator", series="subset", horizontal=True)
    plots.chance(ax, 50, "chance (BAcc 50)", horizontal=True)
    ax.set_title(plots.title("BAcc", table["dataset"], table["n"]))
    plots.legend_outside(ax)
    assert cats == ["judge A", "judge B"]
    (data,) = report.figure_data(fig)
    assert "planted-set" in data["title"] and "n = 16-20" in data["title"]
    assert [ln["label"] for ln in data["lines"]] == ["chance (BAcc 50)"]
    assert data["lines"][0]["x"] == [50.0, 50.0]
    # each interval is a segment from the table's low to its high end (value axis x), none where the table has none
    spans = sorted(tuple(sorted((seg[0][0], seg[1][0]))) for c in data["collections"] for seg in c["segments"]
                   if seg[0][1] == seg[1][1] and seg[0][0] != seg[1][0])
    assert spans == [(-15.0, 62.0), (31.2, 50.0), (50.0, 87.5)]
    assert len(data["bars"]) == 4 and {b[2] for b in data["bars"]} == {62.5, 43.8, 55.1, 40.0}
    assert {t.get_text() for t in ax.get_legend().get_texts()} == {"all (n = 20)", "kept (n = 16)", "chance (BAcc 50)"}
    assert data["ylim"][0] > data["ylim"][1]  # the table's first row on top


def test_debate_figure2_has_intervals_zero_line_dataset_and_every_tick():
    from sumjudge.papers.debate import tables as debate_tables

    rows = [{"experiment": "Figure 2", "aspect": "average", "panel": panel, "setting": setting, "metric": metric,
             "reproduced": 0.2, "ci": (-0.4, 0.554), "dataset": "planted-chat", "n": 24}
            for panel, settings in (("iterations", ["n = 1", "n = 2", "n = 3"]), ("persona", ["strict", "plain"]),
                                    ("strategy", ["plain", "both"]))
            for setting in settings for metric in ("r", "rho")]
    fig = debate_tables.figure2(rows)
    data = report.figure_data(fig)
    assert len(data) == 3
    for ax, panel in zip(data, fig.get_axes()):
        assert "planted-chat (24 judged texts)" in ax["title"]
        assert [ln["label"] for ln in ax["lines"]] == ["no correlation (0)"]
        assert any(seg[0][1] == -0.4 and seg[1][1] == 0.554 for c in ax["collections"] for seg in c["segments"])
        assert all(t.get_text() for t in panel.get_xticklabels())
    assert [t.get_text() for t in fig.get_axes()[0].get_xticklabels()] == ["n = 1", "n = 2", "n = 3"]
    assert {t.get_text() for t in fig.legends[0].get_texts()} == {"r", "rho", "no correlation (0)"}


def test_factax_length_figure_names_its_dataset_and_a_one_label_judges_accuracy():
    from sumjudge.papers.factax import tables as factax_tables

    gold = {"0-59": "4 × 1, 1 × 0", "60+": "12 × 1, 3 × 0"}
    rows = [{"method": m, "bucket": b, "n": n, "accuracy": 20, "ci_low": 5, "ci_high": 60,
             "labels said": f"0 × 1, {n} × 0", "gold labels": gold[b]}
            for m in ("FacTax", "FacTax-WD") for b, n in (("0-59", 5), ("60+", 15))]
    (data,) = report.figure_data(factax_tables.length_figure(rows, ["planted-consistency"]))
    assert data["title"].endswith("planted-consistency (20 summaries per method)")
    labels = [ln["label"] for ln in data["lines"]]
    assert "says 1 to all (80%)" in labels and "says 0 to all (20%)" in labels and not any("coin" in x for x in labels)
