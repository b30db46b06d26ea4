"""A run folder: its record (``RunConfig``, written as ``config.json``), its lock (one process per folder), the
atomic writes of its files, what a run finds in a folder before it starts (``check_run_folder``, ``claim_folder``,
``FolderState``) and the readers of a folder's files (``read_jsonl``, ``usage_from_log``). Executing a run is
``runs``'.
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sumjudge.errors import ConfigError
from sumjudge.llm.types import server_identity
from sumjudge.run.serving import ServingTally


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


def claim_folder(out: Path, record: dict[str, Any]) -> None:
    """Under the run's lock: the folder ``out`` holds the run of ``record`` (its ``config.json``) or none (a run
    that failed before any result leaves it to the next configuration, its files kept beside); stale results and
    metrics are removed."""
    prev = check_run_folder(out)  # again under the lock: another process may have written it meanwhile
    mine = json.loads(json.dumps(record))
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
