"""Is the committed results page what its recorded answers give at this commit? (``make reproduce REPLAY=1``,
``make check-page``, CI.)

Every recorded notebook of ``figures/results-<profile>/`` is executed again against its recorded answers (no
model: ``replay``), its tables and figures written under ``build/replay/<profile>/figures/``, and compared with the
page: each table row by row (wall-time columns aside), each figure by the data it plots, and what the tables cannot
show. A notebook whose page differs must say so: its page and the index mark it "stale since <commit>" with the same
differences (``--mark`` writes those marks, from this check). The check fails on a page that differs without saying
so, on a stale mark whose differences are not the current ones, and on a page whose state line is not its record's.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from .paths import figures_dir, project_root

TIME_COLUMN = re.compile(r"(^|_)(wall|latency|seconds)(_|$)|_s$|_per_s$|^wall s$")


def parse_sections(lines: list[str]) -> dict[str, str]:
    """A page's ``## <name>`` sections (its tables, its figures' image lines), by name; a name met again (a table
    and the figure drawn from it are saved under one name) is told apart by its place, ``<name> (2)``, so that
    neither hides the other."""
    out: dict[str, list[str]] = {}
    current = None
    for line in lines:
        if line.startswith("## "):
            name = current = line[3:].strip()
            k = 1
            while current in out:
                k += 1
                current = f"{name} ({k})"
            out[current] = []
        elif current is not None:
            out[current].append(line)
    return {k: "\n".join(v).strip() for k, v in out.items()}


def table_rows(md: str) -> tuple[list[str], list[list[str]]]:
    """(header, rows) of a Markdown table, wall-time columns left out."""
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in md.splitlines()
            if line.startswith("|") and not re.match(r"^\|[\s:|-]+\|$", line.strip())]
    if not rows:
        return [], []
    keep = [i for i, h in enumerate(rows[0]) if not TIME_COLUMN.search(h.strip())]
    return [rows[0][i] for i in keep], [[r[i] if i < len(r) else "" for i in keep] for r in rows[1:]]


def table_difference(name: str, committed: str, regenerated: str) -> str | None:
    h1, r1 = table_rows(committed)
    h2, r2 = table_rows(regenerated)
    if not h1 and not h2:
        return None if committed.strip() == regenerated.strip() else f"`{name}` differs"
    if h1 != h2:
        return f"`{name}`: its columns differ ({', '.join(sorted(set(h1) ^ set(h2))) or 'order'})"
    if len(r1) != len(r2):
        return f"`{name}`: {len(r1)} rows on the page, {len(r2)} regenerated"
    diffs = [(a, b) for a, b in zip(r1, r2) if a != b]
    if not diffs:
        return None
    a, b = diffs[0]
    col = next(i for i, (x, y) in enumerate(zip(a, b)) if x != y)
    from .results_notes import LABEL_COLUMNS

    label = " / ".join(x for h, x in zip(h1, a) if h in LABEL_COLUMNS and x) or a[0]
    return (f"`{name}`: {len(diffs)} of {len(r1)} rows differ (first: {label}: {h1[col]} {a[col] or '(empty)'} "
            f"on the page, {b[col] or '(empty)'} regenerated)")


def notebook_differences(nb: Path, page: Path, regenerated: Path, record: dict[str, Any]) -> list[str]:
    """What differs between a notebook's committed page and its regenerated tables and figures."""
    from .results_notes import notes
    from .results_page import page_body

    committed = parse_sections((page / f"{nb.stem}.md").read_text(encoding="utf-8").splitlines())
    committed = {k: v for k, v in committed.items() if k != "What these tables cannot show"}
    fresh = parse_sections(page_body(nb, regenerated, None))
    out = []
    for name in sorted(set(committed) | set(fresh)):
        if name not in fresh:
            out.append(f"`{name}` is on the page, not regenerated")
        elif name not in committed:
            out.append(f"`{name}` is regenerated, not on the page")
        elif committed[name].startswith("!["):
            stem = committed[name].split("](", 1)[1].rsplit("/", 1)[-1].rsplit(".", 1)[0]
            a, b = page / nb.stem / f"{stem}.plot.json", regenerated / f"{stem}.plot.json"
            if not a.exists() or not b.exists():
                out.append(f"figure `{stem}`: no plotted data to compare ({'page' if not a.exists() else 'replay'})")
            elif json.loads(a.read_text()) != json.loads(b.read_text()):
                out.append(f"figure `{stem}` plots other data")
        else:
            d = table_difference(name, committed[name], fresh[name])
            if d:
                out.append(d)
    if notes(regenerated) != (record.get("cannot_show") or []):
        out.append("what the tables cannot show differs")
    return out


def replay_notebooks(nbs: list[Path], profile: str, page: Path, regenerated: Path, jobs: int) -> dict[str, str]:
    """Each notebook executed against the page's recorded answers (a worker process each, ``jobs`` at a time);
    its status (``ok`` or why it stopped)."""
    from .notebook_jobs import run_workers
    from .replay import REPLAY_ENV

    if regenerated.exists():
        shutil.rmtree(regenerated)
    runs = project_root() / "build" / "replay" / "runs"
    if runs.exists():
        shutil.rmtree(runs)
    env = {**os.environ, REPLAY_ENV: str(page), "SUMJUDGE_FIGURES": str(regenerated)}
    env.pop("SUMJUDGE_SHARED_ENGINE", None)
    records = run_workers(nbs, jobs, ["--profile", profile], env, project_root() / "build" / "replay" / "logs")
    return {r["notebook"]: r["status"] for r in records}


def expected_state(record: dict[str, Any], differences: list[str], at: str) -> dict[str, Any]:
    if differences:
        return {"state": "stale", "since": at, "differences": differences}
    return {"state": "recorded"}


def check(profile: str = "smoke", selection: str = "", jobs: int = 2, mark: bool = False,
          page: Path | None = None, render: bool = False) -> tuple[bool, list[str]]:
    """(page true, report lines). ``mark``: write the stale marks this check finds instead of failing on them.
    ``render``: rewrite each page that differs from its replay with the replay's tables (its answers kept); a
    notebook whose replay stops (a request its answers do not hold) is marked stale instead."""
    from .notebook_jobs import notebooks
    from .results_page import commit, load_provenance, render_notebook_page, rewrite_state, state_lines, write_index

    mark = mark or render

    page = page or figures_dir() / f"results-{profile}"
    prov = load_provenance(page)
    if not prov["notebooks"]:
        return False, [f"{page}: no results page to check"]
    nbs = [nb for nb in notebooks(selection) if nb.stem in prov["notebooks"]]
    replayable = [nb for nb in nbs if (prov["notebooks"][nb.stem].get("check") or {}).get("state") != "unrecorded"]
    regenerated = project_root() / "build" / "replay" / profile / "figures"
    t0 = time.time()
    status = replay_notebooks(replayable, profile, page, regenerated, jobs) if replayable else {}
    elapsed = time.time() - t0
    at = commit().split()[0][:7]
    ok, report, changed = True, [], False
    for nb in nbs:
        rec = prov["notebooks"][nb.stem]
        state = (rec.get("check") or {}).get("state")
        if state == "unrecorded":
            diffs = None
        elif status.get(nb.stem) != "ok":
            diffs = [f"the replay stopped: {status.get(nb.stem, 'not run')}"[:600]]
        else:
            diffs = notebook_differences(nb, page, regenerated / nb.stem, rec)
        if diffs is None:
            verdict = "not recorded (marked on its page)"
        elif not diffs:
            verdict = "verified: the replay gives this page"
            if state == "stale":
                verdict += " (its stale mark can go: --mark)"
                if mark:
                    rec["check"], changed = {"state": "recorded"}, True
        elif render and status.get(nb.stem) == "ok":
            rec = prov["notebooks"][nb.stem] = render_notebook_page(nb, regenerated / nb.stem, page, rec, at)
            changed = True
            verdict = "rendered from its answers: " + "; ".join(diffs)
        elif state == "stale" and rec["check"].get("differences") == diffs:
            verdict = f"stale since {rec['check'].get('since')}, as its page says"
        elif mark:
            rec["check"], changed = expected_state(rec, diffs, at), True
            verdict = "marked stale: " + "; ".join(diffs)
        else:
            ok = False
            verdict = "FAILS: the page differs from its replay and does not say so: " + "; ".join(diffs)
        text = (page / f"{nb.stem}.md").read_text(encoding="utf-8")
        if not mark and "\n".join(state_lines(rec)).strip() not in text:
            ok = False
            verdict += "; FAILS: the page's state line is not its record's (--mark rewrites it)"
        elif mark:
            rewrite_state(page, nb.stem, rec)
        report.append(f"{nb.stem}: {verdict}")
    if mark:
        (page / "provenance.json").write_text(json.dumps(prov, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        write_index(page, profile)
    report.append(f"replayed {len(replayable)} notebooks in {elapsed:.0f} s ({jobs} at a time)"
                  + ("; marks written" if mark and changed else ""))
    return ok, report


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m sumjudge.results_check", description=__doc__.split("\n\n")[0])
    p.add_argument("--profile", default="smoke")
    p.add_argument("--notebooks", default="", help="prefixes, e.g. '00 10' (default: every page)")
    p.add_argument("--jobs", default="", help="notebooks replayed at a time (default 2)")
    p.add_argument("--mark", action="store_true", help="mark the pages that differ as stale (and unmark the others)")
    p.add_argument("--render", action="store_true", help="rewrite the pages that differ with the tables their "
                   "recorded answers give now (a change of how tables are computed; no model); mark stale those "
                   "whose replay stops")
    a = p.parse_args(argv)
    ok, report = check(a.profile, a.notebooks, int(a.jobs) if a.jobs else 2, a.mark, render=a.render)
    print("\n".join(report), flush=True)
    return 0 if ok or a.mark or a.render else 1


if __name__ == "__main__":
    sys.exit(main())
