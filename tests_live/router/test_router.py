"""The paper profile's MADISSE and MESA through a real router in front of stand-in replicas: the same results as
against one server, every call accounted for, a replica killed mid-run changing nothing, and the cache of one server
replayed behind the router. The stand-ins answer by a hash of the prompt (no model): identical replicas."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from sumjudge.perf.local_replicas import CHOSEN_POLICY, Fleet
from sumjudge.perf.scale import paper_runs, paper_settings
from sumjudge.run.folder import RunConfig
from sumjudge.run.runs import run

# (scale.yaml's run, examples): MADISSE's four agents, rounds and adjudicators on TofuEval MeetingBank sentences;
# MESA's eight error types in three steps on QMSum meetings
SLICES = [("madisse", 6), ("mesa", 2)]


def run_against(fleet: Fleet, name: str, limit: int, folder: Path, cache: Path) -> tuple[dict, list[dict]]:
    spec = paper_runs()[name]
    rc = RunConfig(method=spec["method"], dataset=spec["dataset"], level=spec["level"], limit=limit,
                   backend="openai", model="standin", base_url=fleet.base_url, settings=paper_settings(spec["method"]))
    metrics = run(rc, folder, cache=cache, progress=False)
    rows = [json.loads(line) for line in (folder / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    return metrics, [row["judgement"] | {"usage": None} for row in rows]  # usage: cache hits differ


def fleet(replicas: int, router: str | None, name: str, **kw) -> Fleet:
    return Fleet(replicas=replicas, router=router if replicas > 1 else None,
                 context_length=paper_runs()[name]["context_length"], **kw)


def cached_answers(path: Path) -> dict[str, str]:
    with sqlite3.connect(path) as c:
        return {k: json.loads(r)["text"] for k, r in c.execute("SELECT key, response FROM responses")}


@pytest.mark.parametrize("name,limit", SLICES, ids=[s[0] for s in SLICES])
def test_a_routed_run_gives_one_servers_results_and_accounts_for_every_call(router, tmp_path, name, limit):
    with fleet(1, None, name) as one:
        _, alone = run_against(one, name, limit, tmp_path / "one", tmp_path / "one.sqlite")
    # round robin: every replica answers part of the run (cache-aware routing keeps these few examples, which share
    # documents, on one replica: see docs/serving.md)
    with fleet(3, router, name, latency_s=0.02, slots=4, policy="round_robin") as three:
        m, routed = run_against(three, name, limit, tmp_path / "three", tmp_path / "three.sqlite")
        stats = three.stats()
    assert routed == alone
    answered = m["usage_all_processes"]["backend_calls"]
    assert answered > 0 and sum(s["chat"] for s in stats) == answered  # no call lost, none sent twice
    serving = m["serving"]
    assert sum(serving["replicas"].values()) == answered
    assert len(serving["replicas"]) == 3  # the router spread the run over its replicas
    assert serving["calls_reporting_cache"] == answered and 0 < serving["prefix_hit_share"] < 1
    assert m["server"]["prefix_cache_queried_tokens"] == sum(s["prompt_tokens"] for s in stats)  # every replica's


KILLS = [(name, limit, policy) for name, limit in SLICES
         for policy in ("round_robin", "consistent_hash", "sticky_least_loaded")]


@pytest.mark.parametrize("name,limit,policy", KILLS, ids=[f"{k[0]}-{k[2]}" for k in KILLS])
def test_a_replica_killed_mid_run_changes_no_result(router, tmp_path, name, limit, policy):
    """The replica killed is the one answering most, once it has answered a few: with round robin it has requests
    in flight when it dies; with consistent hashing, and with sticky least-loaded routing (the policy
    docs/serving.md chooses), the examples kept on it must move to the others."""
    with fleet(1, None, name) as one:
        _, alone = run_against(one, name, limit, tmp_path / "one", tmp_path / "one.sqlite")
    with fleet(3, router, name, latency_s=0.3, slots=4, policy=policy) as three:
        killed = threading.Event()
        victim = []

        def kill_after_some_answers() -> None:
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline and not killed.is_set():
                answered = [(s or {}).get("chat", 0) for s in three.stats()]
                if max(answered) >= 3:  # the busiest replica is answering this run's examples (which one gets them
                    victim.append(answered.index(max(answered)))  # depends on the hash of the ports)
                    three.kill(victim[0])
                    killed.set()
                    return
                time.sleep(0.05)

        killer = threading.Thread(target=kill_after_some_answers, daemon=True)
        killer.start()
        m, routed = run_against(three, name, limit, tmp_path / "three", tmp_path / "three.sqlite")
        killer.join(10)
        stats = three.stats()
    assert killed.is_set() and stats[victim[0]] is None  # it died mid-run
    assert routed == alone
    assert m["failed_examples"]["n"] == 0
    routed_cache, alone_cache = cached_answers(tmp_path / "three.sqlite"), cached_answers(tmp_path / "one.sqlite")
    assert routed_cache == alone_cache  # nothing a failed request gave was kept


def test_a_cache_filled_against_one_server_replays_behind_the_router(router, tmp_path):
    name, limit = SLICES[0]
    cache = tmp_path / "cache.sqlite"
    with fleet(1, None, name) as one:
        first, alone = run_against(one, name, limit, tmp_path / "one", cache)
    assert first["usage_all_processes"]["backend_calls"] > 0
    with fleet(2, router, name) as two:
        again, routed = run_against(two, name, limit, tmp_path / "two", cache)
        stats = two.stats()
    assert routed == alone
    assert again["usage_all_processes"]["backend_calls"] == 0 and sum(s["chat"] for s in stats) == 0


def test_scale_measures_replicas_and_policies_behind_the_router(router, tmp_path, capsys):
    from sumjudge.cli import main as cli

    args = ["scale", "--out", tmp_path, "--runs", "zero-shot", "--limit", "2", "--memory-limit", "0",
            "--latency-run", "", "--replicas", "1", "2", "--router", router, "--routed-runs", "madisse",
            "--routed-limit", "4", "--routed-latency", "0.05", "--routed-slots", "2", "--policies", "round_robin"]
    assert cli.main([str(a) for a in args]) == 0
    routed = json.loads((tmp_path / "scale.json").read_text())["routed"]
    one, two = routed["throughput"]
    assert (one["replicas"], two["replicas"], two["policy"]) == (1, 2, CHOSEN_POLICY)
    assert one["backend_calls"] == two["backend_calls"] == sum(two["calls_per_replica"].values())
    assert two["speedup"] > 0 and two["bound_requests_per_s"] == 2 * 2 / 0.05
    assert [p["policy"] for p in routed["policies"]] == [CHOSEN_POLICY, "round_robin"]
    spread = routed["policies"][1]
    assert spread["serving"]["replicas"] == spread["calls_per_replica"] and len(spread["calls_per_replica"]) == 2


def test_behind_a_router_that_passes_on_less_the_run_degrades_and_says_so(sglang_router, tmp_path, capsys):
    """SGLang's router lists its own model ("unknown") without a context and passes no /tokenize: the model and its
    context are asked of the replicas, what is missing is said once, and the results are one server's."""
    name, limit = SLICES[0]
    with fleet(1, None, name) as one:
        _, alone = run_against(one, name, limit, tmp_path / "one", tmp_path / "one.sqlite")
    with fleet(2, sglang_router, name, policy="round_robin") as two:
        m, routed = run_against(two, name, limit, tmp_path / "two", tmp_path / "two.sqlite")
    assert routed == alone and m["failed_examples"]["n"] == 0
    config = json.loads((tmp_path / "two" / "config.json").read_text(encoding="utf-8"))
    notes = config["backend_info"]["extra"]["serving_notes"]
    assert any("lists its own models" in n for n in notes) and any("no /tokenize" in n for n in notes)
    assert config["backend_info"]["server_model"]["max_model_len"] == paper_runs()[name]["context_length"]
    assert capsys.readouterr().err.count("routes to 2 replicas") == 1


def test_the_routing_curve_measures_each_routing_and_quotes_its_table(router, tmp_path):
    """``make scale``'s routing curve: one replica, then each routing over more; the table quoted in the page between
    its markers (a page without them is refused before anything is measured)."""
    from sumjudge.errors import ConfigError
    from sumjudge.perf.scale import curve_points, routed_table, routing_curve

    page = tmp_path / "page.md"
    page.write_text("before\n<!-- routing: routed-madisse-2.json -->\nold\n<!-- /routing -->\nafter\n")
    bare = tmp_path / "bare.md"
    bare.write_text("no markers\n")
    kw = dict(router=router, runs=["madisse"], limit=2, latency_s=0.05, slots=2, replicas=[1, 2],
              policies=["round_robin", "sticky_least_loaded"])
    with pytest.raises(ConfigError, match="routing: routed-madisse-2.json"):
        routing_curve(tmp_path / "refused", bare, **kw)
    assert not (tmp_path / "refused").exists()
    report = json.loads(routing_curve(tmp_path / "out", page, **kw).read_text(encoding="utf-8"))
    points = {p["policy"]: p for p in curve_points(report)}
    assert points["sticky_least_loaded"]["on_one"] == 1.0 and points["round_robin"]["on_one"] < 1.0
    text = page.read_text(encoding="utf-8")
    assert routed_table(report) in text and "old" not in text and text.startswith("before\n")
    assert text.endswith("<!-- /routing -->\nafter\n") and (tmp_path / "out" / "routing-curve.png").stat().st_size
