"""Parse rates over every run a ``make reproduce`` made: per method, and per role where a method has several
(a method's ``roles``: the steps of a protocol, or its agents and adjudicators).

Each run's ``metrics.json`` holds its ``parse_rates`` (answers read on the first try, after retries,
unreadable, option-scoring fallbacks). A notebook that repeats another's configuration gets the same
run-folder name (the name carries a hash of the configuration), so such runs are counted once.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from sumjudge.run.methods import methods

COUNTS = ("parse_calls", "parsed_first_try", "parsed_after_retries", "unreadable", "fallback_calls",
          "examples_with_fallback", "n_examples")


def run_folders(runs_root: Path, profile: str, since: float | None = None) -> list[Path]:
    """Run folders of ``profile`` (``build/runs/<notebook>/<profile>-<model>/<run>/``, and the arena's
    ``.../arena/<dataset>/<run>/``), one per configuration; with ``since`` (a time.time()), only those whose
    metrics were written since then (the runs of one ``make reproduce``, not those an earlier budget of the
    profile left beside them)."""
    seen: dict[str, Path] = {}
    for m in sorted(runs_root.glob(f"*/{profile}-*/**/metrics.json")):
        if since is None or m.stat().st_mtime >= since:
            seen.setdefault(m.parent.name, m.parent)
    return list(seen.values())




def role_events(run: Path, method: str) -> dict[str, list[tuple[bool, int]]]:
    """(ok, attempts) of the parse events of the run's last process, by role (the method's ``roles``)."""

    out: dict[str, list[tuple[bool, int]]] = defaultdict(list)
    calls = run / "calls.jsonl"
    spec = methods().get(method)
    role_of = spec.roles if spec is not None else None
    if role_of is None or not calls.exists():
        return out
    events: list[dict] = []
    for line in calls.read_text(encoding="utf-8").splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        if rec.get("event") == "process_start":
            events = []
        elif rec.get("event") == "parse":
            events.append(rec)
    for rec in events:
        role = role_of(rec.get("tag") or "")
        if role:
            out[role].append((bool(rec.get("ok")), int(rec.get("attempts") or 1)))
    return out


def parse_rate_rows(runs_root: Path, profile: str, since: float | None = None) -> list[dict[str, Any]]:
    """One row per method (and per role, the method's ``roles``): calls, % read on the first try, % after retries,
    unreadable, fallback calls and the examples whose verdict used one."""
    by: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(COUNTS, 0))
    runs: dict[str, int] = defaultdict(int)
    for run in run_folders(runs_root, profile, since):
        m = json.loads((run / "metrics.json").read_text(encoding="utf-8"))
        pr = m.get("parse_rates") or {}
        method = m.get("method", "?")
        runs[method] += 1
        for k in COUNTS:
            by[method][k] += int((m if k == "n_examples" else pr).get(k) or 0)
        for role, evs in role_events(run, method).items():
            key = f"{method} {role}"
            by[key]["parse_calls"] += len(evs)
            by[key]["parsed_first_try"] += sum(ok and a == 1 for ok, a in evs)
            by[key]["parsed_after_retries"] += sum(ok and a > 1 for ok, a in evs)
            by[key]["unreadable"] += sum(not ok for ok, _ in evs)
    rows = []
    for method in sorted(by):
        c = by[method]
        n = c["parse_calls"]
        pct = (lambda k: round(100 * k / n, 1) if n else None)
        rows.append({"method": method, "runs": runs[method] or None, "examples": c["n_examples"] or None,
                     "answers parsed": n, "first try %": pct(c["parsed_first_try"]),
                     "after retries %": pct(c["parsed_first_try"] + c["parsed_after_retries"]),
                     "unreadable": c["unreadable"], "fallback calls": c["fallback_calls"],
                     "examples using a fallback": None if " " in method else c["examples_with_fallback"]})
    return rows


def write_parse_rates(runs_root: Path, profile: str, out_dir: Path, since: float | None = None) -> Path | None:
    """``figures/parse_rates_<profile>.{csv,md}`` (runs since ``since`` only, when given); None when the profile
    has no runs."""
    import pandas as pd

    rows = parse_rate_rows(runs_root, profile, since)
    if not rows:
        return None
    df = pd.DataFrame(rows)
    out_dir.mkdir(parents=True, exist_ok=True)
    df.to_csv(out_dir / f"parse_rates_{profile}.csv", index=False)
    shown = df.astype(object).where(df.notna(), "")  # no value (e.g. a method that parses no answers): blank
    (out_dir / f"parse_rates_{profile}.md").write_text(shown.to_markdown(index=False) + "\n")
    return out_dir / f"parse_rates_{profile}.csv"
