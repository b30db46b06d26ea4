"""The results page of a profile: ``figures/results-<profile>/``, one markdown page per notebook (its tables, its
figures as PNG) and an index with the provenance (commit, model and its weights' sha256, dtype, machine, date,
wall time per notebook, parse rates, where the time went), written by ``make reproduce`` from what the notebooks
saved under ``figures/<notebook>/``. Nothing is computed here: the page is the notebooks' own tables.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import platform
import shutil
import subprocess
from pathlib import Path
from typing import Any

from .paths import project_root


def commit() -> str:
    """The checked-out commit, with ``+changes`` when tracked files other than the results pages differ from it
    ("unknown" outside git)."""
    root = project_root()
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                              check=True).stdout.strip()
        # the results pages themselves are left out: a committed page is rewritten by the run that records this
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".",
                                ":(exclude)figures/results-*"], cwd=root, capture_output=True, text=True,
                               check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + (" +changes" if dirty else "")


def weights_sha256(model_dir: Path) -> dict[str, str]:
    """sha256 of each weights file of a local model folder (``*.safetensors``, ``*.bin``, ``*.gguf``)."""
    out = {}
    for f in sorted(model_dir.iterdir()):
        if f.suffix in (".safetensors", ".bin", ".gguf"):
            h = hashlib.sha256()
            with f.open("rb") as fh:
                for chunk in iter(lambda: fh.read(1 << 22), b""):
                    h.update(chunk)
            out[f.name] = h.hexdigest()
    return out


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def engines(runs: Path, profile: str) -> list[dict[str, Any]]:
    """The distinct (backend, model, revision, dtype) the profile's runs recorded in their ``config.json``."""
    seen: dict[tuple, dict[str, Any]] = {}
    for cfg in runs.glob(f"*/{profile}-*/**/config.json"):
        try:
            info = json.loads(cfg.read_text(encoding="utf-8")).get("backend_info") or {}
        except (OSError, ValueError):
            continue
        row = {"backend": info.get("name"), "model": info.get("model"), "revision": info.get("revision"),
               "dtype": (info.get("extra") or {}).get("dtype"), "server": info.get("server") or None}
        if any(row.values()):
            seen.setdefault(tuple(row.values()), row)
    return list(seen.values())


def provenance(profile: str, model: str | None, walls: list[dict[str, Any]],
               run: dict[str, Any] | None = None) -> dict[str, Any]:
    """The index's record. ``run``: the whole command's wall time (``wall_s``, model load and reports included)
    and how many notebooks ran at a time (``jobs``); the notebooks' own times overlap when ``jobs`` > 1."""
    from .llm.models import resolve_model

    weights: dict[str, str] = {}
    if model:
        try:
            local = Path(resolve_model(model))
            weights = weights_sha256(local) if local.is_dir() else {}
        except (OSError, RuntimeError):
            weights = {}
    return {"profile": profile, "commit": commit(), "model": model, "weights_sha256": weights,
            "engines": engines(project_root() / "build" / "runs", profile),
            "machine": {"cpu": cpu_name(), "cores": os.cpu_count(), "system": platform.platform(),
                        "python": platform.python_version()},
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "notebooks": walls, "run": run or {}, "wall_s_notebooks_summed": round(sum(w["wall_s"] for w in walls), 1)}


def notebook_title(nb: Path) -> str:
    """The notebook's first heading (``# 10 · ...``), or its file name."""
    try:
        first = json.loads(nb.read_text(encoding="utf-8"))["cells"][0]
        text = "".join(first["source"]) if isinstance(first["source"], list) else first["source"]
        return text.splitlines()[0].lstrip("# ").strip()
    except (OSError, ValueError, KeyError, IndexError):
        return nb.stem


def notebook_page(nb: Path, figures: Path, out: Path, wall: dict[str, Any] | None) -> Path:
    """``out/<notebook>.md``: the notebook's saved tables (Markdown, in the order it wrote them) and figures (PNG,
    copied beside the page)."""
    src = figures / nb.stem
    lines = [f"# {notebook_title(nb)}", ""]
    if wall:
        lines += [f"Executed in {wall['wall_s']:.0f} s ({wall['status']}); the notebook itself, with every "
                  f"reading guide: [`notebooks/{nb.name}`](../../notebooks/{nb.name}).", ""]
    files = sorted((p for p in src.glob("*") if p.suffix in (".md", ".png")), key=lambda p: (p.stat().st_mtime, p.name))
    if not files:
        lines.append("This notebook saved no table or figure under this profile.")
    for f in files:
        lines += [f"## {f.stem.replace('_', ' ')}", ""]
        if f.suffix == ".md":
            lines += [f.read_text(encoding="utf-8").rstrip(), ""]
        else:
            (out / nb.stem).mkdir(parents=True, exist_ok=True)
            shutil.copyfile(f, out / nb.stem / f.name)
            lines += [f"![{f.stem}]({nb.stem}/{f.name})", ""]
    page = out / f"{nb.stem}.md"
    page.write_text("\n".join(lines), encoding="utf-8")
    return page


def write_results_page(profile: str, notebooks: list[Path], walls: list[dict[str, Any]], figures: Path,
                       model: str | None = None, time_rows: list[dict[str, Any]] | None = None,
                       run: dict[str, Any] | None = None) -> Path:
    """``figures/results-<profile>/index.md`` and one page per notebook; the notebooks' pages of earlier runs of
    other notebooks stay (a partial rerun updates its own pages); ``provenance.json`` beside the index.
    ``time_rows`` (``reproduce.notebook_time_profile``) give each notebook's calls and backend calls: a notebook
    replayed from the cache says so (its wall time is the replay's). ``run``: ``provenance``'s."""
    out = figures / f"results-{profile}"
    out.mkdir(parents=True, exist_ok=True)
    calls: dict[str, list[int]] = {}
    for r in time_rows or []:
        c = calls.setdefault(r["notebook"], [0, 0])
        c[0] += r.get("calls") or 0
        c[1] += r.get("backend_calls") or 0
    walls = [{**w, "calls": calls.get(w["notebook"], [None, None])[0],
              "backend_calls": calls.get(w["notebook"], [None, None])[1]} for w in walls]
    by_name = {w["notebook"]: w for w in walls}
    for nb in notebooks:
        notebook_page(nb, figures, out, by_name.get(nb.stem))
    prov = provenance(profile, model, walls, run)
    (out / "provenance.json").write_text(json.dumps(prov, indent=2) + "\n", encoding="utf-8")
    lines = [f"# Results of the `{profile}` profile", "",
             "Every table below is a notebook's own output, executed headlessly by `make reproduce"
             f"{'' if profile == 'smoke' else f' PROFILE={profile}'}`; nothing is typed in by hand. Each page "
             "gives the paper's numbers beside ours where the paper has them, and each table says on how many "
             "examples it rests.", "", "## Provenance", "",
             f"- commit: `{prov['commit']}`", f"- date: {prov['date']}",
             f"- machine: {prov['machine']['cpu']}, {prov['machine']['cores']} cores, {prov['machine']['system']}, "
             f"Python {prov['machine']['python']}"]
    if model:
        lines.append(f"- model: `{model}`" + "".join(f"; `{k}` sha256 `{v}`" for k, v in prov["weights_sha256"].items()))
    for e in prov["engines"]:
        lines.append("- engine: " + ", ".join(f"{k} {v}" for k, v in e.items() if v))
    summed = f"the notebooks' own times add up to {prov['wall_s_notebooks_summed'] / 60:.1f} min"
    if prov["run"].get("wall_s") is not None:
        jobs = prov["run"].get("jobs") or 1
        lines.append(f"- wall time: {prov['run']['wall_s'] / 60:.1f} min for the whole run (model load and these "
                     f"pages included), {jobs} notebook{'s' if jobs > 1 else ''} at a time"
                     + (f" ({summed}: they overlap)" if jobs > 1 else f" ({summed})"))
    else:
        lines.append(f"- wall time: {summed}")
    replayed = [w["notebook"] for w in walls if w["calls"] and w["backend_calls"] == 0]
    if replayed:
        lines.append(f"- {len(replayed)} of {len(walls)} notebooks made no backend call ({', '.join(replayed)}): every "
                     "answer came from the response cache (runs another notebook made with the same settings, or an "
                     "earlier run on this machine), so their tables rest on those runs' answers and their wall times "
                     "are a replay's")
    lines += ["", "| notebook | wall s | status | calls | backend calls |", "|---|---|---|---|---|"]
    lines += [f"| [{w['notebook']}]({w['notebook']}.md) | {w['wall_s']:.0f} | {w['status']} | "
              f"{'' if w['calls'] is None else w['calls']} | "
              f"{'' if w['backend_calls'] is None else w['backend_calls']} |" for w in walls]
    for name, title in ((f"parse_rates_{profile}.md", "Parse rates"), (f"time_profile_{profile}.md", "Where the time went")):
        f = figures / name
        if f.exists():
            body = f.read_text(encoding="utf-8").strip().splitlines()
            lines += ["", f"## {title}", ""] + [x for x in body if not x.startswith("# ")]
    (out / "index.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out / "index.md"
