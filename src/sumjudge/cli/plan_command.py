"""``sumjudge plan``: calls, tokens, hours and dollars of the paper profile's runs."""

from __future__ import annotations

import json
import sys

from sumjudge.cli.flags import add_paper_runs_flags
from sumjudge.cli.subcommand import Subcommand
from sumjudge.errors import ConfigError
from sumjudge.perf.plan import Rates, plan, plan_notebooks
from sumjudge.perf.scale import check_runs


def add_arguments(p) -> None:
    p.add_argument("--profile", default="paper")
    add_paper_runs_flags(p)
    p.add_argument("--notebooks", nargs="*", help="plan these notebooks instead (prefixes, e.g. 10 30; none given: "
                   "all), each executed with papermill on the planner: a row per run and a total per notebook")
    p.add_argument("--caps-only", action="store_true", help="with --notebooks: completion tokens from the answer "
                   "caps only, never from the profile's earlier runs of the notebook")
    p.add_argument("--tokenizer", help="the model's tokenizer (a folder or hub id); default: Llama-3's")
    p.add_argument("--model", help="the model name recorded (default: the profile's)")
    p.add_argument("--context-length", type=int,
                   help="the model's context (default: 131,072; with --notebooks, the context the profile gives each "
                   "notebook where it gives one)")
    p.add_argument("--tokens-per-s", type=float, default=2500.0, help="the server's decode throughput, all requests")
    p.add_argument("--prefill-tokens-per-s", type=float, default=25000.0)
    p.add_argument("--replicas", type=int, default=1, help="servers sharing the work (replicas behind a router, "
                   "or vLLM's data parallelism): hours divide by them, server_hours do not")
    p.add_argument("--prefix-hit-share", type=float, default=0.0, help="share of prompt tokens a server finds in its "
                   "prefix cache (0, the default: every prompt prefilled in full; `sumjudge scale --replicas` "
                   "measures it per routing policy on stand-ins)")
    p.add_argument("--price-in", type=float, default=0.0, help="dollars per million prompt tokens")
    p.add_argument("--price-out", type=float, default=0.0, help="dollars per million completion tokens")


def main(a) -> int:
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


COMMAND = Subcommand("plan", help="calls, tokens, hours and dollars of the paper profile's runs, before any model "
                     "is called (each run executed against an in-process planner)",
                     add_arguments=add_arguments, run=main)
