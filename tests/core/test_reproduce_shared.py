"""``make reproduce`` on a shared engine: the model loaded once, notebooks in worker processes at the same time."""

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


@pytest.mark.slow
@needs_mirror
def test_notebooks_run_together_on_one_shared_engine(tmp_path):
    home = tmp_path / "home"
    (home / "notebooks").mkdir(parents=True)
    for nb in ("00_quickstart.ipynb", "01_datasets.ipynb"):
        shutil.copy(project_root() / "notebooks" / nb, home / "notebooks" / nb)
    env = {**os.environ, "SUMJUDGE_HOME": str(home), "SUMJUDGE_DATA_MIRROR": str(sources.mirror_dir()),
           "SUMJUDGE_MODELS": str(project_root() / "data" / "models"), "TOKENIZERS_PARALLELISM": "false"}
    res = subprocess.run([sys.executable, "-m", "sumjudge.reproduce.record", "--profile", "ci", "--jobs", "2"], env=env,
                         capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "shared engine at http://127.0.0.1:" in res.stdout and "2 at a time, one shared engine" in res.stdout
    # the quickstart's run was answered by the shared engine, as the hf backend on the same model
    configs = [json.loads(p.read_text()) for p in (home / "build" / "runs" / "00_quickstart").glob("*/*/config.json")]
    assert configs and all(c["backend_info"]["name"] == "hf" and "shared_engine" in c["backend_info"]["extra"]
                           for c in configs)
    profile = (home / "figures" / "time_profile_ci.md").read_text()
    assert "one shared engine" in profile and "The shared engine, all notebooks together" in profile
    assert (home / "figures" / "results-ci" / "index.md").exists()
    # the engine was stopped with the run
    url = (home / "build" / "shared_engine" / "url").read_text().strip()
    import httpx

    with pytest.raises(httpx.HTTPError):
        httpx.get(url + "/health", timeout=5)


def test_workers_take_the_longest_notebooks_first(tmp_path, monkeypatch):
    from pathlib import Path

    from sumjudge import profiles
    from sumjudge.reproduce.record import longest_first

    monkeypatch.setenv("SUMJUDGE_FIGURES", str(tmp_path))
    nbs = [Path(f"{k}_nb.ipynb") for k in ("00", "10", "13", "30")]
    # a fresh clone: no time profile here, the profile's measured order
    assert [p.stem[:2] for p in longest_first(nbs, profiles.load("smoke").longest_first)] == ["30", "13", "00", "10"]
    assert [p.stem[:2] for p in longest_first(nbs, [])] == ["00", "10", "13", "30"]
    # this machine's last time profile wins
    (tmp_path / "time_profile_smoke.md").write_text("| notebook | wall_s |\n|---|---|\n| 10_nb | 900.0 |\n"
                                                    "| 30_nb | 50.5 |\n")
    assert [p.stem[:2] for p in longest_first(nbs, ["30"])] == ["10", "30", "00", "13"]
    # a replay (more calls read from the cache than asked of the model) says nothing of what a run costs
    head = "| notebook | wall_s | model | calls | cache_hits | backend_calls |\n|---|---|---|---|---|---|\n"
    (tmp_path / "time_profile_smoke.md").write_text(head + "| 10_nb | 900.0 | m | 40 | 40 | 0 |\n"
                                                    "| 30_nb | 50.5 | m | 10 | 2 | 8 |\n| 01_nb | 7.0 |  |  |  |  |\n")
    assert [p.stem[:2] for p in longest_first(nbs, ["30", "13"])] == ["30", "13", "00", "10"]
    (tmp_path / "time_profile_smoke.md").write_text(head + "| 10_nb | 900.0 | m | 40 | 10 | 30 |\n"
                                                    "| 30_nb | 50.5 | m | 10 | 2 | 8 |\n| 01_nb | 7.0 |  |  |  |  |\n")
    assert [p.stem[:2] for p in longest_first(nbs, ["30", "13"])] == ["10", "30", "00", "13"]


def test_a_cpu_without_native_bf16_is_told_before_a_long_run(monkeypatch):
    from sumjudge.reproduce import record as reproduce

    monkeypatch.setattr(reproduce, "cpu_has_native_bf16", lambda: False)
    assert "runs in float32" in reproduce.cpu_speed_note("cpu-native")
    assert reproduce.cpu_speed_note("float32") is None and reproduce.cpu_speed_note(None) is None
    monkeypatch.setattr(reproduce, "cpu_has_native_bf16", lambda: True)
    assert reproduce.cpu_speed_note("cpu-native") is None
