"""The judge arena on the tiny model: every judge of a dataset sees the same examples, each cell has BAcc with a
CI and its cost, every pair of judges gets a paired test, and a rerun costs no call."""

import csv
import json

import pytest

from sumjudge import cli
from sumjudge.arena import Cell, paired_rows, parse_cells


def read(path):
    with path.open(encoding="utf-8") as f:
        return list(csv.DictReader(f))


@pytest.mark.slow
def test_the_arena_command_writes_its_three_tables_and_resumes(tiny_model_dir, tmp_path, capsys):
    args = ["arena", "--methods", "zero-shot:max_new_tokens=8", "cot:max_new_tokens=8",
            "zero-shot:max_new_tokens=8;temperature=0.7;top_p=0.9",
            "--datasets", "tofueval-meetingbank", "--level", "sentence", "--limit", "3", "--model", tiny_model_dir,
            "--cache", tmp_path / "c.sqlite", "--out", tmp_path / "arena"]
    assert cli.main([str(a) for a in args]) == 0
    arena = read(tmp_path / "arena" / "arena.csv")
    preds = read(tmp_path / "arena" / "predictions.csv")
    paired = read(tmp_path / "arena" / "paired.csv")
    assert [r["judge"] for r in arena] == ["zero-shot[max_new_tokens=8]", "cot[max_new_tokens=8]",
                                           "zero-shot[max_new_tokens=8,temperature=0.7,top_p=0.9]"]
    assert all(r["n"] == "3" and float(r["prompt_tokens_per_example"]) > 0 for r in arena)
    by_judge = {}
    for p in preds:
        by_judge.setdefault(p["judge"], set()).add(p["example"])
    assert len(by_judge) == 3 and len({frozenset(v) for v in by_judge.values()}) == 1  # the same examples
    assert len(paired) == 3 and all(0 <= float(r["p_holm"]) <= 1 and float(r["p"]) <= float(r["p_holm"])
                                    for r in paired)
    capsys.readouterr()
    assert cli.main([str(a) for a in args]) == 0  # resumed: every cell from the cache
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["cells"] == 3
    metrics = [json.loads(p.read_text()) for p in (tmp_path / "arena").glob("*/*/metrics.json")]
    assert len(metrics) == 3 and all(m["engine"]["backend_calls"] == 0 for m in metrics)


def test_method_settings_and_unknown_kinds():
    cells = parse_cells(["zero-shot", "madisse:sessions=3;rounds=2"], ["a", "b"])
    assert [(c.judge, c.dataset) for c in cells] == [("zero-shot", "a"), ("zero-shot", "b"),
                                                     ("madisse[sessions=3,rounds=2]", "a"),
                                                     ("madisse[sessions=3,rounds=2]", "b")]
    with pytest.raises(Exception, match="expected key=value"):
        parse_cells(["zero-shot:temperature"], ["a"])


def test_paired_rows_compare_judges_on_their_shared_examples_only():
    gold = {"e1": 1, "e2": 0, "e3": 1}
    preds = [{"dataset": "d", "judge": j, "example": e, "gold": g, "label": lab}
             for j, labels in (("A", {"e1": 1, "e2": 0, "e3": 1}), ("B", {"e1": 0, "e2": 1, "e3": None}))
             for (e, g), lab in zip(gold.items(), labels.values())]
    (row,) = paired_rows(preds)
    assert (row["only_a_right"], row["only_b_right"], row["n"]) == (3, 0, 3)  # B's unreadable label is wrong
    assert row["p"] == pytest.approx(2 / 8) and row["p_holm"] == row["p"]
    with pytest.raises(ValueError, match="same examples"):
        paired_rows(preds[:-1])
    assert Cell("m", "d").judge == "m"


def test_ranking_and_pareto_front():
    from sumjudge.arena import pareto_front, ranking

    # (cost, accuracy): 1 beats 3 (cheaper, more accurate); 0, 1, 2 are each best at their cost
    assert pareto_front([(10, 0.6), (20, 0.7), (100, 0.9), (50, 0.65)]) == [0, 1, 2]
    assert pareto_front([(5, 0.5), (5, 0.5)]) == [0, 1]  # ties dominate neither
    row = {"prompt_tokens_per_example": 90.0, "completion_tokens_per_example": 10.0, "n": 4}
    table = [{**row, "judge": "a", "dataset": "x", "bacc": 0.6}, {**row, "judge": "a", "dataset": "y", "bacc": None},
             {**row, "judge": "b", "dataset": "x", "bacc": 0.8}, {**row, "judge": "b", "dataset": "y", "bacc": 0.7}]
    got = ranking(table)
    assert [(r["judge"], round(r["mean_bacc"], 3), r["datasets"], r["of_datasets"]) for r in got] == \
        [("b", 0.75, 2, 2), ("a", 0.6, 1, 2)]
    assert got[0]["tokens_per_example"] == 100.0 and got[0]["n"] == 8
