"""The numbered notebooks as jobs: finding them (``notebooks``), executing one headlessly with papermill
(``execute``) and running several in worker processes of ``python -m sumjudge.reproduce.record --worker``
(``run_workers``); ``reproduce.record`` (a real run) and ``reproduce.check`` (a replay) both run notebooks this way."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
import time
from pathlib import Path

from sumjudge import profiles
from sumjudge.paths import project_root


def notebooks(selection: str = "") -> list[Path]:
    nbs = sorted((project_root() / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    if selection:
        wanted = [s.strip() for s in selection.replace(",", " ").split() if s.strip()]
        nbs = [nb for nb in nbs if any(nb.name.startswith(w) for w in wanted)]
    return nbs


def notebook_parameters(nb: Path) -> set[str]:
    """Names assigned in the notebook's ``parameters`` cell."""

    import nbformat

    cells = [c for c in nbformat.read(nb, as_version=4).cells
             if c.cell_type == "code" and "parameters" in c.metadata.get("tags", [])]
    return {m.group(1) for c in cells for m in re.finditer(r"^([A-Za-z_]\w*)\s*=", c.source, re.M)}


def execute(nb: Path, profile: str, out_dir: Path, **params) -> Path:
    import papermill as pm

    out_dir.mkdir(parents=True, exist_ok=True)

    out = out_dir / nb.name
    declared = notebook_parameters(nb)
    preset = {k: v for k, v in profiles.load(profile, notebook=nb.stem).parameters.items() if k in declared}
    parameters = {"profile": profile, **preset, **{k: v for k, v in params.items() if v not in (None, "")}}
    pm.execute_notebook(str(nb), str(out), parameters=parameters, cwd=str(nb.parent), progress_bar=False,
                        kernel_name="python3", log_output=False)
    return out


AFTER_KEY = "after"  # a notebook's metadata["sumjudge"]["after"]: the notebooks it starts after in one recording


def notebook_after(nb: Path) -> tuple[str, ...]:
    """The notebooks ``nb`` starts after when both are in one run (its metadata ``sumjudge.after``): it asks
    requests they ask too, which are then answers in the response cache, not asked again (a sampled answer asked
    twice, in two batches, can differ, and the two pages would show two numbers for one judgement)."""

    meta = json.loads(nb.read_text(encoding="utf-8")).get("metadata", {}).get("sumjudge", {})
    return tuple(meta.get(AFTER_KEY, ()))


def recording_order(nbs: list[Path]) -> dict[str, tuple[str, ...]]:
    """``run_workers``' ``after`` for a recording of ``nbs``: each notebook's ``notebook_after``."""
    return {nb.stem: notebook_after(nb) for nb in nbs}


def next_ready(queue: list[Path], done: set[str], selected: set[str], after: dict) -> Path | None:
    """The first notebook of ``queue`` whose ``after`` notebooks of this run (``selected``) are all ``done``."""
    return next((nb for nb in queue if all(d in done for d in after.get(nb.stem, ()) if d in selected)), None)


def run_workers(nbs: list[Path], jobs: int, argv: list[str], env: dict, logs: Path,
                after: dict | None = None) -> list[dict]:
    """Each notebook in a worker process (``--worker``, its output in ``logs/<notebook>.log``), ``jobs`` at a
    time, in the given order, each after the notebooks ``after`` names (a recording: ``recording_order``; a replay reads
    recorded answers and needs no order); one wall record per notebook, in the given order."""

    logs.mkdir(parents=True, exist_ok=True)
    queue, running, done = list(nbs), {}, {}
    selected = {nb.stem for nb in nbs}
    while queue or running:
        while queue and len(running) < jobs:
            nb = next_ready(queue, {d.stem for d in done}, selected, after or {})
            if nb is None:
                break
            queue.remove(nb)
            cmd = [sys.executable, "-m", "sumjudge.reproduce.record", *argv, "--notebooks", nb.stem, "--worker"]
            log = logs / f"{nb.stem}.log"
            with log.open("w") as fh:
                running[nb] = (subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env), time.time(), log)
        time.sleep(0.5)
        for nb, (proc, t0, log) in list(running.items()):
            if proc.poll() is None:
                continue
            out = log.read_text(errors="replace")
            line = next((x for x in reversed(out.splitlines()) if x.startswith(nb.name)), "")
            status = line.split("s  ", 1)[1].strip() if "s  " in line else f"FAILED: worker exit {proc.returncode}"
            if proc.returncode and status == "ok":
                status = f"FAILED: worker exit {proc.returncode}"
            if status != "ok":
                print(out[-3000:], flush=True)
            print(f"{nb.name:45s} {time.time() - t0:8.1f}s  {status}", flush=True)
            done[nb] = {"notebook": nb.stem, "wall_s": round(time.time() - t0, 1), "status": status, "start": t0}
            del running[nb]
    return [done[nb] for nb in nbs]


def parameter_comments(nb: Path) -> dict[str, str]:
    """Each parameter's comment in the notebook's ``parameters`` cell: the words after its ``#`` and those of the
    comment lines just above it (how a parameter cell says what a value means)."""

    import nbformat

    out: dict[str, str] = {}
    for c in nbformat.read(nb, as_version=4).cells:
        if c.cell_type != "code" or "parameters" not in c.metadata.get("tags", []):
            continue
        above: list[str] = []
        for line in c.source.splitlines():
            stripped = line.strip()
            if stripped.startswith("#"):
                above.append(stripped.lstrip("#").strip())
                continue
            m = re.match(r"^([A-Za-z_]\w*)\s*=[^#]*(?:#(.*))?$", stripped)
            if m:
                out[m.group(1)] = " ".join([*above, (m.group(2) or "").strip()]).strip()
            above = []
    return out


def notebook_defaults(nb: Path) -> dict:
    """The values the notebook's ``parameters`` cell assigns (literals only: a name assigned anything else is left
    out), what it runs with when nothing is injected."""

    import nbformat

    out = {}
    for c in nbformat.read(nb, as_version=4).cells:
        if c.cell_type != "code" or "parameters" not in c.metadata.get("tags", []):
            continue
        for node in ast.parse(c.source).body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                try:
                    out[node.targets[0].id] = ast.literal_eval(node.value)
                except ValueError:
                    continue
    return out
