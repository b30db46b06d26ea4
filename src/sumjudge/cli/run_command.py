"""``sumjudge run``: a method on a dataset into a run folder."""

from __future__ import annotations

import json
import sys

from sumjudge.cli.flags import EXIT_RUN, add_run_flags, budget_of, check_engine_flags, run_config_of
from sumjudge.cli.subcommand import Subcommand
from sumjudge.run.runs import clean_nan, run


def add_arguments(p) -> None:
    p.add_argument("method")
    add_run_flags(p)
    p.add_argument("--token-budget", type=int, help="hf: rows x padded tokens of the decoding batch")
    p.add_argument("--dtype", choices=("float32", "bfloat16", "float16", "cpu-native"),
                   help="hf: the weights' dtype (default: bfloat16 on a GPU, float32 on a CPU; cpu-native: bfloat16 "
                        "also on a CPU that computes it natively)")
    p.add_argument("--timeout", type=float, help="openai: seconds one request may take (default 600)")
    p.add_argument("--concurrency", type=int, help="openai: requests in flight at most (default 256, vLLM's default "
                   "number of sequences a server batches)")
    p.add_argument("--max-retry-time", type=float,
                   help="openai: seconds one request may spend being retried in all (default 900)")
    p.add_argument("--tokenizer", help="openai: the model's own tokenizer (a Hugging Face id or folder) for a server "
                   "without a tokenize route (ollama, llama-cpp-python), so that prompts are counted and fitted")
    p.add_argument("--server-name", help="openai: a name for the server in the cache key (the served model's "
                                         "name, weights and context are always in it; the address only where the "
                                         "server does not say which weights it serves): keeps two servers of the "
                                         "same weights apart, or lets such a server reuse its answers elsewhere")


def main(a) -> int:
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


COMMAND = Subcommand("run", help="run a method on a dataset into a run folder",
                     add_arguments=add_arguments, run=main)
