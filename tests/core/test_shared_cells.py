"""One number per judgement: a cell that two tables of the results page share (the same judge on the same dataset:
notebook 40's FACTAX, 43's zero-shot base model and the arena's factax on QAGS-XSum) shows the same BAcc, the same
n and the same interval on each, and a pair of judges the same paired test.

The tables are read from the committed page (``figures/results-smoke/*.md``, at the precision it shows) or from
tables written as CSV (``build/replay/<profile>/figures/<notebook>/*.csv``: ``shared_cell_differences`` on that
folder)."""

from __future__ import annotations

import csv
import itertools
import re
from pathlib import Path

from sumjudge.metrics import bacc_cell, balanced_accuracy_ci

PAGE = Path(__file__).resolve().parents[2] / "figures" / "results-smoke"
ARENA_PAGES = ("50_judge_arena", "51_your_own_judge", "02_lab_llm_judges")


def judge_of(evaluator: str) -> str | None:
    """The method a FacTax table's evaluator row runs, where it is a judge of its own labels (not a score judge,
    whose arena cell is thresholded elsewhere); None for the other rows. Table 4's zero-shot base model is FacTax's
    prompt on the profile's model (the smoke profile's base model)."""
    from sumjudge.papers.factax import tables
    from sumjudge.run.methods import get_method

    methods = {label: method for label, method, settings in tables.EVALUATORS if not settings}
    method = {**methods, tables.ZERO_SHOT_BASE: "factax"}.get(evaluator)
    return None if method is None or get_method(method).scores else method


def numbers(text: str) -> list[float]:
    return [float(x) for x in re.findall(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?", text or "")]


def bacc_cells(rows: list[dict[str, str]]) -> dict[tuple[str, str], tuple[float, int, float, float]]:
    """(judge, dataset) -> (BAcc in percent, n, interval low, high) of a table's single-run BAcc cells."""
    out = {}
    for r in rows:
        if "bacc_ci_low" in r and r.get("judge"):  # the arena's tables
            value, low, high = (numbers(r[k]) for k in ("bacc", "bacc_ci_low", "bacc_ci_high"))
            if value and low and high:
                out[(r["judge"], r["dataset"])] = (value[0], int(float(r["n"])), low[0], high[0])
        elif r.get("metric") == "BAcc %" and "95% CI" in r and r.get("runs", "1") in ("1", "1.0"):  # FacTax's
            judge, value, ci = judge_of(r.get("evaluator", "")), numbers(r["reproduced"]), numbers(r["95% CI"])
            if judge and value and len(ci) == 2 and not r["dataset"].startswith("["):
                out[(judge, r["dataset"])] = (value[0], int(float(r["n"])), ci[0], ci[1])
    return out


def paired_cells(rows: list[dict[str, str]]) -> dict[tuple[str, str, str], tuple[int, int, int, float]]:
    """(dataset, judge, judge) -> (n, right only with the first, with the second, p) of a paired-tests table."""
    out = {}
    for r in rows:
        if "judge_a" in r and "only_a_right" in r:
            a, b, ra, rb = r["judge_a"], r["judge_b"], int(float(r["only_a_right"])), int(float(r["only_b_right"]))
            key = (r["dataset"], *sorted((a, b)))
            out[key] = (int(float(r["n"])), *((ra, rb) if a <= b else (rb, ra)), float(r["p"]))
    return out


def page_tables(page: Path) -> dict[tuple[str, str], list[dict[str, str]]]:
    """(notebook, table) -> rows of every table of the committed page's Markdown files (a section's name as its
    CSV file's: ``table2 zero shot`` is ``table2_zero_shot``)."""
    from sumjudge.reproduce.check import parse_sections, table_rows

    out = {}
    for md in sorted(page.glob("[0-9][0-9]_*.md")):
        for name, text in parse_sections(md.read_text(encoding="utf-8").splitlines()).items():
            header, rows = table_rows(text)
            if header:
                out[(md.stem, name.replace(" ", "_"))] = [dict(zip(header, row)) for row in rows]
    return out


def csv_tables(figures: Path) -> dict[tuple[str, str], list[dict[str, str]]]:
    """(notebook, table) -> rows of every table written as CSV under ``figures/<notebook>/``."""
    out = {}
    for path in sorted(figures.glob("[0-9][0-9]_*/*.csv")):
        with path.open(encoding="utf-8", newline="") as f:
            out[(path.parent.name, path.stem)] = list(csv.DictReader(f))
    return out


def differences(tables: dict[tuple[str, str], list[dict[str, str]]], cells, tolerance: float,
                only: tuple[str, ...] | None = None) -> list[str]:
    """Every cell two tables share whose values differ beyond ``tolerance`` (counts exactly), as lines."""
    found = {source: cells(rows) for source, rows in tables.items()
             if only is None or source[0] in only}
    out = []
    for (s1, c1), (s2, c2) in itertools.combinations(found.items(), 2):
        for key in sorted(set(c1) & set(c2)):
            a, b = c1[key], c2[key]
            if any(x != y if isinstance(x, int) else abs(x - y) > tolerance for x, y in zip(a, b)):
                out.append(f"{' / '.join(key)}: {'/'.join(s1)} {a} vs {'/'.join(s2)} {b}")
    return out


# the page shows BAcc in percent to one decimal (57.8), as FacTax's CSV files write their intervals ("[36.1, 79.4]"):
# one unit of that digit
PAGE_TOLERANCE = 0.1 + 1e-9


def shared_cell_differences(figures: Path, tolerance: float = PAGE_TOLERANCE) -> list[str]:
    """The BAcc cells (value, n, interval) that differ between two tables written as CSV under ``figures``."""
    return differences(csv_tables(figures), bacc_cells, tolerance)


def test_the_bacc_cells_two_pages_share_are_one_number():
    """The same judge on the same dataset: one value, one n (the readable labels it rests on), one interval, on
    every page that shows it."""
    tables = page_tables(PAGE)
    shared = [k for k in bacc_cells(tables[("50_judge_arena", "arena")])
              if k in bacc_cells(tables[("40_factax_zero_shot", "table2_zero_shot")])]
    assert ("factax", "qags-xsum") in shared  # the comparison finds the cells it is about
    assert differences(tables, bacc_cells, PAGE_TOLERANCE) == []


def test_the_labs_replayed_arena_is_notebook_50s():
    """The lab (02) replays notebook 50's recorded arena: every judge it shows is a cell of 50's, with one value, n
    and interval (its paired tests are the student's judge against each paper's judge, which 50 does not run)."""
    tables = page_tables(PAGE)
    lab, arena = ("02_lab_llm_judges", "replayed_arena"), ("50_judge_arena", "arena")
    assert bacc_cells(tables[lab]) and set(bacc_cells(tables[lab])) <= set(bacc_cells(tables[arena]))
    assert differences({k: tables[k] for k in (lab, arena)}, bacc_cells, PAGE_TOLERANCE) == []


def test_the_paired_tests_of_notebook_51s_rivals_are_notebook_50s():
    """51 is recorded after 50 (its metadata ``sumjudge.after``) with 50's answers in the cache: its rivals' sampled
    answers are 50's, so every pair of rivals has 50's discordant counts and p."""
    tables = page_tables(PAGE)
    assert differences(tables, paired_cells, PAGE_TOLERANCE, only=("50_judge_arena", "51_your_own_judge")) == []


def test_the_comparison_finds_a_cell_that_differs(tmp_path):
    """``shared_cell_differences`` on tables written as CSV: the arena's 50 and FacTax's 50.0 % are one value; an
    interval or an n that differs is found."""
    arena = tmp_path / "50_judge_arena"
    factax = tmp_path / "40_factax_zero_shot"
    arena.mkdir(), factax.mkdir()
    (arena / "arena.csv").write_text("dataset,judge,n,bacc,bacc_ci_low,bacc_ci_high\n"
                                     "qags-xsum,factax,19,50,25,75\n", encoding="utf-8")
    table = "experiment,evaluator,dataset,metric,reproduced,95% CI,n,runs\n"
    (factax / "table2_zero_shot.csv").write_text(table + 'Table 2,FACTAX,qags-xsum,BAcc %,50.0,"[25, 75]",19,1\n',
                                                 encoding="utf-8")
    assert shared_cell_differences(tmp_path) == []
    assert shared_cell_differences(Path(__file__).parent) == []  # no notebook's tables: nothing to compare
    (factax / "table2_zero_shot.csv").write_text(table + 'Table 2,FACTAX,qags-xsum,BAcc %,50.0,"[25, 75]",20,1\n'
                                                 'Table 2,G-Eval,qags-xsum,BAcc %,50.0,"[30, 70]",20,1\n',
                                                 encoding="utf-8")
    assert [d.split(":")[0] for d in shared_cell_differences(tmp_path)] == ["factax / qags-xsum"]


def test_a_bacc_cell_rests_on_its_readable_labels_and_its_interval_on_its_counts():
    """n is the readable labels, n_examples every example judged; the interval is the same for the same confusion
    counts, whatever the examples' order or which examples were the right ones (the same draws from one seed)."""
    gold = [1, 0, 1, 0, 1, 1, 0, 0, 1, 0]
    pred = [1, 0, 0, 0, 1, None, 1, 0, 1, 0]
    cell = bacc_cell(gold, pred)
    assert (cell["n"], cell["n_examples"]) == (9, 10) and cell["ci"][0] < cell["bacc"] < cell["ci"][1]
    # the same counts (per gold class, right and wrong), other examples right, in another order
    other_gold, other_pred = [0, 0, 0, 0, 0, 1, 1, 1, 1], [1, 0, 0, 0, 0, 0, 1, 1, 1]
    assert balanced_accuracy_ci(other_gold, other_pred) == cell["ci"]
    assert bacc_cell(other_gold, other_pred)["bacc"] == cell["bacc"]
