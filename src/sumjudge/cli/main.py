"""``sumjudge run | data | bench | tiny-model | cache``, and the papers' own commands."""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from ..run.flags import (EXIT_BACKEND, EXIT_BUDGET, EXIT_DATA, EXIT_INTERRUPTED, EXIT_RUN, EXIT_USAGE,  # noqa: F401
                        add_budget_flags, add_engine_flags, add_run_flags, budget_of, check_engine_flags,
                        run_config_of)
from ..llm.backend_registry import backend_names
from ..perf.fleet import CHOSEN_POLICY, ROUTER_POLICIES


def _cmd_run(a) -> int:
    from ..run.runs import clean_nan, run

    check_engine_flags(a)
    rc = run_config_of(a, a.method)
    opts = {}
    if a.token_budget is not None:
        opts["token_budget"] = a.token_budget
    if a.dtype:
        opts["dtype"] = a.dtype
    opts.update({k: v for k, v in (("timeout", a.timeout), ("max_retry_time", a.max_retry_time),
                                   ("concurrency", a.concurrency),
                                   ("server_name", a.server_name), ("tokenizer", a.tokenizer)) if v is not None})
    m = run(rc, a.out, no_cache=a.no_cache, cache=a.cache, backend_options=opts, budget=budget_of(a))
    keep = {k: m[k] for k in ("method", "dataset", "level", "n_examples", "bacc", "k_alpha", "fpr", "fnr", "unparsed")
            if k in m}
    failed = m.get("failed_examples") or {"n": 0, "examples": []}  # server refusals: counted apart from unparsed
    first = failed["examples"][0] if failed["examples"] else None
    why = {"first_failure": f"{first['example']}: {first['error']}"} if first else {}
    print(json.dumps(clean_nan({**keep, "failed": failed["n"], **why, "out": str(a.out),
                                "wall_s": round(m["wall_s"], 2), "cache_hits": m["engine"]["cache_hits"],
                                "backend_calls": m["engine"]["backend_calls"],
                                "backend_calls_all_processes": m["usage_all_processes"]["backend_calls"]})))
    if first and failed["n"] == m["n_examples"]:  # nothing was judged: no result, whatever few examples it had
        print(f"sumjudge: error: every example failed ({failed['n']} of {m['n_examples']}; the first: "
              f"{why['first_failure']})", file=sys.stderr)
        return EXIT_RUN
    return 0


def _cmd_arena(a) -> int:
    from ..arena import parse_cells, printed_twin, run_arena
    from ..run.runs import clean_nan

    check_engine_flags(a)
    cells = parse_cells(a.methods, a.datasets)
    if a.as_printed:  # each judge run the authors' way gets its printed twin (MethodSpec.as_printed)
        cells = list(dict.fromkeys(cells + [t[1] for c in cells if (t := printed_twin(c)) is not None]))
    res = run_arena(cells, a.out, backend=a.backend, model=a.model, base_url=a.base_url, limit=a.limit, seed=a.seed,
                    level=a.level, cache=a.cache, held_out=a.held_out, budget=budget_of(a))
    for row in res["arena"]:
        print(json.dumps(clean_nan({k: row[k] for k in ("dataset", "judge", "n", "bacc", "bacc_ci_low", "bacc_ci_high",
                                                        "roc_auc", "threshold", "unreadable_share",
                                                        "prompt_tokens_per_example")})))
    differ = [r for r in res["paired"] if r["differ_at_0.05"]]
    print(json.dumps({"out": str(a.out), "cells": len(res["arena"]), "pairs": len(res["paired"]),
                      "pairs_differing_after_holm": len(differ), "fidelity_pairs": len(res["fidelity"])}))
    return 0


def _cmd_scale(a) -> int:
    from ..perf.scale import check_runs, scale, scale_file

    runs = check_runs(a.runs)
    latency_run = scale_file()["latency_run"] if a.latency_run is None else a.latency_run
    check_runs([latency_run] if latency_run else [])
    routed = None
    if a.replicas:
        from ..errors import ConfigError
        from ..perf.fleet import router_from_environment

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


def add_paper_runs_flags(p) -> None:
    p.add_argument("--runs", nargs="*", help="runs of profiles/scale.yaml (default: all)")
    p.add_argument("--limit", type=int, default=None, help="examples per run (default: all, the papers' size)")


def _cmd_plan(a) -> int:
    from ..errors import ConfigError
    from ..plan import Rates, plan, plan_notebooks
    from ..perf.scale import check_runs

    rates = Rates(tokens_per_s=a.tokens_per_s, prefill_tokens_per_s=a.prefill_tokens_per_s, price_in=a.price_in,
                  price_out=a.price_out, replicas=a.replicas, prefix_hit_share=a.prefix_hit_share)
    preamble = [f"plan: {a.replicas} server(s) sharing the work evenly, each at {a.prefill_tokens_per_s:g} prompt "
                f"and {a.tokens_per_s:g} completion tokens/s; {a.prefix_hit_share:.0%} of prompt tokens assumed found "
                "in a server's prefix cache" + (" (none: every prompt prefilled in full, an upper bound)"
                                                if not a.prefix_hit_share else "") + "; hours are wall hours, "
                "server_hours their sum over the servers"]

    def show(rows: list[dict]) -> None:  # the preamble with the first rows: an error before them is said alone
        while preamble and rows:
            print(preamble.pop(), file=sys.stderr)
        for row in rows:
            print(json.dumps(row), flush=True)

    common = dict(profile=a.profile, tokenizer=a.tokenizer, model=a.model, limit=a.limit, rates=rates)
    if a.notebooks is not None:
        if a.runs:
            raise ConfigError("plan: give --runs (scale.yaml's runs) or --notebooks, not both")
        if not plan_notebooks(" ".join(a.notebooks), measured=not a.caps_only, on_rows=show,
                              context_length=a.context_length, **common):
            raise ConfigError(f"plan: no notebook matches {' '.join(a.notebooks) or '(none given)'}")
        return 0
    show(plan(check_runs(a.runs), context_length=a.context_length or 131072, **common))
    return 0


def _cmd_tiny(a) -> int:
    from ..llm.models import TINY_SHAPE, TINY_SHAPE_HEAD32, build_tiny_model

    print(build_tiny_model(a.dir, seed=a.seed, shape=TINY_SHAPE_HEAD32 if a.head_dim == 32 else TINY_SHAPE))
    return 0


def _cmd_cache(a) -> int:
    from ..errors import ConfigError
    from ..llm.cache import ResponseCache
    from ..llm.types import server_identity
    from ..paths import cache_path

    path = a.cache or cache_path()
    if a.action in ("export", "import") and a.file is None:
        raise ConfigError(f"sumjudge cache {a.action} FILE: name the cache file to {a.action}")
    if a.action == "import":  # a class's cache handed out: its entries join this machine's cache
        print(json.dumps({"path": str(path), **ResponseCache(path).merge(a.file)}))
        return 0
    if (a.file is not None) != (a.action == "export"):
        raise ConfigError(f"sumjudge cache {a.action} takes no FILE")
    if a.action == "export" and not path.exists():
        raise ConfigError(f"cache export: there is no cache at {path} (--cache names another)")
    if not path.exists():  # never create a cache just to look at it
        print(json.dumps({"path": str(path), "exists": False, "entries": 0} if a.action == "stats" else
                         {"path": str(path), "exists": False, "deleted": 0}))
        return 0
    c = ResponseCache(path)
    if a.action == "stats":
        print(json.dumps(c.stats(), indent=2))
        return 0
    scope = {"backend": a.backend, "model": a.model, "revision": a.revision,
             "server": server_identity(a.server) if a.server else None}
    if a.action == "export":
        n = c.export(a.file, **scope)
        print(json.dumps({"exported": n, "file": str(a.file), "scope": ", ".join(
            f"{k}={v}" for k, v in scope.items() if v is not None) or "every entry"}))
        return 0
    n = c.count(**scope)
    what = ", ".join(f"{k}={v}" for k, v in scope.items() if v is not None) or "every entry"
    if n and not a.yes:
        if not sys.stdin.isatty():
            raise ConfigError(f"cache clear would delete {n} entries ({what}) from {path}; add --yes to confirm")
        if input(f"Delete {n} cached responses ({what}) from {path}? [y/N] ").strip().lower() not in ("y", "yes"):
            print(json.dumps({"deleted": 0, "cancelled": True}))
            return 0
    deleted = c.clear(compact=True, **scope)
    print(json.dumps({"deleted": deleted, "scope": what, "bytes_after": c.stats()["bytes"]}))
    return 0


def _cmd_data(a) -> int:
    from ..data import registry, sources
    from ..data.stats import dataset_stats
    from ..errors import ConfigError

    if a.action == "list":
        for name, spec in sorted(registry.DATASETS.items()):
            status = "ok" if registry.is_present(name) else "missing"
            print(f"{name:24s} {spec.kind:15s} {status:8s} {spec.source}\n{'':24s} {spec.description}")
        return 0
    if a.action == "stats":
        if not a.name:
            raise ConfigError("sumjudge data stats NAME: name the dataset")
        print(json.dumps(dataset_stats(a.name, level=a.level), indent=2))
        return 0
    if a.action == "fetch":
        if a.name in sources.RESOURCES:  # files that are no dataset of their own (criteria files, QMSum)
            try:
                for f in sources.RESOURCES[a.name]:
                    print(f"{a.name}: {sources.fetch(f)}")
            except sources.DataMissingError as e:
                print(f"{a.name}: {e}", file=sys.stderr)
                return EXIT_DATA
            return 0
        names = sorted(registry.DATASETS) if a.name in (None, "all") else [a.name]
        missing = []
        for n in names:
            if registry.get(n).fetch is not None:
                try:
                    print(f"{n}: {registry.get(n).fetch()}")
                except sources.DataMissingError as e:
                    missing.append(f"{n}: {e}")
            for f in registry.get(n).files:
                try:
                    print(f"{n}: {sources.fetch(f)}")
                except (sources.DataMissingError, KeyError) as e:
                    missing.append(f"{n}: {e}")
        for n, rels in (sources.RESOURCES.items() if a.name in (None, "all") else ()):
            for f in rels:
                try:
                    print(f"{n}: {sources.fetch(f)}")
                except sources.DataMissingError as e:
                    missing.append(f"{n}: {e}")
        for m in missing:
            print(m, file=sys.stderr)
        return EXIT_DATA if missing else 0
    return EXIT_USAGE


def _cmd_bench(a) -> int:
    from ..perf.bench import main as bench_main

    return bench_main(a)


_ARGPARSE_MESSAGES = (  # argparse's wording -> one line that names the flag and what it accepts
    (re.compile(r"^argument (?:cmd|\{[^}]*\}): invalid choice: '(?P<v>[^']*)' \(choose from (?P<c>.*)\)$"),
     "unknown command '{v}' (commands: {c})"),
    (re.compile(r"^argument (?P<f>[^:]+): invalid int value: '(?P<v>[^']*)'$"), "{f} expects a whole number, not '{v}'"),
    (re.compile(r"^argument (?P<f>[^:]+): invalid float value: '(?P<v>[^']*)'$"), "{f} expects a number, not '{v}'"),
    (re.compile(r"^argument (?P<f>[^:]+): invalid choice: '(?P<v>[^']*)' \(choose from (?P<c>.*)\)$"),
     "{f} accepts {c}, not '{v}'"),
    (re.compile(r"^argument (?P<f>[^:]+): (?P<rest>.*)$"), "{f}: {rest}"),
)


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line: what is wrong, naming the flag and what it accepts,
    and where the usage is (``--help``), in place of argparse's usage block; exit status 2 as argparse's."""

    def error(self, message: str):
        for pattern, text in _ARGPARSE_MESSAGES:
            m = pattern.match(message)
            if m:
                message = text.format(**{k: v.replace("'", "") if k == "c" else v for k, v in m.groupdict().items()})
                break
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def add_paper_commands(sub) -> None:
    """Each paper's own subcommands (``run.commands.COMMANDS``, registered by the papers): the shared run flags with
    the command's defaults, then its own flags."""
    from functools import partial

    from ..run.commands import COMMANDS

    for command in COMMANDS.all().values():
        sp = sub.add_parser(command.name, help=command.help)
        add_run_flags(sp, **command.run_flags)
        for flag, options in command.flags:
            sp.add_argument(flag, **options)
        sp.set_defaults(fn=partial(_cmd_paper, command))


def _cmd_paper(command, a) -> int:
    """A paper's command run as every method runs (``runs.run``: a run folder, its lock, the cache, the budget),
    its procedure given its own flags' values; prints what the command shows."""
    check_engine_flags(a)
    from ..run.runs import Procedure, run

    options = {name: getattr(a, name) for name in command.option_names()}
    m = run(run_config_of(a, command.method), a.out, no_cache=a.no_cache, cache=a.cache, budget=budget_of(a),
            procedure=Procedure(command.name, options, command.procedure(options)))
    print(json.dumps({k: m[k] for k in command.shows} | {"out": str(a.out), "backend_calls": m["engine"]["backend_calls"]}))
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="sumjudge", description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)

    r = sub.add_parser("run", help="run a method on a dataset into a run folder")
    r.add_argument("method")
    add_run_flags(r)
    r.add_argument("--token-budget", type=int, help="hf: rows x padded tokens of the decoding batch")
    r.add_argument("--dtype", choices=("float32", "bfloat16", "float16", "cpu-native"),
                   help="hf: the weights' dtype (default: bfloat16 on a GPU, float32 on a CPU; cpu-native: bfloat16 "
                        "also on a CPU that computes it natively)")
    r.add_argument("--timeout", type=float, help="openai: seconds one request may take (default 600)")
    r.add_argument("--concurrency", type=int, help="openai: requests in flight at most (default 256, vLLM's default "
                   "number of sequences a server batches)")
    r.add_argument("--max-retry-time", type=float,
                   help="openai: seconds one request may spend being retried in all (default 900)")
    r.add_argument("--tokenizer", help="openai: the model's own tokenizer (a Hugging Face id or folder) for a server "
                   "without a tokenize route (ollama, llama-cpp-python), so that prompts are counted and fitted")
    r.add_argument("--server-name", help="openai: a name for the server in the cache key (the served model's "
                                         "name, weights and context are always in it; the address only where the "
                                         "server does not say which weights it serves): keeps two servers of the "
                                         "same weights apart, or lets such a server reuse its answers elsewhere")
    r.set_defaults(fn=_cmd_run)

    add_paper_commands(sub)  # each paper's own commands (guideline learning, self-training)

    ar = sub.add_parser("arena", help="judges of every paper on the same examples: BAcc with CIs, cost, paired tests")
    ar.add_argument("--methods", nargs="+", required=True,
                    help="judges, each a method or method:key=value;key=value (its settings); spaces or commas "
                         "between judges")
    ar.add_argument("--datasets", nargs="+", required=True, help="binary faithfulness datasets (spaces or commas)")
    ar.add_argument("--limit", type=int, help="examples per dataset (a seeded subset, the same for every judge)")
    ar.add_argument("--level", choices=("sentence", "summary"))
    add_engine_flags(ar, model_help="as for run")
    ar.add_argument("--held-out", type=int, help="held-out examples per dataset on which a score judge's threshold "
                    "is chosen (default: --limit); never judged by any cell")
    ar.add_argument("--as-printed", action="store_true", help="add, for each judge named that runs the authors' "
                    "code's reading, the same judge as the paper prints it (MethodSpec.as_printed) and the pair's "
                    "paired test")
    ar.add_argument("--seed", type=int, default=0)
    ar.add_argument("--cache", type=Path, help="cache file (default data/cache/llm_cache.sqlite)")
    ar.add_argument("--out", required=True, type=Path, help="folder for the runs and the arena's tables")
    add_budget_flags(ar)
    ar.set_defaults(fn=_cmd_arena)

    t = sub.add_parser("tiny-model", help="build a tiny random Llama-architecture model with the Llama-3 tokenizer")
    t.add_argument("dir", type=Path)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--head-dim", type=int, choices=(16, 32), default=16,
                   help="attention head size: 16 (the default tiny model) or 32 (servable by vLLM on CPU)")
    t.set_defaults(fn=_cmd_tiny)

    c = sub.add_parser("cache", help="response cache")
    c.add_argument("action", choices=("stats", "clear", "export", "import"))
    c.add_argument("file", nargs="?", type=Path, help="export: the new cache file to write; import: the cache file "
                   "whose entries to add")
    c.add_argument("--cache", type=Path)
    c.add_argument("--backend", choices=backend_names(), help="clear / export: only this backend's entries")
    c.add_argument("--model", help="clear / export: only this model's entries (the name `cache stats` shows)")
    c.add_argument("--revision", help="clear / export: only this model revision's entries (as `cache stats` shows)")
    c.add_argument("--server", help="clear / export: only entries from this server (base URL)")
    c.add_argument("--yes", action="store_true", help="clear without asking")
    c.set_defaults(fn=_cmd_cache)

    d = sub.add_parser("data", help="datasets: list | stats NAME | fetch NAME|all")
    d.add_argument("action", choices=("list", "stats", "fetch"))
    d.add_argument("name", nargs="?")
    d.add_argument("--level")
    d.set_defaults(fn=_cmd_data)

    pl = sub.add_parser("plan", help="calls, tokens, hours and dollars of the paper profile's runs, before any model "
                        "is called (each run executed against an in-process planner)")
    pl.add_argument("--profile", default="paper")
    add_paper_runs_flags(pl)
    pl.add_argument("--notebooks", nargs="*", help="plan these notebooks instead (prefixes, e.g. 10 30; none given: "
                    "all), each executed with papermill on the planner: a row per run and a total per notebook")
    pl.add_argument("--caps-only", action="store_true", help="with --notebooks: completion tokens from the answer "
                    "caps only, never from the profile's earlier runs of the notebook")
    pl.add_argument("--tokenizer", help="the model's tokenizer (a folder or hub id); default: Llama-3's")
    pl.add_argument("--model", help="the model name recorded (default: the profile's)")
    pl.add_argument("--context-length", type=int,
                    help="the model's context (default: 131,072; with --notebooks, the context the profile gives each "
                    "notebook where it gives one)")
    pl.add_argument("--tokens-per-s", type=float, default=2500.0, help="the server's decode throughput, all requests")
    pl.add_argument("--prefill-tokens-per-s", type=float, default=25000.0)
    pl.add_argument("--replicas", type=int, default=1, help="servers sharing the work (replicas behind a router, "
                    "or vLLM's data parallelism): hours divide by them, server_hours do not")
    pl.add_argument("--prefix-hit-share", type=float, default=0.0, help="share of prompt tokens a server finds in its "
                    "prefix cache (0, the default: every prompt prefilled in full; `sumjudge scale --replicas` "
                    "measures it per routing policy on stand-ins)")
    pl.add_argument("--price-in", type=float, default=0.0, help="dollars per million prompt tokens")
    pl.add_argument("--price-out", type=float, default=0.0, help="dollars per million completion tokens")
    pl.set_defaults(fn=_cmd_plan)
    sc = sub.add_parser("scale", help="the paper profile's runs at full size against the stand-in server: requests "
                        "per second, client CPU, memory, log and cache size, slots kept full (no model is called)")
    sc.add_argument("--out", default="figures/scale")
    add_paper_runs_flags(sc)
    sc.add_argument("--memory-limit", type=int, default=100, help="each run also on this many examples, to compare "
                    "peak memory (0: skip)")
    sc.add_argument("--latency", type=float, default=2.0, help="seconds per request of the realistic server")
    sc.add_argument("--slots", type=int, default=64, help="requests the realistic server serves at once")
    sc.add_argument("--latency-run", help="the run measured against the realistic server (default: scale.yaml's "
                    "latency_run; '': none)")
    sc.add_argument("--latency-limit", type=int, default=None, help="its examples (default: all)")
    sc.add_argument("--replicas", type=int, nargs="*", help="also run --routed-runs against this many stand-in "
                    "replicas behind a router (e.g. 1 2 4): requests per second against one replica's, and where an "
                    "example's calls landed")
    sc.add_argument("--router", help="the vllm-router executable (default: SUMJUDGE_ROUTER, set by make scale)")
    sc.add_argument("--policy", default=CHOSEN_POLICY, choices=ROUTER_POLICIES,
                    help="the router's policy for the throughput runs (docs/serving.md's choice)")
    sc.add_argument("--policies", nargs="*", default=["consistent_hash", "cache_aware", "round_robin"],
                    choices=ROUTER_POLICIES, help="policies compared at the most replicas (prefix locality)")
    sc.add_argument("--routed-runs", nargs="*", help="runs of profiles/scale.yaml (default: its routed_runs)")
    sc.add_argument("--routed-limit", type=int, default=200, help="their examples")
    sc.add_argument("--routed-latency", type=float, default=0.5, help="seconds per request of each replica")
    sc.add_argument("--routed-slots", type=int, default=16, help="requests each replica serves at once")
    sc.set_defaults(fn=_cmd_scale)
    b = sub.add_parser("bench", help="engine vs one-generate-per-request benchmark (prints JSON)")
    b.add_argument("--shape", default="tiny", choices=("tiny", "llama3-8b"))
    b.add_argument("--model", help="a real model instead of --shape: smoke | a local folder | a Hugging Face id; "
                                   "with --backend openai, the name the server serves")
    b.add_argument("--backend", default="hf", choices=backend_names(serving=True),
                   help="openai: the workload against the server at --base-url (one request at a time vs the engine)")
    b.add_argument("--base-url", help="with --backend openai, e.g. http://host:8000/v1")
    b.add_argument("--concurrency", type=int, default=32, help="with --backend openai: requests in flight at most")
    b.add_argument("--device", default="cpu")
    b.add_argument("--docs", type=int, default=8, help="K documents (x 4 agents)")
    b.add_argument("--doc-tokens", type=int, default=600)
    b.add_argument("--long-docs", type=int, default=0, help="M more documents (x 4 agents) of --long-doc-tokens: "
                   "short rows beside long ones in one batch (what row-by-row decode attention is for)")
    b.add_argument("--long-doc-tokens", type=int, default=3000)
    b.add_argument("--max-new-tokens", type=int, default=128)
    b.add_argument("--token-budget", type=int, default=65536)
    b.add_argument("--prefill-budget", type=int,
                   help="tokens per prefill forward pass (rows x padded width; default the engine's, 4096; a huge "
                   "value: one pass per admission)")
    b.add_argument("--repeats", type=int, default=3, help="time each path this many times, report the fastest")
    b.add_argument("--dtype", default="auto", choices=("auto", "float32", "bfloat16", "float16"),
                   help="auto: bf16 on a GPU, fp32 on CPU")
    b.add_argument("--turns", type=int, default=0, help="instead: a flood of --docs x 4 requests and a chain of this "
                   "many turns, one source vs two taking turns (the chain's wall time each way)")
    b.add_argument("--sequential-limit", type=int, help="time the one-generate-per-request loop over this many "
                   "requests only (all of equal length) and scale its time to all of them; outputs checked on those")
    b.add_argument("--batched-generate", action="store_true", help="also time one model.generate call with every "
                   "request padded into it (transformers' own cache): the engine's ratio to it")
    b.add_argument("--compare-decode-graphs", action="store_true", help="on a CUDA GPU, also time the engine with "
                   "its decode steps run eagerly instead of replayed as CUDA graphs (the step time of each)")
    b.add_argument("--compiled-generate", action="store_true", help="also time one batched model.generate with "
                   "transformers' static cache, compiled (torch.compile, its documented fast path; first call apart)")
    b.add_argument("--option-sets", type=int, default=0, help="also time this many G-Eval option sets (1-5) "
                   "scored through the engine: option sets per second")
    b.add_argument("--max-batch", type=int, default=64, help="rows the engine decodes at once")
    b.add_argument("--tie-ulps", type=float, default=2.0,
                   help="reduced precision: a divergence counts as a numerical near-tie within this many ulps")
    b.set_defaults(fn=_cmd_bench)
    return p


def main(argv: list[str] | None = None) -> int:
    from ..data.sources import DataFormatError, DataMissingError
    from ..llm.budget import BudgetExhausted
    from ..llm.errors import BackendUnavailableError
    from ..errors import ConfigError, SumjudgeError

    args = build_parser().parse_args([str(a) for a in argv] if argv is not None else None)
    try:
        return args.fn(args)
    except KeyboardInterrupt:
        print("sumjudge: interrupted; every finished call is cached: run the same command again to resume",
              file=sys.stderr)
        return EXIT_INTERRUPTED
    except (DataMissingError, DataFormatError, FileNotFoundError) as e:
        print(f"sumjudge: data error: {e}", file=sys.stderr)
        return EXIT_DATA
    except ConfigError as e:  # only the project's own refusals: any other ValueError is a bug, with its traceback
        print(f"sumjudge: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except ModuleNotFoundError as e:  # a module of the hf extra that no guard asked for first (llm/extras.py)
        from ..llm.extras import missing_extra

        if (said := missing_extra(e, f"sumjudge {getattr(args, 'cmd', '')}".strip())) is None:
            raise
        print(f"sumjudge: error: {said}", file=sys.stderr)
        return EXIT_USAGE
    except BackendUnavailableError as e:
        print(f"sumjudge: backend error: {e}", file=sys.stderr)
        return EXIT_BACKEND
    except BudgetExhausted as e:
        print(f"sumjudge: {e}", file=sys.stderr)
        return EXIT_BUDGET
    except SumjudgeError as e:
        print(f"sumjudge: error: {e}", file=sys.stderr)
        return EXIT_RUN


if __name__ == "__main__":
    sys.exit(main())
