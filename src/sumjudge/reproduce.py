"""``make reproduce``: execute every numbered notebook headlessly with papermill.

Parameters injected into each notebook's ``parameters`` cell: profile, backend, model, base_url,
n, seed (empty values keep the profile's). Executed copies go to ``build/notebooks/<profile>/``;
the notebooks write their tables and figures under ``figures/<notebook>/``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from .paths import project_root


def notebooks(selection: str = "") -> list[Path]:
    nbs = sorted((project_root() / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    if selection:
        wanted = [s.strip() for s in selection.replace(",", " ").split() if s.strip()]
        nbs = [nb for nb in nbs if any(nb.name.startswith(w) for w in wanted)]
    return nbs


def notebook_parameters(nb: Path) -> set[str]:
    """Names assigned in the notebook's ``parameters`` cell."""
    import re

    import nbformat

    cells = [c for c in nbformat.read(nb, as_version=4).cells
             if c.cell_type == "code" and "parameters" in c.metadata.get("tags", [])]
    return {m.group(1) for c in cells for m in re.finditer(r"^([A-Za-z_]\w*)\s*=", c.source, re.M)}


def execute(nb: Path, profile: str, out_dir: Path, **params) -> Path:
    import papermill as pm

    out_dir.mkdir(parents=True, exist_ok=True)
    from . import profiles

    out = out_dir / nb.name
    declared = notebook_parameters(nb)
    preset = {k: v for k, v in profiles.load(profile, notebook=nb.stem).parameters.items() if k in declared}
    parameters = {"profile": profile, **preset, **{k: v for k, v in params.items() if v not in (None, "")}}
    pm.execute_notebook(str(nb), str(out), parameters=parameters, cwd=str(nb.parent), progress_bar=False,
                        kernel_name="python3", log_output=False)
    return out


TIME_COLUMNS = ("notebook", "wall_s", "model", "calls", "cache_hits", "backend_calls", "waves", "rows_per_wave",
                "prefill_s", "prefill_tokens_per_s", "decode_s", "decode_tokens_per_s", "rows_per_decode_step",
                "underfilled_share")


def notebook_time_profile(notebook: str, wall_s: float, since: float) -> list[dict]:
    """The engines' time profiles a notebook wrote during this execution (``Session.write_time_profile``): a row
    per engine with the notebook's wall time."""
    import json

    rows = []
    for f in sorted((project_root() / "build" / "runs" / notebook).glob("*/time_profile.json")):
        if f.stat().st_mtime >= since:
            rows += [{"notebook": notebook, "wall_s": round(wall_s, 1), **e} for e in json.loads(f.read_text())]
    return rows or [{"notebook": notebook, "wall_s": round(wall_s, 1)}]


def write_time_profile(rows: list[dict], profile: str, out_dir: Path) -> Path:
    """``figures/time_profile_<profile>.md``: where each notebook's time went (calls, waves, rows per wave,
    prefill and decode seconds, the share of decode time with an under-filled micro-batch)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    lines = ["| " + " | ".join(TIME_COLUMNS) + " |", "|" + "---|" * len(TIME_COLUMNS)]
    lines += ["| " + " | ".join("" if r.get(c) is None else str(r[c]) for c in TIME_COLUMNS) + " |" for r in rows]
    path = out_dir / f"time_profile_{profile}.md"
    path.write_text(f"# Where the time went: profile {profile}\n\n" + "\n".join(lines) + "\n", encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m sumjudge.reproduce")
    p.add_argument("--profile", default="smoke")
    p.add_argument("--model", default="")
    p.add_argument("--backend", default="")
    p.add_argument("--base-url", default="")
    p.add_argument("--n", default="")
    p.add_argument("--seed", default="")
    p.add_argument("--notebooks", default="", help="prefixes, e.g. '00 10' (default: all)")
    a = p.parse_args(argv)
    params = {"model": a.model, "backend": a.backend, "base_url": a.base_url,
              "n": int(a.n) if a.n else None, "seed": int(a.seed) if a.seed else None}
    out_dir = project_root() / "build" / "notebooks" / a.profile
    t_all = time.time()
    failed = []
    profile_rows, walls = [], []
    for nb in notebooks(a.notebooks):
        t0 = time.time()
        try:
            execute(nb, a.profile, out_dir, **params)
            status = "ok"
        except Exception as e:  # papermill raises PapermillExecutionError with the cell's traceback
            failed.append(nb.name)
            status = f"FAILED: {getattr(e, 'ename', type(e).__name__)}: {getattr(e, 'evalue', e)}"
        print(f"{nb.name:45s} {time.time() - t0:8.1f}s  {status}", flush=True)
        walls.append({"notebook": nb.stem, "wall_s": round(time.time() - t0, 1), "status": status})
        profile_rows += notebook_time_profile(nb.stem, time.time() - t0, since=t0)
    from .parse_report import write_parse_rates
    from .paths import figures_dir

    if profile_rows:
        print(f"time profile per notebook: {write_time_profile(profile_rows, a.profile, figures_dir())}")
    table = write_parse_rates(project_root() / "build" / "runs", a.profile, figures_dir(), since=t_all)
    if table:
        print(f"parse rates per method: {table.with_suffix('.md')}")
    from . import profiles
    from .results_page import write_results_page

    page = write_results_page(a.profile, notebooks(a.notebooks), walls, figures_dir(),
                              model=a.model or profiles.load(a.profile).model, time_rows=profile_rows)
    print(f"results page: {page}")
    print(f"profile {a.profile}: {len(notebooks(a.notebooks)) - len(failed)} notebooks ok, {len(failed)} failed; "
          f"wall time {time.time() - t_all:.1f}s; executed copies in {out_dir}; tables and figures in figures/")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
