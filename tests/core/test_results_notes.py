"""The words a results page says where a table shows nothing: each kind of empty cell is named, a table that shows
something is left alone."""

import csv

from sumjudge.judges.base import Judgement
from sumjudge.metrics import labels_said
from sumjudge.results.notes import notes, table_notes
from sumjudge.run.metrics import binary_metrics, said_column


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
    r, cols = rows(*({"dataset": f"d{i}", "metric": "r", "value": "0.21"} for i in range(4)))
    assert table_notes("g", r, cols) == ["`g`: every one of its 4 rows (r) has the same value (0.21): the table "
                                         "cannot tell its rows apart"]


def test_a_metric_the_same_in_every_row_by_design_is_left_alone():
    """FacTax Table 5's test set has one size for every setting: its row is no false alarm; the other metrics still
    are checked."""
    r, cols = rows(*({"evaluator": e, "metric": m, "reproduced": v}
                     for i, e in enumerate(("I-Binary", "I-Taxonomy", "I&II-Taxonomy"))
                     for m, v in (("train", str(690.0 + i)), ("length", "136.3"), ("test", "1014.0"))))
    assert table_notes("table5", r, cols) == ["`table5`: every one of its 3 rows (length) has the same value (136): "
                                              "the table cannot tell its rows apart"]


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
    # a table that shows BAcc as a share (the arena's 0.5): chance said on that scale
    _write(tmp_path / "arena.csv", [{"judge": "always-1", "bacc": 0.5, "labels said": "4 × 1, 0 × 0"}])
    assert notes(tmp_path)[0] == ("`arena`: in 1 cell a judge said one label to every readable example (e.g. "
                                  "always-1: all 1): BAcc there is 0.5 by construction, whatever the examples")
    # with K-alpha beside it: that the judge's negative alpha is set by the gold labels too
    _write(tmp_path / "arena.csv", [{"judge": "always-1", "bacc": 0.5, "k_alpha": -0.3, "labels said": "4 × 1, 0 × 0"}])
    assert "; its K-alpha is set by the gold labels alone, 1 − (2n − 1) / (2n − d)" in notes(tmp_path)[0]
    (tmp_path / "arena.csv").unlink()
    # a table of accuracy (no BAcc in it): what a one-label judge's accuracy is there
    (tmp_path / "table3.csv").unlink()
    _write(tmp_path / "length.csv", [{"method": "FacTax", "bucket": "short", "accuracy": 0.2, "labels said": "0 × 1, 5 × 0"}])
    assert notes(tmp_path) == ["`length`: in 1 cell a judge said one label to every readable example (e.g. FacTax / short: "
                               "all 0): its accuracy there is the share of the examples whose gold label is that one, "
                               "whatever the examples"]


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


PLANTED = [{"dataset": f"d{i}", "metric": m, "value": v, "ci_low": lo, "ci_high": hi, "n": "24"}
           for i in range(4) for m, v, lo, hi in (("r", "0.21004472894723314", "0.5", "0.5"),
                                                  ("BAcc", "31.249999999999996", "12.500000000000002", "43.75"))]


def test_the_notes_read_the_page_s_precision_not_a_float_s_last_bits(tmp_path):
    """A replay on another CPU kind, whose floats differ in their last bits, gets the same notes: every number a note
    prints and every comparison a rule makes is at the page's 3 significant digits."""
    from sumjudge.results.notes import shown

    assert shown("0.21004472894723314") == shown("0.21004472894723317") == "0.21"
    assert shown("1014") == "1014" and shown("1014.0") == "1014" and shown("1370.45") == "1370" and shown("nan") is None and shown("") is None
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


def one(said, start):
    """The one sentence of ``said`` that starts with ``start``."""
    hits = [s for s in said if s.startswith(start)]
    assert len(hits) == 1, said
    return hits[0]


def test_a_number_on_few_examples_is_named():
    """MESA's n = 8 and 6: fewer than 10 examples; a table of one row per example (DEBATE's E.1 repeatability) rests
    on its rows."""
    r, cols = rows({"evaluator": "single", "metric": "BAcc %", "reproduced": "50", "95% CI": "[30, 70]", "n": "8"},
                   {"evaluator": "three", "metric": "BAcc %", "reproduced": "33.3", "95% CI": "[16.3, 60]", "n": "6"},
                   {"evaluator": "four", "metric": "BAcc %", "reproduced": "60", "95% CI": "[40, 80]", "n": "40"})
    assert table_notes("t1", r, cols) == [
        "`t1`: 2 of 3 rows rest on fewer than 10 examples (e.g. single / BAcc %: n = 8): each example weighs more "
        "than a tenth in such a number: one changed answer moves it a long way"]
    r, cols = rows({"experiment": "E.1", "example": "tc-12", "repeats": "2", "distinct_final_scores": "[2.0]"})
    assert table_notes("e1", r, cols) == ["`e1` rests on 1 example (one per row): what so few examples show says "
                                          "little about the others"]


def test_a_rate_over_a_gold_class_of_few_examples_is_named():
    """MADISSE at n = 12 with 4 examples of one gold class (its FNR rests on 4); FacTax's error types of support
    1 and 2."""
    r, cols = rows(*({"evaluator": "MADISSE", "metric": m, "reproduced": v, "95% CI": "[10, 90]", "n": "12",
                      "labels said": "11 × 1, 1 × 0", "gold labels": "8 × 1, 4 × 0"}
                     for m, v in (("BAcc (%)", "62.5"), ("FNR (%)", "75"))))
    assert one(table_notes("t", r, cols), "`t`: 2 of 2 rows rest on fewer than 5 examples of one gold class") == (
        "`t`: 2 of 2 rows rest on fewer than 5 examples of one gold class (e.g. MADISSE / BAcc (%): gold labels "
        "8 × 1, 4 × 0): each of them weighs more than a fifth in a rate over that class (FPR, FNR, recall, F1)")
    r, cols = rows(*({"evaluator": "FACTAX", "aspect": a, "metric": "F1 %", "reproduced": s + "0", "95% CI": "[1, 70]",
                      "n": "20", "support": s} for a, s in (("Predicate", "8"), ("Circumstantial", "1"),
                                                           ("Coreference", "2"))))
    assert "2 of 3 rows rest on fewer than 5 examples of one gold class (e.g. FACTAX / Circumstantial / F1 %: " \
           "support 1)" in one(table_notes("t6", r, cols), "`t6`")


def test_a_correlation_over_few_groups_is_named():
    """DEBATE on 2 SummEval documents: a Kendall tau 'interval' [-0.0543, -0.0541] from 2 groups."""
    r, cols = rows({"evaluator": "G-Eval", "aspect": "coherence", "metric": "tau", "reproduced": "-0.05421",
                    "95% CI": "[-0.0543, -0.0541]", "n": "32", "groups": "2"},
                   {"evaluator": "ROUGE-L", "aspect": "coherence", "metric": "tau", "reproduced": "0.305",
                    "95% CI": "[0.277, 0.332]", "n": "32", "groups": "12"})
    assert table_notes("t", r, cols) == [
        "`t`: 1 of 2 rows average a correlation over fewer than 5 groups (documents) (e.g. G-Eval / coherence / tau: "
        "2 groups, interval [-0.0543, -0.0541]): a correlation within so few documents is no measure of agreement, "
        "and its interval only resamples those few"]


def test_rows_and_tables_with_no_number_are_named_with_what_they_say_about_it():
    r, cols = rows({"evaluator": "MultiAgent", "aspect": "average", "metric": "rho", "reproduced": "nan", "n": "32",
                    "groups": "", "undefined_groups": "", "note": ""},
                   {"evaluator": "MultiAgent", "aspect": "coherence", "metric": "rho", "reproduced": "", "n": "32",
                    "groups": "0", "undefined_groups": "2", "note": ""},
                   {"evaluator": "G-Eval", "aspect": "coherence", "metric": "rho", "reproduced": "0.2", "n": "32",
                    "groups": "12", "undefined_groups": "0", "note": ""},
                   {"evaluator": "BERTScore", "aspect": "coherence", "metric": "rho", "reproduced": "", "n": "",
                    "groups": "", "undefined_groups": "", "note": "as printed in the paper; not computed here"})
    # the paper's own row (its note says so) is no finding; the example given is one that says why
    assert table_notes("t", r, cols) == [
        "`t`: 2 of 3 rows show no number (e.g. MultiAgent / coherence / rho: no group defined, 2 undefined): "
        "nothing could be computed there; a blank is not a result"]
    r, cols = rows(*({"experiment": "Table 2", "evaluator": e, "metric": "mean Likert", "reproduced": "",
                      "runs": "0", "scored_runs": "0"} for e in ("single", "MADP-S")))
    assert table_notes("t2", r, cols) == [
        "`t2` shows no number: none of its 2 rows was computed (e.g. Table 2 / single / mean Likert: runs 0): the "
        "table is empty, not a result"]


def test_a_number_from_mostly_unreadable_answers_is_named():
    """G-Eval's repository protocol: 118 of 128 samples unreadable, the correlation still reported."""
    r, cols = rows(*({"evaluator": f"G-Eval ({p})", "metric": "rho", "reproduced": v, "95% CI": "[-0.2, 0.5]",
                      "n": "32", "unreadable_samples": bad} for p, v, bad in (("paper", "-0.19", "10/128"),
                                                                             ("repository", "0.134", "118/128"))))
    assert table_notes("t", r, cols) == [
        "`t`: 1 of 2 rows report a number though more than half the answers were unreadable (e.g. G-Eval (repository) "
        "/ rho: unreadable_samples 118/128): the number rests on the few answers read (or on what the unreadable "
        "ones were scored), not on the judge's answers"]
    r, cols = rows({"judge": "j", "bacc": "0.6", "n": "20", "unreadable_share": "0.55"},
                   {"judge": "k", "bacc": "0.6", "n": "20", "parsed_%": "45"})
    assert one(table_notes("a", r, cols), "`a`: 2 of 2 rows report a number")


def test_settings_alike_in_every_row_are_named_with_the_reason_the_table_states():
    """DEBATE's Figure 2: the settings cannot differ where the Critic never objects; FACTAX and FACTAX-WD alike;
    judges alike only through a one-label answer (50 [50, 50], named already) are left alone."""
    r, cols = rows(*({"evaluator": s, "metric": m, "reproduced": v, "95% CI": ci, "n": "24",
                      "setting_no_issue_pct": "100"}
                     for i, s in enumerate(("iterations: n = 1", "iterations: n = 2", "persona: weakly negative"))
                     for m, v, ci in (("r", f"0.2100447289472331{4 + i}", "[-0.4, 0.554]"),  # alike as shown
                                      ("rho", "0.2391163213276835", "[-0.37, 0.611]"))))
    assert table_notes("fig2", r, cols) == [
        "`fig2`: 3 settings, iterations: n = 1, iterations: n = 2 and persona: weakly negative, show the same "
        "`reproduced` and `95% CI` in every row (2 rows each): the table cannot tell them apart; the Critic never objected (setting_no_issue_pct 100 in every row that "
        "states it), so every debate stopped at the Scorer's first score"]
    r, cols = rows(*({"evaluator": e, "dataset": d, "metric": "BAcc %", "paper": p, "reproduced": v, "95% CI": ci,
                      "n": "20"}
                     for e, p in (("FACTAX", "74.1"), ("FACTAX-WD", "71.5"), ("ChatGPT-ZS", "71.8"),
                                  ("ChatGPT-CoT", "68.3"))
                     for d, v, ci in (("qags-xsum", "57.8" if "FACTAX" in e else "50", "[36.7, 78.9]"
                                       if "FACTAX" in e else "[50, 50]"),
                                      ("diasumfact", "64.6" if "FACTAX" in e else "50", "[47.9, 81.2]"
                                       if "FACTAX" in e else "[50, 50]"))))
    assert one(table_notes("t2", r, cols), "`t2`: FACTAX") == (
        "`t2`: FACTAX and FACTAX-WD show the same `reproduced` and `95% CI` in every row (2 rows each): the table "
        "cannot tell them apart")


def test_a_paper_number_from_another_dataset_is_named():
    r, cols = rows({"stances": "2+2", "dataset": "tofueval-meetingbank", "paper_dataset": "mediasum", "bacc": "62.5",
                    "bacc_95%_ci": "[40, 80]", "n": "12", "same_dataset_as_paper": "False"},
                   {"stances": "1+3", "dataset": "tofueval-mediasum", "paper_dataset": "mediasum", "bacc": "60",
                    "bacc_95%_ci": "[40, 80]", "n": "12", "same_dataset_as_paper": "True"})
    said = [s for s in table_notes("t", r, cols) if "another dataset" in s]
    assert said == ["`t`: 1 of 2 rows put the paper's number from another dataset beside ours (e.g. 2+2 / "
                    "tofueval-meetingbank: ours on tofueval-meetingbank, the paper's on mediasum): the two are not one "
                    "experiment; read ours against the other rows of this table, not against the paper's"]


def test_a_judge_shown_little_of_each_document_is_named():
    r, cols = rows({"evaluator": "three", "bacc": "50", "n": "8", "transcript_kept_%": "5.7"},
                   {"evaluator": "single", "bacc": "60", "n": "8", "transcript_kept_%": "80"})
    said = [s for s in table_notes("t", r, cols) if "less than half" in s]
    assert said and said[0].startswith("`t`: 1 of 2 rows rest on judgements that saw less than half of each document "
                                       "(e.g. three: transcript_kept_% 5.7)")


def test_a_scorer_that_gave_every_text_one_score_is_named():
    """DEBATE's Table 2: DEBATE scored all 32 SummEval texts 4 for coherence; the humans' spread is no such note."""
    r, cols = rows(*({"experiment": "Table 2", "dataset": "summeval", "aspect": "coherence", "paper": "30",
                      "reproduced": v, "95% CI": "[0, 10.7]", "n": "32", "score": str(k), "who": who}
                     for who, shares in (("human", ("0", "12.5", "28.1", "46.9", "12.5")),
                                         ("DEBATE", ("0", "0", "0", "100", "0")))
                     for k, v in enumerate(shares, start=1)))
    said = [s for s in table_notes("table2", r, cols) if "same score" in s]
    assert said == ["`table2`: in 1 of its 2 distributions one scorer gave every text the same score (e.g. summeval / "
                    "coherence / DEBATE: all 4): such a scorer orders no text above another, so its correlations with "
                    "the human scores are undefined, and its distribution has no spread to compare with the humans' or the "
                    "paper's"]
    r, cols = rows(*({"score": str(k), "who": "human", "reproduced": v} for k, v in ((1, "40"), (2, "60"))))
    assert not [s for s in table_notes("t", r, cols) if "same score" in s]


def test_a_paper_number_inside_our_interval_is_said_to_be_no_reproduction():
    """Page 10: zero-shot 68.8 [37.5, 93.8] beside the paper's 68.2; a paper number outside the interval, or a row
    without an interval, is no such row."""
    r, cols = rows({"evaluator": "Zero-shot", "metric": "BAcc (%)", "paper": "68.2", "reproduced": "68.8",
                    "95% CI": "[37.5, 93.8]", "n": "12"},
                   {"evaluator": "MADISSE", "metric": "BAcc (%)", "paper": "75.1", "reproduced": "43.8",
                    "95% CI": "[31.2, 50]", "n": "12"},
                   {"evaluator": "CoT", "metric": "BAcc (%)", "paper": "68.5", "reproduced": "60", "n": "12"})
    said = [s for s in table_notes("t3", r, cols) if "inside our 95% interval" in s]
    assert said == ["`t3`: 1 of 2 rows with a paper number hold it inside our 95% interval (e.g. Zero-shot / BAcc (%): "
                    "paper 68.2, ours 68.8 [37.5, 93.8]): there the table cannot tell ours from the paper's: being near the "
                    "paper's number is no reproduction, and being further off inside the interval is no failure"]


def test_every_rule_writes_a_note_whose_kind_the_index_can_name():
    """The index counts each page's notes by kind (``kind_of``): every planted kind is named, none as "other"."""
    from sumjudge.results.notes import kind_of

    said = [
        "`t` is empty: no row was computed", "`t` shows no number: none of its 2 rows was computed (e.g. a): x",
        "`t`: 1 of 2 rows show no number (e.g. a): x", "`t`: 1 of 2 rows rest on n = 0 (e.g. a): x",
        "`t`: 1 of 2 rows rest on fewer than 10 examples (e.g. a): x",
        "`t`: 2 of 2 rows rest on fewer than 5 examples of one gold class (e.g. a): x",
        "`t`: 1 of 2 rows average a correlation over fewer than 5 groups (documents) (e.g. a): x",
        "`t`: 1 of 2 rows report a number though more than half the answers were unreadable (e.g. a): x",
        "`t`: in 1 cell a judge said one label to every readable example (e.g. a: all 0): x",
        "`t`: 1 interval of zero width (e.g. a: [50, 50]): x", "`t`: a is worse than chance (BAcc 20): x",
        "`t`: a and b show the same `bacc` in every row (1 row each): the table cannot tell them apart",
        "`t`: every one of its 3 rows has the same value (1): the table cannot tell its rows apart",
        "`t`: 1 of 2 rows put the paper's number from another dataset beside ours (e.g. a): x",
        "`t`: 1 of 2 rows rest on judgements that saw less than half of each document (e.g. a): x",
        "`t`: in 1 of its 2 distributions one scorer gave every text the same score (e.g. a: all 4): x",
        "`t`: 1 of 2 rows with a paper number hold it inside our 95% interval (e.g. a): x"]
    kinds = [kind_of(s) for s in said]
    assert "other" not in kinds and kinds[4] == "few examples" and kinds[5] == "few examples of a gold class"
    assert kind_of("something new") == "other"


def test_a_paper_number_not_comparable_with_ours_is_not_read_against_our_interval():
    """Another dataset's paper number, a zero-width interval (named already) and a MACRO whose comparable paper
    number is `paper_same_columns` (not `paper`)."""
    base = {"metric": "BAcc %", "reproduced": "61.2", "95% CI": "[47.2, 74.8]", "n": "39"}
    r, cols = rows({**base, "evaluator": "a", "paper": "58.1", "same_dataset_as_paper": "False"},
                   {**base, "evaluator": "b", "paper": "58.1", "paper_same_columns": "80"},
                   {**base, "evaluator": "c", "paper": "50", "reproduced": "50", "95% CI": "[50, 50]"})
    assert not [s for s in table_notes("t", r, cols) if "inside our 95% interval" in s]
    r, cols = rows({**base, "evaluator": "b", "paper": "80", "paper_same_columns": "58.1"})
    assert [s for s in table_notes("t", r, cols) if "inside our 95% interval" in s][0].startswith(
        "`t`: 1 of 1 rows with a paper number hold it inside our 95% interval (e.g. b / BAcc %: paper 58.1,")
