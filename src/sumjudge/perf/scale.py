"""``sumjudge scale``: the paper profile's runs at full size against the stand-in server (``standin_server``), measuring
what the client costs: requests per second, client CPU per request, peak memory, the size of ``calls.jsonl`` and of
the cache per 10,000 calls, wall time; and, against a server with a realistic latency, how full the engine keeps its
slots (requests in flight over time, a figure) and the share of the wall time the client was busy.

Each run is measured in a process of its own (peak memory is a process's high-water mark), beside the stand-in
server in another, both on this machine's cores. Nothing here calls a model.

``make scale`` runs ``sumjudge scale --out figures/scale`` and prints the JSON.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from importlib.resources import files
from pathlib import Path
from typing import Any

import yaml

from sumjudge.errors import ConfigError
from sumjudge.perf.local_replicas import CACHE_AWARE_SETTINGS, CHOSEN_POLICY, Fleet, router_from_environment
from sumjudge.perf.machine import machine
from sumjudge.profiles import load
from sumjudge.run.folder import RunConfig
from sumjudge.run.methods import settings_from
from sumjudge.run.runs import run as execute_run


def paper_runs() -> dict[str, dict[str, Any]]:
    """The runs measured by default (``profiles/scale.yaml``): name -> method, dataset, level."""
    return scale_file()["runs"]


def check_runs(names: list[str] | None) -> list[str]:
    """``names`` (None: every run of ``profiles/scale.yaml``), each checked against the file."""
    known = paper_runs()
    unknown = [r for r in names or [] if r not in known]
    if unknown:
        raise ConfigError(f"unknown run(s) {unknown}; known (profiles/scale.yaml): {', '.join(known)}")
    return list(known) if names is None else list(names)


def scale_file() -> dict[str, Any]:
    return yaml.safe_load(files("sumjudge.profiles").joinpath("scale.yaml").read_text(encoding="utf-8"))


@dataclass
class Measured:
    run: str
    limit: int | None
    latency_s: float
    slots: int
    context_length: int = 131072  # what the stand-in served (scale.yaml's, per run)
    n_examples: int = 0
    calls: int = 0  # calls the protocol made (cache hits included)
    backend_calls: int = 0
    wall_s: float = 0.0
    requests_per_s: float = 0.0  # backend calls per second of wall time
    http_requests: int = 0  # what the server answered: chat calls and /tokenize
    client_cpu_s: float = 0.0
    client_cpu_ms_per_call: float = 0.0
    client_busy_share: float = 0.0  # client CPU seconds over wall seconds
    peak_rss_mb: float = 0.0
    calls_jsonl_mb_per_10k: float = 0.0
    cache_mb_per_10k: float = 0.0
    max_in_flight: int = 0  # on one replica
    max_waiting: int = 0  # requests queued for a slot on one replica, at most (0: the client never filled them)
    mean_in_flight: float = 0.0  # time-weighted, over the run, all replicas together
    served_s: float = 0.0  # the servers' busy span: the first request's arrival to the last answer
    served_requests_per_s: float = 0.0  # backend calls over that span (wall-time requests/s less the start-up)
    replicas: int = 1
    policy: str = ""  # the router's, with more than one replica
    calls_per_replica: dict[str, int] = field(default_factory=dict)  # chat requests each replica answered
    serving: dict[str, Any] | None = None  # the run's serving figures (run.serving.serving_from_log)
    timeline: list[tuple[float, int]] = field(default_factory=list)


def paper_settings(method: str) -> dict[str, Any]:
    return settings_from(load("paper"), method)


def measure(name: str, limit: int | None, latency_s: float = 0.0, slots: int = 1024, keep_timeline: bool = False,
            python: str = sys.executable, replicas: int = 1, router: str | None = None,
            policy: str = "cache_aware") -> Measured:
    """One run of ``paper_runs()[name]`` in a fresh process against fresh stand-in servers: one addressed directly,
    or ``replicas`` behind ``router`` routing by ``policy`` (``local_replicas.Fleet``)."""

    context = paper_runs()[name].get("context_length", 131072)
    with Fleet(replicas=replicas, router=router if replicas > 1 else None, policy=policy, latency_s=latency_s,
               slots=slots, context_length=context, python=python) as fleet:
        with tempfile.TemporaryDirectory() as tmp:
            job = {"name": name, "limit": limit, "base_url": fleet.base_url, "folder": tmp}
            out = subprocess.run([python, "-m", "sumjudge.perf.scale", "--one", json.dumps(job)], capture_output=True,
                                 text=True, check=False)
            if out.returncode:
                raise RuntimeError(f"scale run {name} failed:\n{out.stderr[-3000:]}")
            m = Measured(run=name, limit=limit, latency_s=latency_s, slots=slots, context_length=context,
                         replicas=replicas, policy=policy if replicas > 1 else "",
                         **json.loads(out.stdout.strip().splitlines()[-1]))
        stats = [x for x in fleet.stats() if x]
    m.http_requests = sum(x["requests"] for x in stats)
    m.calls_per_replica = {x["replica"]: x["chat"] for x in stats}
    m.max_in_flight = max(x["max_in_flight"] for x in stats)
    m.max_waiting = max(x.get("max_waiting", 0) for x in stats)
    timeline = merged_timeline([[tuple(t) for t in x["timeline"]] for x in stats])
    m.mean_in_flight = round(mean_in_flight(timeline), 2)
    if len(timeline) >= 2:  # from the first request's arrival to the last answer: the run's start-up left out
        m.served_s = round(timeline[-1][0] - timeline[0][0], 2)
        m.served_requests_per_s = round(m.backend_calls / m.served_s, 1) if m.served_s > 0 else 0.0
    if keep_timeline:
        m.timeline = thin(timeline, 2000)
    return m


def merged_timeline(timelines: list[list[tuple[float, int]]]) -> list[tuple[float, int]]:
    """Requests in flight over all replicas: each replica's (time, in flight) changes merged into their sum (the
    replicas' clocks start apart by a fraction of a second; a timeline's times are its own replica's)."""
    if len(timelines) == 1:
        return timelines[0]
    events = sorted((t, i, n) for i, tl in enumerate(timelines) for t, n in tl)
    now = [0] * len(timelines)
    out = []
    for t, i, n in events:
        now[i] = n
        out.append((t, sum(now)))
    return out


def mean_in_flight(timeline: list[tuple[float, int]]) -> float:
    """The time-weighted mean of requests in flight between the first and the last change."""
    if len(timeline) < 2:
        return 0.0
    area = sum((t1 - t0) * n for (t0, n), (t1, _) in zip(timeline, timeline[1:]))
    span = timeline[-1][0] - timeline[0][0]
    return area / span if span > 0 else 0.0


def thin(timeline: list[tuple[float, int]], most: int) -> list[tuple[float, int]]:
    step = max(1, len(timeline) // most)
    return timeline[::step]


def run_one(job: dict[str, Any]) -> dict[str, Any]:
    """In the measured process: the run, its wall and CPU time, peak memory and file sizes."""

    spec = paper_runs()[job["name"]]
    folder = Path(job["folder"])
    rc = RunConfig(method=spec["method"], dataset=spec["dataset"], level=spec["level"], limit=job["limit"],
                   backend="openai", model="standin", base_url=job["base_url"],
                   settings=paper_settings(spec["method"]))
    cpu0, t0 = time.process_time(), time.time()
    m = execute_run(rc, folder / "run", cache=folder / "cache.sqlite", progress=False)
    wall, cpu = time.time() - t0, time.process_time() - cpu0
    serving = m.get("serving")
    calls = m["engine"]["backend_calls"]
    per10k = 10_000 / calls if calls else 0.0
    cache_bytes = sum(p.stat().st_size for p in folder.glob("cache.sqlite*"))
    return {"n_examples": m["n_examples"], "calls": m["engine"]["calls"], "backend_calls": calls,
            "wall_s": round(wall, 2), "requests_per_s": round(calls / wall, 1) if wall else 0.0,
            "client_cpu_s": round(cpu, 2), "client_cpu_ms_per_call": round(1000 * cpu / calls, 3) if calls else 0.0,
            "client_busy_share": round(cpu / wall, 3) if wall else 0.0,
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            "calls_jsonl_mb_per_10k": round((folder / "run" / "calls.jsonl").stat().st_size / 2 ** 20 * per10k, 2),
            "cache_mb_per_10k": round(cache_bytes / 2 ** 20 * per10k, 2), "serving": serving}


def concurrency_figure(m: Measured, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 3))
    ts, ns = zip(*m.timeline) if m.timeline else ((), ())
    ax.step(ts, ns, where="post", lw=0.8)
    ax.axhline(m.slots, color="grey", ls="--", lw=0.8, label=f"server slots ({m.slots})")
    ax.set_xlabel("seconds")
    ax.set_ylabel("requests in flight")
    ax.set_title(f"{m.run}: {m.backend_calls} calls, {m.latency_s:g} s per request, mean {m.mean_in_flight} in flight")
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def scale(out: Path, runs: list[str], limit: int | None, latency_s: float, slots: int, latency_run: str,
          latency_limit: int | None, memory_limit: int | None, routed: dict[str, Any] | None = None) -> dict[str, Any]:
    """Every run of ``runs`` at ``limit`` against the instant server; ``memory_limit``: each run also at that smaller
    size, to compare peak memory; ``latency_run`` at ``latency_limit`` against a server of ``latency_s`` and ``slots``,
    with the concurrency figure; ``routed``: ``replicas_and_policies``'s arguments (replicas behind a router)."""
    out.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {"machine": machine(), "instant": [], "smaller": [], "latency": None, "routed": None}
    for name in runs:
        report["instant"].append(asdict(measure(name, limit)))
        if memory_limit:
            report["smaller"].append(asdict(measure(name, memory_limit)))
    if latency_run:
        m = measure(latency_run, latency_limit, latency_s=latency_s, slots=slots, keep_timeline=True)
        concurrency_figure(m, out / "concurrency.png")
        report["latency"] = {k: v for k, v in asdict(m).items() if k != "timeline"}
    if routed:
        report["routed"] = replicas_and_policies(**routed)
    (out / "scale.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    return report


def replicas_and_policies(runs: list[str], limit: int | None, latency_s: float, slots: int, router: str,
                          replicas: list[int], policies: list[str], policy: str) -> dict[str, Any]:
    """Each of ``runs`` against 1, 2, ... ``replicas`` stand-ins of ``latency_s`` and ``slots`` behind ``router``
    routing by ``policy`` (requests per second against N x one replica's), and at the most replicas by each of
    ``policies`` (where an example's calls landed, prefix hits)."""
    out: dict[str, Any] = {"latency_s": latency_s, "slots": slots, "limit": limit, "policy": policy,
                           "throughput": [], "policies": []}
    most = max(replicas)
    for name in runs:
        one = None
        for n in sorted(replicas):
            m = asdict(measure(name, limit, latency_s=latency_s, slots=slots, replicas=n, router=router,
                               policy=policy))
            m.pop("timeline")
            one = one or m
            m["speedup"] = round(m["requests_per_s"] / one["requests_per_s"], 2) if one["requests_per_s"] else None
            m["served_speedup"] = (round(m["served_requests_per_s"] / one["served_requests_per_s"], 2)
                                   if one["served_requests_per_s"] else None)
            m["bound_requests_per_s"] = round(n * slots / latency_s, 1) if latency_s else None
            out["throughput"].append(m)
            if n == most:
                out["policies"].append(m)
        for p in policies:
            if p != policy and most > 1:
                m = asdict(measure(name, limit, latency_s=latency_s, slots=slots, replicas=most, router=router,
                                   policy=p))
                m.pop("timeline")
                out["policies"].append(m)
    return out


# `make scale`'s routing curve (docs/serving.md): scale.yaml's routed runs at 400 examples (or all a run has), one
# replica addressed directly, then four behind the router by each routing compared; the documented one is CHOSEN
CURVE_LIMIT = 400
CURVE_REPLICAS = [1, 4]
CHOSEN = CHOSEN_POLICY
CURVE = ("consistent_hash", "round_robin", "cache_aware", *CACHE_AWARE_SETTINGS, CHOSEN)
# each replica answers in 1 s with 16 slots (16 requests/s): at 0.5 s, four replicas behind round robin served 2.45 x
# one replica's rate on a 2-core machine shared with other work, where the client's and the router's CPU, not the
# routing, was the bound (3.40 x at 1 s)
CURVE_LATENCY_S = 1.0
CURVE_SLOTS = 16


def routing_curve(out: Path, docs: Path | None = None, router: str | None = None, runs: list[str] | None = None,
                  limit: int | None = CURVE_LIMIT, latency_s: float = CURVE_LATENCY_S, slots: int = CURVE_SLOTS,
                  replicas: list[int] | None = None, policies: list[str] | None = None,
                  policy: str = CHOSEN, tag: str = "") -> Path:
    """``replicas_and_policies`` of ``runs`` (scale.yaml's routed runs) at ``limit`` over every routing of ``CURVE``
    (or ``policies``), written to ``out/routed-RUNS-LIMIT[TAG].json`` with the curve of requests
    per second against one replica's over the share of examples wholly on one replica (``routing-curve[TAG].png``),
    and its table quoted in ``docs`` between its markers (``quote_routing``). Returns the JSON's path. ``tag``: a
    measurement's own name beside the default one (``--latency``'s, say)."""

    runs = check_runs(runs or scale_file()["routed_runs"])
    router = router or router_from_environment()
    if not router:
        raise ConfigError("the routing curve needs vllm-router: `make router-env` installs it (SUMJUDGE_ROUTER)")
    name = f"routed-{'-'.join(runs)}-{limit}{tag}.json"
    figure = f"routing-curve{tag}.png"
    if docs:  # before the measuring (most of an hour): the page has a place for the table
        quote_routing(docs, None, name)
    report = {"machine": machine(), "routed": replicas_and_policies(
        runs, limit, latency_s, slots, router, replicas or CURVE_REPLICAS, list(policies or CURVE), policy)}
    out.mkdir(parents=True, exist_ok=True)
    path = out / name
    path.write_text(json.dumps(report, indent=2), encoding="utf-8")
    curve_figure(report, out / figure)
    if docs:
        quote_routing(docs, report, path.name, figure)
    return path


def curve_points(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Each run's routings at the most replicas: ``x_one`` (requests per second over the busy span against one
    replica's), ``of_n`` (that over the replicas), ``on_one`` (share of examples wholly on one replica)."""
    routed = report["routed"]
    points = []
    for m in routed["policies"]:
        one = next(x for x in routed["throughput"] if x["run"] == m["run"] and x["replicas"] == 1)
        s = m.get("serving") or {}
        x_one = m["served_requests_per_s"] / one["served_requests_per_s"]
        points.append({"run": m["run"], "policy": m["policy"], "x_one": round(x_one, 2),
                       "of_n": round(x_one / m["replicas"], 3),
                       "on_one": round(s["examples_on_one_replica"] / s["examples"], 3) if s.get("examples") else 0.0})
    return points


def curve_figure(report: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    points = curve_points(report)
    most = max(m["replicas"] for m in report["routed"]["policies"])
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for run, marker in zip(dict.fromkeys(p["run"] for p in points), "os^D"):
        mine = [p for p in points if p["run"] == run]
        ax.scatter([p["on_one"] for p in mine], [p["x_one"] for p in mine], marker=marker, label=run)
        for p in mine:
            ax.annotate(short_policy(p["policy"]), (p["on_one"], p["x_one"]), fontsize=6, xytext=(3, 3),
                        textcoords="offset points")
    ax.axhline(0.9 * most, color="grey", ls="--", lw=0.8, label=f"0.9 x {most} replicas")
    ax.axvline(0.95, color="grey", ls=":", lw=0.8, label="95% of examples on one replica")
    ax.set_xlabel("share of examples wholly on one replica")
    ax.set_ylabel("requests/s against one replica's")
    machine_ = report["machine"]
    ax.set_title(f"{most} replicas behind vllm-router, at most {report['routed']['limit']} examples a run "
                 f"({machine_['cpu']}, {machine_['cores']} cores)", fontsize=9)
    ax.legend(loc="center", fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def short_policy(policy: str) -> str:
    """A routing as the curve labels it: the policy, then its settings' values (cache, abs, rel thresholds)."""
    name, *rest = policy.split()
    return name + (" " + "/".join(rest[1::2]) if rest else "")


def quote_routing(docs: Path, report: dict[str, Any] | None, name: str, figure: str = "routing-curve.png") -> None:
    """``routed_table(report)`` in ``docs`` between ``<!-- routing: NAME -->`` and ``<!-- /routing -->``, with the
    machine it was measured on (``report`` None: only check that ``docs`` has them)."""
    start, end = f"<!-- routing: {name} -->", "<!-- /routing -->"
    text = docs.read_text(encoding="utf-8")
    if start not in text or end not in text.split(start, 1)[1]:
        raise ConfigError(f"{docs} has no {start} ... {end} to quote the routing curve in")
    if report is None:
        return
    head, rest = text.split(start, 1)
    machine_ = report["machine"]
    quoted = (f"{start}\nMeasured {machine_['date']} on {machine_['cores']} cores of an {machine_['cpu']} "
              f"(`figures/scale/{name}`, `figures/scale/{figure}`):\n\n{routed_table(report)}\n")
    docs.write_text(head + quoted + end + rest.split(end, 1)[1], encoding="utf-8")


def main(argv: list[str] | None = None) -> None:
    """The measured process (``--one JOB``; the command is ``sumjudge scale``), or ``make scale``'s routing curve
    (``--routing OUT --docs PAGE``: ``routing_curve``)."""

    p = argparse.ArgumentParser(prog="python -m sumjudge.perf.scale", description="one measured run of sumjudge scale, "
                                "or make scale's routing curve")
    p.add_argument("--one", help="the job, as JSON")
    p.add_argument("--routing", metavar="OUT", help="measure the routing curve into this folder (routing_curve)")
    p.add_argument("--docs", help="with --routing: the page that quotes its table (docs/serving.md)")
    p.add_argument("--latency", type=float, help=f"with --routing: each replica's seconds per request (default "
                   f"{CURVE_LATENCY_S:g}); the files and the page's markers are named with it")
    p.add_argument("--runs", help="with --routing: the routed runs, comma-separated (default scale.yaml's)")
    p.add_argument("--policies", help="with --routing: the routings compared, comma-separated (default every one)")
    a = p.parse_args(argv)
    if a.routing:
        split = (lambda v: [x.strip() for x in v.split(",") if x.strip()] if v else None)  # noqa: E731
        latency = a.latency if a.latency is not None else CURVE_LATENCY_S
        if latency <= 0:
            p.error(f"--latency {a.latency}: seconds per request must be above 0")
        tag = f"-{latency:g}s" if a.latency is not None and latency != CURVE_LATENCY_S else ""
        print(routing_curve(Path(a.routing), Path(a.docs) if a.docs else None, runs=split(a.runs),
                            latency_s=latency, policies=split(a.policies), tag=tag))
    elif a.one:
        print(json.dumps(run_one(json.loads(a.one))))
    else:
        p.error("give --one JOB or --routing OUT")


def routed_table(report: dict[str, Any]) -> str:
    """``report["routed"]`` (``sumjudge scale --replicas``) as the Markdown table docs/serving.md quotes: one row per
    measured run, replicas and policy, requests per second over the servers' busy span against N x one replica's,
    where an example's calls landed and the prefix-cache hits (a test keeps the docs equal to the committed JSON)."""
    routed = report["routed"]
    head = ("| run | examples | replicas | policy | calls | requests/s (busy span) | x one replica | bound | "
            "mean in flight | calls per replica | example locality | examples on one replica | prefix hits |")
    lines = [head, "|" + "---|" * head.count(" | ") + "---|"]
    seen = set()
    for m in routed["throughput"] + routed["policies"]:
        key = (m["run"], m["replicas"], m["policy"])
        if key in seen:
            continue
        seen.add(key)
        s = m.get("serving") or {}
        one = next(x for x in routed["throughput"] if x["run"] == m["run"] and x["replicas"] == 1)
        per = " / ".join(str(n) for n in m["calls_per_replica"].values())
        lines.append(f"| {m['run']} | {m['n_examples']} | {m['replicas']} | {m['policy'] or '(direct)'} | "
                     f"{m['backend_calls']:,} | {m['served_requests_per_s']} | "
                     f"{m['served_requests_per_s'] / one['served_requests_per_s']:.2f} | "
                     f"{m['replicas'] * routed['slots'] / routed['latency_s']:g} | {m['mean_in_flight']} | {per} | "
                     f"{s.get('example_locality')} | {s.get('examples_on_one_replica')} of {s.get('examples')} | "
                     f"{s.get('prefix_hit_share')} |")
    return "\n".join(lines)


def instant_table(report: dict[str, Any]) -> str:
    """``sumjudge scale``'s runs against the instant stand-in and the one against the slow one, as the Markdown
    docs/benchmark.md quotes (a test keeps the docs equal to the committed ``figures/scale/scale.json``)."""
    smaller = {m["run"]: m for m in report.get("smaller") or []}
    head = ("| run | examples | calls | requests/s | client CPU ms/call | HTTP requests per call | peak memory | "
            "calls.jsonl per 10k calls | cache per 10k calls |")
    lines = [head, "|" + "---|" * head.count(" | ") + "---|"]
    for m in report["instant"]:
        low = smaller.get(m["run"])
        memory = f"{m['peak_rss_mb']:.0f} MB" + (f" ({low['peak_rss_mb']:.0f} at {low['n_examples']})" if low else "")
        lines.append(f"| {m['run']} | {m['n_examples']:,} | {m['backend_calls']:,} | {m['requests_per_s']} | "
                     f"{m['client_cpu_ms_per_call']} | {m['http_requests'] / m['backend_calls']:.2f} | {memory} | "
                     f"{m['calls_jsonl_mb_per_10k']:.0f} MB | {m['cache_mb_per_10k']:.0f} MB |")
    slow = report.get("latency")
    if slow:
        bound = slow["backend_calls"] * slow["latency_s"] / slow["slots"]
        lines += ["", "| run against the slow server | calls | seconds per request | slots | wall | bound (calls x "
                  "seconds / slots) | over the bound | most in flight | mean in flight | client CPU share of the wall "
                  "| client CPU ms/call |", "|---|---|---|---|---|---|---|---|---|---|---|",
                  f"| {slow['run']} | {slow['backend_calls']:,} | {slow['latency_s']:g} | {slow['slots']} | "
                  f"{slow['wall_s']:.0f} s | {bound:.0f} s | {100 * (slow['wall_s'] / bound - 1):.0f}% | "
                  f"{slow['max_in_flight']} | {slow['mean_in_flight']} | {100 * slow['client_busy_share']:.1f}% | "
                  f"{slow['client_cpu_ms_per_call']} |"]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
