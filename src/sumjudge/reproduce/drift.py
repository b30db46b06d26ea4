"""How far a fresh rerun moves a number: notebooks run again from an empty cache, compared with the recorded page.

A fresh run (``make rerun-drift``: an empty response cache and no finished runs, the page's machine and model)
writes its own results page; ``compare`` puts it beside the committed one, notebook by notebook:

- **answers**: the requests both runs asked (the same cache key: the same prompt, settings and model) and how many
  of them the model answered otherwise. Greedy decoding has no randomness; an answer that differs comes from the
  arithmetic (bfloat16 sums in another order when a request shares its batch with others of other lengths), or
  from a sampled request whose draws depend on the batch;
- **cells**: every numeric table cell both pages have (wall times left out), how many moved, and the largest moves
  of the headline columns (BAcc, alpha, FPR, FNR, correlations).

``rerun_drift.json`` beside the page keeps one entry per labelled rerun (e.g. "alone", "3 at a time"); the index
prints them under "How far a fresh rerun moves a number" (``results_page.drift_lines``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from sumjudge.llm.recording import Recording
from sumjudge.paths import figures_dir, project_root
from sumjudge.reproduce.check import parse_sections, table_rows
from sumjudge.reproduce.record import notebooks as find
from sumjudge.results.notes import LABEL_COLUMNS, VALUE_COLUMNS, number
from sumjudge.results.page import DRIFT_FILE

HEADLINE = set(VALUE_COLUMNS) | {"k_alpha", "fpr", "fnr", "accuracy", "r", "rho", "tau"}
TOP = 3  # largest moves shown per notebook
ROW_COLUMNS = (*LABEL_COLUMNS, "who", "score", "bucket", "window")  # what names a row (not compared as a number)


def answer_text(response: dict[str, Any]) -> str:
    """What a judge reads of one answer: a chat answer's text; an option-scoring answer's probabilities to three
    decimals (the last bits of a bfloat16 sum are not a changed answer)."""
    if response.get("text") is not None:
        return response["text"]
    return json.dumps({k: round(v, 3) for k, v in (response.get("probs") or {}).items()}, sort_keys=True)


def answers(path: Path) -> dict[str, list[str]]:
    """A recorded answers file's answers (``answer_text``, each the backend gave, in order) by request key."""

    return {k: [answer_text(r) for r in a.responses] for k, a in Recording.load(path, missing_ok=True).answers.items()}


def answer_changes(recorded: Path, fresh: Path) -> dict[str, int]:
    """Requests both answer files hold, and how many of them were answered otherwise (first answers compared)."""
    a, b = answers(recorded), answers(fresh)
    shared = set(a) & set(b)
    return {"recorded": len(a), "fresh": len(b), "shared": len(shared),
            "differ": sum(a[k][:1] != b[k][:1] for k in shared)}


def cell_moves(committed: Path, fresh: Path) -> tuple[int, list[dict[str, Any]]]:
    """(numeric cells compared, the cells that moved) between two pages of one notebook: tables of the same rows,
    compared row by row in the columns both have (a column one of them lacks, e.g. one added since, is left out)."""
    old = parse_sections(committed.read_text(encoding="utf-8").splitlines())
    new = parse_sections(fresh.read_text(encoding="utf-8").splitlines())
    compared, moved = 0, []
    for name in sorted(set(old) & set(new)):
        h1, r1 = table_rows(old[name])
        h2, r2 = table_rows(new[name])
        if not h1 or len(r1) != len(r2):
            continue
        both = [(h, i, h2.index(h)) for i, h in enumerate(h1) if h in h2]
        for a, b in zip(r1, r2):
            label = " / ".join(a[i] for h, i, _ in both if h in ROW_COLUMNS and a[i]) or a[0]
            for h, x, y in ((h, a[i], b[j]) for h, i, j in both):
                u, v = number(x), number(y)
                if u is None or v is None or h in ROW_COLUMNS:
                    continue
                compared += 1
                if u != v:
                    moved.append({"table": name, "row": label, "column": h, "page": u, "fresh": v,
                                  "move": v - u})
    return compared, moved


def compare(page: Path, fresh: Path, label: str, notebooks: list[str], elapsed_s: float | None = None,
            jobs: int | None = None) -> dict[str, Any]:
    """One labelled rerun of ``notebooks`` (their fresh page under ``fresh``) against the committed ``page``."""
    prov = json.loads((fresh / "provenance.json").read_text(encoding="utf-8")) if (fresh / "provenance.json").exists() else {}
    recorded = json.loads((page / "provenance.json").read_text(encoding="utf-8"))["notebooks"]
    rows = []
    for nb in notebooks:
        rec = (prov.get("notebooks") or {}).get(nb) or {}
        compared, moved = cell_moves(page / f"{nb}.md", fresh / f"{nb}.md")
        headline = sorted((m for m in moved if m["column"] in HEADLINE), key=lambda m: -abs(m["move"]))
        rows.append({"notebook": nb, "commit": str(rec.get("commit", ""))[:7],
                     "page_commit": str(recorded[nb].get("commit", ""))[:7],
                     "answers": answer_changes(page / nb / "answers.jsonl.xz", fresh / nb / "answers.jsonl.xz"),
                     "cells": compared, "moved": len(moved), "headline_moved": len(headline),
                     "largest": headline[:TOP]})
    machine = next(iter((prov.get("notebooks") or {}).values()), {}).get("machine") or {}
    return {"label": label, "notebooks": rows, "jobs": jobs, "elapsed_s": elapsed_s,
            "machine": {"cpu": machine.get("cpu"), "cores": machine.get("cores")}}


def record(page: Path, entry: dict[str, Any]) -> Path:
    """``entry`` into ``page``'s ``rerun_drift.json`` (an entry of the same label replaced)."""
    path = page / DRIFT_FILE
    have = json.loads(path.read_text(encoding="utf-8")) if path.exists() else []
    have = [e for e in have if e["label"] != entry["label"]] + [entry]
    path.write_text(json.dumps(have, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return path


def fresh_run(profile: str, notebooks: list[str], jobs: int, where: Path) -> float:
    """``make reproduce`` of ``notebooks`` from nothing: an empty response cache, no finished run to resume, its
    tables and page under ``where/figures`` (the committed page untouched); its elapsed seconds."""

    if where.exists():
        shutil.rmtree(where)
    where.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if k not in ("SUMJUDGE_REPLAY", "SUMJUDGE_SHARED_ENGINE")}
    env.update(SUMJUDGE_CACHE=str(where / "cache.sqlite"), SUMJUDGE_RUNS=str(where / "runs"),
               SUMJUDGE_FIGURES=str(where / "figures"))
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "sumjudge.reproduce.record", "--profile", profile, "--notebooks", " ".join(notebooks),
                    "--jobs", str(jobs)], env=env, check=True)
    return time.perf_counter() - start


def rerun(profile: str, notebooks: list[str], jobs: int, page: Path, work: Path) -> list[dict[str, Any]]:
    """Reruns of ``notebooks`` compared with ``page``: with ``jobs`` = 1 each alone (a run of its own), else all
    together ``jobs`` at a time on one shared engine, as ``make reproduce`` runs them; each recorded under its label."""

    stems = [nb.stem for nb in find(" ".join(notebooks))]
    label = "alone" if jobs == 1 else f"{jobs} at a time"
    groups = [[s] for s in stems] if jobs == 1 else [stems]
    rows, elapsed, machine = [], 0.0, {}
    for group in groups:
        where = work / label.replace(" ", "-") / "-".join(g[:2] for g in group)
        elapsed += fresh_run(profile, group, jobs, where)
        got = compare(page, where / "figures" / f"results-{profile}", label, group)
        rows, machine = rows + got["notebooks"], got["machine"]
    entry = {"label": label, "notebooks": rows, "jobs": jobs, "elapsed_s": elapsed, "machine": machine}
    record(page, entry)
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m sumjudge.reproduce.drift", description=__doc__.splitlines()[0])
    p.add_argument("--page", help="the committed results page (default figures/results-<profile>)")
    p.add_argument("--profile", default="smoke")
    p.add_argument("--notebooks", required=True, help="notebook numbers or stems, space-separated")
    p.add_argument("--jobs", type=int, default=1, help="1: each notebook alone; N: together, N at a time")
    p.add_argument("--fresh", help="compare an existing fresh run's results page instead of running (with --label)")
    p.add_argument("--label", help="with --fresh: what the rerun was, e.g. 'alone' or '3 at a time'")
    a = p.parse_args(argv)

    page = Path(a.page) if a.page else figures_dir() / f"results-{a.profile}"
    if a.fresh:
        if not a.label:
            p.error("--fresh needs --label")
        entry = compare(page, Path(a.fresh), a.label, a.notebooks.split(), jobs=a.jobs)
        record(page, entry)
        rows = entry["notebooks"]
    else:
        rows = rerun(a.profile, a.notebooks.split(), a.jobs, page, project_root() / "build" / "rerun-drift")
    print(f"{page / DRIFT_FILE}: " + "; ".join(f"{r['notebook']}: {r['answers']['differ']} of "
                                               f"{r['answers']['shared']} answers otherwise, {r['moved']} of "
                                               f"{r['cells']} cells moved" for r in rows))
    print("the index shows it after the next write of the page (make render-page, or a recording run)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
