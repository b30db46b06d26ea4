"""The words a results page says where a table shows nothing: each kind of empty cell is named, a table that shows
something is left alone."""

import csv

from sumjudge.judges.base import Judgement
from sumjudge.metrics import labels_said
from sumjudge.results_notes import notes, table_notes
from sumjudge.run_metrics import binary_metrics, said_column


def rows(*dicts):
    return list(dicts), list(dicts[0])


def test_a_table_that_shows_something_gets_no_words():
    r, cols = rows({"evaluator": "A", "metric": "BAcc %", "reproduced": "61.9", "95% CI": "[40, 80]", "n": "12",
                    "labels said": "5 × 1, 7 × 0"},
                   {"evaluator": "B", "metric": "BAcc %", "reproduced": "55", "95% CI": "[30, 75]", "n": "12",
                    "labels said": "6 × 1, 6 × 0"})
    assert table_notes("t", r, cols) == []


def test_each_empty_cell_is_named():
    assert table_notes("t", [], ["a"]) == ["`t` is empty: no row was computed"]
    r, cols = rows({"evaluator": "A", "metric": "BAcc %", "reproduced": "", "n": "0"},
                   {"evaluator": "B", "metric": "BAcc %", "reproduced": "50", "n": "20", "95% CI": "[50, 50]",
                    "labels said": "20 × 1, 0 × 0"},
                   {"evaluator": "B", "metric": "K-alpha", "reproduced": "-0.3", "n": "20",
                    "labels said": "20 × 1, 0 × 0"},
                   {"evaluator": "C", "metric": "BAcc %", "reproduced": "6.25", "n": "12", "95% CI": "[0, 18.8]",
                    "labels said": "9 × 1, 3 × 0"})
    said = table_notes("t", r, cols)
    assert any("1 of 4 rows rest on n = 0 (e.g. A / BAcc %)" in s for s in said)
    # the judge of two metric rows is named once, with the label it said
    assert any("in 1 cell a judge said one label to every readable example (e.g. B: all 1)" in s for s in said)
    assert any("1 interval of zero width (e.g. B / BAcc %: [50, 50])" in s for s in said)
    assert any("C / BAcc % is worse than chance" in s and "check the labels' direction" in s for s in said)


def test_a_grid_whose_rows_are_alike_is_named():
    r, cols = rows(*({"setting": str(i), "metric": "r", "value": "0.21"} for i in range(4)))
    assert table_notes("g", r, cols) == ["`g`: every one of its 4 rows (r) has the same value (0.21): the table "
                                         "cannot tell its rows apart"]


def test_label_counts_come_with_every_binary_metric_and_read_back_from_a_saved_table(tmp_path):
    assert labels_said([1, 1, None, 0]) == {"1": 2, "0": 1}
    js = [Judgement(example_id=str(i), label=1) for i in range(4)]
    m = binary_metrics([0, 1, 0, 1], js)
    assert m["said"] == {"1": 4, "0": 0} and m["bacc"] == 0.5
    row = {"evaluator": "always-1", "metric": "BAcc %", "reproduced": 50.0, **said_column(m["said"])}
    assert row["labels said"] == "4 × 1, 0 × 0"
    with (tmp_path / "table3.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(row))
        w.writeheader()
        w.writerow(row)
    assert notes(tmp_path) == ["`table3`: in 1 cell a judge said one label to every readable example (e.g. always-1: "
                               "all 1): BAcc there is 50 by construction, whatever the examples"]


def _write(path, rows):
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def _nudged(cell: str, steps: int) -> str:
    """A float cell moved ``steps`` floats up (its last bits, as another CPU kind may compute it); other cells as
    they are."""
    import math

    try:
        f = float(cell)
    except ValueError:
        return cell
    if cell.lstrip("-").isdigit():
        return cell
    for _ in range(steps):
        f = math.nextafter(f, math.inf)
    return repr(f)


PLANTED = [{"setting": str(i), "metric": m, "value": v, "ci_low": lo, "ci_high": hi, "n": "24"}
           for i in range(4) for m, v, lo, hi in (("r", "0.21004472894723314", "0.5", "0.5"),
                                                  ("BAcc", "31.249999999999996", "12.500000000000002", "43.75"))]


def test_the_notes_read_the_page_s_precision_not_a_float_s_last_bits(tmp_path):
    """A replay on another CPU kind, whose floats differ in their last bits, gets the same notes: every number a note
    prints and every comparison a rule makes is at the page's 3 significant digits."""
    from sumjudge.results_notes import shown

    assert shown("0.21004472894723314") == shown("0.21004472894723317") == "0.21"
    assert shown("1014") == "1014" and shown("1014.0") == "1.01e+03" and shown("nan") is None and shown("") is None
    _write(tmp_path / "t.csv", PLANTED)
    said = notes(tmp_path)
    assert any("(0.21)" in s for s in said) and not any("0.2100" in s for s in said)
    for steps in (1, 3, 7):
        nudged = tmp_path / f"n{steps}"
        nudged.mkdir()
        # every row's floats nudged by a different count: the rows differ in their last bits, not on the page
        _write(nudged / "t.csv", [{k: _nudged(v, steps + i) for k, v in r.items()} for i, r in enumerate(PLANTED)])
        assert notes(nudged) == said


def test_a_visible_change_changes_the_notes(tmp_path):
    _write(tmp_path / "t.csv", PLANTED)
    before = notes(tmp_path)
    (tmp_path / "b").mkdir()
    _write(tmp_path / "b" / "t.csv", [{**r, "value": "0.2151"} if r["metric"] == "r" else r for r in PLANTED])
    after = notes(tmp_path / "b")
    assert after != before and any("(0.215)" in s for s in after)
