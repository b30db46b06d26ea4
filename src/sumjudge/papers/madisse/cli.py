"""MADISSE's command: ``sumjudge learn-guidelines`` (the guideline learning phase, Appendix A.1.1), run as every
method runs (``runs.run``: a run folder, its lock, the cache, the budget)."""

from __future__ import annotations

import json

from ...run.flags import add_run_flags, budget_of, check_engine_flags, run_config_of

GUIDELINES_FILE = "guidelines.txt"  # in the run folder: for `sumjudge run madisse --set guidelines=FILE`
LEARNING_FILE = "learning.json"  # passes, convergence and each added guideline with its example


def _cmd_learn(a) -> int:
    """MADISSE guideline learning phase (Appendix A.1.1) -> a guidelines file for `madisse --set guidelines=FILE`."""
    check_engine_flags(a)
    from ...run.runs import Procedure, run
    from .guidelines import learn_guidelines

    async def learn(r, llm) -> dict:
        res = await learn_guidelines(r.examples, llm, r.cfg, max_passes=a.max_passes, start=a.start)
        path = res.save(r.out / GUIDELINES_FILE)
        (r.out / LEARNING_FILE).write_text(json.dumps({"passes": res.passes, "converged": res.converged,
                                                       "added": res.log}, indent=2), encoding="utf-8")
        return {"guidelines": len(res.guidelines), "added": len(res.log), "passes": res.passes,
                "converged": res.converged, "file": str(path)}

    m = run(run_config_of(a, "madisse"), a.out, no_cache=a.no_cache, cache=a.cache, budget=budget_of(a),
            procedure=Procedure("learn-guidelines", {"max_passes": a.max_passes, "start": a.start}, learn))
    print(json.dumps({k: m[k] for k in ("guidelines", "added", "passes", "converged", "file")}
                     | {"out": str(a.out), "backend_calls": m["engine"]["backend_calls"]}))
    return 0


def add_commands(sub) -> None:
    g = sub.add_parser("learn-guidelines", help="MADISSE guideline learning phase on labelled (dev) examples, into a "
                       f"run folder ({GUIDELINES_FILE} for `run madisse --set guidelines=FILE`)")
    add_run_flags(g, limit=20)
    g.add_argument("--max-passes", type=int, default=3)
    g.add_argument("--start", default="paper", choices=("paper", "empty"))
    g.set_defaults(fn=_cmd_learn)
