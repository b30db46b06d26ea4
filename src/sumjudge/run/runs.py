"""Runs as they execute, into their folders (``folder``): ``config.json``, ``calls.jsonl`` (every call's transcript),
``results.jsonl``, ``metrics.json``.

A run is resumable by construction: every finished LLM call is in the persistent cache the moment
it returns, so rerunning the same command after a kill replays finished calls from the cache (no
repeated model calls) and computes only the rest. ``results.jsonl`` and ``metrics.json`` are written
once, atomically, at the end: a folder without ``metrics.json`` is an unfinished run, and nothing
partial is ever presented as a result.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import json
import os
import platform
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm.std import tqdm

from sumjudge import __version__
from sumjudge.data import registry as data_registry
from sumjudge.errors import ConfigError, SumjudgeError
from sumjudge.judges.base import Judgement
from sumjudge.judges.settings import make_config
from sumjudge.llm import BackendRequestError, CallLog, OptionScoringError, PromptTooLongError, make_llm
from sumjudge.llm.engine import LLM, Calls, RunContext, run_sync
from sumjudge.run.folder import (
    FolderState,
    RunConfig,
    RunLock,
    check_run_folder,
    claim_folder,
    remove_stale_temps,
    usage_from_log,
    write_atomic,
    write_jsonl_atomic,
)
from sumjudge.run.methods import get_method
from sumjudge.run.metrics import KINDS
from sumjudge.run.serving import ServingTally

# An example whose request the server refused (4xx) or whose options could not be scored fails alone: it is
# recorded with the message and counted in metrics.json. Once at least FAIL_STOP_MIN examples have failed and
# they are most of the examples finished, the run stops (a wrong setting, not a bad example).
EXAMPLE_FAILURES = (BackendRequestError, OptionScoringError)
FAIL_STOP_MIN = 5


class MostExamplesFailed(SumjudgeError):
    pass


async def judge_all(examples: list, llm: LLM, spec, cfg, *, max_concurrent: int = 512,
                    progress: bool = True) -> list[Judgement]:
    """Run ``spec.judge`` over all examples concurrently (each with its own usage scope)."""

    sem = asyncio.Semaphore(max_concurrent)
    bar = tqdm(total=len(examples), desc=spec.name, unit="ex", disable=not progress or len(examples) < 2)
    tally = {"done": 0, "failed": 0}

    async def one(ex):
        async with sem:
            scope = llm.scoped(ex.id)
            try:
                j = await spec.judge(ex, scope, cfg)
            except PromptTooLongError as e:  # the run stops: say where the example came from
                origin = example_origin(ex)
                if origin:
                    e.args = (f"{origin}: {e}",)
                raise
            except EXAMPLE_FAILURES as e:
                j = Judgement(example_id=ex.id, label=None, parsed=False, label_source="failed",
                              details={"error": f"{type(e).__name__}: {e}"})
                tally["failed"] += 1
                llm.write_event({"event": "example_failed", "example": ex.id, "error": str(e)})
            tally["done"] += 1
            if tally["failed"] >= FAIL_STOP_MIN and tally["failed"] > tally["done"] / 2:
                raise MostExamplesFailed(f"{tally['failed']} of the {tally['done']} examples judged so far failed; "
                                         f"the last: {ex.id}: {j.details['error']}")
            j.usage = scope.usage.as_dict()
            bar.update(1)
            return j

    try:
        return list(await asyncio.gather(*(one(ex) for ex in examples)))
    finally:
        bar.close()


def example_origin(ex) -> str | None:
    """Where a user's example came from: its file and row (the readers of your own files keep both in ``meta``),
    or None."""
    meta = getattr(ex, "meta", None) or {}
    if meta.get("row") is None or not meta.get("file"):
        return None
    return f"{meta['file']}, row {meta['row']} (example {ex.id})"


def failure_summary(judgements: list[Judgement]) -> dict[str, Any]:
    """Examples that failed (a server refusal, option scoring impossible): how many, and each one's message."""
    failed = [j for j in judgements if j.label_source == "failed"]
    return {"n": len(failed), "examples": [{"example": j.example_id, "error": j.details.get("error", "")}
                                           for j in failed[:50]]}


def server_stats(before: dict[str, float] | None, after: dict[str, float] | None) -> dict[str, Any] | None:
    """What the server counted during the run (vLLM's prefix cache: tokens queried and found). The counters are
    the server's, so requests of other clients in the same time are counted too."""
    if before is None or after is None:
        return None
    out = {k: v - before.get(k, 0.0) for k, v in after.items()}
    if "prefix_cache_queried_tokens" in out:
        queries = out["prefix_cache_queried_tokens"]
        out["prefix_cache_hit_rate"] = out.get("prefix_cache_hit_tokens", 0.0) / queries if queries else None
    return out


def cost_summary(judgements: list[Judgement]) -> dict[str, float]:
    n = max(1, len(judgements))
    tot = {k: sum(j.usage.get(k, 0) for j in judgements) for k in ("calls", "option_calls", "prompt_tokens", "option_prompt_tokens",
                                                                 "completion_tokens")}
    return {**{f"{k}_per_example": v / n for k, v in tot.items()}, **{f"{k}_total": v for k, v in tot.items()}}


def parse_rates(judgements: list[Judgement]) -> dict[str, Any]:
    """How the run's values were read: of the answers methods parsed (``chat_parsed``), the share read on
    the first try, the share read after retries and the unreadable count; option-scoring calls that stood in
    for unreadable answers (``fallback_calls``) and the examples whose verdict used one. Re-read from cached
    answers on a resumed run, so the numbers cover the whole run."""
    tot = {k: sum(int(j.usage.get(k, 0)) for j in judgements)
           for k in ("parse_calls", "parsed_first_try", "parsed_after_retries", "parse_failures", "fallbacks",
                     "cut_answers")}
    n = tot["parse_calls"]
    return {"parse_calls": n, "parsed_first_try": tot["parsed_first_try"],
            "parsed_after_retries": tot["parsed_after_retries"], "unreadable": tot["parse_failures"],
            "first_try": tot["parsed_first_try"] / n if n else None,
            "after_retries": (tot["parsed_first_try"] + tot["parsed_after_retries"]) / n if n else None,
            "cut_answers": tot["cut_answers"], "fallback_calls": tot["fallbacks"],
            "examples_with_fallback": sum(int(j.usage.get("fallbacks", 0)) > 0 for j in judgements)}


@dataclass(frozen=True)
class Procedure:
    """A paper's work that is not judging examples one by one (learning guidelines on labelled examples, training on
    feedback), run as a method runs: in a run folder, under its lock, within the budget, its calls logged and cached.
    ``work(run, calls)`` writes its product into ``run.out`` and returns a summary, written as ``metrics.json``.
    ``args``: its own arguments, part of the run's record (another value is another run)."""

    name: str
    args: dict[str, Any]
    work: Callable[["Run", Calls], Awaitable[dict[str, Any]]]


@dataclass
class Run:
    """One run as it executes: its configuration, method, method settings, examples and folder."""

    rc: RunConfig
    spec: Any  # methods.MethodSpec
    cfg: Any  # the method's config dataclass
    examples: list
    out: Path
    dataset: Any  # data.registry.DatasetSpec: the dataset named by rc.dataset, resolved once (``Target``)
    procedure: Procedure | None = None  # a paper's procedure instead of judging each example

    @property
    def record(self) -> dict[str, Any]:
        """What identifies the run in ``config.json``: another record in the same folder is another run."""
        record = {"run": self.rc.to_json(), "method_config": dataclasses.asdict(self.cfg)}
        if self.procedure is not None:
            record["procedure"] = {"name": self.procedure.name, **self.procedure.args}
        return record


@dataclass(frozen=True)
class Target:
    """What a run config names, looked up once (``target``) and carried on: its method's spec
    (``run.methods.MethodSpec``) and its dataset's (``data.registry.DatasetSpec``). A caller that has looked them up
    already (the arena, a notebook) hands them to ``prepare`` (and ``run``, ``run_many``) instead of the names."""

    method: Any  # run.methods.MethodSpec
    dataset: Any  # data.registry.DatasetSpec

    @classmethod
    def of(cls, method: str, dataset: str) -> "Target":
        """The method and the dataset named, looked up (one lookup each)."""
        return cls(get_method(method), data_registry.get(dataset))


def prepare(rc: RunConfig, out: str | Path, procedure: Procedure | None = None, *,
            target: Target | None = None) -> Run:
    """The run ``rc`` describes, checked (the method fits the dataset, the folder can hold it), its folder made.
    The method and the dataset are looked up here, once (or given, as ``target``, by a caller that looked them up);
    the run carries them to everything after."""
    if target is None:
        target = Target.of(rc.method, rc.dataset)
    elif (target.method.name, target.dataset.name) != (rc.method, rc.dataset):
        raise ValueError(f"prepare: the target {target.method.name} on {target.dataset.name} is not the run's "
                         f"{rc.method} on {rc.dataset}")
    spec, ds = target.method, target.dataset
    cfg = make_config(spec.config_cls, rc.settings, seed=rc.seed)
    kind = KINDS.find(spec.kind)  # what its kind judges and needs (a paper registers its own tasks' kinds)
    needs = kind.judges
    if ds.kind != needs:
        raise ConfigError(f"method {rc.method} judges {needs} data; dataset {rc.dataset} is {ds.kind}")
    examples = data_registry.load(ds, split=rc.split, level=rc.level, limit=rc.limit, seed=rc.seed,
                                  outside=rc.held_out_of)
    if kind.check is not None:
        kind.check(rc.method, rc.dataset, examples)
    out = Path(out)
    check_run_folder(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ConfigError(f"--out {out}: cannot create the run folder ({e.strerror or e})") from None
    return Run(rc, spec, cfg, examples, out, ds, procedure)


def run(rc: RunConfig, out: str | Path, *, no_cache: bool = False, cache: str | Path | None = None,
        llm: LLM | None = None, progress: bool = True, backend_options: dict | None = None,
        budget=None, procedure: Procedure | None = None, target: Target | None = None) -> dict[str, Any]:
    """Execute one run into ``out``; returns the metrics. Rerunning into the same folder with the same
    config resumes (finished calls come from the cache); a different config is refused. ``budget`` (an
    ``llm.budget.Budget``) caps the backend calls and tokens: past it the run stops with ``BudgetExhausted``.
    ``procedure``: a paper's procedure over the run's examples instead of its method's judge (``Procedure``).
    ``target``: the method and dataset already looked up (``Target``)."""
    before = FolderState.of(Path(out))
    r = prepare(rc, out, procedure, target=target)
    try:
        with RunLock(r.out):
            claim_folder(r.out, r.record)
            if llm is None:
                llm = make_llm(rc.backend, rc.model, base_url=rc.base_url, no_cache=no_cache, cache=cache,
                               **(backend_options or {}))
            if budget is not None:
                llm.budget = budget
            return execute(r, llm, progress=progress)
    except BaseException:
        if before.nothing_answered(r.out):  # stopped before its first answer: the folder is left as it was
            before.restore(r.out)
        raise


def execute(r: Run, llm: LLM, *, progress: bool = True) -> dict[str, Any]:
    """Judge every example of ``r`` on the run's own context of ``llm`` (its calls logged to the folder's
    ``calls.jsonl``, counted apart from other runs on the same engine); write results and metrics."""

    view = open_run(r, llm)
    try:
        return run_sync(execute_async(r, view, progress=progress))
    finally:  # after the event loop is gone: a result that lands while an interrupted run winds down is logged
        view.log.close()


def open_run(r: Run, llm: LLM) -> Calls:
    """The run's own context on ``llm``: its calls logged to the folder's ``calls.jsonl``, counted apart."""

    return llm.for_run(RunContext(log=CallLog(r.out / "calls.jsonl")))


async def execute_async(r: Run, view: Calls, *, progress: bool = True) -> dict[str, Any]:
    t0 = time.time()
    try:
        write_config(r, view)
        if r.spec.preflight is not None:  # e.g. transcripts the model's context cannot hold: refused before any call
            await r.spec.preflight(r.examples, view, r.cfg)
        counters = view.engine.backend.server_counters if view.capabilities.server_metrics else None
        server_before = counters() if counters else None
        # where this process's calls begin (a resumed run has several processes)
        view.write_event({"event": "process_start", "pid": os.getpid(), "host": platform.node(), "time": time.time(),
                          "sumjudge": __version__})
        if r.procedure is not None:
            metrics = procedure_metrics(r, await r.procedure.work(r, view), view)
        else:
            judgements = await judge_all(r.examples, view, r.spec, r.cfg, max_concurrent=r.rc.max_concurrent_examples,
                                         progress=progress)
            write_results(r, judgements)
            metrics = metrics_of(r, judgements, view, server_stats(server_before, counters() if counters else None))
        metrics["wall_s"] = time.time() - t0
        write_atomic(r.out / "metrics.json", json.dumps(clean_nan(metrics), indent=2))
        remove_stale_temps(r.out)
        return metrics
    except Exception as e:  # recorded, so that the folder may take another configuration (failed_before_results)
        view.write_event({"event": "run_failed", "pid": os.getpid(), "time": time.time(),
                          "error": f"{type(e).__name__}: {e}"})
        raise


# a run of ``run_many``: (config, folder, engine), and its ``Target`` where the caller has looked it up
Job = tuple[RunConfig, str | Path, LLM] | tuple[RunConfig, str | Path, LLM, Target]


def run_many(jobs: list[Job], *, progress: bool = True,
             alongside: Sequence[Callable[[], Awaitable[Any]]] = ()) -> list[dict[str, Any]]:
    """Several runs at once, each ``(config, folder, engine)`` (or ``(config, folder, engine, target)``, ``Job``):
    their examples' requests reach each engine together and share its batches (a notebook's grid of settings, a
    table's evaluators), while every run keeps its own folder, call log, cache entries and metrics, and resumes on
    its own. ``alongside``: coroutine
    functions awaited in the same event loop (work that is not a run, e.g. a method's training, or runs that can
    only be configured once it is done: ``run_many_async``), their results not returned. When a run (or one of
    those) fails the others still finish; the first failure is raised after them."""


    async def everything_in(after_loop: contextlib.ExitStack) -> list:
        _AFTER_LOOP.set(after_loop)  # in the loop's own context (run_sync may run it in another thread)
        return await _gather(jobs, progress, alongside)

    with contextlib.ExitStack() as after_loop:
        everything = run_sync(everything_in(after_loop))
    results = everything[:len(jobs)]
    for res in everything:
        if isinstance(res, BaseException):
            raise res
    return results


async def run_many_async(jobs: list[Job], *, progress: bool = True
                         ) -> list[dict[str, Any]]:
    """``run_many`` inside a running event loop (e.g. work alongside other runs, which starts runs once it has
    learned their configuration): these runs join the batches of whatever else the loop is running. Their logs
    close when the outermost ``run_many`` ends, else when they finish. The first failure is raised after every
    run finished."""

    with contextlib.ExitStack() as own:
        token = None if _AFTER_LOOP.get() is not None else _AFTER_LOOP.set(own)
        try:
            everything = await _gather(jobs, progress, ())
        finally:
            if token is not None:
                _AFTER_LOOP.reset(token)
    for res in everything:
        if isinstance(res, BaseException):
            raise res
    return everything


async def _gather(jobs: list[Job], progress: bool,
                  alongside: Sequence[Callable[[], Awaitable[Any]]]) -> list:
    """The runs (locked and claimed, each on its own view of its engine) and the work alongside, awaited together;
    results and exceptions in order. The views' logs close with ``_AFTER_LOOP``'s stack, after the event loop
    (see ``execute``)."""

    runs = [prepare(rc, out, target=target[0] if target else None) for rc, out, _, *target in jobs]
    folders = [r.out.resolve() for r in runs]
    if len(set(folders)) != len(folders):
        raise ConfigError("run_many: two runs name the same folder: " +
                          ", ".join(sorted({str(f) for f in folders if folders.count(f) > 1})))
    after_loop = _AFTER_LOOP.get()
    with contextlib.ExitStack() as held:
        for r in runs:
            held.enter_context(RunLock(r.out))
            claim_folder(r.out, r.record)
        views = [open_run(r, job[2]) for r, job in zip(runs, jobs)]
        for view in views:
            after_loop.callback(view.log.close)
        return await asyncio.gather(*(execute_async(r, view, progress=progress) for r, view in zip(runs, views)),
                                    *(job() for job in alongside), return_exceptions=True)


# the stack that closes run logs once the outermost run_many's event loop is gone
_AFTER_LOOP: contextvars.ContextVar = contextvars.ContextVar("sumjudge_runs_after_loop", default=None)


def write_config(r: Run, llm: Calls) -> None:
    """``config.json``: the run's record, the backend, the data's provenance, the method's warnings."""
    ds = r.dataset
    provenance = ds.provenance(r.rc.split or ds.splits[0]) if ds.provenance else None
    warnings = r.cfg.warnings() if hasattr(r.cfg, "warnings") else []  # e.g. greedy decoding of a sampled protocol
    for w in warnings:
        print(f"warning ({r.rc.method}): {w}", file=sys.stderr)
    write_atomic(r.out / "config.json", json.dumps({**r.record, "backend_info": dataclasses.asdict(llm.info),
                                                   "dataset_provenance": provenance, "warnings": warnings,
                                                   "sumjudge": __version__, "python": platform.python_version()},
                                                  indent=2))


def write_results(r: Run, judgements: list[Judgement]) -> None:
    """``results.jsonl``: one row per example (its long texts left in the dataset) with its judgement."""
    bulky = ("document", "source", "transcript")
    rows = [{"example": ex.to_json() | {k: None for k in bulky if hasattr(ex, k)}, "judgement": j.to_json()}
            for ex, j in zip(r.examples, judgements)]
    write_jsonl_atomic(r.out / "results.jsonl", rows)


def metrics_of(r: Run, judgements: list[Judgement], llm: Calls, server: dict | None) -> dict[str, Any]:
    """The method's metrics over the examples that were judged (failed ones, server refusals, counted apart),
    parse rates, cost, this run's engine counters, the server's counters, usage over every process."""
    rc, examples = r.rc, r.examples
    level = rc.level or r.dataset.levels[0]  # rated examples carry no level of their own
    judged = [(ex, j) for ex, j in zip(examples, judgements) if j.label_source != "failed"]
    metrics_fn = r.spec.metrics or KINDS.find(r.spec.kind).metrics
    tally = ServingTally()  # replicas and prefix hits, where the server says them: in the same pass over the log
    out = {"method": rc.method, "dataset": rc.dataset,
           "level": getattr(examples[0], "level", level) if examples else level, "n_examples": len(examples),
           **metrics_fn([ex for ex, _ in judged], [j for _, j in judged]),
           "failed_examples": failure_summary(judgements), "parse_rates": parse_rates(judgements),
           "cost": cost_summary(judgements), "engine": engine_stats(llm), "server": server,
           "usage_all_processes": usage_from_log(r.out / "calls.jsonl", tally)}
    served = tally.result()
    return out | {"serving": served} if served else out


def procedure_metrics(r: Run, summary: dict[str, Any], llm: Calls) -> dict[str, Any]:
    """A procedure's ``metrics.json``: what it ran on, its own summary, this process's engine counters and the
    usage over every process."""
    return {"procedure": r.procedure.name, "method": r.rc.method, "dataset": r.rc.dataset,
            "n_examples": len(r.examples), **summary, "engine": engine_stats(llm),
            "usage_all_processes": usage_from_log(r.out / "calls.jsonl")}


def engine_stats(llm: Calls) -> dict[str, Any]:
    """The engine's counters for this run only (its own context: an engine may be shared by several runs), and
    whether its answers were replayed from a recording (``replayed``: then its wall time measures the replay)."""
    return {"backend": llm.info.name, "model": llm.info.model, "revision": llm.info.revision,
            "replayed": llm.capabilities.replayed, **llm.context.usage.as_dict()}


def clean_nan(o):
    """NaN (an undefined metric, e.g. FNR without errors) -> null, so the JSON stays standard."""
    if isinstance(o, float) and o != o:
        return None
    if isinstance(o, dict):
        return {k: clean_nan(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [clean_nan(v) for v in o]
    return o
