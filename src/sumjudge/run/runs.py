"""Run folders: ``config.json``, ``calls.jsonl`` (every call's transcript), ``results.jsonl``, ``metrics.json``.

A run is resumable by construction: every finished LLM call is in the persistent cache the moment
it returns, so rerunning the same command after a kill replays finished calls from the cache (no
repeated model calls) and computes only the rest. ``results.jsonl`` and ``metrics.json`` are written
once, atomically, at the end: a folder without ``metrics.json`` is an unfinished run, and nothing
partial is ever presented as a result.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import json
import os
import platform
import re
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import __version__
from ..data import registry as data_registry
from ..llm import BackendRequestError, OptionScoringError, PromptTooLongError, make_llm
from ..errors import ConfigError, SumjudgeError
from ..llm.engine import LLM, Calls
from .locality import ServingTally
from ..judges.settings import make_config
from .methods import get_method
from ..judges.base import Judgement
from .metrics import METRICS_BY_KIND


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
    # held-out examples: draw the run's ``limit`` from the examples a run of ``held_out_of`` examples (same seed,
    # split and level) does not judge; the arena chooses a score judge's threshold on them
    held_out_of: int | None = None

    def to_json(self) -> dict[str, Any]:
        """The record of the run; a base URL is kept without credentials (user:password, query). ``held_out_of``
        appears only when set (the records of other runs stay as they were)."""
        from ..llm.types import server_identity

        d = dataclasses.asdict(self)
        d["base_url"] = server_identity(self.base_url) or None
        if d["held_out_of"] is None:
            del d["held_out_of"]
        return d


def run_name(method: str, settings: dict[str, Any], dataset: str, level: str | None = None) -> str:
    """A readable run-folder name: method, its non-default settings, dataset, level."""
    vals = {k: ",".join(map(str, v)) if isinstance(v, (list, tuple)) else v for k, v in sorted(settings.items())}
    return "-".join([method, *(f"{k}{v}" for k, v in vals.items()), dataset, *([level] if level else [])])


LOCK_NAME = ".lock"


class RunLock:
    """One process per run folder: an exclusive lock on ``<out>/.lock`` holding the owner's pid. A second
    process gets a ConfigError naming the holder (exit 2); the lock goes with the process, killed or not."""

    def __init__(self, folder: Path):
        self.path = folder / LOCK_NAME
        self._fh = None

    def __enter__(self) -> "RunLock":
        try:
            import fcntl
        except ImportError:  # no advisory locks on this platform: one run per folder is up to the user
            return self
        fh = self.path.open("a+", encoding="utf-8")
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            fh.seek(0)
            holder = fh.read().strip() or "another process"
            fh.close()
            raise ConfigError(f"{self.path.parent} is in use by process {holder}: one run per folder at a time "
                              "(wait for it, or choose another --out)") from None
        fh.seek(0)
        fh.truncate()
        fh.write(f"{os.getpid()}@{platform.node()}")
        fh.flush()
        self._fh = fh
        return self

    def __exit__(self, *exc) -> None:
        if self._fh is not None:
            self._fh.close()  # closing releases the lock


def check_run_folder(out: Path) -> dict | None:
    """The folder's previous ``config.json`` (None for a new or empty folder); ConfigError for a path that is
    a file, a non-empty folder that is not a sumjudge run, or an unreadable config.json (file named)."""
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out} is a file; a run needs a folder (a new or empty one, or an earlier run's)")
    if not out.exists():
        return None
    cfg_path = out / "config.json"
    if not cfg_path.exists():
        # without config.json only what a run killed during start-up leaves is ours (results/metrics are not)
        foreign = sorted(p.name for p in out.iterdir()
                         if p.name not in (LOCK_NAME, "calls.jsonl", FAILED_CONFIG, FAILED_CALLS)
                         and not p.name.endswith(".tmp"))
        if foreign:
            raise ConfigError(f"{out} is not empty and is not a sumjudge run folder (it holds {', '.join(foreign[:5])}); "
                              "choose a new or empty folder")
        return None
    try:
        prev = json.loads(cfg_path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"{cfg_path} is not a readable run config ({e}); remove the folder or choose another "
                          "--out") from None
    if not isinstance(prev, dict) or "run" not in prev:
        raise ConfigError(f"{cfg_path} is not a sumjudge run config; choose another --out")
    return prev


FAILED_CONFIG, FAILED_CALLS = "config.failed.json", "calls.failed.jsonl"


def failed_before_results(out: Path) -> bool:
    """The folder's last process ended in a recorded failure (``run_failed``) and no result was written."""
    calls = out / "calls.jsonl"
    if (out / "results.jsonl").exists() or (out / "metrics.json").exists() or not calls.exists():
        return False
    failed = False
    for line in calls.read_text(encoding="utf-8").splitlines():
        if '"event": "process_start"' in line:
            failed = False
        elif '"event": "run_failed"' in line:
            failed = True
    return failed


def remove_stale_temps(out: Path) -> None:
    """Temp files of the run's atomic writes that a killed process left (under the folder's lock: no writer)."""
    for p in out.glob("*.tmp"):  # NAME.tmp (older versions) or NAME.<pid>.tmp (write_atomic)
        if re.sub(r"\.\d+$", "", p.name[: -len(".tmp")]) in ("results.jsonl", "metrics.json", "config.json"):
            p.unlink(missing_ok=True)


def write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")  # per process: two writers never share a temp file
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def write_jsonl_atomic(path: Path, rows: list[dict]) -> None:
    write_atomic(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))


def read_jsonl(path: Path) -> list[dict]:
    with Path(path).open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


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
    from tqdm.std import tqdm

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
    spec: Any  # method_registry.MethodSpec
    cfg: Any  # the method's config dataclass
    examples: list
    out: Path
    dataset: Any  # data.registry.DatasetSpec: the dataset named by rc.dataset, resolved once by ``prepare``
    procedure: Procedure | None = None  # a paper's procedure instead of judging each example

    @property
    def record(self) -> dict[str, Any]:
        """What identifies the run in ``config.json``: another record in the same folder is another run."""
        record = {"run": self.rc.to_json(), "method_config": dataclasses.asdict(self.cfg)}
        if self.procedure is not None:
            record["procedure"] = {"name": self.procedure.name, **self.procedure.args}
        return record


def prepare(rc: RunConfig, out: str | Path, procedure: Procedure | None = None) -> Run:
    """The run ``rc`` describes, checked (the method fits the dataset, the folder can hold it), its folder made.
    The method and the dataset are looked up here, once; the run carries them to everything after."""
    spec = get_method(rc.method)
    cfg = make_config(spec.config_cls, rc.settings, seed=rc.seed)
    ds = data_registry.get(rc.dataset)
    needs = "faithfulness" if spec.kind == "ambiguity" else spec.kind
    if ds.kind != needs:
        raise ConfigError(f"method {rc.method} judges {needs} data; dataset {rc.dataset} is {ds.kind}")
    examples = data_registry.load(rc.dataset, split=rc.split, level=rc.level, limit=rc.limit, seed=rc.seed,
                                  outside=rc.held_out_of)
    if spec.kind == "ambiguity" and any(getattr(e, "ambiguity", None) is None for e in examples):
        raise ConfigError(f"method {rc.method} needs ambiguity annotations; dataset {rc.dataset} has none "
                          "(use meetingbank-ambiguity)")
    out = Path(out)
    check_run_folder(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ConfigError(f"--out {out}: cannot create the run folder ({e.strerror or e})") from None
    return Run(rc, spec, cfg, examples, out, ds, procedure)


def run(rc: RunConfig, out: str | Path, *, no_cache: bool = False, cache: str | Path | None = None,
        llm: LLM | None = None, progress: bool = True, backend_options: dict | None = None,
        budget=None, procedure: Procedure | None = None) -> dict[str, Any]:
    """Execute one run into ``out``; returns the metrics. Rerunning into the same folder with the same
    config resumes (finished calls come from the cache); a different config is refused. ``budget`` (an
    ``llm.budget.Budget``) caps the backend calls and tokens: past it the run stops with ``BudgetExhausted``.
    ``procedure``: a paper's procedure over the run's examples instead of its method's judge (``Procedure``)."""
    before = FolderState.of(Path(out))
    r = prepare(rc, out, procedure)
    try:
        with RunLock(r.out):
            claim_folder(r)
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


@dataclass
class FolderState:
    """What a run folder held before a run started: a run that stops before its first model call puts it back
    (a new folder is removed, a resumed one gets its files back as they were), so that nothing of a run that
    never ran is left in ``--out``."""

    existed: bool
    files: dict[str, bytes | None]  # the small files (config, lock): their bytes before, None where absent
    log_size: int | None  # calls.jsonl's length before (it may be large: only read from there), None where absent

    SMALL = ("config.json", LOCK_NAME)

    @classmethod
    def of(cls, out: Path) -> "FolderState":
        existed = out.is_dir()
        log = out / "calls.jsonl"
        return cls(existed, {n: (out / n).read_bytes() if existed and (out / n).is_file() else None for n in cls.SMALL},
                   log.stat().st_size if existed and log.is_file() else None)

    def nothing_answered(self, out: Path) -> bool:
        """Whether the run logged no answered call since (only events: a process start, a failure); a call's
        line carries its cache ``key``."""
        log = out / "calls.jsonl"
        if not log.is_file():
            return True
        with log.open("rb") as fh:
            fh.seek(self.log_size or 0)
            for line in fh:
                try:
                    if "key" in json.loads(line):
                        return False
                except ValueError:
                    return False  # a line cut by the failure: assume it was a call
        return True

    def restore(self, out: Path) -> None:
        for name, data in self.files.items():
            p = out / name
            if data is None:
                p.unlink(missing_ok=True)
            else:
                p.write_bytes(data)
        log = out / "calls.jsonl"
        if self.log_size is None:
            log.unlink(missing_ok=True)
        elif log.is_file():
            with log.open("r+b") as fh:
                fh.truncate(self.log_size)
        for tmp in out.glob("*.tmp*"):
            tmp.unlink(missing_ok=True)
        if not self.existed:
            try:
                out.rmdir()  # only when nothing else is in it
            except OSError:
                pass


def claim_folder(r: Run) -> None:
    """Under the run's lock: the folder holds this run or none (a run that failed before any result leaves it
    to the next configuration, its files kept beside); stale results and metrics are removed."""
    out = r.out
    prev = check_run_folder(out)  # again under the lock: another process may have written it meanwhile
    mine = json.loads(json.dumps(r.record))
    keys = set(mine) | ({"procedure"} & set(prev or {}))  # a judging run never takes a procedure's folder
    if prev is not None and {k: prev.get(k) for k in keys} != {k: mine.get(k) for k in keys}:
        if not failed_before_results(out):
            raise ConfigError(f"{out} holds a run with a different configuration; use another --out folder")
        # a run that failed before any result (e.g. a prompt over the context) leaves its folder to the rerun its
        # message suggests; what it wrote is kept beside, so its calls do not count as the new run's
        for name, kept in (("config.json", FAILED_CONFIG), ("calls.jsonl", FAILED_CALLS)):
            if (out / name).exists():
                os.replace(out / name, out / kept)
    for stale in ("results.jsonl", "metrics.json"):
        (out / stale).unlink(missing_ok=True)


def execute(r: Run, llm: LLM, *, progress: bool = True) -> dict[str, Any]:
    """Judge every example of ``r`` on the run's own context of ``llm`` (its calls logged to the folder's
    ``calls.jsonl``, counted apart from other runs on the same engine); write results and metrics."""
    from ..llm.engine import run_sync

    view = open_run(r, llm)
    try:
        return run_sync(execute_async(r, view, progress=progress))
    finally:  # after the event loop is gone: a result that lands while an interrupted run winds down is logged
        view.log.close()


def open_run(r: Run, llm: LLM) -> Calls:
    """The run's own context on ``llm``: its calls logged to the folder's ``calls.jsonl``, counted apart."""
    from ..llm import CallLog
    from ..llm.engine import RunContext

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


def run_many(jobs: list[tuple[RunConfig, str | Path, LLM]], *, progress: bool = True,
             alongside: Sequence[Callable[[], Awaitable[Any]]] = ()) -> list[dict[str, Any]]:
    """Several runs at once, each ``(config, folder, engine)``: their examples' requests reach each engine
    together and share its batches (a notebook's grid of settings, a table's evaluators), while every run keeps
    its own folder, call log, cache entries and metrics, and resumes on its own. ``alongside``: coroutine
    functions awaited in the same event loop (work that is not a run, e.g. a method's training, or runs that can
    only be configured once it is done: ``run_many_async``), their results not returned. When a run (or one of
    those) fails the others still finish; the first failure is raised after them."""
    import contextlib

    from ..llm.engine import run_sync

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


async def run_many_async(jobs: list[tuple[RunConfig, str | Path, LLM]], *, progress: bool = True
                         ) -> list[dict[str, Any]]:
    """``run_many`` inside a running event loop (e.g. work alongside other runs, which starts runs once it has
    learned their configuration): these runs join the batches of whatever else the loop is running. Their logs
    close when the outermost ``run_many`` ends, else when they finish. The first failure is raised after every
    run finished."""
    import contextlib

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


async def _gather(jobs: list[tuple[RunConfig, str | Path, LLM]], progress: bool,
                  alongside: Sequence[Callable[[], Awaitable[Any]]]) -> list:
    """The runs (locked and claimed, each on its own view of its engine) and the work alongside, awaited together;
    results and exceptions in order. The views' logs close with ``_AFTER_LOOP``'s stack, after the event loop
    (see ``execute``)."""
    import contextlib

    runs = [prepare(rc, out) for rc, out, _ in jobs]
    folders = [r.out.resolve() for r in runs]
    if len(set(folders)) != len(folders):
        raise ConfigError("run_many: two runs name the same folder: " +
                          ", ".join(sorted({str(f) for f in folders if folders.count(f) > 1})))
    after_loop = _AFTER_LOOP.get()
    with contextlib.ExitStack() as held:
        for r in runs:
            held.enter_context(RunLock(r.out))
            claim_folder(r)
        views = [open_run(r, llm) for r, (_, _, llm) in zip(runs, jobs)]
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
    metrics_fn = r.spec.metrics or METRICS_BY_KIND[r.spec.kind]
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


def usage_from_log(path: Path, tally: ServingTally | None = None) -> dict[str, int]:
    """Totals over every process that worked on the run (``calls.jsonl`` keeps them all): calls, the calls
    a backend answered (paid), tokens of those, parse failures. The engine's own counters cover this process
    only, so calls paid before a kill would otherwise vanish from the totals. ``tally``: fed every call record of
    the same pass (where the calls were served)."""
    tot = dict(processes=0, calls=0, option_calls=0, backend_calls=0, cache_hits=0, prompt_tokens=0,
               completion_tokens=0, paid_prompt_tokens=0, paid_completion_tokens=0, parse_failures=0)
    if not path.exists():
        return tot
    with path.open(encoding="utf-8") as f:
        for line in f:
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:  # a line cut by a kill
                continue
            ev = rec.get("event")
            if ev == "process_start":
                tot["processes"] += 1
            elif ev == "parse" and not rec.get("ok"):
                tot["parse_failures"] += 1
            elif ev in ("chat", "options"):
                if tally is not None:
                    tally.add(rec)
                tot["calls" if ev == "chat" else "option_calls"] += 1
                hit = bool(rec.get("cache_hit"))
                tot["cache_hits" if hit else "backend_calls"] += 1
                resp = rec.get("response") or {}
                for k in ("prompt_tokens", "completion_tokens"):
                    n = int(resp.get(k) or 0)
                    tot[k] += n
                    if not hit:
                        tot[f"paid_{k}"] += n
    return tot


def engine_stats(llm: Calls) -> dict[str, Any]:
    """The engine's counters for this run only (its own context: an engine may be shared by several runs)."""
    return {"backend": llm.info.name, "model": llm.info.model, "revision": llm.info.revision,
            **llm.context.usage.as_dict()}


def clean_nan(o):
    """NaN (an undefined metric, e.g. FNR without errors) -> null, so the JSON stays standard."""
    if isinstance(o, float) and o != o:
        return None
    if isinstance(o, dict):
        return {k: clean_nan(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [clean_nan(v) for v in o]
    return o
