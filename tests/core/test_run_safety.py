"""Settings validated before any model loads, one run per folder, clear errors for bad folders, Ctrl-C,
usage totals over every process that worked on a run (issue: parsers, settings and run folders that never
guess)."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import needs_mirror

from sumjudge.cli import main as cli
from sumjudge.data import registry
from sumjudge.judges.settings import make_config
from sumjudge.llm import ConfigError
from sumjudge.run.folder import RunLock
from sumjudge.run.methods import get_method

pytestmark = needs_mirror


def run_args(out, *extra, model="tiny", cache=None, limit="4"):
    return ["run", "zero-shot", "--dataset", "tofueval-meetingbank", "--level", "sentence", "--limit", limit,
            "--model", model, "--out", out, "--cache", cache or out.parent / "c.sqlite",
            "--set", "max_new_tokens=8", *extra]


@pytest.mark.parametrize("method, setting, expected", [
    ("madisse", "max_new_tokens=abc", "expected an integer"),
    ("madisse", "temperature=hot", "expected a number"),
    ("madisse", "rounds=two", "expected an integer"),
    ("madisse", "sessions=2.5", "expected an integer"),
    ("self-consistency", "samples=0", "allowed values are >= 1"),
    ("self-consistency", "samples=-3", "allowed values are >= 1"),
    ("madisse", "rounds=0", "allowed values are >= 1"),
    ("zero-shot", "truncate=bogus", "one of error, truncate"),
    ("zero-shot", "fallback=bogus", "one of none, option_scores"),
    ("madisse", "init=random", "one of stance, none"),
    ("madisse", "doc_first=maybe", "true or false"),
    ("madisse", "temperature=nan", "finite"),
    ("factax-wd", "window_words=-1", ">= 0"),
    ("mesa", "steps=2", "one of 1, 3"),
    ("mesa", "aspect_mode=both", "one of single, multi"),
    ("g-eval", "mode=guess", "one of probs, samples, auto"),
    ("debate", "critic=angry", "unknown critic persona"),
    ("madisse", "rounds", "expected key=value"),
])
def test_bad_settings_exit_2_naming_key_value_and_what_is_allowed_before_any_model_loads(
        method, setting, expected, tmp_path, capsys):
    out = tmp_path / "run"
    dataset = {"debate": "summeval", "g-eval": "summeval", "mesa": "meeting-errors"}.get(method,
                                                                                        "tofueval-meetingbank")
    # a model path that does not exist: reaching model loading would exit 3, not 2
    code = cli.main(["run", method, "--dataset", dataset, "--model", "./no/such/model", "--out", out,
                     "--cache", tmp_path / "c.sqlite", "--set", setting])
    err = capsys.readouterr().err
    assert code == 2 and expected in err and "Traceback" not in err
    key = setting.split("=")[0]
    assert key in err
    assert not out.exists()  # nothing written for a refused run


def test_settings_are_converted_to_their_types(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "123").write_text("A guideline.\n")  # a file named like a number stays a file name
    cfg = make_config(get_method("madisse").config_cls, ["sessions=3", "temperature=1", "doc_first=false",
                                                        "history_tokens=none", "guidelines=123"])
    assert cfg.sessions == 3 and cfg.temperature == 1.0 and cfg.doc_first is False
    assert cfg.history_tokens is None and cfg.guidelines == "123"
    cfg = make_config(get_method("factax-wd").config_cls, {"window_words": "null"})
    assert cfg.window_words is None
    with pytest.raises(ConfigError, match="unknown setting 'bogus'"):
        make_config(get_method("zero-shot").config_cls, {"bogus": 1})


@pytest.mark.parametrize("limit", ["0", "-1"])
def test_limit_below_one_is_a_usage_error(limit, tmp_path, capsys):
    assert cli.main(run_args(tmp_path / "o", limit=limit, model="./no/such/model")) == 2
    assert "--limit" in capsys.readouterr().err and not (tmp_path / "o").exists()


@pytest.mark.parametrize("level, n", [("sentence", 40), ("sentence", 39), ("sentence", 7), ("summary", 13),
                                      ("summary", 2), ("sentence", 1)])
def test_limit_gives_exactly_n_examples(level, n):
    exs = registry.load("tofueval-meetingbank", level=level, limit=n, seed=3)
    assert len(exs) == n and len({e.id for e in exs}) == n
    if n >= 2:
        assert {e.label for e in exs} == {0, 1}  # still stratified


def test_stratum_quotas_are_exact_and_proportional():
    assert registry.stratum_quotas({"a": 60, "b": 30, "c": 10}, 10) == {"a": 6, "b": 3, "c": 1}
    assert sum(registry.stratum_quotas({"a": 690, "b": 87}, 40).values()) == 40
    assert registry.stratum_quotas({"a": 1, "b": 100}, 50) == {"a": 1, "b": 49}
    assert registry.stratum_quotas({"a": 5, "b": 5, "c": 5}, 2) in ({"a": 1, "b": 1, "c": 0},)


def test_a_second_process_on_the_same_folder_exits_2_naming_the_holder(tmp_path, capsys):
    out = tmp_path / "run"
    out.mkdir()
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time; from pathlib import Path; from sumjudge.run.folder import RunLock\n"
        f"with RunLock(Path({str(out)!r})):\n    print('locked', flush=True); time.sleep(60)")],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        code = cli.main(run_args(out))
        err = capsys.readouterr().err
        assert code == 2 and f"in use by process {holder.pid}" in err and "Traceback" not in err
        assert not (out / "config.json").exists()
    finally:
        holder.kill()
        holder.wait()
    assert cli.main(run_args(out)) == 0  # the lock died with its process


def test_lock_in_one_process_is_exclusive(tmp_path):
    with RunLock(tmp_path):
        with pytest.raises(ConfigError, match=f"in use by process {os.getpid()}"):
            with RunLock(tmp_path):
                pass
    with RunLock(tmp_path):  # released
        pass


def test_out_naming_a_file_or_a_foreign_folder_or_a_corrupt_config_is_refused(tmp_path, capsys):
    f = tmp_path / "file.txt"
    f.write_text("mine")
    assert cli.main(run_args(f)) == 2
    assert "is a file" in capsys.readouterr().err and f.read_text() == "mine"

    foreign = tmp_path / "mine"
    foreign.mkdir()
    for name, text in [("results.jsonl", "my results\n"), ("metrics.json", "{}"), ("notes.md", "x")]:
        (foreign / name).write_text(text)
    assert cli.main(run_args(foreign)) == 2
    err = capsys.readouterr().err
    assert "not a sumjudge run folder" in err and "metrics.json" in err
    assert (foreign / "results.jsonl").read_text() == "my results\n"  # nothing lost

    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "config.json").write_text("{not json")
    assert cli.main(run_args(bad)) == 2
    err = capsys.readouterr().err
    assert "config.json" in err and "not a readable run config" in err and "Traceback" not in err


@pytest.mark.slow
def test_ctrl_c_prints_one_line_exits_130_and_the_run_resumes(tiny_model_dir, tmp_path):
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false", "PYTHONUNBUFFERED": "1"}
    out, cache = tmp_path / "run", tmp_path / "c.sqlite"
    # one example per micro-batch (prompts of 1,100-1,500 tokens), 12 of them: the first answer is logged
    # seconds before the run's end, so the interrupt lands inside the run, not in its last instant
    args = [str(a) for a in run_args(out, "--token-budget", "1600", model=tiny_model_dir, cache=cache, limit="12")]
    args[args.index("max_new_tokens=8")] = "max_new_tokens=32"
    # SIGINT at its default in the child whatever an earlier test left ignored in this process (an ignored
    # disposition is inherited, and Python then installs no KeyboardInterrupt handler)
    proc = subprocess.Popen([sys.executable, "-m", "sumjudge.cli.main", *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 300
    calls = out / "calls.jsonl"
    while time.time() < deadline and proc.poll() is None:
        if calls.exists() and sum(1 for line in calls.read_text().splitlines() if '"event": "chat"' in line) >= 1:
            break
        time.sleep(0.05)
    assert proc.poll() is None, "the run finished before it could be interrupted"
    status = Path(f"/proc/{proc.pid}/status")
    if status.exists():  # Linux: the child must catch SIGINT (an ignored one would let the run finish)
        masks = dict(x.split(":\t") for x in status.read_text().splitlines() if x.startswith(("SigIgn", "SigCgt")))
        assert int(masks["SigCgt"], 16) >> (signal.SIGINT - 1) & 1, f"the run does not catch SIGINT: {masks}"
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130
    lines = [x for x in err.splitlines() if x.strip() and not x.startswith("zero-shot:")]  # tqdm's bar aside
    assert lines == ["sumjudge: interrupted; every finished call is cached: run the same command again to resume"]
    assert "Traceback" not in err and not (out / "metrics.json").exists()
    paid_before = sum(1 for line in calls.read_text().splitlines()
                      if '"event": "chat"' in line and '"cache_hit": false' in line)

    res = subprocess.run([sys.executable, "-m", "sumjudge.cli.main", *args], env=env, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    summary = json.loads(res.stdout.strip().splitlines()[-1])
    metrics = json.loads((out / "metrics.json").read_text())
    every = metrics["usage_all_processes"]
    assert every["processes"] == 2
    # calls paid before the interrupt stay in the totals; this process's own counter does not have them
    assert every["backend_calls"] == paid_before + summary["backend_calls"]
    assert summary["backend_calls_all_processes"] == every["backend_calls"]
    starts = [json.loads(x) for x in calls.read_text().splitlines() if '"process_start"' in x]
    assert len(starts) == 2 and starts[1]["pid"] != starts[0]["pid"]


def test_documented_exit_code_table_matches_the_cli():
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "docs" / "command-line.md").read_text(encoding="utf-8")
    table = readme[readme.index("Exit codes (each row"):]
    codes = {int(m.group(1)) for m in re.finditer(r"^\| (\d+) \|", table, re.M)}
    assert codes == {0, cli.EXIT_USAGE, cli.EXIT_DATA, cli.EXIT_BACKEND, cli.EXIT_RUN, cli.EXIT_BUDGET,
                     cli.EXIT_INTERRUPTED}
    assert (cli.EXIT_USAGE, cli.EXIT_DATA, cli.EXIT_BACKEND, cli.EXIT_RUN, cli.EXIT_BUDGET, cli.EXIT_INTERRUPTED) == (
        2, 3, 4, 5, 6, 130)
