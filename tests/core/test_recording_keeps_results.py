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
    return subprocess.Popen([sys.executable, "-m", "sumjudge.reproduce.record", "--notebooks", "00", *args], env=env,
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


def processes_with(text: str) -> list[int]:
    """The pids whose command line holds ``text`` (Linux /proc)."""
    out = []
    for d in Path("/proc").iterdir():
        try:
            if d.name.isdigit() and text in (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"):
                out.append(int(d.name))
        except OSError:
            continue
    return out


def gone_within(text: str, seconds: float) -> bool:
    t0 = time.time()
    while processes_with(text) and time.time() - t0 < seconds:
        time.sleep(0.2)
    return not processes_with(text)


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads processes from /proc")
def test_a_process_started_to_follow_its_parent_ends_when_the_parent_is_killed(tmp_path):
    marker = f"follower-{tmp_path.name}"
    parent = subprocess.Popen([sys.executable, "-c", (
        "import subprocess, sys, os, time\n"
        f"subprocess.Popen([sys.executable, '-c', 'from sumjudge.llm.shared_engine import exit_with_parent; "
        f"import os, time; exit_with_parent(int(os.environ[\"P\"]), 0.2); time.sleep(600)', '{marker}'], "
        "start_new_session=True, env={**os.environ, 'P': str(os.getpid())})\n"
        "time.sleep(600)\n")])
    t0 = time.time()
    while not processes_with(marker) and time.time() - t0 < 30:
        time.sleep(0.1)
    assert processes_with(marker), "the follower did not start"
    parent.kill()
    parent.wait()
    assert gone_within(marker, 10), "the follower outlived its parent"


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads processes from /proc")
@pytest.mark.parametrize("kill", ["process-group", "recording-only"])
def test_a_killed_recording_takes_its_shared_engine_with_it(home, tiny_model_dir, kill):
    """``make reproduce`` killed (its whole process group, as a terminal or a job manager kills it, or the recording
    process alone) while its shared engine serves: no engine is left."""
    proc = reproduce(home, "--profile", "ci", "--model", str(tiny_model_dir), "--jobs", "2", start_new_session=True)
    url = home / "build" / "shared_engine" / "url"
    t0 = time.time()
    while not url.exists() and time.time() - t0 < 300 and proc.poll() is None:
        time.sleep(0.2)
    assert url.exists(), proc.communicate()[0][-3000:]
    marker = str(url)  # the engine's --ready-file: its command line names this home
    assert processes_with(marker)
    if kill == "process-group":
        os.killpg(proc.pid, signal.SIGKILL)
    else:
        proc.kill()
    proc.communicate(timeout=60)
    assert gone_within(marker, 15), "the shared engine outlived the recording"


@pytest.mark.slow
def test_ctrl_c_on_a_recording_is_one_line_and_exit_130(home):
    proc = reproduce(home, "--backend", "openai", "--model", "x", "--base-url", "http://127.0.0.1:9/v1",
                     start_new_session=True)
    time.sleep(2)
    os.killpg(proc.pid, signal.SIGINT)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130, out
    assert "Traceback" not in out and "interrupted: the results page is unchanged" in out
