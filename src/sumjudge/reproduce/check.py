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
import csv
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from sumjudge.paths import figures_dir, project_root
from sumjudge.perf.machine import cpu_flags, cpu_name
from sumjudge.report import TABLE_DIGITS
from sumjudge.results.banner import notebook_banner
from sumjudge.results.notes import LABEL_COLUMNS, notes
from sumjudge.results.page import (
    PAPER_ONLY,
    commit,
    load_provenance,
    page_body,
    page_profile,
    render_notebook_page,
    rewrite_state,
    state_lines,
    write_index,
)
from sumjudge.run.notebooks import notebooks, run_workers
from sumjudge.run.replay import REPLAY_ENV

TIME_COLUMN = re.compile(r"(^|_)(wall|latency|seconds)(_|$)|_s$|_per_s$|^wall s$")


def parse_sections(lines: list[str]) -> dict[str, str]:
    """A page's ``## <name>`` sections (its tables, its figures' image lines), by name; a name met again (a page
    written before a figure drawn from a table of its name was headed ``<name> (figure)``) is told apart by its
    place, ``<name> (2)``, so that neither hides the other."""
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


def table_words(md: str) -> list[str]:
    """The lines of a table's section that are not the table (its reading guide above and below it, its label key
    below it), with ``|`` where the table stands among them: words moved from above a table to below it differ."""
    out: list[str] = []
    for line in md.splitlines():
        if line.startswith("|"):
            if not out or out[-1] != "|":
                out.append("|")
        elif line.strip():
            out.append(line.strip())
    return out


NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
WHOLE = re.compile(r"[-+]?\d+")  # a count as a CSV writes it (a float's CSV text has a point or an exponent)


FLOAT_NOISE = 1e-12  # apart by less than this, two values are one value summed in another order (near zero)


def rounding_unit(*texts: str) -> float | None:
    """One unit in the last digit at which numbers shown as ``texts`` were rounded: 3 significant digits (".3g"
    drops trailing zeros, so "0.5" stands for 0.500), or the last decimal a text shows where that is coarser than
    its value's third digit is not (a "0.21" of a "%.2f"); None where every text is a whole number with neither a
    point nor an exponent (a count, shown exactly)."""

    if not any("." in t or "e" in t.lower() for t in texts):
        return None
    top = max(abs(float(t)) for t in texts)
    unit = 10.0 ** (math.floor(math.log10(top)) - (TABLE_DIGITS - 1)) if top else 0.0
    decimals = [len(t.lower().partition("e")[0].split(".", 1)[1]) for t in texts if "." in t and "e" not in t.lower()]
    return min([unit] + [10.0 ** -d for d in decimals]) if decimals else unit


def same_as_shown(page: str, fresh: str, raw: str | None = None) -> bool:
    """Whether a cell (or a sentence) the page shows is what a replay gives, at the precision the page shows: the
    words alike and each number alike, or apart only by a rounding at the last digit shown. A replay on another CPU
    kind sums floats in another order, so a value at a rounding boundary (0.12350000000000001 against
    0.12349999999999999) can show one unit apart in its last digit. Where the replay's unrounded value ``raw`` is
    known, it must round to the page's number (within float noise); elsewhere the two shown numbers may differ by
    one unit of the last digit, never more; whole numbers (counts) must be equal, unless the unrounded value is a float
    that the page shows whole (``report.shown_number``). A missing value is one value whether it shows as ``nan`` or
    as an empty cell (a text column's NaN: tables written before ``report.markdown_table`` show it as ``nan``)."""
    if page == fresh or {page, fresh} == {"nan", ""}:
        return True
    na, nb = NUMBER.findall(page), NUMBER.findall(fresh)
    if NUMBER.split(page) != NUMBER.split(fresh) or len(na) != len(nb):
        return False
    exact = float(raw) if raw and len(na) == 1 and NUMBER.fullmatch(raw.strip()) else None
    for x, y in zip(na, nb):
        if x == y:
            continue
        if abs(float(x) - float(y)) <= FLOAT_NOISE:  # a zero that another CPU computes as 1e-17
            continue
        unit = rounding_unit(x, y)
        if unit is None and exact is not None and not WHOLE.fullmatch(raw.strip()):
            unit = 1.0  # a float shown whole (``report.shown_number``: 1370 of 1370.45), not a count
        if unit is None:
            return False
        if exact is not None:
            if abs(exact - float(x)) > unit / 2 * (1 + 1e-6) + FLOAT_NOISE:
                return False
        elif abs(float(x) - float(y)) > unit * (1 + 1e-6):
            return False
    return True


def numbers_close(a: Any, b: Any, rel: float = 1.01e-5) -> bool:
    """Two figures' plotted data alike at the 6 significant digits they are saved with (``report.figure_data``):
    numbers within one unit of the sixth digit, texts alike at the precision they show."""
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None:
        return a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return abs(a - b) <= rel * max(abs(a), abs(b)) + FLOAT_NOISE
    if isinstance(a, str) and isinstance(b, str):
        return same_as_shown(a, b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(numbers_close(x, y, rel) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(numbers_close(a[k], b[k], rel) for k in a)
    return a == b


def raw_rows(regenerated: Path, name: str) -> list[dict[str, str]] | None:
    """The unrounded rows of a regenerated table (its CSV), as the page shows them: the paper-only rows left out;
    None where the table has no CSV."""


    f = regenerated / f"{name.replace(' ', '_')}.csv"
    if not f.exists():
        return None
    csv.field_size_limit(1 << 30)
    with f.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    return [r for r in rows if not any(str(v).strip().endswith(PAPER_ONLY) for v in r.values())]


def table_difference(name: str, committed: str, regenerated: str,
                     raw: list[dict[str, str]] | None = None) -> str | None:
    """How a table on the page differs from its replay, at the precision the page shows (``same_as_shown``;
    ``raw``: the replay's unrounded rows, in the table's order); None where it does not."""
    h1, r1 = table_rows(committed)
    h2, r2 = table_rows(regenerated)
    if not h1 and not h2:
        return None if committed.strip() == regenerated.strip() else f"`{name}` differs"
    if h1 != h2:
        return f"`{name}`: its columns differ ({', '.join(sorted(set(h1) ^ set(h2))) or 'order'})"
    if len(r1) != len(r2):
        return f"`{name}`: {len(r1)} rows on the page, {len(r2)} regenerated"
    raw = raw if raw is not None and len(raw) == len(r2) else [{} for _ in r2]

    def alike(a: list[str], b: list[str], exact: dict[str, str]) -> bool:
        return all(same_as_shown(x, y, exact.get(h)) for h, x, y in zip(h1, a, b))

    diffs = [(a, b, e) for a, b, e in zip(r1, r2, raw) if a != b and not alike(a, b, e)]
    if not diffs:
        return f"`{name}`: the words beside its table differ" if table_words(committed) != table_words(regenerated) \
            else None
    a, b, e = diffs[0]
    col = next(i for i, (h, x, y) in enumerate(zip(h1, a, b)) if not same_as_shown(x, y, e.get(h)))

    label = " / ".join(x for h, x in zip(h1, a) if h in LABEL_COLUMNS and x) or a[0]
    return (f"`{name}`: {len(diffs)} of {len(r1)} rows differ (first: {label}: {h1[col]} {a[col] or '(empty)'} "
            f"on the page, {b[col] or '(empty)'} regenerated)")


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _time_tables(lines: list[str]) -> dict[str, tuple[list[int], list[list[str]]]]:
    """Each section's table that has time columns: (their indices, its rows' cells)."""
    out: dict[str, tuple[list[int], list[list[str]]]] = {}
    for name, md in parse_sections(lines).items():
        rows = [_cells(x) for x in md.splitlines() if x.startswith("|") and not re.match(r"^\|[\s:|-]+\|$", x.strip())]
        times = [i for i, h in enumerate(rows[0]) if TIME_COLUMN.search(h)] if rows else []
        if times:
            out[name] = (times, rows[1:])
    return out


def _time_free(cells: list[str], times: list[int]) -> tuple[str, ...]:
    return tuple(c for i, c in enumerate(cells) if i not in times)


def seconds_left_out(page_text: str, fresh_lines: list[str]) -> bool:
    """Whether the page shows a time in a cell its replay leaves empty (a time that measured nothing: the seconds
    of answers read from the cache or a recording, ``arena.model_seconds``). The check compares no time column, so
    this is said only to ``--render``, which then rewrites the page."""
    page, fresh = _time_tables(page_text.splitlines()), _time_tables(fresh_lines)
    for name, (times, rows) in fresh.items():
        shown = {_time_free(r, times): r for r in page.get(name, ([], []))[1]}
        for r in rows:
            old = shown.get(_time_free(r, times))
            if old and any(i < len(r) and not r[i] and i < len(old) and old[i] not in ("", "nan") for i in times):
                return True
    return False


EXPONENT = re.compile(r"\d[eE][-+]?\d")


def _as_written(cell: str) -> str:
    """A cell with each number as the float it stands for and ``nan`` as empty: two cells alike here show the same
    values in another form (1.6e+03 and 1600)."""
    return "" if cell == "nan" else NUMBER.sub(lambda m: repr(float(m.group())), cell)


def _other_form(page: str, fresh: str) -> bool:
    """Whether a page's cell shows its value in another form than the replay's cell: the same value written
    otherwise (``_as_written``), or a number in scientific notation that the tables now write out (1.04e+04 where
    they now show 10350, which the check passes as the same number at the page's precision)."""
    return page != fresh and (_as_written(page) == _as_written(fresh)
                              or bool(EXPONENT.search(page)) != bool(EXPONENT.search(fresh)))


def shown_otherwise(page_text: str, fresh_lines: list[str]) -> bool:
    """Whether a table on the page shows a value in another form than its replay writes it now (1.6e+03 where the
    tables now show 1600, nan where they now leave a text cell empty): the same value, so the check passes; said only
    to ``--render``, which then rewrites the page. A number the replay computes a bit apart (another CPU kind) is
    no other form."""
    page, fresh = parse_sections(page_text.splitlines()), parse_sections(fresh_lines)
    for name, md in fresh.items():
        h1, r1 = table_rows(page.get(name, ""))
        h2, r2 = table_rows(md)
        if h1 == h2 and len(r1) == len(r2) and any(
                _other_form(a, b) for x, y in zip(r1, r2) for a, b in zip(x, y)):
            return True
    return False


def keep_recorded_seconds(before: str, page: Path) -> None:
    """A rendered page's time cells as the recording measured them: a replay's seconds measure the replay, so where
    a row is the one the page showed before in every other cell, its time cells keep the page's values, unless the
    replay leaves the cell empty (it measured nothing there); a new row keeps the replay's."""
    old = _time_tables(before.splitlines())
    lines = page.read_text(encoding="utf-8").splitlines()
    name, k, seen = None, 0, {}
    for j, line in enumerate(lines):
        if line.startswith("## "):
            base = line[3:].strip()
            seen[base] = seen.get(base, 0) + 1
            name, k = (base if seen[base] == 1 else f"{base} ({seen[base]})"), 0
            continue
        if name not in old or not line.startswith("|") or re.match(r"^\|[\s:|-]+\|$", line.strip()):
            continue
        k += 1
        if k == 1:  # the header
            continue
        times, rows = old[name]
        cells = _cells(line)
        match = next((r for r in rows if _time_free(r, times) == _time_free(cells, times)), None)
        if match is None:
            continue
        kept = [(match[i] if i in times and c and i < len(match) else c) for i, c in enumerate(cells)]
        if kept != cells:
            lines[j] = "| " + " | ".join(kept) + " |"
    page.write_text("\n".join(lines), encoding="utf-8")


def rendered_why(page_text: str, fresh_lines: list[str]) -> str | None:
    """Why ``--render`` rewrites a page that its replay verifies, if it does: it shows seconds that measured nothing,
    or values in another form than its tables now write them; None where it keeps the page."""
    if seconds_left_out(page_text, fresh_lines):
        return "it showed seconds that measured nothing"
    if shown_otherwise(page_text, fresh_lines):
        return "its tables showed values in another form than they are written now"
    return None


def render_keeping_seconds(nb: Path, src: Path, page: Path, record: dict[str, Any], at: str) -> dict[str, Any]:
    """``render_notebook_page``, then the page's recorded seconds kept (``keep_recorded_seconds``); the new record."""
    before = (page / f"{nb.stem}.md").read_text(encoding="utf-8")
    record = render_notebook_page(nb, src, page, record, at)
    keep_recorded_seconds(before, page / f"{nb.stem}.md")
    return record


def notebook_differences(nb: Path, page: Path, regenerated: Path, record: dict[str, Any]) -> list[str]:
    """What differs between a notebook's committed page and its regenerated tables and figures."""

    committed = parse_sections((page / f"{nb.stem}.md").read_text(encoding="utf-8").splitlines())
    committed = {k: v for k, v in committed.items() if k != "What these tables cannot show"}
    fresh = parse_sections(page_body(nb, regenerated, None))
    out = []
    for name in sorted(set(committed) | set(fresh)):
        if name not in fresh:
            out.append(f"`{name}` is on the page, not regenerated")
        elif name not in committed:
            out.append(f"`{name}` is regenerated, not on the page")
        elif image := next((ln for ln in committed[name].splitlines() if ln.startswith("![")), None):
            stem = image.split("](", 1)[1].rsplit("/", 1)[-1].rsplit(".", 1)[0]
            if table_words(committed[name].replace(image, "|")) != table_words(fresh[name].replace(image, "|")):
                out.append(f"figure `{stem}`: the words beside it differ")
            a, b = page / nb.stem / f"{stem}.plot.json", regenerated / f"{stem}.plot.json"
            if not a.exists() or not b.exists():
                out.append(f"figure `{stem}`: no plotted data to compare ({'page' if not a.exists() else 'replay'})")
            elif not numbers_close(json.loads(a.read_text()), json.loads(b.read_text())):
                out.append(f"figure `{stem}` plots other data")
        else:
            d = table_difference(name, committed[name], fresh[name], raw_rows(regenerated, name))
            if d:
                out.append(d)
    said, recorded = notes(regenerated), record.get("cannot_show") or []
    if len(said) != len(recorded) or not all(same_as_shown(x, y) for x, y in zip(recorded, said)):
        out.append("what the tables cannot show differs")
    return out


# The second replay CI runs: the kernels held below this CPU's best, so that a page that depends on which kernels
# summed its floats fails on the recording machine's kind too. Below AVX-512: AVX2; on a CPU without AVX-512: SSE4.2.
HELD_TO_AVX2 = {"NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL AVX512_SPR", "OPENBLAS_CORETYPE": "Haswell",
                "ATEN_CPU_CAPABILITY": "avx2", "MKL_ENABLE_INSTRUCTIONS": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2"}
HELD_TO_SSE42 = {"NPY_DISABLE_CPU_FEATURES": "X86_V3 X86_V4 AVX512_ICL AVX512_SPR", "OPENBLAS_CORETYPE": "Nehalem",
                 "ATEN_CPU_CAPABILITY": "default", "MKL_ENABLE_INSTRUCTIONS": "SSE4_2", "ONEDNN_MAX_CPU_ISA": "SSE41"}
KERNEL_SETTINGS = tuple(HELD_TO_AVX2)


def lower_kernels() -> dict[str, str]:
    """The settings that hold NumPy's and OpenBLAS's CPU dispatch and torch's (MKL's, oneDNN's) kernels one level
    below this CPU's best (AVX2 on an AVX-512 CPU, SSE4.2 elsewhere)."""
    flags = cpu_flags()
    return HELD_TO_AVX2 if "avx512f" in flags or not flags else HELD_TO_SSE42


def kernels() -> str:
    """This process's CPU and the kernels its libraries dispatch to (NumPy's SIMD, the BLAS's core type, torch's
    capability), with the settings that held them, in one line."""

    parts = [f"{cpu_name()}, {os.cpu_count()} cores"]
    try:
        from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__

        parts.append("NumPy " + (" ".join(f for f in __cpu_dispatch__ if __cpu_features__.get(f)) or "baseline"))
    except ImportError:
        pass
    try:
        from threadpoolctl import threadpool_info

        blas = [f"{i.get('internal_api')} {i.get('architecture')}" for i in threadpool_info() if i.get("user_api") == "blas"]
        parts += [f"BLAS {b}" for b in blas]
    except ImportError:
        pass
    try:
        import torch

        parts.append(f"torch {torch.backends.cpu.get_cpu_capability()}")
    except ImportError:
        pass
    held = [f"{k}={os.environ[k]}" for k in KERNEL_SETTINGS if os.environ.get(k)]
    return "; ".join(parts) + (f" (held by {' '.join(held)})" if held else "")


def replay_kernels(env: dict[str, str]) -> str:
    """``kernels()`` as the replay's notebooks see them (their environment)."""

    res = subprocess.run([sys.executable, "-c", "import numpy\nfrom sumjudge.reproduce.check import kernels\n"
                          "print(kernels())"], env=env, capture_output=True, text=True)
    return res.stdout.strip() or f"unknown ({res.stderr.strip()[-200:]})"


def banner_difference(nb: Path, page: Path, regenerated: Path, record: dict[str, Any]) -> list[str]:
    """The page's banner (``page_banner``: the model beside the paper's, the n its tables rest on) against the one its
    record and its replayed tables give: [] where the page holds it."""

    banner = notebook_banner(nb.stem, page_profile(page), record, page, page_body(nb, regenerated, None))
    text = (page / f"{nb.stem}.md").read_text(encoding="utf-8")
    return [] if "\n".join(banner).strip() in text else ["its banner is not what its record and tables give"]


def replay_notebooks(nbs: list[Path], profile: str, page: Path, regenerated: Path, jobs: int) -> dict[str, str]:
    """Each notebook executed against the page's recorded answers (a worker process each, ``jobs`` at a time);
    its status (``ok`` or why it stopped)."""

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
          page: Path | None = None, render: bool = False, held: dict[str, str] | None = None) -> tuple[bool, list[str]]:
    """(page true, report lines). ``mark``: write the stale marks this check finds instead of failing on them.
    ``render``: rewrite each page that differs from its replay with the replay's tables (its answers kept); a
    notebook whose replay stops (a request its answers do not hold) is marked stale instead. ``held``: settings
    that hold the replay's kernels (``lower_kernels``); the first report line names the CPU and the kernels."""
    os.environ.update(held or {})

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
            diffs = notebook_differences(nb, page, regenerated / nb.stem, rec) + banner_difference(
                nb, page, regenerated / nb.stem, rec)
        if diffs is None:
            verdict = "not recorded (marked on its page)"
        elif not diffs and render and status.get(nb.stem) == "ok" and (why := rendered_why(
                (page / f"{nb.stem}.md").read_text(encoding="utf-8"), page_body(nb, regenerated / nb.stem, None))):
            rec = prov["notebooks"][nb.stem] = render_keeping_seconds(nb, regenerated / nb.stem, page, rec, at)
            changed = True
            verdict = f"rendered from its answers: {why}"
        elif not diffs:
            verdict = "verified: the replay gives this page"
            if state == "stale":
                verdict += " (its stale mark can go: --mark)"
                if mark:
                    rec["check"], changed = {"state": "recorded"}, True
        elif render and status.get(nb.stem) == "ok":
            rec = prov["notebooks"][nb.stem] = render_keeping_seconds(nb, regenerated / nb.stem, page, rec, at)
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
    report.append(f"replayed {len(replayable)} notebooks in {elapsed:.0f} s ({jobs} at a time) on "
                  f"{replay_kernels(dict(os.environ))}"
                  + ("; marks written" if mark and changed else ""))
    return ok, report


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m sumjudge.reproduce.check", description=__doc__.split("\n\n")[0])
    p.add_argument("--profile", default="smoke")
    p.add_argument("--notebooks", default="", help="prefixes, e.g. '00 10' (default: every page)")
    p.add_argument("--jobs", default="", help="notebooks replayed at a time (default 2)")
    p.add_argument("--mark", action="store_true", help="mark the pages that differ as stale (and unmark the others)")
    p.add_argument("--render", action="store_true", help="rewrite the pages that differ with the tables their "
                   "recorded answers give now (a change of how tables are computed; no model); mark stale those "
                   "whose replay stops")
    p.add_argument("--lower-kernels", action="store_true", help="replay with NumPy's, the BLAS's and torch's "
                   "kernels held one level below this CPU's best (AVX2, or SSE4.2 without AVX-512): a page that "
                   "depends on the CPU's kernels fails here too")
    a = p.parse_args(argv)
    ok, report = check(a.profile, a.notebooks, int(a.jobs) if a.jobs else 2, a.mark, render=a.render,
                       held=lower_kernels() if a.lower_kernels else None)
    print("\n".join(report), flush=True)
    return 0 if ok or a.mark or a.render else 1


if __name__ == "__main__":
    sys.exit(main())
