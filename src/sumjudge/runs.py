"""Run folders: ``config.json``, ``calls.jsonl`` (every call's transcript), ``results.jsonl``, ``metrics.json``.

A run is resumable by construction: every finished LLM call is in the persistent cache the moment
it returns, so rerunning the same command after a kill replays finished calls from the cache (no
repeated model calls) and computes only the rest. ``results.jsonl`` and ``metrics.json`` are written
once, atomically, at the end: a folder without ``metrics.json`` is an unfinished run, and nothing
partial is ever presented as a result.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import platform
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import __version__
from .data import registry as data_registry
from .llm import make_llm
from .llm.engine import LLM
from .methods import get_method, make_config
from .methods.base import Judgement
from .run_metrics import METRICS_BY_KIND


@dataclass
class RunConfig:
    method: str
    dataset: str
    split: str | None = None
    level: str | None = None
    limit: int | None = None
    backend: str = "hf"
    model: str | None = None
    base_url: str | None = None
    seed: int = 0
    settings: dict[str, Any] = field(default_factory=dict)
    max_concurrent_examples: int = 512

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def write_jsonl_atomic(path: Path, rows: list[dict]) -> None:
    write_atomic(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))


def read_jsonl(path: Path) -> list[dict]:
    with Path(path).open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


async def judge_all(examples: list, llm: LLM, spec, cfg, *, max_concurrent: int = 512,
                    progress: bool = True) -> list[Judgement]:
    """Run ``spec.judge`` over all examples concurrently (each with its own usage scope)."""
    from tqdm.std import tqdm

    sem = asyncio.Semaphore(max_concurrent)
    bar = tqdm(total=len(examples), desc=spec.name, unit="ex", disable=not progress or len(examples) < 2)

    async def one(ex):
        async with sem:
            scope = llm.scoped(ex.id)
            j = await spec.judge(ex, scope, cfg)
            j.usage = scope.usage.as_dict()
            bar.update(1)
            return j

    try:
        return list(await asyncio.gather(*(one(ex) for ex in examples)))
    finally:
        bar.close()


def cost_summary(judgements: list[Judgement]) -> dict[str, float]:
    n = max(1, len(judgements))
    tot = {k: sum(j.usage.get(k, 0) for j in judgements) for k in ("calls", "option_calls", "prompt_tokens", "completion_tokens")}
    return {**{f"{k}_per_example": v / n for k, v in tot.items()}, **{f"{k}_total": v for k, v in tot.items()}}


def run(rc: RunConfig, out: str | Path, *, no_cache: bool = False, cache: str | Path | None = None,
        llm: LLM | None = None, progress: bool = True, backend_options: dict | None = None) -> dict[str, Any]:
    """Execute one run into ``out``; returns the metrics. Rerunning into the same folder with the same
    config resumes (finished calls come from the cache); a different config is refused."""
    spec = get_method(rc.method)
    cfg = make_config(spec.config_cls, rc.settings, seed=rc.seed)
    ds = data_registry.get(rc.dataset)
    needs = "faithfulness" if spec.kind == "ambiguity" else spec.kind
    if ds.kind != needs:
        raise ValueError(f"method {rc.method} judges {needs} data; dataset {rc.dataset} is {ds.kind}")
    examples = data_registry.load(rc.dataset, split=rc.split, level=rc.level, limit=rc.limit, seed=rc.seed)
    if spec.kind == "ambiguity" and any(getattr(e, "ambiguity", None) is None for e in examples):
        raise ValueError(f"method {rc.method} needs ambiguity annotations; dataset {rc.dataset} has none "
                         "(use meetingbank-ambiguity)")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    cfg_path = out / "config.json"
    record = {"run": rc.to_json(), "method_config": dataclasses.asdict(cfg)}
    if cfg_path.exists():
        prev = json.loads(cfg_path.read_text())
        if {k: prev.get(k) for k in record} != record:
            raise ValueError(f"{out} holds a run with a different configuration; use another --out folder")
    for stale in ("results.jsonl", "metrics.json"):
        (out / stale).unlink(missing_ok=True)
    t0 = time.time()
    from .llm import CallLog

    own = llm is None
    if own:
        llm = make_llm(rc.backend, rc.model, base_url=rc.base_url, no_cache=no_cache, cache=cache,
                       log=out / "calls.jsonl", **(backend_options or {}))
        previous_log = None
    else:  # a shared engine (notebooks): log this run's calls into this run's folder
        previous_log, llm.log = llm.log, CallLog(out / "calls.jsonl")
    try:
        return _execute(rc, spec, cfg, examples, llm, out, record, cfg_path, t0, progress)
    finally:
        llm.log.close()
        if not own:
            llm.log = previous_log


def _execute(rc: RunConfig, spec, cfg, examples, llm: LLM, out: Path, record, cfg_path: Path, t0: float,
             progress: bool) -> dict[str, Any]:
    write_atomic(cfg_path, json.dumps({**record, "backend_info": dataclasses.asdict(llm.info),
                                       "sumjudge": __version__, "python": platform.python_version()}, indent=2))
    from .llm.engine import run_sync

    before = llm.usage.as_dict()
    judgements = run_sync(judge_all(examples, llm, spec, cfg, max_concurrent=rc.max_concurrent_examples,
                                    progress=progress))
    bulky = ("document", "source", "transcript")  # long texts stay in the dataset, not in every results row
    rows = [{"example": ex.to_json() | {k: None for k in bulky if hasattr(ex, k)}, "judgement": j.to_json()}
            for ex, j in zip(examples, judgements)]
    write_jsonl_atomic(out / "results.jsonl", rows)
    level = rc.level or data_registry.get(rc.dataset).levels[0]  # rated examples carry no level of their own
    metrics = {"method": rc.method, "dataset": rc.dataset, "level": getattr(examples[0], "level", level) if examples else level,
               "n_examples": len(examples), **METRICS_BY_KIND[spec.kind](examples, judgements),
               "cost": cost_summary(judgements), "engine": engine_stats(llm, before), "wall_s": time.time() - t0}
    write_atomic(out / "metrics.json", json.dumps(clean_nan(metrics), indent=2))
    return metrics


def engine_stats(llm: LLM, before: dict[str, Any]) -> dict[str, Any]:
    """The engine's counters for this run only (an engine may be shared by several runs)."""
    after = llm.usage.as_dict()
    return {"backend": llm.info.name, "model": llm.info.model, "revision": llm.info.revision,
            **{k: v - before.get(k, 0) if isinstance(v, (int, float)) else v for k, v in after.items()}}


def clean_nan(o):
    """NaN (an undefined metric, e.g. FNR without errors) -> null, so the JSON stays standard."""
    if isinstance(o, float) and o != o:
        return None
    if isinstance(o, dict):
        return {k: clean_nan(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [clean_nan(v) for v in o]
    return o
