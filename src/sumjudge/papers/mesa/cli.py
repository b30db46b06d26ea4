"""MESA's command: ``sumjudge mesa-feedback`` (self-training, Section 2.5)."""

from __future__ import annotations

import json
from pathlib import Path

from ...cli_flags import add_engine_flags, check_engine_flags, parse_sets


def _cmd_mesa_feedback(a) -> int:
    """MESA self-training (Section 2.5) on the train split -> a feedback file for `mesa --set feedback=FILE`."""
    check_engine_flags(a)
    from ...data import registry
    from ...llm import make_llm
    from ...llm.engine import run_sync
    from ...judges.settings import make_config
    from ...method_registry import get_method
    from .feedback import save, self_train

    cfg = make_config(get_method("mesa").config_cls, parse_sets(a.set), seed=a.seed)
    train = registry.load(a.dataset, split=a.split, limit=a.limit, seed=a.seed)
    out = Path(a.out)
    llm = make_llm(a.backend, a.model, base_url=a.base_url, cache=a.cache, log=out.with_suffix(".calls.jsonl"))
    fb = run_sync(self_train(train, llm, cfg, iterations=a.iterations, judge=a.judge))
    save(fb, out)
    last = fb["history"][-1] if fb else {}
    print(json.dumps({"iteration": fb.get("iteration", 0), "reports": sorted(fb.get("reports", {})),
                      "judged": last.get("judged"), "unparsed": last.get("unparsed"), "train": len(train),
                      "out": str(out)}))
    return 0


def add_commands(sub) -> None:
    f = sub.add_parser("mesa-feedback", help="MESA self-training: feedback reports learned on the train split")
    f.add_argument("--dataset", default="meeting-errors")
    f.add_argument("--split", default="train")
    f.add_argument("--limit", type=int)
    f.add_argument("--iterations", type=int, default=1)
    add_engine_flags(f)
    f.add_argument("--judge", help="another model for the judge calls: backend:model[@base_url]")
    f.add_argument("--seed", type=int, default=0)
    f.add_argument("--set", action="append", metavar="KEY=VALUE", help="mesa setting (repeatable)")
    f.add_argument("--cache", type=Path)
    f.add_argument("--out", required=True, type=Path, help="feedback file to write (JSON; plus .calls.jsonl)")
    f.set_defaults(fn=_cmd_mesa_feedback)
