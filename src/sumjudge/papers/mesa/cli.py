"""MESA's command: ``sumjudge mesa-feedback`` (self-training, Section 2.5), run as every method runs (``runs.run``:
a run folder, its lock, the cache, the budget); the command line builds it from this description
(``run.commands``)."""

from __future__ import annotations

from sumjudge.papers.mesa.feedback import save, self_train
from sumjudge.run.commands import PaperCommand, register_command

FEEDBACK_FILE = "feedback.json"  # in the run folder: for `sumjudge run mesa --set feedback=FILE`


def train(options: dict):
    """MESA self-training (Section 2.5) on the train split -> a feedback file for `mesa --set feedback=FILE`."""

    async def body(r, llm) -> dict:
        fb = await self_train(r.examples, llm, r.cfg, iterations=options["iterations"], judge=options["judge"])
        path = save(fb, r.out / FEEDBACK_FILE)
        last = fb["history"][-1] if fb else {}
        return {"iteration": fb.get("iteration", 0), "reports": sorted(fb.get("reports", {})),
                "judged": last.get("judged"), "unparsed": last.get("unparsed"), "train": len(r.examples),
                "file": str(path)}

    return body


register_command(PaperCommand(
    name="mesa-feedback", method="mesa", procedure=train,
    help="MESA self-training: feedback reports learned on the train split, into a run folder "
         f"({FEEDBACK_FILE} for `run mesa --set feedback=FILE`)",
    run_flags={"dataset": "meeting-errors", "split": "train", "level": False},
    flags=(("--iterations", {"type": int, "default": 1}),
           ("--judge", {"help": "another model for the judge calls: backend:model[@base_url]"})),
    shows=("iteration", "reports", "judged", "unparsed", "train", "file")))
