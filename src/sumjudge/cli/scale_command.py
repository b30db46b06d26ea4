"""``sumjudge scale``: the paper profile's runs at full size against the stand-in server."""

from __future__ import annotations

import json
from pathlib import Path

from sumjudge.cli.flags import add_paper_runs_flags
from sumjudge.cli.subcommand import Subcommand
from sumjudge.errors import ConfigError
from sumjudge.perf.local_replicas import CHOSEN_POLICY, ROUTER_POLICIES, router_from_environment
from sumjudge.perf.scale import check_runs, scale, scale_file


def add_arguments(p) -> None:
    p.add_argument("--out", default="figures/scale")
    add_paper_runs_flags(p)
    p.add_argument("--memory-limit", type=int, default=100, help="each run also on this many examples, to compare "
                   "peak memory (0: skip)")
    p.add_argument("--latency", type=float, default=2.0, help="seconds per request of the realistic server")
    p.add_argument("--slots", type=int, default=64, help="requests the realistic server serves at once")
    p.add_argument("--latency-run", help="the run measured against the realistic server (default: scale.yaml's "
                   "latency_run; '': none)")
    p.add_argument("--latency-limit", type=int, default=None, help="its examples (default: all)")
    p.add_argument("--replicas", type=int, nargs="*", help="also run --routed-runs against this many stand-in "
                   "replicas behind a router (e.g. 1 2 4): requests per second against one replica's, and where an "
                   "example's calls landed")
    p.add_argument("--router", help="the vllm-router executable (default: SUMJUDGE_ROUTER, set by make scale)")
    p.add_argument("--policy", default=CHOSEN_POLICY, choices=ROUTER_POLICIES,
                   help="the router's policy for the throughput runs (docs/serving.md's choice)")
    p.add_argument("--policies", nargs="*", default=["consistent_hash", "cache_aware", "round_robin"],
                   choices=ROUTER_POLICIES, help="policies compared at the most replicas (prefix locality)")
    p.add_argument("--routed-runs", nargs="*", help="runs of profiles/scale.yaml (default: its routed_runs)")
    p.add_argument("--routed-limit", type=int, default=200, help="their examples")
    p.add_argument("--routed-latency", type=float, default=0.5, help="seconds per request of each replica")
    p.add_argument("--routed-slots", type=int, default=16, help="requests each replica serves at once")


def main(a) -> int:
    runs = check_runs(a.runs)
    latency_run = scale_file()["latency_run"] if a.latency_run is None else a.latency_run
    check_runs([latency_run] if latency_run else [])
    routed = None
    if a.replicas:
        router = a.router or router_from_environment()
        if max(a.replicas) > 1 and not router:
            raise ConfigError("scale --replicas: more than one replica needs a router: `make router-env` installs "
                              "vllm-router (give its path with --router, or run `make scale`)")
        routed = dict(runs=check_runs(a.routed_runs or scale_file()["routed_runs"]), limit=a.routed_limit, latency_s=a.routed_latency,
                      slots=a.routed_slots, router=router, replicas=a.replicas, policies=a.policies, policy=a.policy)
    report = scale(Path(a.out), runs, a.limit, a.latency, a.slots, latency_run, a.latency_limit, a.memory_limit,
                   routed)
    for m in report["instant"] + report["smaller"] + ([report["latency"]] if report["latency"] else []):
        print(json.dumps(m))
    for m in (report["routed"] or {}).get("throughput", []) + (report["routed"] or {}).get("policies", []):
        print(json.dumps(m))
    print(json.dumps({"out": str(Path(a.out) / "scale.json"), "figure": str(Path(a.out) / "concurrency.png")
                      if report["latency"] else None}))
    return 0


COMMAND = Subcommand("scale", help="the paper profile's runs at full size against the stand-in server: requests "
                     "per second, client CPU, memory, log and cache size, slots kept full (no model is called)",
                     add_arguments=add_arguments, run=main)
