"""The results page make reproduce writes: one page per notebook with its own saved tables, figures (with the data
they plot) and recorded answers, an index with each notebook's provenance; a run of some notebooks keeps the
others; the check that compares a replay with the page, and its stale marks."""

import hashlib
import json
import os
import time
from pathlib import Path

import pytest

from sumjudge.reproduce import check as results_check
from sumjudge.reproduce import record as reproduce
from sumjudge.results.page import load_provenance, weights_sha256, write_results_page


def saved(figures, nb, bacc="0.55", answers=True):
    d = figures / nb.stem
    d.mkdir(parents=True, exist_ok=True)
    (d / "arena.md").write_text(f"| judge | bacc | wall_s |\n|---|---|---|\n| zero-shot | {bacc} | 3.1 |\n")
    (d / "arena.csv").write_text(f"judge,bacc,wall_s\nzero-shot,{bacc},3.1\n")
    time.sleep(0.01)
    (d / "pareto.png").write_bytes(b"\x89PNG fake")
    (d / "pareto.plot.json").write_text(json.dumps([{"lines": [{"x": [1], "y": [float(bacc)]}]}]))
    if answers:
        (d / "answers.jsonl").write_text('{"type": "format", "version": 1}\n')


def test_the_page_holds_each_notebooks_tables_figures_and_answers_and_the_index_its_provenance(tmp_path):
    figures = tmp_path / "figures"
    nb = reproduce.notebooks("50")[0]
    start = time.time() - 1
    saved(figures, nb)
    (figures / "parse_rates_smoke.md").write_text("# Parse rates\n\n| method | first try |\n|---|---|\n| cot | 0.9 |\n")
    walls = [{"notebook": nb.stem, "wall_s": 61.2, "status": "ok", "start": start}]
    index = write_results_page("smoke", [nb], walls, figures,
                               time_rows=[{"notebook": nb.stem, "calls": 30, "backend_calls": 12},
                                          {"notebook": nb.stem, "calls": 5, "backend_calls": 0}],
                               run={"wall_s": 90.0, "jobs": 3}, recorded_commit="abc1234")
    text = index.read_text()
    assert f"| [{nb.stem}]({nb.stem}.md) | recorded | `abc1234` |" in text and "| 61 | 35 | 12 |" in text
    assert "| abc1234 |" not in text and "| 50 | 3 | 1.5 |" in text  # the run's elapsed time, not summed walls
    assert "parse_rates_smoke.md" not in text and "Every table shows something" in text
    assert not (index.parent / "parse_rates_smoke.md").exists()  # a run's own file, not the page's
    assert "| cot | 0.9 |" not in text  # the last run's parse rates count its notebooks only: linked, not shown
    page = (index.parent / f"{nb.stem}.md").read_text()
    assert page.startswith("# 50 · Judge arena") and "| zero-shot | 0.55 |" in page
    assert "> **State:** recorded at `abc1234`" in page
    assert f"![pareto]({nb.stem}/pareto.png)" in page and (index.parent / nb.stem / "pareto.plot.json").exists()
    assert (index.parent / nb.stem / "answers.jsonl.xz").exists()
    assert page.index("## arena") < page.index("## pareto")  # in the order the notebook saved them
    prov = json.loads((index.parent / "provenance.json").read_text())
    assert prov["notebooks"][nb.stem]["backend_calls"] == 12 and prov["notebooks"][nb.stem]["commit"] == "abc1234"


def two_recorded_pages(tmp_path):
    """(figures folder, notebook 50, notebook 51): both recorded at commit 1111111."""
    figures = tmp_path / "figures"
    a, b = reproduce.notebooks("50")[0], reproduce.notebooks("51")[0]
    for nb in (a, b):
        saved(figures, nb)
    t = time.time() - 1
    write_results_page("smoke", [a, b], [{"notebook": n.stem, "wall_s": 5.0, "status": "ok", "start": t} for n in (a, b)],
                       figures, recorded_commit="1111111")
    return figures, a, b


def test_a_run_of_one_notebook_rewrites_only_its_page_and_keeps_the_index_whole(tmp_path):
    figures, a, b = two_recorded_pages(tmp_path)
    saved(figures, b, bacc="0.6")
    index = write_results_page("smoke", [b], [{"notebook": b.stem, "wall_s": 7.0, "status": "ok",
                                               "start": time.time() - 1}], figures, recorded_commit="2222222")
    text = index.read_text()
    assert f"[{a.stem}]({a.stem}.md) | recorded | `1111111`" in text
    assert f"[{b.stem}]({b.stem}.md) | recorded | `2222222`" in text
    assert "| 0.55 |" in (index.parent / f"{a.stem}.md").read_text()
    assert "| 0.6 |" in (index.parent / f"{b.stem}.md").read_text()


def test_an_earlier_pages_provenance_is_read_as_not_recorded(tmp_path):
    (tmp_path / "provenance.json").write_text(json.dumps({"profile": "smoke", "commit": "65847bc", "notebooks": [
        {"notebook": "10_madisse_main", "wall_s": 3.0, "status": "ok"}]}))
    prov = load_provenance(tmp_path)
    assert prov["notebooks"]["10_madisse_main"]["check"] == {"state": "unrecorded"}
    assert prov["notebooks"]["10_madisse_main"]["commit"] == "65847bc"


@pytest.fixture
def page_and_replay(tmp_path, monkeypatch):
    """A recorded page of notebook 50, and a stand-in replay that writes the tables ``bacc`` gives."""
    figures = tmp_path / "figures"
    nb = reproduce.notebooks("50")[0]
    saved(figures, nb)
    write_results_page("smoke", [nb], [{"notebook": nb.stem, "wall_s": 5.0, "status": "ok", "start": time.time() - 1}],
                       figures, recorded_commit="1111111")
    replay = {"bacc": "0.55", "status": "ok"}

    def fake_replay(nbs, profile, page, regenerated, jobs):
        for n in nbs:
            saved(regenerated, n, bacc=replay["bacc"], answers=False)
        return {n.stem: replay["status"] for n in nbs}

    monkeypatch.setattr(results_check, "replay_notebooks", fake_replay)
    monkeypatch.setattr(results_check, "project_root", lambda: tmp_path)
    return figures / "results-smoke", replay


def test_the_check_verifies_a_page_and_fails_on_a_changed_number_until_the_page_says_it_is_stale(page_and_replay):
    page, replay = page_and_replay
    ok, report = results_check.check("smoke", "50", page=page)
    assert ok and "verified" in report[0]
    replay["bacc"] = "0.6"  # e.g. a metric computed otherwise
    ok, report = results_check.check("smoke", "50", page=page)
    assert not ok and "`arena`: 1 of 1 rows differ (first: zero-shot: bacc 0.55 on the page, 0.6 regenerated); figure `pareto` plots other data" in report[0]
    ok, report = results_check.check("smoke", "50", page=page, mark=True)
    text = (page / "50_judge_arena.md").read_text()
    assert "> **State:** stale since `" in text and "bacc 0.55 on the page, 0.6 regenerated" in text
    assert "stale since" in (page / "index.md").read_text()
    ok, report = results_check.check("smoke", "50", page=page)
    assert ok and "as its page says" in report[0]
    replay["bacc"] = "0.7"  # stale for another reason than the page says
    assert not results_check.check("smoke", "50", page=page)[0]


def test_a_page_whose_banner_is_not_its_records_fails_the_check_and_a_render_writes_it(page_and_replay):
    page, replay = page_and_replay
    text = (page / "50_judge_arena.md").read_text()
    assert "> **Model:**" in text and results_check.check("smoke", "50", page=page)[0]
    (page / "50_judge_arena.md").write_text(text.replace("**n:** ", "**n:** 999 and "))
    ok, report = results_check.check("smoke", "50", page=page)
    assert not ok and "its banner is not what its record and tables give" in report[0]
    results_check.check("smoke", "50", page=page, render=True)
    assert (page / "50_judge_arena.md").read_text().count("999") == 0
    assert results_check.check("smoke", "50", page=page)[0]


def test_a_replay_that_stops_is_a_difference(page_and_replay):
    page, replay = page_and_replay
    replay["status"] = "FAILED: ReplayMiss: chat request 'first' was not recorded"
    ok, report = results_check.check("smoke", "50", page=page)
    assert not ok and "the replay stopped: FAILED: ReplayMiss" in report[0]


def test_wall_time_columns_are_not_compared():
    a = "| judge | bacc | wall_s_per_example |\n|---|---|---|\n| z | 0.5 | 3.1 |"
    b = "| judge | bacc | wall_s_per_example |\n|---|---|---|\n| z | 0.5 | 9.9 |"
    assert results_check.table_difference("t", a, b) is None
    assert results_check.table_difference("t", a, b.replace("0.5", "0.4")) is not None


def test_a_render_keeps_the_recorded_seconds_and_drops_those_that_measured_nothing(tmp_path):
    """A replay's seconds measure the replay: a rendered page keeps each row's recorded time, and leaves empty a
    time the replay leaves empty (answers read from a recording or the cache); only such a time makes --render
    rewrite a page that the check otherwise verifies."""
    before = "\n".join(["# p", "", "## arena", "",
                         "| judge | bacc | wall_s_per_example |", "|---|---|---|",
                         "| z | 0.5 | 0.148 |", "| mine | 0.6 | 6.12 |", "",
                         "## model time", "", "| exercise | wall_s |", "|---|---|", "| 6 | 122 |", ""])
    fresh = ["## arena", "", "| judge | bacc | wall_s_per_example |", "|---|---|---|",
             "| z | 0.5 | nan |".replace("nan", ""), "| mine | 0.6 | 0.01 |", "",
             "## model time", "", "| exercise | wall_s |", "|---|---|", "| 6 | 0.3 |"]
    assert results_check.seconds_left_out(before, fresh)
    assert not results_check.seconds_left_out(before, [ln.replace("|  |", "| 0.2 |") for ln in fresh])
    page = tmp_path / "p.md"
    page.write_text("\n".join(["# p", ""] + fresh), encoding="utf-8")
    results_check.keep_recorded_seconds(before, page)
    text = page.read_text(encoding="utf-8")
    assert "| z | 0.5 |  |" in text  # the replay measured nothing there: no time shown
    assert "| mine | 0.6 | 6.12 |" in text and "| 6 | 122 |" in text  # the recording's seconds kept


def test_a_render_rewrites_a_page_whose_tables_show_values_in_another_form():
    """A page the check verifies is rewritten by --render where its tables show a value in another form than they
    are written now (scientific notation for a number now written out, nan in a text cell now left empty), never for
    a number that another CPU computes one unit apart in its last digit."""
    def page(*rows: str) -> list[str]:
        return ["## grid", "", "| setting | tokens | note |", "|---|---|---|", *rows]
    fresh = page("| a | 10350 |  |", "| b | 0.123 | x |")
    assert results_check.rendered_why("\n".join(page("| a | 1.04e+04 |  |", "| b | 0.123 | x |")), fresh) == (
        "its tables showed values in another form than they are written now")
    assert results_check.shown_otherwise("\n".join(page("| a | 10350 | nan |", "| b | 0.123 | x |")), fresh)
    assert results_check.shown_otherwise("\n".join(page("| a | 1.035e+04 |  |", "| b | 0.123 | x |")), fresh)
    assert not results_check.shown_otherwise("\n".join(page("| a | 10350 |  |", "| b | 0.124 | x |")), fresh)
    assert results_check.rendered_why("\n".join(fresh), fresh) is None
    assert results_check.same_as_shown("nan", "") and not results_check.same_as_shown("nan", "0")


def test_a_table_that_counts_labels_says_what_label_1_stands_for(tmp_path, monkeypatch):
    """Below a table with label counts, its file holds a key that says what the counts count and what 1 stands for
    (the papers' 1 = faithful unless the notebook says otherwise); the page keeps it below the table and below the
    appendix's paper-only rows; the check reads a changed key as a difference, and a table without counts gets none."""
    import pandas as pd

    from sumjudge import report
    from sumjudge.results.page import split_paper_only

    monkeypatch.setenv("SUMJUDGE_FIGURES", str(tmp_path))
    df = pd.DataFrame({"experiment": ["Table 4", "Table 4 (paper only)"], "bacc": [50.0, 61.0],
                       "labels said": ["20 × 1, 0 × 0", None], "gold labels": ["4 × 1, 16 × 0", None]})
    md = report.save_table(df, "12_x", "table4").with_suffix(".md").read_text()
    assert md.rstrip().endswith("`labels said` is how many readable examples the judge labelled 1 and how many 0; "
                                "`gold labels`, how many of them the gold labels call 1 and 0; 1 = faithful (the "
                                "summary is consistent with its document), 0 = unfaithful.")
    ambiguous = report.save_table(df, "12_x", "t", label_one="ambiguous, 0 = not").with_suffix(".md").read_text()
    assert ambiguous.rstrip().endswith("; 1 = ambiguous, 0 = not.")
    keyed = report.save_table(df, "12_x", "k", key="*How to read `n`:* words.").with_suffix(".md").read_text()
    assert keyed.rstrip().splitlines()[-3:] == [md.rstrip().splitlines()[-1], "", "*How to read `n`:* words."]
    table, only = split_paper_only(md)
    assert table.splitlines()[-1] == only.splitlines()[-1] == md.rstrip().splitlines()[-1]
    assert "(paper only)" not in table and "Table 4 (paper only)" in only
    assert results_check.table_difference("t", md, md) is None
    assert results_check.table_difference("t", md, ambiguous) == "`t`: the words beside its table differ"
    plain = report.save_table(df[["experiment", "bacc"]], "12_x", "plain").with_suffix(".md").read_text()
    assert report.label_key(["experiment", "bacc"]) is None and "Label counts" not in plain


def test_a_table_with_the_columns_every_run_gives_says_what_they_mean(tmp_path, monkeypatch):
    """Below a table with ``n`` and ``n_examples`` or the parse rates, a key says what each is (a share of answers,
    not of examples); a table with only one of the two sizes, or none of them, gets no such line."""
    import pandas as pd

    from sumjudge import report

    monkeypatch.setenv("SUMJUDGE_FIGURES", str(tmp_path))
    df = pd.DataFrame({"bacc": [50.0], "n": [11], "n_examples": [12], "parsed_first_%": [51.9], "parsed_%": [100.0],
                       "fallback_examples": [0]})
    last = report.save_table(df, "10_x", "t").with_suffix(".md").read_text().rstrip().splitlines()[-1]
    assert last.startswith("*Columns:* `n` is the examples with a readable label") and "`n_examples`" in last
    assert "not of examples" in last and "`fallback_examples`" in last
    assert report.column_key(["bacc", "n"]) is None
    assert report.column_key(["n", "n_examples"]).count("`") == 4
    # a column empty in every row (G-Eval's parse rates: it reads probabilities) gets no words
    blank = df.assign(**{"parsed_first_%": [None], "parsed_%": [""]})
    lines = report.save_table(blank, "10_x", "b").with_suffix(".md").read_text().rstrip().splitlines()
    key = next(ln for ln in lines if ln.startswith("*Columns:*"))
    assert "`n_examples`" in key and "parsed_first_%" not in key
    # ... and is named as empty, so that no reader takes its blanks for values
    assert lines[-1] == "*Empty in every row:* `parsed_first_%`, `parsed_%`: no row of this table has a value there."
    assert report.empty_key(df) is None
    # a table of the paper's printed rows only computes nothing by design: no such line
    printed = pd.DataFrame({"experiment": ["Table 1 (paper only)"] * 2, "paper": [0.4, 0.5], "reproduced": [None] * 2})
    assert report.empty_key(printed) is None and report.empty_key(printed.assign(experiment="Table 1")) is not None


def test_weights_are_named_by_their_sha256(tmp_path):
    (tmp_path / "model.safetensors").write_bytes(b"weights")
    (tmp_path / "config.json").write_text("{}")
    assert weights_sha256(tmp_path) == {"model.safetensors": hashlib.sha256(b"weights").hexdigest()}


def test_the_papers_rows_alone_go_to_an_appendix_at_the_end_of_the_page(tmp_path):
    from sumjudge.results.page import page_body

    src = tmp_path / "figures" / "20_x"
    src.mkdir(parents=True)
    head = "| experiment | evaluator | paper | reproduced |\n|:--|:--|--:|--:|\n"
    (src / "table1.md").write_text(head + "| Table 1 | G-Eval | 0.5 | 0.1 |\n| Table 1 (paper only) | BERTScore | 0.2 |  |\n")
    (src / "table9_paper_only.md").write_text(head + "| Table 9 (paper only) | X | 0.3 |  |\n")
    (src / "endings.md").write_text("| a |\n|--|\n| 1 |\n")
    for i, f in enumerate(("table1.md", "table9_paper_only.md", "endings.md")):  # the order they were saved in
        os.utime(src / f, (time.time() + i, time.time() + i))
    text = "\n".join(page_body(Path("20_x.ipynb"), src, None))
    heads = [x for x in text.splitlines() if x.startswith("## ")]
    assert heads == ["## table1", "## endings", "## Appendix: what the paper prints and this run does not compute",
                     "## appendix: table1, the paper's rows only", "## appendix: table9, the paper's rows only"]
    main = text.split("## endings")[0]
    assert "G-Eval" in main and "BERTScore" not in main


def test_a_state_rewrite_keeps_the_page_as_written(tmp_path):
    """Marking a page (its state block replaced) changes that block only: the rest, its final newline included,
    stays as the page writer left it, so that a check that marks nothing leaves the page's bytes alone."""
    from sumjudge.results.page import STATE_HEADING, rewrite_state, state_lines

    rec = {"notebook": "10_x", "commit": "abc", "machine": {"cpu": "cpu"}, "date": "d", "answers": "a",
           "check": {"state": "recorded"}}
    text = "\n".join(["# 10", ""] + state_lines(rec) + ["Executed in 1 s (ok).", "", "## t", "", "| a |", "|---|",
                                                       "| 1 |", ""])
    (tmp_path / "10_x.md").write_text(text, encoding="utf-8")
    rewrite_state(tmp_path, "10_x", rec)
    assert (tmp_path / "10_x.md").read_text(encoding="utf-8") == text
    rewrite_state(tmp_path, "10_x", {**rec, "check": {"state": "stale", "since": "def", "differences": ["x"]}})
    after = (tmp_path / "10_x.md").read_text(encoding="utf-8")
    assert after.endswith("| 1 |\n") and f"{STATE_HEADING} stale since `def`" in after


def test_a_table_and_the_figure_drawn_from_it_under_one_name_are_both_compared():
    """A notebook may save a table and a figure under one name (12's filtering): the page then has two sections of
    that name, and a changed table must not hide behind the figure's section."""
    lines = ["## filtering", "", "| a | b |", "|---|---|", "| x | 1 |", "", "## filtering", "", "![filtering](f.png)"]
    sections = results_check.parse_sections(lines)
    assert sections == {"filtering": "| a | b |\n|---|---|\n| x | 1 |", "filtering (2)": "![filtering](f.png)"}
    changed = results_check.parse_sections([ln.replace("| x | 1 |", "| x | 2 |") for ln in lines])
    assert results_check.table_difference("filtering", sections["filtering"], changed["filtering"])


def _files(folder):
    return {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_notebook_that_failed_keeps_its_page_answers_and_record(tmp_path):
    figures, a, b = two_recorded_pages(tmp_path)
    page = figures / "results-smoke"
    before = _files(page)
    # every notebook of the run failed: nothing is written, not even the index
    saved(figures, a, bacc="0.9")
    failed = [{"notebook": n.stem, "wall_s": 1.0, "status": "FAILED: ConnectError", "start": time.time() - 1}
              for n in (a, b)]
    assert write_results_page("smoke", [a, b], failed, figures, recorded_commit="2222222") is None
    assert _files(page) == before
    # one finished, one failed: the failed one's page, answers and record stay; the index names it
    time.sleep(0.01)
    start = time.time()
    time.sleep(0.01)
    saved(figures, b, bacc="0.6")
    walls = [{"notebook": a.stem, "wall_s": 1.0, "status": "FAILED: ConnectError", "start": start},
             {"notebook": b.stem, "wall_s": 7.0, "status": "ok", "start": start}]
    index = write_results_page("smoke", [a, b], walls, figures, recorded_commit="3333333")
    after = _files(page)
    assert {k: v for k, v in after.items() if k.parts[0] == a.stem} == \
        {k: v for k, v in before.items() if k.parts[0] == a.stem}
    assert after[Path(f"{a.stem}.md")] == before[Path(f"{a.stem}.md")]
    prov = json.loads((page / "provenance.json").read_text())
    assert prov["notebooks"][a.stem]["commit"] == "1111111" and prov["notebooks"][b.stem]["commit"] == "3333333"
    assert "| 0.6 |" in (page / f"{b.stem}.md").read_text()
    assert f"(failed, page kept: {a.stem[:2]})" in index.read_text()


def test_a_table_an_earlier_run_left_is_not_on_the_page_of_this_run(tmp_path):
    figures = tmp_path / "figures"
    nb = reproduce.notebooks("50")[0]
    saved(figures, nb)
    (figures / nb.stem / "old_table.md").write_text("| judge | bacc |\n|---|---|\n| gone | 0.1 |\n")
    time.sleep(0.05)
    start = time.time()
    time.sleep(0.05)
    saved(figures, nb, bacc="0.7")
    write_results_page("smoke", [nb], [{"notebook": nb.stem, "wall_s": 5.0, "status": "ok", "start": start}],
                       figures, recorded_commit="1111111")
    text = (figures / "results-smoke" / f"{nb.stem}.md").read_text()
    assert "| 0.7 |" in text and "old table" not in text and "gone" not in text


# --- the banner: the model beside the paper's, the n the tables rest on, the difference column --------------------

def planted_tables(src):
    """Three tables as a notebook saves them: two with an `n` column (one with a row on no number), one without."""
    src.mkdir(parents=True, exist_ok=True)
    tables = {"table3.md": "| metric | paper | reproduced | n |\n|:--|--:|--:|--:|\n| BAcc | 75.1 | 62.5 | 12 |\n"
                           "| K-alpha | 0.5 | nan | nan |\n| FPR | 25 | 0 | 5 |\n",
              "labels.md": "| stance | agents |\n|:--|--:|\n| faithful | 3 |\n",
              "table33.md": "| metric | paper | reproduced | n |\n|:--|--:|--:|--:|\n| BAcc | 79.7 | 70 | 30 |\n"
                            "| BAcc (paper only) | 79.1 |  |  |\n"}
    for i, (name, text) in enumerate(tables.items()):
        (src / name).write_text(text)
        os.utime(src / name, (time.time() + i, time.time() + i))


def banner_of(page_text):
    return page_text.split("> **State:**")[0]


def test_the_n_range_is_read_from_the_tables_n_columns_the_papers_own_rows_left_out(tmp_path):
    from sumjudge.results.banner import n_range, n_words
    from sumjudge.results.page import page_body

    planted_tables(tmp_path / "10_x")
    body = page_body(Path("10_x.ipynb"), tmp_path / "10_x", None)
    assert n_range(body) == (5, 30, 2, 3)  # the paper-only row (an appendix) rests on nothing computed
    assert n_words(*n_range(body), where="on this page") == "5 to 30 (the `n` column of 2 of the 3 tables on this page)"
    assert n_words(*n_range(["## t", "", "| a |", "|--|", "| 1 |"]), where="on this page") == \
        "no table on this page has an `n` column"


def test_a_page_of_per_document_correlations_says_how_many_documents_they_rest_on():
    """DEBATE's tables: `n` counts texts, `groups` the documents whose correlations are averaged; the banner says
    both (no group: nothing said)."""
    from sumjudge.results.banner import groups_words

    page = ["## t", "", "| metric | reproduced | n | groups |", "|--|--|--|--|", "| rho | 0.2 | 32 | 2 |",
            "| r | 0.1 | 36 | 6 |", "| rho | nan | 3 | 0 |"]
    said = groups_words(page)
    assert said.startswith(" **Groups:** 2 to 6 (the `groups` column") and "not independent examples" in said
    assert groups_words(["## t", "", "| n |", "|--|", "| 20 |"]) == ""
    assert groups_words(["## t", "", "| dataset | groups |", "|--|--|", "| summeval | 100 |"]) == ""  # page 01


def test_a_page_whose_model_is_not_the_papers_says_what_it_is_for_and_shows_no_difference(tmp_path):
    """The smoke profile's model beside MADISSE's Llama-3-70B: the banner names both (the parameter count the
    record holds, the dtype), gives n's range, says the page is not evidence for the claim and why its tables have
    no `difference` column; comparison leaves the column out outside the paper's setting."""
    from sumjudge.report import comparison
    from sumjudge.results.page import write_notebook_page

    nb = reproduce.notebooks("10")[0]
    planted_tables(tmp_path / "figures" / nb.stem)
    out = tmp_path / "figures" / "results-smoke"
    out.mkdir(parents=True)
    record = {"notebook": nb.stem, "calls": 40, "answers": None, "commit": "abc", "check": {"state": "recorded"},
              "engines": [{"backend": "hf", "model": "qwen2.5-coder-0.5b-instruct", "dtype": "bfloat16",
                           "parameters": 494032768}]}
    banner = banner_of(write_notebook_page(nb, tmp_path / "figures" / nb.stem, out, record).read_text())
    assert ("`qwen2.5-coder-0.5b-instruct` (494,032,768 parameters (0.49B); bfloat16; dequantised from its 4-bit GGUF, "
            "q4_k_m)") in banner  # the smoke model's weights are the quantised file's, said
    assert "MADISSE: Llama-3-70B-Instruct (70B parameters)" in banner
    assert "**n:** 5 to 30 (the `n` column of 2 of the 3 tables this page computes)." in banner
    assert "**Groups:**" not in banner  # no table of it averages correlations over groups
    assert "it is not evidence for or against the paper's claim" in banner
    from sumjudge.results.banner import notebook_banner
    arena = " ".join(notebook_banner("50_judge_arena", "smoke", record, out, []))  # the judges of all four papers
    assert "The model is none of the papers', so this page shows each paper's judge running" in arena
    assert "nor a ranking of the papers' judges" in arena and "the paper's claim" not in arena
    assert "leave out the `difference` column" in banner and "`smoke` profile's subsets" in banner
    rows = [{"metric": "BAcc", "paper": 75.1, "reproduced": 62.5, "n": 12}]
    assert "difference" not in comparison(rows, papers_setting=False).columns
    assert list(comparison(rows, papers_setting=True)["difference"].round(1)) == [-12.6]
    record["engines"][0].pop("parameters")  # not recorded, and no such model folder here: not guessed
    banner = banner_of(write_notebook_page(nb, tmp_path / "figures" / nb.stem, out, record).read_text())
    assert "`qwen2.5-coder-0.5b-instruct` (parameters unknown; bfloat16; dequantised" in banner


def test_the_papers_model_on_the_paper_profile_shows_the_difference_and_no_caveat(tmp_path):
    from sumjudge.results.page import write_notebook_page

    nb = reproduce.notebooks("10")[0]
    planted_tables(tmp_path / "figures" / nb.stem)
    out = tmp_path / "figures" / "results-paper"
    out.mkdir(parents=True)
    record = {"notebook": nb.stem, "calls": 40, "answers": None, "commit": "abc", "check": {"state": "recorded"},
              "engines": [{"backend": "openai", "model": "meta-llama/Meta-Llama-3-70B-Instruct", "dtype": None}]}
    banner = banner_of(write_notebook_page(nb, tmp_path / "figures" / nb.stem, out, record).read_text())
    assert "`meta-llama/Meta-Llama-3-70B-Instruct` (parameters unknown; dtype not recorded)" in banner
    assert "not evidence" not in banner and "each table's `difference` column is reproduced minus" in banner
    # the paper's model on a subset (another profile): no caveat on the model, still no difference column
    other = tmp_path / "figures" / "results-scale"
    other.mkdir(parents=True)
    banner = banner_of(write_notebook_page(nb, tmp_path / "figures" / nb.stem, other, record).read_text())
    assert "not evidence" not in banner and "leave out the `difference` column" in banner
    assert "another model" not in banner and "`scale` profile's subsets" in banner


@pytest.mark.parametrize("notebook, profile, n, shown", [
    ("10_madisse_main", "paper", None, True),  # Llama-3-70B, MADISSE's model, on whole datasets
    ("30_mesa", "paper", None, True),  # the paper profile runs MESA on GPT-4o, MESA's model
    ("20_debate_main", "paper", None, False),  # Llama-3-70B is not DEBATE's GPT-4
    ("10_madisse_main", "paper", 20, False),  # the paper's model on 20 examples
    ("00_quickstart", "paper", None, True),  # the quickstart prints MADISSE's numbers
    ("10_madisse_main", "smoke", None, False)])
def test_comparison_shows_the_difference_only_in_the_papers_setting_of_the_running_notebook(
        monkeypatch, notebook, profile, n, shown):
    from sumjudge import notebook as nbmod
    from sumjudge.report import comparison

    monkeypatch.setattr(nbmod, "_LATEST", [])
    rows = [{"metric": "BAcc", "paper": 75.1, "reproduced": 62.5}]
    assert "difference" not in comparison(rows).columns  # no notebook running: not known to be the paper's
    nbmod.Session(notebook, profile=profile, n=n)
    assert ("difference" in comparison(rows).columns) is shown


def test_safetensors_parameters_are_counted_from_the_headers(tmp_path):
    import struct

    from sumjudge.results.model_files import safetensors_parameters

    header = json.dumps({"__metadata__": {}, "a": {"dtype": "BF16", "shape": [3, 4], "data_offsets": [0, 24]},
                         "b": {"dtype": "BF16", "shape": [5], "data_offsets": [24, 34]}}).encode()
    (tmp_path / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header + bytes(34))
    assert safetensors_parameters(tmp_path) == 17 and safetensors_parameters(tmp_path / "none") is None


def test_the_index_banner_and_its_last_run_files_say_what_they_cover(tmp_path):
    """The index: the models of every page beside the papers', n over every page's tables; the last run's parse
    rates and time profile are linked under that run's name (they count its notebooks only), not shown as the
    page's."""
    from sumjudge.results.page import write_index, write_notebook_page

    out = tmp_path / "figures" / "results-smoke"
    out.mkdir(parents=True)
    prov = {"profile": "smoke", "notebooks": {}, "runs": {
        "2026-01-01 10:00 UTC": {"commit": "a", "notebooks": ["10_madisse_main", "30_mesa"]},
        "2026-01-02 10:00 UTC": {"commit": "b", "notebooks": ["30_mesa"]}}}
    for stem in ("10", "30"):
        nb = reproduce.notebooks(stem)[0]
        planted_tables(tmp_path / "figures" / nb.stem)
        record = {"notebook": nb.stem, "calls": 4, "answers": None, "commit": "a", "check": {"state": "recorded"},
                  "engines": [{"backend": "hf", "model": "m", "dtype": "float32"}],
                  "run": "2026-01-01 10:00 UTC" if stem == "10" else "2026-01-02 10:00 UTC"}
        prov["notebooks"][nb.stem] = record
        write_notebook_page(nb, tmp_path / "figures" / nb.stem, out, record)
    (out / "provenance.json").write_text(json.dumps(prov))
    (out / "parse_rates_smoke.md").write_text("# Parse rates\n\n| method | first try |\n|---|---|\n| cot | 0.9 |\n")
    (out / "time_profile_smoke.md").write_text("## The shared engine, all notebooks together\n\n- decode_s: 0.0\n")
    text = write_index(out, "smoke").read_text()
    assert "> **Models:** `m` (parameters unknown; float32)" in text and "MESA: gpt-4o" in text
    assert "**n:** 5 to 30 (the `n` column of 4 of the 6 tables on the 2 pages)" in text
    assert "On every page that called a model, the model is not that page's paper's" in text
    assert "Every page's tables leave out the `difference` column" in text
    assert "## Parse rates" not in text and "shared engine" not in text and "| cot | 0.9 |" not in text
    assert "parse_rates_smoke.md" not in text and "time_profile_smoke.md" not in text
    assert "appears under several revisions" not in text
    # the runs each page comes from: 30 was recorded again by the second run
    assert "| 2026-01-01 10:00 UTC | `a` |  | 10 30 | 10 |" in text and "| 2026-01-02 10:00 UTC | `b` |  | 30 | 30 |" in text
    prov["notebooks"]["30_mesa"]["engines"][0]["revision"] = "local-other"  # another recording of the same weights
    prov["notebooks"]["30_mesa"]["backend_calls"] = 0
    (out / "provenance.json").write_text(json.dumps(prov))
    text = write_index(out, "smoke").read_text()
    assert "m appears under several revisions" in text and "made no backend call" in text and "REUSE=1" in text
    prov["notebooks"]["30_mesa"]["rendered_at"] = "c0ffee1234"  # its tables computed again from its answers
    (out / "provenance.json").write_text(json.dumps(prov))
    rows = [ln for ln in write_index(out, "smoke").read_text().splitlines() if ln.startswith("| [")]
    assert [ln.split(" | ")[2:4] for ln in rows] == [["`a`", "`a`"], ["`a`", "`c0ffee1`"]]  # recorded, computed at


def test_the_banner_says_why_cells_rest_on_few_examples_of_a_class_with_the_recordings_time(tmp_path):
    from sumjudge.results.banner import few_examples_words, fewest_of_a_class

    lines = ["## table3", "", "| evaluator | bacc | n | gold labels |", "|---|---|---|---|",
             "| madisse | 68.8 | 12 | 8 × 1, 4 × 0 |", "| zero-shot | 50 | 12 | 8 × 1, 4 × 0 |"]
    assert fewest_of_a_class(lines) == 4
    record = {"wall_s": 2165.0, "machine": {"cpu": "AMD EPYC"}}
    words = " ".join(few_examples_words(lines, record, "smoke"))
    assert "rest on 4 examples of one gold class" in words and "at least 2.5 times the examples" in words
    in_all = ["## t", "", "| evaluator | bacc | n |", "|---|---|---|", "| mesa | 50 | 3 |"]
    assert "rest on 3 examples in all" in " ".join(few_examples_words(in_all, record, "smoke"))
    assert "at least 6.7 times the examples" in " ".join(few_examples_words(in_all, record, "smoke"))  # 20 / 3
    assert "took 36 min on AMD EPYC" in words
    cached = " ".join(few_examples_words(lines, {**record, "calls": 150, "backend_calls": 0}, "smoke"))
    assert "read every answer from the response cache" in cached and "took" not in cached
    enough = [ln.replace("8 × 1, 4 × 0", "12 × 1, 10 × 0") for ln in lines]
    assert few_examples_words(enough, record, "smoke") == [] and few_examples_words(["## x"], record, "smoke") == []
    support = ["## t", "", "| type | f1 | support |", "|---|---|---|", "| Entity | 0.5 | 2 |"]
    assert fewest_of_a_class(support) == 2
    only_n = ["## t", "", "| judge | bacc | n |", "|---|---|---|", "| a | 50 | 8 |", "| b | 50 | 0 |"]
    said = " ".join(few_examples_words(only_n, record, "smoke"))
    assert "rest on 8 examples in all" in said and "10 of each gold class would take at least 2.5 times" in said


def test_the_banner_names_each_setting_the_profile_changed_from_the_paper_setting():
    """Page 10 and page 00 run the zero-shot judge with other n and context: the banner says each value beside the
    paper setting's (the paper profile's, else the notebook's default), so two numbers for one judge are explained."""
    from sumjudge.results.banner import setting_changes, setting_words

    ten = {k: (v, p) for k, v, p in setting_changes("10_madisse_main", "smoke")}
    assert ten["n"] == (12, None) and ten["context_length"] == (2048, None)
    assert ten["rounds"] == (1, 3) and ten["sessions"] == (1, 3) and ten["adjudicators"] == (1, 3)
    assert "profile" not in ten and "seed" not in ten  # plumbing, not a setting
    words = " ".join(setting_words("10_madisse_main", "smoke"))
    assert "`n` 12 instead of all" in words and "`rounds` 1 instead of 3" in words
    assert "`evaluators` [zero-shot, cot, madisse] instead of all" in words
    zero = {k: v for k, v, _ in setting_changes("00_quickstart", "smoke")}
    assert zero["n"] == 20 and zero["context_length"] == 1024
    arena = " ".join(setting_words("50_judge_arena", "smoke"))
    assert "`n` 20 instead of 200" in arena and "`methods` 8 of its 16" in arena  # the paper profile's own arena
    fine_tune = {k: (v, p) for k, v, p in setting_changes("43_factax_supervised", "smoke")}
    assert fine_tune["sft_config"] == ("lora", "paper") and fine_tune["max_steps"] == (2, -1)
    assert "`max_steps` 2 instead of the configured epochs" in " ".join(setting_words("43_factax_supervised", "smoke"))
    assert setting_words("10_madisse_main", "paper") == []
    assert setting_words("02_lab_llm_judges", "smoke") == []  # it replays notebook 50's recording
    # a parameter whose comment says it sets the examples in n's place (banner.STANDS_IN_FOR_N), given here
    debate = " ".join(setting_words("20_debate_main", "smoke"))
    assert "`n` 20 instead of all (`rated_n` takes its place where it applies)" in debate and "`rated_n` 32" in debate
    assert "takes its place" not in words and "takes its place" not in arena  # held_out only defaults to n


def test_a_parameter_s_comment_is_read_from_its_line_and_the_comment_above(tmp_path):
    import nbformat

    from sumjudge.run.notebooks import parameter_comments

    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("# examples per rated run,\n# in place of n\nrated_n = None\nseed = 0  # the draw\nx = 1")
    cell.metadata["tags"] = ["parameters"]
    nb.cells = [nbformat.v4.new_code_cell("y = 2  # not a parameter"), cell]
    nbformat.write(nb, tmp_path / "n.ipynb")
    assert parameter_comments(tmp_path / "n.ipynb") == {"rated_n": "examples per rated run, in place of n",
                                                        "seed": "the draw", "x": ""}


def test_what_a_profile_leaves_out_is_a_section_of_the_page(tmp_path, monkeypatch):
    from sumjudge import report
    from sumjudge.results.page import page_body

    monkeypatch.setenv("SUMJUDGE_FIGURES", str(tmp_path))
    nb = reproduce.notebooks("41")[0]
    assert report.save_not_run([], nb.stem) is None and not (tmp_path / nb.stem).exists()
    report.save_not_run(["window 30 (the paper's 30-word cell)"], nb.stem, "Figure 2")
    body = "\n".join(page_body(nb, tmp_path / nb.stem, None))
    assert "## not run under this profile" in body
    assert "Not run under this profile (Figure 2): window 30 (the paper's 30-word cell)." in body


def test_each_table_on_a_page_carries_its_notebooks_reading_guide(tmp_path):
    """A page says beside each table what its notebook says beside the cell that saves it, in the notebook's order:
    the heading cell above (its title in italics), a "How to read" cell below; a "How to read" cell that follows
    another table's cell is that table's, and its text from a heading on opens the next section."""
    import nbformat

    from sumjudge.results.page import page_body
    from sumjudge.results.reading_guides import reading_guides

    nb = nbformat.v4.new_notebook()
    md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    nb.cells = [md("## Table 1: ours\n\nRows are judges."), code('report.save_table(t1, NOTEBOOK, "table1")'),
                md("How to read this table: BAcc (%).\n\n## Figure 2: lengths"),
                code('report.save_figure(fig, NOTEBOOK, "figure2")\nreport.save_table(t, NOTEBOOK, "figure2_data")'),
                md("How to read this figure: BAcc by length."), code("x = 1"), md("How to read nothing saved.")]
    path = tmp_path / "07_x.ipynb"
    nbformat.write(nb, path)
    guides = reading_guides(path)
    assert guides == {"table1.md": ("*Table 1: ours*\n\nRows are judges.", "How to read this table: BAcc (%)."),
                      "figure2.png": ("*Figure 2: lengths*", "How to read this figure: BAcc by length.")}
    src = tmp_path / "src"
    src.mkdir()
    (src / "table1.md").write_text("| judge | bacc |\n|---|---|\n| z | 50 |\n")
    body = "\n".join(page_body(path, src, None))
    assert "## table1\n\n*Table 1: ours*\n\nRows are judges.\n\n| judge |" in body  # as the notebook has them:
    assert "| z | 50 |\n\nHow to read this table: BAcc (%)." in body  # the heading above, the guide below
    moved = "\n".join(["How to read this table: BAcc (%).", "", "| judge | bacc |", "|---|---|", "| z | 50 |"])
    assert results_check.table_difference("t", moved, "\n".join(["| judge | bacc |", "|---|---|", "| z | 50 |", "",
                                                               "How to read this table: BAcc (%)."])) is not None
    (src / "figure2_data.md").write_text("| length | bacc |\n|---|---|\n| 10 | 50 |\n")
    (src / "figure2_data.png").write_bytes(b"png")  # a figure drawn from a table of its name: headed as the figure
    body = "\n".join(page_body(path, src, None))
    assert "## figure2 data\n" in body and "## figure2 data (figure)\n\n![figure2_data]" in body


def test_a_page_that_called_no_model_links_no_answers_file():
    """A notebook that asked no model (01: the datasets) records no answers file, so its banner links none; a
    notebook with answers links its file."""
    from sumjudge.results.page import state_lines

    rec = {"notebook": "01_x", "commit": "abc", "machine": {"cpu": "cpu"}, "date": "d", "check": {"state": "recorded"}}
    assert "answers.jsonl.xz" not in "\n".join(state_lines(rec))
    assert "without a model (it called none" in "\n".join(state_lines(rec))
    assert "(01_x/answers.jsonl.xz)" in "\n".join(state_lines({**rec, "answers": "01_x/answers.jsonl.xz"}))


def test_the_labs_banner_says_its_model_answered_only_the_judges_it_runs(tmp_path):
    """The lab replays notebook 50's answers (in another dtype) beside its own judge's: its Model line says which
    rows its model answered; a notebook that replays nothing says no such thing."""
    from sumjudge.results.banner import notebook_banner

    record = {"calls": 4, "answers": None, "engines": [{"backend": "hf", "model": "m", "dtype": "float32"}]}
    lab = " ".join(notebook_banner("02_lab_llm_judges", "smoke", record, tmp_path, []))
    assert "float32" in lab and "for the judges this notebook runs (the rows it replays from another" in lab
    assert "replays from another" not in " ".join(notebook_banner("50_judge_arena", "smoke", record, tmp_path, []))


def test_a_table_saved_under_an_f_string_name_carries_its_guide(tmp_path):
    """Notebook 00 saves `f"zero_shot_{level}"`: its page's `zero_shot_summary` table gets the guide above it; a
    name of another shape gets none."""
    import nbformat

    from sumjudge.results.page import page_body
    from sumjudge.results.reading_guides import guide_for, reading_guides

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("## Paper vs reproduced\n\nHow to read this table: one row a metric."),
                nbformat.v4.new_code_cell('report.save_table(table, NOTEBOOK, f"zero_shot_{level}")')]
    path = tmp_path / "00_x.ipynb"
    nbformat.write(nb, path)
    guides = reading_guides(path)
    assert guide_for(guides, "zero_shot_summary.md")[0].startswith("*Paper vs reproduced*")
    assert guide_for(guides, "one_shot_summary.md") == ("", "")
    assert guide_for({"{name}.md": ("x", "")}, "anything.md") == ("", "")  # no literal text: matches nothing
    both = {"{a}_{b}.md": ("loose", ""), "zero_shot_{level}.md": ("tight", "")}
    assert guide_for(both, "zero_shot_summary.md")[0] == "tight"  # the most literal name wins
    src = tmp_path / "src"
    src.mkdir()
    (src / "zero_shot_summary.md").write_text("| metric | bacc |\n|---|---|\n| BAcc | 50 |\n")
    assert "How to read this table: one row a metric." in "\n".join(page_body(path, src, None))


def test_a_setting_value_that_stands_for_something_is_said_as_what_it_means():
    """Notebook 41's window sizes: 0 is one sentence a window, None the whole summary."""
    from sumjudge.results.banner import _change

    assert _change("window_sizes", [0, None], [0, 15, 30, 60, None]) == (
        "`window_sizes` [0 (one sentence), None (the whole summary)] instead of [0 (one sentence), 15, 30, 60, None "
        "(the whole summary)]")
    assert _change("max_steps", 2, -1) == "`max_steps` 2 instead of the configured epochs"


def test_the_index_says_what_label_1_stands_for_on_each_page(tmp_path):
    from sumjudge.results.page import label_lines

    (tmp_path / "10_a.md").write_text("| x |\n\n*Label counts:* `labels said` is ...; 1 = faithful (f), 0 = unfaithful.\n")
    (tmp_path / "30_b.md").write_text("*Label counts:* `gold labels` is ...; 1 = an error, 0 = none.\n")
    (tmp_path / "40_c.md").write_text("*Label counts:* `labels said` is ...; 1 = faithful (f), 0 = unfaithful.\n")
    lines = label_lines(tmp_path, ["10_a", "30_b", "40_c", "50_none"])
    assert "| faithful (f), 0 = unfaithful | [10](10_a.md), [40](40_c.md) |" in lines
    assert "| an error, 0 = none | [30](30_b.md) |" in lines
    assert label_lines(tmp_path, ["50_none"]) == []


def test_the_index_counts_each_pages_notes_by_kind_and_table(tmp_path):
    """Two notes of one kind on one table count it once; a stale page's bullet is followed by a paragraph of its
    own (a blank line), not folded into the bullet."""
    from sumjudge.results.page import write_index

    out = tmp_path / "results-smoke"
    out.mkdir()
    notes_of = ["`t`: a is worse than chance (BAcc 20, interval [5, 40] wholly under 50): check",
                "`t`: b is worse than chance (BAcc 10, interval [0, 30] wholly under 50): check",
                "`u`: c is worse than chance (BAcc 10, interval [0, 30] wholly under 50): check",
                "`u`: 1 interval of zero width (e.g. d: [50, 50]): every resampling gives the same value"]
    prov = {"profile": "smoke", "runs": {}, "notebooks": {
        "10_a": {"notebook": "10_a", "commit": "a", "check": {"state": "recorded"}, "cannot_show": notes_of},
        "20_b": {"notebook": "20_b", "commit": "a", "check": {"state": "stale", "since": "b", "differences": ["x"]}}}}
    (out / "provenance.json").write_text(json.dumps(prov))
    text = write_index(out, "smoke").read_text()
    assert "| [10_a](10_a.md) | worse than chance (2); zero-width intervals (1) |" in text
    assert "- [20_b](20_b.md): stale since `b`: x\n\nEach page lists" in text
