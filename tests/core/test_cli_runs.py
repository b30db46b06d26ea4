"""``sumjudge run`` end to end on the real data mirror with the tiny model: run folders, resume after a
kill with zero repeated calls, and one clear error + non-zero exit for each kind of bad input."""

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time

import pytest
from conftest import needs_mirror

from sumjudge.cli import main as cli
from sumjudge.data import registry
from sumjudge.data.records import FaithExample

pytestmark = needs_mirror


def sumjudge_cmd(*args):
    return [sys.executable, "-m", "sumjudge.cli.main", *map(str, args)]


def run_args(model, cache, out, *extra):
    return ["run", "zero-shot", "--dataset", "tofueval-meetingbank", "--level", "sentence", "--limit", "6",
            "--model", model, "--cache", cache, "--out", out, "--set", "max_new_tokens=24", *extra]


def cache_rows(path) -> int:
    try:
        with sqlite3.connect(path, timeout=5) as c:
            return c.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
    except sqlite3.OperationalError:  # not created yet
        return 0


def judgements(out):
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    return [{k: v for k, v in r["judgement"].items() if k != "usage"} for r in rows]


def test_a_class_cache_exported_and_imported_answers_the_same_run_without_the_model(tiny_model_dir, tmp_path, capsys):
    """A teacher exports the answers of the runs a class will make; a student imports them and the same run is
    answered from the cache: no backend call, the same judgements."""
    teacher, student = tmp_path / "teacher.sqlite", tmp_path / "student.sqlite"
    assert cli.main(run_args(tiny_model_dir, teacher, tmp_path / "t")) == 0
    capsys.readouterr()
    handout = tmp_path / "class-cache.sqlite"
    assert cli.main(["cache", "export", handout, "--cache", teacher, "--backend", "hf"]) == 0
    exported = json.loads(capsys.readouterr().out)["exported"]
    assert exported == cache_rows(teacher) > 0
    assert cli.main(["cache", "export", handout, "--cache", teacher]) == 2  # nothing overwritten
    assert "exists" in capsys.readouterr().err
    assert cli.main(["cache", "export", tmp_path / "none.sqlite", "--cache", teacher, "--backend", "openai"]) == 0
    assert json.loads(capsys.readouterr().out)["exported"] == 0  # another scope: nothing of it here
    assert cli.main(["cache", "import", handout, "--cache", student]) == 0
    assert json.loads(capsys.readouterr().out) == {"path": str(student), "read": exported, "added": exported,
                                                   "already_here": 0}
    assert cli.main(["cache", "import", handout, "--cache", student]) == 0  # again: nothing twice
    assert json.loads(capsys.readouterr().out)["added"] == 0
    assert cli.main(run_args(tiny_model_dir, student, tmp_path / "s")) == 0
    assert json.loads(capsys.readouterr().out)["backend_calls"] == 0
    assert judgements(tmp_path / "s") == judgements(tmp_path / "t")
    (tmp_path / "notes.txt").write_text("not a cache")
    assert cli.main(["cache", "import", tmp_path / "notes.txt", "--cache", student]) == 2
    assert "not a sumjudge cache" in capsys.readouterr().err
    assert cli.main(["cache", "import", "--cache", student]) == 2  # the file is named


@pytest.mark.slow
def test_run_writes_the_run_folder(tiny_model_dir, tmp_path, capsys):
    out = tmp_path / "run"
    assert cli.main(run_args(tiny_model_dir, tmp_path / "c.sqlite", out)) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["n_examples"] == 6
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["run"]["method"] == "zero-shot" and cfg["method_config"]["max_new_tokens"] == 24
    assert cfg["backend_info"]["name"] == "hf" and cfg["backend_info"]["revision"]
    calls = [json.loads(x) for x in (out / "calls.jsonl").read_text().splitlines()]
    chats = [c for c in calls if c["event"] == "chat"]
    assert chats and all({"request", "response", "cache_hit", "scope", "tag"} <= set(c) for c in chats)
    assert all(c["response"]["prompt_tokens"] > 0 for c in chats)
    metrics = json.loads((out / "metrics.json").read_text())
    res = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert len(res) == 6 and metrics["n_examples"] == 6
    # the subset is stratified: both labels present, so balanced accuracy is defined
    assert {r["example"]["label"] for r in res} == {0, 1}
    # an unparsed answer stays unlabelled and is counted
    assert metrics["unparsed"] == sum(r["judgement"]["label"] is None for r in res)
    assert metrics["cost"]["calls_per_example"] >= 1
    # same command, same folder: everything from the cache, identical results
    before = judgements(out)
    assert cli.main(run_args(tiny_model_dir, tmp_path / "c.sqlite", out)) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["backend_calls"] == 0 and judgements(out) == before


@pytest.mark.slow
def test_kill_midway_then_rerun_repeats_no_call_and_gives_identical_results(tiny_model_dir, tmp_path):
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false"}
    small = ["--token-budget", "5000"]  # one or two rows per micro-batch: many chances to be killed mid-way
    ref_out = tmp_path / "reference"
    subprocess.run(sumjudge_cmd(*run_args(tiny_model_dir, tmp_path / "ref.sqlite", ref_out, *small)), check=True,
                   env=env, capture_output=True)
    total = cache_rows(tmp_path / "ref.sqlite")

    cache, out = tmp_path / "c.sqlite", tmp_path / "run"
    proc = subprocess.Popen(sumjudge_cmd(*run_args(tiny_model_dir, cache, out, *small)), env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 300
    while cache_rows(cache) < 2 and proc.poll() is None and time.time() < deadline:
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the run finished before it could be killed"
    done = cache_rows(cache)
    assert 0 < done < total
    assert not (out / "metrics.json").exists() and not (out / "results.jsonl").exists()

    res = subprocess.run(sumjudge_cmd(*run_args(tiny_model_dir, cache, out, *small)), env=env, capture_output=True,
                         text=True, check=True)
    summary = json.loads(res.stdout.strip().splitlines()[-1])
    assert summary["backend_calls"] == total - done  # nothing finished before the kill is computed again
    assert summary["cache_hits"] >= done
    assert cache_rows(cache) == total
    assert judgements(out) == judgements(ref_out)


@pytest.mark.slow
def test_no_cache_computes_everything_again(tiny_model_dir, tmp_path, capsys):
    assert cli.main(run_args(tiny_model_dir, tmp_path / "c.sqlite", tmp_path / "a", "--limit", "2")) == 0
    capsys.readouterr()
    cache_rows_before = cache_rows(tmp_path / "c.sqlite")
    args = run_args(tiny_model_dir, tmp_path / "c.sqlite", tmp_path / "b", "--limit", "2", "--no-cache")
    i = args.index("--cache")
    assert cli.main(args[:i] + args[i + 2:]) == 0  # --no-cache names no cache file (with one it is refused)
    assert json.loads(capsys.readouterr().out)["cache_hits"] == 0
    assert not (tmp_path / "c.sqlite").exists() or cache_rows(tmp_path / "c.sqlite") == cache_rows_before


@pytest.mark.parametrize("args, code, message", [
    (["run", "no-such-method", "--dataset", "tofueval-meetingbank"], 2, "unknown method 'no-such-method'"),
    (["run", "zero-shot", "--dataset", "no-such-data"], 2, "unknown dataset 'no-such-data'"),
    (["run", "zero-shot", "--dataset", "tofueval-meetingbank", "--level", "sentence", "--set", "bogus=1"], 2,
     "unknown setting 'bogus'"),
    (["run", "zero-shot", "--dataset", "tofueval-meetingbank", "--model", "./no/such/dir"], 3,
     "neither a local model directory"),
])
def test_bad_arguments_get_one_clear_message(args, code, message, tmp_path, capsys):
    assert cli.main(args + ["--out", tmp_path / "o", "--cache", tmp_path / "c"]) == code
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_unknown_backend_is_a_usage_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["run", "zero-shot", "--dataset", "x", "--backend", "nope", "--out", str(tmp_path)])
    assert e.value.code == 2 and "--backend accepts hf, openai, scripted, not 'nope'" in capsys.readouterr().err


def test_unreachable_server_exits_4_and_leaves_no_result(tmp_path, capsys):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = tmp_path / "o"
    code = cli.main(["run", "zero-shot", "--dataset", "tofueval-meetingbank", "--limit", "2", "--backend", "openai",
                     "--model", "m", "--base-url", f"http://127.0.0.1:{port}/v1", "--out", out,
                     "--cache", tmp_path / "c"])
    assert code == 4
    assert f"127.0.0.1:{port}" in capsys.readouterr().err
    assert not (out / "metrics.json").exists() and not (out / "results.jsonl").exists()


@pytest.mark.slow
def test_prompt_over_the_context_errors_naming_the_example_or_is_truncated_on_request(tmp_path, capsys):
    from sumjudge.llm.models import TINY_SHAPE, build_tiny_model

    model = build_tiny_model(tmp_path / "short-ctx", shape={**TINY_SHAPE, "max_position_embeddings": 1024})
    base = ["run", "zero-shot", "--dataset", "tofueval-meetingbank", "--level", "sentence", "--limit", "2", "--model",
            model, "--cache", tmp_path / "c", "--set", "max_new_tokens=8"]
    assert cli.main(base + ["--out", tmp_path / "a"]) == 5
    err = capsys.readouterr().err
    ids = [e.id for e in registry.load("tofueval-meetingbank", level="sentence", limit=2, seed=0)]
    assert "over the model context of 1024" in err and any(f"prompt for {i} " in err for i in ids) and "truncate" in err
    assert not (tmp_path / "a" / "metrics.json").exists()
    assert cli.main(base + ["--out", tmp_path / "b", "--set", "truncate=truncate"]) == 0
    rows = [json.loads(x) for x in (tmp_path / "b" / "results.jsonl").read_text().splitlines()]
    assert all(r["judgement"]["details"]["truncated_words"] > 0 for r in rows)
    assert json.loads((tmp_path / "b" / "config.json").read_text())["method_config"]["truncate"] == "truncate"


@pytest.mark.slow
@pytest.mark.parametrize("rounds,prompts,ctx", [(1, "code", 1536), (2, "code", 1536), (2, "printed", 1280)])
def test_madisse_fits_every_prompt_it_sends_under_truncation(tmp_path, rounds, prompts, ctx):
    """The document is cut once so that round 1 (stances shown), later rounds (arguments shown) and the
    adjudicators all fit: a single round still leaves room for the adjudicators' view of the arguments. The
    authors' prompts (the default) are longer than the printed ones (about 700 tokens without a document)."""
    from sumjudge.llm.models import TINY_SHAPE, build_tiny_model

    model = build_tiny_model(tmp_path / "short-ctx", shape={**TINY_SHAPE, "max_position_embeddings": ctx})
    out = tmp_path / "m"
    assert cli.main(["run", "madisse", "--dataset", "tofueval-meetingbank", "--level", "summary", "--limit", "2",
                     "--model", model, "--cache", tmp_path / "c", "--out", out, "--set", "max_new_tokens=48",
                     "--set", f"rounds={rounds}", "--set", "truncate=truncate", "--set", "fallback=option_scores",
                     "--set", f"prompts={prompts}"]) == 0
    calls = [json.loads(x) for x in (out / "calls.jsonl").read_text().splitlines()]
    chats = [c for c in calls if c.get("event") == "chat"]
    assert chats and all(c["response"]["prompt_tokens"] + 48 <= ctx for c in chats)
    assert any("/r1/" in c["tag"] for c in chats)


def test_a_different_config_in_the_same_folder_is_refused(tiny_model_dir, tmp_path, capsys):
    out = tmp_path / "o"
    assert cli.main(run_args(tiny_model_dir, tmp_path / "c", out, "--limit", "2")) == 0
    assert cli.main(run_args(tiny_model_dir, tmp_path / "c", out, "--limit", "3")) == 2
    assert "different configuration" in capsys.readouterr().err


def test_empty_text_is_refused_naming_the_example_and_field(monkeypatch, tmp_path, capsys):
    spec = registry.get("tofueval-meetingbank")
    good = FaithExample(id="a", dataset="t", document="doc", summary="fine", label=1)
    bad = FaithExample(id="b-7", dataset="t", document="doc", summary="  ", label=0)
    monkeypatch.setitem(registry.DATASETS, "broken", spec.__class__(**{**spec.__dict__, "name": "broken",
                                                                       "loader": lambda **kw: [good, bad]}))
    assert cli.main(["run", "zero-shot", "--dataset", "broken", "--backend", "scripted", "--out", tmp_path / "o"]) == 3
    err = capsys.readouterr().err
    assert "broken, row b-7, field 'summary'" in err


@pytest.mark.slow
def test_madisse_runs_end_to_end_on_the_tiny_model(tiny_model_dir, tmp_path, capsys):
    out = tmp_path / "madisse"
    args = ["run", "madisse", "--dataset", "tofueval-meetingbank", "--level", "summary", "--limit", "3",
            "--backend", "hf", "--model", tiny_model_dir, "--cache", tmp_path / "c", "--out", out,
            "--set", "max_new_tokens=12", "--set", "rounds=2", "--set", "sessions=2", "--set", "truncate=truncate",
            "--set", "fallback=option_scores"]
    assert cli.main(args) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["n_examples"] == 3 and set(metrics["variants"]) == {"agents_vote", "debates_vote"}
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    for r in rows:
        sessions = r["judgement"]["details"]["sessions"]
        assert len(sessions) == 2 and all(sorted(s["stances"]) == ["faithful", "faithful", "unfaithful",
                                                                    "unfaithful"] for s in sessions)
        assert all(1 <= len(s["rounds"]) <= 2 for s in sessions)
    calls = [json.loads(x) for x in (out / "calls.jsonl").read_text().splitlines()]
    assert any("/adjudicator" in c.get("tag", "") for c in calls) or all(
        s["consensus_round"] for r in rows for s in r["judgement"]["details"]["sessions"])


@pytest.mark.slow
def test_learn_guidelines_cli_writes_a_file_madisse_can_use(tiny_model_dir, tmp_path, capsys):
    out = tmp_path / "learned"
    learn = ["learn-guidelines", "--dataset", "tofueval-meetingbank", "--level", "sentence", "--limit", "2",
             "--model", tiny_model_dir, "--set", "rounds=1", "--set", "max_new_tokens=8", "--set",
             "truncate=truncate", "--cache", tmp_path / "c", "--out", out, "--max-passes", "1"]
    assert cli.main(learn) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    guidelines = out / "guidelines.txt"
    assert summary["guidelines"] >= 13 and summary["file"] == str(guidelines) and (out / "learning.json").exists()
    assert guidelines.read_text().startswith("1. You should aim for accuracy")
    # a run folder as every method's: its record (the procedure and its arguments), its calls, its metrics
    config = json.loads((out / "config.json").read_text())
    assert config["procedure"] == {"name": "learn-guidelines", "max_passes": 1, "start": "paper"}
    assert config["run"]["method"] == "madisse" and config["method_config"]["rounds"] == 1
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["procedure"] == "learn-guidelines" and metrics["n_examples"] == 2 and metrics["guidelines"] >= 13
    paid = metrics["usage_all_processes"]["backend_calls"]
    assert paid > 0 and json.loads((out / "calls.jsonl").read_text().splitlines()[0])["event"] == "process_start"
    # the same command again resumes from the cache; other arguments in the same folder are another run
    assert cli.main(learn) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["backend_calls"] == 0
    assert cli.main([*learn[:-2], "--max-passes", "2"]) == 2
    assert "different configuration" in capsys.readouterr().err
    # and a judging run does not take the procedure's folder
    assert cli.main(["run", "madisse", *learn[1:-2]]) == 2
    assert cli.main(["run", "madisse", "--dataset", "tofueval-meetingbank", "--level", "sentence", "--limit", "2",
                     "--model", tiny_model_dir, "--set", "rounds=1", "--set", "max_new_tokens=8", "--set",
                     "truncate=truncate", "--set", f"guidelines={guidelines}", "--cache", tmp_path / "c",
                     "--out", tmp_path / "run"]) == 0
    calls = [json.loads(x) for x in (tmp_path / "run" / "calls.jsonl").read_text().splitlines()]
    chats = [c for c in calls if c["event"] == "chat"]  # after the process_start line
    assert calls[0]["event"] == "process_start"
    assert "1. You should aim for accuracy" in chats[0]["request"]["messages"][-1]["content"]


def test_learn_guidelines_stops_at_its_budget_and_resumes(tiny_model_dir, tmp_path, capsys):
    learn = ["learn-guidelines", "--dataset", "tofueval-meetingbank", "--level", "sentence", "--limit", "1",
             "--model", tiny_model_dir, "--set", "rounds=1", "--set", "max_new_tokens=4", "--set", "truncate=truncate",
             "--cache", tmp_path / "c", "--out", tmp_path / "learned", "--max-passes", "1"]
    assert cli.main([*learn, "--max-calls", "1"]) == 6  # the budget flags, as for every run
    assert not (tmp_path / "learned" / "metrics.json").exists()
    assert cli.main(learn) == 0 and (tmp_path / "learned" / "guidelines.txt").exists()


@pytest.mark.slow
def test_debate_and_geval_run_end_to_end_on_the_tiny_model_with_per_aspect_correlations(tiny_model_dir, tmp_path,
                                                                                          capsys):
    out = tmp_path / "debate"
    assert cli.main(["run", "debate", "--dataset", "summeval", "--set", "aspects=coherence", "--limit", "32",
                     "--backend", "hf", "--model", tiny_model_dir, "--out", out, "--cache", tmp_path / "c",
                     "--set", "max_new_tokens=12", "--set", "iterations=2", "--set", "fallback=option_scores"]) == 0
    m = json.loads((out / "metrics.json").read_text())
    assert m["n_examples"] == 32 and m["n_groups"] == 2 and m["correlations"] == ["spearman", "kendall"]
    coh = m["aspects"]["coherence"]
    assert coh["n"] + coh["unparsed"] == 32 and coh["spearman"]["n_groups"] + coh["spearman"]["undefined_groups"] == 2
    assert sum(coh["distribution"]["human"].values()) == pytest.approx(100)
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    for r in rows:  # the random model never says NO ISSUE: n reviews, n rescores
        d = r["judgement"]["details"]["aspects"]["coherence"]
        assert d["stopped"] == "cap" and [t["speaker"] for t in d["turns"]] == ["scorer"] + ["critic", "scorer"] * 2
        assert 1 <= r["example"]["scores"]["coherence"] <= 5 and r["example"]["source"] is None  # kept in the data
    out2 = tmp_path / "geval"
    assert cli.main(["run", "g-eval", "--dataset", "topical-chat", "--limit", "12", "--backend", "hf",
                     "--model", tiny_model_dir, "--out", out2, "--cache", tmp_path / "c",
                     "--set", "min_coverage=0"]) == 0  # the random model puts little probability on the digits
    g = json.loads((out2 / "metrics.json").read_text())
    assert g["correlations"] == ["pearson", "spearman"] and g["unparsed"] == 0
    assert set(g["aspects"]) == {"naturalness", "coherence", "engagingness", "groundedness"}
    for a in g["aspects"].values():  # probability-weighted scores are continuous: every group is defined
        assert a["pearson"]["n_groups"] == 2 and -1 <= a["pearson"]["mean"] <= 1


def test_mesa_runs_end_to_end_on_the_tiny_model_with_per_type_scores_impact_and_quality(tiny_model_dir, tmp_path):
    from sumjudge.run.folder import RunConfig
    from sumjudge.run.runs import run

    out = tmp_path / "mesa"
    rc = RunConfig(method="mesa", dataset="meeting-errors", limit=3, backend="hf", model=str(tiny_model_dir),
                   settings={"types": "OM,RED,IRR", "max_new_tokens": 8, "truncate": "truncate",
                             "fallback": "option_scores"})
    # the context is capped (as the profiles do) so the 9000-word QMSum transcripts are cut to 1024 tokens here
    m = run(rc, out, cache=tmp_path / "c", progress=False, backend_options={"context_length": 1024,
                                                                            "parse_retries": 0})
    assert m["n_examples"] == 3 and set(m["types"]) == {"OM", "RED", "IRR"}
    assert m["types"]["IRR"]["available"] is False and m["types"]["RED"]["available"] is True
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    for r in rows:
        j = r["judgement"]
        assert set(j["scores"]) == {"OM", "RED", "IRR"} and all(0 <= v <= 5 for v in j["scores"].values())
        assert 0 <= j["details"]["impact"] <= 5 and 1 <= j["details"]["quality"] <= 10
        assert j["details"]["quality"] == pytest.approx(1 + (5 - j["details"]["impact"]) / 5 * 9)
        # the transcript is cut once per example, recorded there; every type's prompt then fits as it is
        assert 0 < j["details"]["transcript_words_kept"] < j["details"]["transcript_words"]
        assert all(t["truncated_words"] == 0 for t in j["details"]["types"].values())


@pytest.mark.slow
def test_mesa_self_training_cli_on_the_tiny_model_writes_a_feedback_file(tiny_model_dir, tmp_path):
    rows = [{"id": f"s{i}", "transcript": f"A: meeting {i // 2} decided plan {i // 2}. B: agreed.",
             "summary": f"They decided plan {i // 2}.", "RED": i % 3, "HAL": "no"} for i in range(8)]
    data = tmp_path / "likert.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "fb"
    assert cli.main(["mesa-feedback", "--dataset", f"meeting-file:{data}", "--iterations", "1", "--backend", "hf",
                     "--model", tiny_model_dir, "--set", "types=RED,HAL", "--set", "max_new_tokens=8",
                     "--set", "fallback=option_scores", "--cache", tmp_path / "c", "--out", out]) == 0
    fb = json.loads((out / "feedback.json").read_text())
    from sumjudge.data import registry

    train = registry.load(f"meeting-file:{data}", split="train")
    test = registry.load(f"meeting-file:{data}", split="test")
    assert fb["iteration"] == 1 and fb["train_ids"] == [e.id for e in train] and train and test
    h = fb["history"][0]  # a random model cannot write the judge's JSON: counted, no report invented
    assert h["judged"] + h["unparsed"] >= 2 * len(train) and set(fb["reports"]) <= {"RED", "HAL"}
    assert (out / "calls.jsonl").exists() and json.loads((out / "config.json").read_text())["procedure"] == {
        "name": "mesa-feedback", "iterations": 1, "judge": None}
    assert json.loads((out / "metrics.json").read_text())["train"] == len(train)


@pytest.mark.slow
def test_factax_wd_runs_end_to_end_on_the_tiny_model_with_per_type_predictions(tiny_model_dir, tmp_path):
    out = tmp_path / "fwd"
    assert cli.main(["run", "factax-wd", "--dataset", "diasumfact", "--limit", "10", "--backend", "hf",
                     "--model", tiny_model_dir, "--set", "max_new_tokens=8", "--set", "fallback=option_scores",
                     "--out", out, "--cache", tmp_path / "c"]) == 0
    m = json.loads((out / "metrics.json").read_text())
    assert m["n_examples"] == 10 and m["unparsed"] == 0 and set(m["label_sources"]) == {"option_scores"}
    assert set(m["error_types"]["f1"]) == {"Predicate Error", "Entity Error", "Circumstantial Error",
                                           "Coreference Error", "Addition Error"}
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    for r in rows:
        d = r["judgement"]["details"]
        assert d["n_windows"] == len(d["windows"]) >= 1 and isinstance(d["predicted_types"], list)
        assert all(w["source"] == "option_scores" and w["labels"] for w in d["windows"])
        assert r["judgement"]["label"] == int(all(w["correct"] for w in d["windows"]))
    out2 = tmp_path / "fx"
    assert cli.main(["run", "factax", "--dataset", "qags-xsum", "--limit", "4", "--backend", "hf", "--model",
                     tiny_model_dir, "--set", "max_new_tokens=8", "--out", out2, "--cache", tmp_path / "c"]) == 0
    m = json.loads((out2 / "metrics.json").read_text())  # no fallback: a random model's answers stay unparsed
    assert m["unparsed"] == 4 and m["label_sources"] == {"unparsed": 4}


def test_run_dtype_reaches_the_hf_backend_only(monkeypatch, tmp_path):
    from sumjudge.cli import main as cli
    from sumjudge.cli import run_command

    seen = []

    def fake_run(rc, out, *, backend_options=None, **kw):
        seen.append(backend_options)
        return {"wall_s": 0.0, "engine": {"cache_hits": 0, "backend_calls": 0}, "usage_all_processes": {"backend_calls": 0}}

    monkeypatch.setattr(run_command, "run", fake_run)
    args = ["run", "zero-shot", "--dataset", "sample-mediasum", "--out", str(tmp_path / "r")]
    assert cli.main([*args, "--dtype", "bfloat16"]) == 0
    assert cli.main([*args, "--backend", "scripted", "--dtype", "bfloat16"]) == 2  # not ignored: refused
    assert seen == [{"dtype": "bfloat16"}]
    with pytest.raises(SystemExit):
        cli.main([*args, "--dtype", "fp8"])
