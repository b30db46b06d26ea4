"""A recording never loses committed results: a failed or killed ``make reproduce`` leaves the results page as it
was, ``make clean`` removes build outputs only, and a killed recording takes its shared engine with it."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sumjudge.paths import project_root


def digests(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def home(tmp_path):
    """A project home holding the quickstart notebook and a copy of the committed results page."""
    h = tmp_path / "home"
    (h / "notebooks").mkdir(parents=True)
    shutil.copy(project_root() / "notebooks" / "00_quickstart.ipynb", h / "notebooks")
    shutil.copytree(project_root() / "figures" / "results-smoke", h / "figures" / "results-smoke")
    return h


def reproduce(home: Path, *args: str, **kw) -> subprocess.Popen:
    env = {**os.environ, "SUMJUDGE_HOME": str(home)}
    return subprocess.Popen([sys.executable, "-m", "sumjudge.reproduce", "--notebooks", "00", *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)


@pytest.mark.slow
@pytest.mark.parametrize("args", [("--backend", "openai", "--model", "x", "--base-url", "http://127.0.0.1:9/v1"),
                                  ("--backend", "bogus")], ids=["unreachable-server", "unknown-backend"])
def test_a_failed_recording_leaves_the_committed_page_as_it_was(home, args):
    page = home / "figures" / "results-smoke"
    before = digests(page)
    proc = reproduce(home, *args)
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode == 1, out
    assert "results page unchanged: no notebook of this run finished" in out
    assert digests(page) == before


@pytest.mark.slow
def test_a_killed_recording_leaves_the_committed_page_as_it_was(home):
    page = home / "figures" / "results-smoke"
    before = digests(page)
    proc = reproduce(home, "--backend", "openai", "--model", "x", "--base-url", "http://127.0.0.1:9/v1",
                     start_new_session=True)
    time.sleep(3)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=60)
    assert digests(page) == before


def test_make_clean_removes_build_outputs_and_no_committed_file(tmp_path):
    """``make clean`` in a checkout: build/ and the test cache go, every committed file stays (the results page,
    its answers, figures/gpu, figures/scale); an untracked figure of a notebook stays too (``make clean-figures``
    is the explicit target for those, and it also keeps every committed file)."""
    repo = tmp_path / "repo"
    (repo / "figures" / "results-smoke" / "00_quickstart").mkdir(parents=True)
    (repo / "figures" / "gpu").mkdir()
    shutil.copy(project_root() / "Makefile", repo / "Makefile")
    shutil.copy(project_root() / ".gitignore", repo / ".gitignore")
    committed = {"figures/results-smoke/index.md": "# page\n", "figures/results-smoke/00_quickstart/answers.jsonl.xz": "x",
                 "figures/gpu/bench.json": "{}", "figures/README.md": "figures\n"}
    for name, text in committed.items():
        (repo / name).write_text(text)
    git = ["git", "-c", "user.email=t@example.org", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    subprocess.run([*git, "add", "-f", *committed], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "page"], cwd=repo, check=True)
    (repo / "build" / "replay").mkdir(parents=True)
    (repo / "build" / "replay" / "x.csv").write_text("a\n")
    (repo / "figures" / "00_quickstart").mkdir()
    (repo / "figures" / "00_quickstart" / "table.md").write_text("| a |\n")
    (repo / "figures" / "results-smoke" / "stray.md").write_text("a run's file not committed\n")
    res = subprocess.run(["make", "clean"], cwd=repo, capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    assert not (repo / "build").exists()
    assert all((repo / name).read_text() == text for name, text in committed.items())
    assert (repo / "figures" / "00_quickstart" / "table.md").exists()
    res = subprocess.run(["make", "clean-figures"], cwd=repo, capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    assert all((repo / name).read_text() == text for name, text in committed.items())
    assert not (repo / "figures" / "00_quickstart").exists() and not (repo / "figures" / "results-smoke" / "stray.md").exists()
