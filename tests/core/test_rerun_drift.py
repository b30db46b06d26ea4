"""How far a fresh rerun moves a number: a rerun's page beside the committed one (answers asked by both and answered
otherwise, numeric cells moved), kept in rerun_drift.json and printed on the index."""

import json
import lzma

from sumjudge.reproduce import drift as rerun_drift
from sumjudge.results.page import drift_lines


def page(root, bacc, answers, commit="abc1234"):
    root.mkdir(parents=True)
    nb = "00_quickstart"
    (root / "provenance.json").write_text(json.dumps({"notebooks": {nb: {
        "commit": commit, "machine": {"cpu": "AMD EPYC", "cores": 2}}}}))
    (root / f"{nb}.md").write_text(
        "# 00\n\n## zero shot\n\n| evaluator | metric | reproduced | n | wall_s |\n|---|---|---|---|---|\n"
        f"| zero-shot | BAcc (%) | {bacc} | 20 | 12.5 |\n| zero-shot | K-alpha | 0.1 | 20 | 3 |\n")
    (root / nb).mkdir()
    with lzma.open(root / nb / "answers.jsonl.xz", "wt") as f:
        f.write(json.dumps({"type": "format", "version": 1}) + "\n")
        for key, text in answers.items():
            response = {"text": text, "latency_s": 1.0} if isinstance(text, str) else {"probs": text, "latency_s": 2.0}
            f.write(json.dumps({"type": "answer", "key": key, "kind": "chat", "engine": 0, "request": {},
                                "responses": [response]}) + "\n")
    return root


def test_a_rerun_is_compared_answer_by_answer_and_cell_by_cell_and_shown_on_the_index(tmp_path):
    committed = page(tmp_path / "page", "48.7", {"a": "Yes", "b": "No", "c": {"1": 0.2501, "2": 0.7499}, "r1": "x"})
    fresh = page(tmp_path / "fresh", "45.1", {"a": "Yes", "b": "Yes", "c": {"1": 0.2502, "2": 0.7498}, "r2": "y"},
                 commit="def5678")
    entry = rerun_drift.compare(committed, fresh, "alone", ["00_quickstart"])
    (row,) = entry["notebooks"]
    # a, b and c asked by both (a retry's key r1 / r2 by one only); b answered otherwise; c's probabilities equal
    # to three decimals; the wall time is not a number that moves
    assert row["answers"] == {"recorded": 4, "fresh": 4, "shared": 3, "differ": 1}
    assert row["cells"] == 4 and row["moved"] == 1 and row["commit"] == "def5678" and row["page_commit"] == "abc1234"
    assert row["largest"] == [{"table": "zero shot", "row": "zero-shot / BAcc (%)", "column": "reproduced",
                               "page": 48.7, "fresh": 45.1, "move": 45.1 - 48.7}]
    rerun_drift.record(committed, entry)
    rerun_drift.record(committed, {**entry, "label": "3 at a time"})
    rerun_drift.record(committed, entry)  # the same label again replaces its entry
    assert [e["label"] for e in json.loads((committed / "rerun_drift.json").read_text())] == ["3 at a time", "alone"]
    lines = drift_lines(committed)
    assert lines[1] == "## How far a fresh rerun moves a number"
    assert ("| alone | [00_quickstart](00_quickstart.md) | AMD EPYC, 2 cores | 3 | 1 (33%) | 4 | 1 | "
            "zero-shot / BAcc (%): reproduced 48.7 → 45.1 |") in lines
    assert drift_lines(tmp_path / "fresh") == []  # no reruns measured: no section


def test_make_rerun_drift_runs_each_notebook_alone_or_all_together_and_records_under_that_label(tmp_path, monkeypatch):
    """JOBS=1: one fresh run per notebook (each its own empty cache and run folders); JOBS=3: one run of them all;
    each rerun's rows recorded under its label beside the committed page, which is never written over."""
    committed = page(tmp_path / "page", "48.7", {"a": "Yes"})
    calls = []

    def fake_fresh_run(profile, notebooks, jobs, where):
        calls.append((notebooks, jobs, where.name))
        page(where / "figures" / f"results-{profile}", "50", {"a": "No"})
        return 10.0

    monkeypatch.setattr(rerun_drift, "fresh_run", fake_fresh_run)
    monkeypatch.setattr("sumjudge.reproduce.record.notebooks", lambda spec: [type("NB", (), {"stem": "00_quickstart"})()])
    rows = rerun_drift.rerun("smoke", ["00"], 1, committed, tmp_path / "work")
    assert calls == [(["00_quickstart"], 1, "00")] and rows[0]["answers"]["differ"] == 1 and rows[0]["moved"] == 1
    rerun_drift.rerun("smoke", ["00"], 3, committed, tmp_path / "work")
    entries = json.loads((committed / "rerun_drift.json").read_text())
    assert [(e["label"], e["jobs"], e["elapsed_s"]) for e in entries] == [("alone", 1, 10.0), ("3 at a time", 3, 10.0)]
    assert "| 48.7 |" in (committed / "00_quickstart.md").read_text()  # the committed page is left as it was
