"""FacTax's Figure 2 (accuracy by summary length): the reference drawn is the accuracy of a judge that says one label
to every example (each gold class's share in the figure's data), not a coin's; the table counts the labels said and
the gold labels per bucket, and the legend names a method that said one label to every example."""

import json

import matplotlib

matplotlib.use("Agg")

from sumjudge.papers.factax.tables import bucket_counts, length_figure, length_rows  # noqa: E402


def write_run(folder, examples, dataset=None):
    folder.mkdir()
    if dataset:
        (folder / "config.json").write_text(json.dumps({"run": {"method": "factax", "dataset": dataset}}))
    (folder / "results.jsonl").write_text("\n".join(
        json.dumps({"example": {"summary": " ".join(["w"] * words), "label": gold}, "judgement": {"label": said}})
        for words, gold, said in examples))
    return folder


def test_bucket_counts_count_readable_examples_only():
    counts = bucket_counts([5, 15, 25, 60], [1, 0, 1, 1], [1, 1, None, 0], [0, 10, 50])
    assert counts == [{"1": 1, "0": 0}, {"1": 0, "0": 1}, {"1": 1, "0": 0}]


def test_a_one_label_judge_is_drawn_against_the_gold_shares_and_named(tmp_path):
    data = [(10, 1), (20, 1), (30, 1), (70, 1), (80, 0)]  # (words, gold): 80% label 1
    runs = {"A": write_run(tmp_path / "a", [(w, g, 0) for w, g in data]),
            "B": write_run(tmp_path / "b", [(w, g, g) for w, g in data])}
    rows = length_rows(runs, [0, 60])
    a = [r for r in rows if r["method"] == "A"]
    assert [r["labels said"] for r in a] == ["0 × 1, 3 × 0", "0 × 1, 2 × 0"]
    assert [r["gold labels"] for r in a] == ["3 × 1, 0 × 0", "1 × 1, 1 × 0"]
    assert [r["accuracy"] for r in a] == [0.0, 50.0]  # in percent
    ax = length_figure(rows, ["d"]).axes[0]
    lines = {line.get_label(): line.get_ydata()[0] for line in ax.get_lines() if line.get_label().startswith("says")}
    assert lines == {"says 1 to all (80%)": 80, "says 0 to all (20%)": 20}
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "A (said 0 to all)" in legend and "B" in legend and not any("coin" in t for t in legend)


def test_each_row_names_its_runs_dataset(tmp_path):
    runs = {"A": write_run(tmp_path / "a", [(10, 1, 1), (80, 0, 0)], dataset="summeval-consistency")}
    assert {r["dataset"] for r in length_rows(runs, [0, 60])} == {"summeval-consistency"}
