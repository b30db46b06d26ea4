"""MESA's command: ``sumjudge mesa-feedback`` (self-training, Section 2.5), run as every method runs
(``runs.run``: a run folder, its lock, the cache, the budget)."""

from __future__ import annotations

import json

from ...run.flags import add_run_flags, budget_of, check_engine_flags, run_config_of

FEEDBACK_FILE = "feedback.json"  # in the run folder: for `sumjudge run mesa --set feedback=FILE`


def _cmd_mesa_feedback(a) -> int:
    """MESA self-training (Section 2.5) on the train split -> a feedback file for `mesa --set feedback=FILE`."""
    check_engine_flags(a)
    from ...run.runs import Procedure, run
    from .feedback import save, self_train

    async def train(r, llm) -> dict:
        fb = await self_train(r.examples, llm, r.cfg, iterations=a.iterations, judge=a.judge)
        path = save(fb, r.out / FEEDBACK_FILE)
        last = fb["history"][-1] if fb else {}
        return {"iteration": fb.get("iteration", 0), "reports": sorted(fb.get("reports", {})),
                "judged": last.get("judged"), "unparsed": last.get("unparsed"), "train": len(r.examples),
                "file": str(path)}

    m = run(run_config_of(a, "mesa"), a.out, no_cache=a.no_cache, cache=a.cache, budget=budget_of(a),
            procedure=Procedure("mesa-feedback", {"iterations": a.iterations, "judge": a.judge}, train))
    print(json.dumps({k: m[k] for k in ("iteration", "reports", "judged", "unparsed", "train", "file")}
                     | {"out": str(a.out), "backend_calls": m["engine"]["backend_calls"]}))
    return 0


def add_commands(sub) -> None:
    f = sub.add_parser("mesa-feedback", help="MESA self-training: feedback reports learned on the train split, into a "
                       f"run folder ({FEEDBACK_FILE} for `run mesa --set feedback=FILE`)")
    add_run_flags(f, dataset="meeting-errors", split="train", level=False)
    f.add_argument("--iterations", type=int, default=1)
    f.add_argument("--judge", help="another model for the judge calls: backend:model[@base_url]")
    f.set_defaults(fn=_cmd_mesa_feedback)
