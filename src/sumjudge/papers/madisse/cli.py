"""MADISSE's command: ``sumjudge learn-guidelines`` (the guideline learning phase, Appendix A.1.1)."""

from __future__ import annotations

import json
from pathlib import Path

from ...cli_flags import add_engine_flags, check_engine_flags, parse_sets


def _cmd_learn(a) -> int:
    """MADISSE guideline learning phase (Appendix A.1.1) -> a guidelines file for `madisse --set guidelines=FILE`."""
    check_engine_flags(a)
    from ...data import registry
    from ...llm import make_llm
    from ...llm.engine import run_sync
    from ...judges.settings import make_config
    from .guidelines import learn_guidelines
    from .protocol import MadisseConfig

    cfg = make_config(MadisseConfig, parse_sets(a.set), seed=a.seed)
    examples = registry.load(a.dataset, split=a.split, level=a.level, limit=a.limit, seed=a.seed)
    out = Path(a.out)
    llm = make_llm(a.backend, a.model, base_url=a.base_url, cache=a.cache, log=out.with_suffix(".calls.jsonl"))
    res = run_sync(learn_guidelines(examples, llm, cfg, max_passes=a.max_passes, start=a.start))
    res.save(out)
    out.with_suffix(".log.json").write_text(json.dumps({"passes": res.passes, "converged": res.converged,
                                                        "added": res.log}, indent=2))
    print(json.dumps({"guidelines": len(res.guidelines), "added": len(res.log), "passes": res.passes,
                      "converged": res.converged, "out": str(out)}))
    return 0


def add_commands(sub) -> None:
    g = sub.add_parser("learn-guidelines", help="MADISSE guideline learning phase on labelled (dev) examples")
    g.add_argument("--dataset", required=True)
    g.add_argument("--split")
    g.add_argument("--level", choices=("sentence", "summary"))
    g.add_argument("--limit", type=int, default=20)
    add_engine_flags(g)
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--set", action="append", metavar="KEY=VALUE", help="madisse setting (repeatable)")
    g.add_argument("--max-passes", type=int, default=3)
    g.add_argument("--start", default="paper", choices=("paper", "empty"))
    g.add_argument("--cache", type=Path)
    g.add_argument("--out", required=True, type=Path, help="guidelines file to write (plus .log.json, .calls.jsonl)")
    g.set_defaults(fn=_cmd_learn)
