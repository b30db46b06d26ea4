"""Record a notebook with ``make reproduce``, replay it without the model, and catch a planted prompt change and a
planted metric change unless the page is marked stale (the ci profile, its tiny model, in a home of its own)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
from conftest import needs_mirror

from sumjudge.data import sources
from sumjudge.paths import project_root


def reproduce(env, *args):
    res = subprocess.run([sys.executable, "-m", "sumjudge.reproduce.record", "--profile", "ci", "--notebooks", "00", *args],
                         env=env, capture_output=True, text=True, timeout=900)
    return res.returncode, res.stdout + res.stderr


def check(env, *args):
    res = subprocess.run([sys.executable, "-m", "sumjudge.reproduce.check", "--profile", "ci", *args], env=env,
                         capture_output=True, text=True, timeout=900)
    return res.returncode, res.stdout + res.stderr


def planted(home, old, new):
    nb = home / "notebooks" / "00_quickstart.ipynb"
    data = json.loads(nb.read_text())
    hits = 0
    for cell in data["cells"]:
        src = "".join(cell["source"])
        if old in src:
            cell["source"], hits = src.replace(old, new), hits + 1
    assert hits == 1
    nb.write_text(json.dumps(data))


@pytest.mark.slow
@needs_mirror
def test_a_recorded_page_replays_and_a_planted_change_is_caught_unless_marked_stale(tmp_path):
    home = tmp_path / "home"
    (home / "notebooks").mkdir(parents=True)
    original = project_root() / "notebooks" / "00_quickstart.ipynb"
    shutil.copy(original, home / "notebooks" / original.name)
    env = {**os.environ, "SUMJUDGE_HOME": str(home), "SUMJUDGE_DATA_MIRROR": str(sources.mirror_dir()),
           "SUMJUDGE_MODELS": str(project_root() / "data" / "models"), "TOKENIZERS_PARALLELISM": "false"}
    env.pop("SUMJUDGE_FIGURES", None)
    rc, out = reproduce(env, "--jobs", "1")
    assert rc == 0, out[-3000:]
    page = home / "figures" / "results-ci"
    assert (page / "00_quickstart" / "answers.jsonl.xz").exists()
    models = home / "data" / "models"
    shutil.rmtree(models, ignore_errors=True)  # a replay loads no weights
    env["SUMJUDGE_MODELS"] = str(models)
    rc, out = reproduce(env, "--replay")
    assert rc == 0 and "00_quickstart: verified: the replay gives this page" in out, out[-3000:]
    assert not models.exists() or not any(models.iterdir())

    # a prompt change: the replay stops at the first request it does not hold and says what differs
    planted(home, 'session.run("zero-shot", dataset, level=level)',
            'session.run("zero-shot", dataset, level=level, settings={"prompts": "printed"})')
    rc, out = reproduce(env, "--replay")
    assert rc == 1 and "FAILS: the page differs from its replay and does not say so" in out, out[-3000:]
    assert "ReplayMiss" in out and "prompt differs at character" in out
    shutil.copy(original, home / "notebooks" / original.name)

    # a metric change: the table differs, cell by cell
    planted(home, "report.save_table(table,", 'table["reproduced"] = table["reproduced"] * 0.5\nreport.save_table(table,')
    rc, out = check(env)
    assert rc == 1 and "rows differ (first: " in out and "regenerated" in out, out[-3000:]
    rc, out = check(env, "--mark")
    assert rc == 0 and "marked stale" in out
    text = (page / "00_quickstart.md").read_text()
    assert "> **State:** stale since `" in text and "stale since" in (page / "index.md").read_text()
    rc, out = check(env)
    assert rc == 0 and "as its page says" in out, out[-3000:]

    # the same metric change accepted: the page rendered from its answers (kept), then verified without a mark
    answers = (page / "00_quickstart" / "answers.jsonl.xz").read_bytes()
    before = json.loads((page / "provenance.json").read_text())["notebooks"]["00_quickstart"]
    rc, out = check(env, "--render")
    assert rc == 0 and "rendered from its answers" in out, out[-3000:]
    text = (page / "00_quickstart.md").read_text()
    assert "stale since" not in text and "computed again from those answers at `" in text
    after = json.loads((page / "provenance.json").read_text())["notebooks"]["00_quickstart"]
    assert (page / "00_quickstart" / "answers.jsonl.xz").read_bytes() == answers
    assert {k: after[k] for k in ("commit", "date", "machine", "answers")} == \
        {k: before[k] for k in ("commit", "date", "machine", "answers")}
    rc, out = check(env)
    assert rc == 0 and "00_quickstart: verified: the replay gives this page" in out, out[-3000:]
