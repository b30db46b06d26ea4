"""MADISSE's command: ``sumjudge learn-guidelines`` (the guideline learning phase, Appendix A.1.1), run as every
method runs (``runs.run``: a run folder, its lock, the cache, the budget); the command line builds it from this
description (``run.commands``)."""

from __future__ import annotations

import json

from sumjudge.papers.madisse.guidelines import learn_guidelines
from sumjudge.run.commands import PaperCommand, register_command

GUIDELINES_FILE = "guidelines.txt"  # in the run folder: for `sumjudge run madisse --set guidelines=FILE`
LEARNING_FILE = "learning.json"  # passes, convergence and each added guideline with its example


def learn(options: dict):
    """MADISSE guideline learning phase (Appendix A.1.1) -> a guidelines file for `madisse --set guidelines=FILE`."""

    async def body(r, llm) -> dict:
        res = await learn_guidelines(r.examples, llm, r.cfg, max_passes=options["max_passes"], start=options["start"])
        path = res.save(r.out / GUIDELINES_FILE)
        (r.out / LEARNING_FILE).write_text(json.dumps({"passes": res.passes, "converged": res.converged,
                                                       "added": res.log}, indent=2), encoding="utf-8")
        return {"guidelines": len(res.guidelines), "added": len(res.log), "passes": res.passes,
                "converged": res.converged, "file": str(path)}

    return body


register_command(PaperCommand(
    name="learn-guidelines", method="madisse", procedure=learn,
    help="MADISSE guideline learning phase on labelled (dev) examples, into a run folder "
         f"({GUIDELINES_FILE} for `run madisse --set guidelines=FILE`)",
    run_flags={"limit": 20},
    flags=(("--max-passes", {"type": int, "default": 3}), ("--start", {"default": "paper", "choices": ("paper", "empty")})),
    shows=("guidelines", "added", "passes", "converged", "file")))
