"""``sumjudge arena``: judges of every paper on the same examples."""

from __future__ import annotations

import json
from pathlib import Path

from sumjudge.arena import parse_cells, printed_twin, run_arena
from sumjudge.cli.flags import add_budget_flags, add_engine_flags, budget_of, check_engine_flags
from sumjudge.cli.subcommand import Subcommand
from sumjudge.run.runs import clean_nan


def add_arguments(p) -> None:
    p.add_argument("--methods", nargs="+", required=True,
                   help="judges, each a method or method:key=value;key=value (its settings); spaces or commas "
                        "between judges")
    p.add_argument("--datasets", nargs="+", required=True, help="binary faithfulness datasets (spaces or commas)")
    p.add_argument("--limit", type=int, help="examples per dataset (a seeded subset, the same for every judge)")
    p.add_argument("--level", choices=("sentence", "summary"))
    add_engine_flags(p, model_help="as for run")
    p.add_argument("--held-out", type=int, help="held-out examples per dataset on which a score judge's threshold "
                   "is chosen (default: --limit); never judged by any cell")
    p.add_argument("--as-printed", action="store_true", help="add, for each judge named that runs the authors' "
                   "code's reading, the same judge as the paper prints it (MethodSpec.as_printed) and the pair's "
                   "paired test")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--cache", type=Path, help="cache file (default data/cache/llm_cache.sqlite)")
    p.add_argument("--out", required=True, type=Path, help="folder for the runs and the arena's tables")
    add_budget_flags(p)


def main(a) -> int:
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


COMMAND = Subcommand("arena", help="judges of every paper on the same examples: BAcc with CIs, cost, paired tests",
                     add_arguments=add_arguments, run=main)
