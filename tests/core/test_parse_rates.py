"""Parse rates as a first-class number: engine counters, every run's metrics.json, the per-method table
``make reproduce`` writes, and the per-notebook sections of a profile."""

import json

import pytest
from conftest import needs_mirror

from sumjudge import profiles
from sumjudge.llm.cache import NullCache
from sumjudge.llm.engine import LLM, run_sync
from sumjudge.llm.parsing import binary_label
from sumjudge.llm.scripted import ScriptedBackend
from sumjudge.llm.types import ChatRequest
from sumjudge.results.parse_rates import parse_rate_rows


def req(text, **kw):
    return ChatRequest(messages=[{"role": "user", "content": text}], **kw)


def test_engine_counts_first_try_after_retries_unreadable_and_fallbacks(tmp_path):
    from sumjudge.llm.engine import CallLog

    def reply(r):
        if "first" in r.messages[-1]["content"]:
            return "<label>1</label>"
        if "second" in r.messages[-1]["content"] and r.temperature > 0:  # readable on the retry only
            return "<label>0</label>"
        return "no idea"

    be = ScriptedBackend(options=lambda r: {"0": 0.3, "1": 0.7}).add(r".", reply)
    llm = LLM(be, cache=NullCache(), parse_retries=1, log=CallLog(tmp_path / "calls.jsonl"))
    scope = llm.scoped("ex1")

    async def go():
        a = await scope.chat_parsed(req("first"), binary_label)
        b = await scope.chat_parsed(req("second"), binary_label)
        c = await scope.chat_parsed(req("third"), binary_label)
        sc = await scope.score_fallback(req("third").messages, ["0", "1"], prefix="<label>", tag="t")
        return a, b, c, sc

    a, b, c, sc = run_sync(go())
    assert (a.ok, a.attempts, b.ok, b.attempts, c.ok) == (True, 1, True, 2, False) and sc.best() == "1"
    for u in (scope.usage, llm.usage):  # the example's own usage and the engine's totals agree
        assert (u.parse_calls, u.parsed_first_try, u.parsed_after_retries, u.parse_failures, u.fallbacks,
                u.parse_retries) == (3, 1, 1, 1, 1, 2)
    events = [json.loads(x) for x in (tmp_path / "calls.jsonl").read_text().splitlines()]
    parsed = [(e["ok"], e["attempts"]) for e in events if e["event"] == "parse"]
    assert parsed == [(True, 1), (True, 2), (False, 2)]
    assert [e["tag"] for e in events if e["event"] == "options"] == ["t#fallback"]


@needs_mirror
def test_every_run_reports_its_parse_rates_in_metrics_json(tmp_path):
    from sumjudge.run.folder import RunConfig
    from sumjudge.run.runs import run

    answers = iter(["<label>1</label>", "unsure", "<label>0</label>", "unsure", "unsure", "unsure"] * 3)
    be = ScriptedBackend(options=lambda r: {"0": 0.6, "1": 0.4}).add(r".", lambda r: next(answers))
    llm = LLM(be, cache=NullCache(), parse_retries=1)
    rc = RunConfig(method="zero-shot", dataset="qags-xsum", limit=4, backend="scripted", model="scripted",
                   settings={"fallback": "option_scores"})
    m = run(rc, tmp_path / "run", llm=llm, progress=False)
    pr = m["parse_rates"]
    assert pr["parse_calls"] == 4 == pr["parsed_first_try"] + pr["parsed_after_retries"] + pr["unreadable"]
    assert pr["first_try"] == pr["parsed_first_try"] / 4
    assert pr["after_retries"] == (pr["parsed_first_try"] + pr["parsed_after_retries"]) / 4
    assert pr["fallback_calls"] == pr["unreadable"] == pr["examples_with_fallback"] >= 1
    assert m["label_sources"].get("option_scores", 0) == pr["unreadable"]
    on_disk = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert on_disk["parse_rates"] == pr


def write_run(root, notebook, profile, name, method, rates, n=2, tags=()):
    d = root / notebook / f"{profile}-model" / name
    d.mkdir(parents=True)
    (d / "metrics.json").write_text(json.dumps({"method": method, "n_examples": n, "parse_rates": rates}))
    lines = [{"event": "process_start"}] + [{"event": "parse", "tag": t, "ok": ok, "attempts": a} for t, ok, a in tags]
    (d / "calls.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")


def test_parse_rate_table_per_method_counts_a_repeated_configuration_once_and_splits_roles(tmp_path):
    rates = {"parse_calls": 10, "parsed_first_try": 7, "parsed_after_retries": 2, "unreadable": 1,
             "fallback_calls": 1, "examples_with_fallback": 1}
    write_run(tmp_path, "10_a", "smoke", "zero-shot-qags-abc", "zero-shot", rates)
    write_run(tmp_path, "13_b", "smoke", "zero-shot-qags-abc", "zero-shot", rates)  # same configuration
    write_run(tmp_path, "10_a", "smoke", "zero-shot-other-def", "zero-shot", {**rates, "parse_calls": 10})
    write_run(tmp_path, "10_a", "ci", "zero-shot-qags-abc", "zero-shot", rates)  # another profile
    write_run(tmp_path, "30_m", "smoke", "mesa-x", "mesa", {**rates, "parse_calls": 3, "parsed_first_try": 2,
                                                             "parsed_after_retries": 0},
              tags=[("e/RED/step1", True, 1), ("e/RED/step2", True, 2), ("e/RED/step3", False, 2)])
    write_run(tmp_path, "11_c", "smoke", "madisse-y", "madisse", {**rates, "parse_calls": 3},
              tags=[("d|x/s0/r1/agent1", False, 2), ("d|x/s0/r1/agent2", True, 1), ("d|x/s0/adjudicator1", True, 2)])
    rows = {r["method"]: r for r in parse_rate_rows(tmp_path, "smoke")}
    zs = rows["zero-shot"]
    assert zs["runs"] == 2 and zs["answers parsed"] == 20 and zs["first try %"] == 70.0
    assert zs["after retries %"] == 90.0 and zs["unreadable"] == 2 and zs["examples using a fallback"] == 2
    assert rows["mesa step1"]["first try %"] == 100.0 and rows["mesa step2"]["after retries %"] == 100.0
    assert rows["mesa step2"]["first try %"] == 0.0 and rows["mesa step3"]["unreadable"] == 1
    assert rows["madisse agents"]["answers parsed"] == 2 and rows["madisse agents"]["first try %"] == 50.0
    assert rows["madisse adjudicators"]["after retries %"] == 100.0 and rows["madisse adjudicators"]["first try %"] == 0
    assert rows["madisse agents"]["examples using a fallback"] is None  # a role row: the method row counts examples


def test_profile_notebook_sections_override_fields_and_parameters_for_that_notebook_only():
    smoke = profiles.load("smoke")
    for key, section in smoke.notebooks.items():
        prof = profiles.load("smoke", notebook=f"{key}_some_notebook")
        for k, v in section.items():
            assert (getattr(prof, k) if hasattr(prof, k) and k != "parameters" else prof.parameters[k]) == v
    base = profiles.Profile(name="p", backend="hf", model="m", base_url=None, n=3, seed=0, max_new_tokens=64,
                            truncate="truncate", label_fallback="none", parameters={"rounds": 2},
                            notebooks={"10": {"n": 2, "context_length": 512, "rounds": 1}})
    nb10 = base.for_notebook("10_madisse_main")
    assert (nb10.n, nb10.context_length, nb10.parameters) == (2, 512, {"rounds": 1})
    assert base.for_notebook("11_madisse_stance_ratio") == base
    assert base.for_notebook("100_other").n == 3  # "10" names notebook 10, not every number starting with 10
    assert nb10.with_overrides(n=5).n == 5  # explicit overrides still win


def test_unknown_profile_key_is_named(tmp_path, monkeypatch):
    import yaml

    bad = dict(yaml.safe_load((profiles.files("sumjudge.profiles") / "ci.yaml").read_text()), notebok={})
    monkeypatch.setattr(profiles, "files", lambda pkg: tmp_path)
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(bad))
    with pytest.raises(ValueError, match="bad.yaml: unknown key.*notebok"):
        profiles.load("bad")


def test_run_folders_include_the_arenas_nested_runs_once(tmp_path):
    from sumjudge.results.parse_rates import run_folders

    for rel in ("10_x/smoke-smoke/zero-shot-aa", "50_arena/smoke-smoke/arena/qags-xsum/star-bb",
                "51_mine/smoke-smoke/arena/qags-xsum/star-bb", "50_arena/ci-tiny/arena/qags-xsum/star-cc"):
        (tmp_path / rel).mkdir(parents=True)
        (tmp_path / rel / "metrics.json").write_text("{}")
    assert sorted(p.name for p in run_folders(tmp_path, "smoke")) == ["star-bb", "zero-shot-aa"]


def test_parse_rates_count_only_the_runs_of_this_reproduce(tmp_path):
    """Runs an earlier budget of the profile left in build/runs (other n, other folder hashes) are not this run's:
    with ``since``, only run folders whose metrics were written since then count."""
    import os

    from sumjudge.results.parse_rates import run_folders

    for rel, written in (("10_x/smoke-smoke/zero-shot-old", 1000.0), ("10_x/smoke-smoke/zero-shot-new", 3000.0)):
        (tmp_path / rel).mkdir(parents=True)
        (tmp_path / rel / "metrics.json").write_text("{}")
        os.utime(tmp_path / rel / "metrics.json", (written, written))
    assert [p.name for p in run_folders(tmp_path, "smoke", since=2000.0)] == ["zero-shot-new"]
    assert len(run_folders(tmp_path, "smoke")) == 2
