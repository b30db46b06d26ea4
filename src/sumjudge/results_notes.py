"""What a table cannot show, said in words: read from the tables a notebook saved (``figures/<notebook>/*.csv``).

A cell that shows nothing looks like a result: a table with no rows, a row resting on n = 0, a judge that said one
label to every example (its ``labels said`` column, ``run_metrics.said_column``), an interval of zero width (such a
judge has BAcc 50 [50, 50]), every row of a grid alike, a balanced
accuracy whose whole interval lies under chance. ``notes`` names each such cell; the results page prints them at
the top of the notebook's page and the index gathers them under "What this run cannot show".
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

from .run_metrics import SAID_COLUMN, one_label_said

LABEL_COLUMNS = ("experiment", "evaluator", "judge", "detector", "method", "setting", "stances", "prompts", "subset",
                 "dataset", "level", "aspect", "rounds", "sessions", "vote", "metric", "protocol")
VALUE_COLUMNS = ("reproduced", "bacc", "BAcc", "mean_bacc", "value")
_CI = re.compile(r"^\[\s*(-?[\d.eE+-]+|nan),\s*(-?[\d.eE+-]+|nan)\]$")


def shown(v: str | float | None) -> str | None:
    """A number as the page's tables show it (``report.save_table``: 3 significant digits, ``.3g``; an integer cell as
    an integer), so that a note reads, and a rule compares, what the page shows, not the last bits of a float (which
    differ from one CPU kind to another); None for an empty cell, text or NaN. The float is first rounded to 12
    digits, so that a value on a rounding edge (31.25 computed as 31.249999999999996) is shown one way on every
    CPU."""
    text = str(v).strip() if v is not None else ""
    if re.fullmatch(r"-?\d+", text):
        return str(int(text))
    try:
        f = float(text)
    except ValueError:
        return None
    return None if f != f else format(float(format(f, ".12g")), ".3g")


def number(v: str | float | None) -> float | None:
    """A table cell as the number the page shows (``shown``; None for an empty cell, text or NaN)."""
    s = shown(v)
    return None if s is None else float(s)


NAMED_COLUMNS = ("rounds", "sessions")  # a bare number says nothing: named ("rounds 2")


def _label(row: dict[str, str], skip: tuple[str, ...] = ()) -> str:
    parts = [f"{c} {row[c]}" if c in NAMED_COLUMNS else row[c] for c in LABEL_COLUMNS if row.get(c) and c not in skip]
    return " / ".join(parts) or next((v for v in row.values() if v), "a row")


def _interval(row: dict[str, str]) -> tuple[float, float] | None:
    for low, high in (("bacc_ci_low", "bacc_ci_high"), ("ci_low", "ci_high")):
        lo, hi = number(row.get(low)), number(row.get(high))
        if lo is not None and hi is not None:
            return lo, hi
    for col in ("95% CI", "ci", "bacc_ci", "95% CI (BAcc)"):
        m = _CI.match((row.get(col) or "").strip())
        if m:
            lo, hi = number(m.group(1)), number(m.group(2))
            if lo is not None and hi is not None:
                return lo, hi
    return None


def _is_bacc(row: dict[str, str], column: str) -> bool:
    return "bacc" in column.lower() or "bacc" in (row.get("metric") or "").lower()


def table_notes(name: str, rows: list[dict[str, str]], columns: list[str]) -> list[str]:
    """Sentences naming the cells of one table that show nothing (none: every cell shows something)."""
    if not rows:
        return [f"`{name}` is empty: no row was computed"]
    notes = []
    value_col = next((c for c in VALUE_COLUMNS if c in columns), None)
    if "n" in columns:
        zero = [r for r in rows if number(r.get("n")) == 0]
        if zero:
            notes.append(f"`{name}`: {len(zero)} of {len(rows)} rows rest on n = 0 (e.g. {_label(zero[0])}): "
                         "nothing was measured there")
    said = {}
    for r in rows:  # a judge's rows of several metrics say the same: named once
        one = one_label_said(r.get(SAID_COLUMN))
        if one is not None:
            said.setdefault(_label(r, skip=("metric",)), one)
    if said:
        first, label = next(iter(said.items()))
        notes.append(f"`{name}`: in {len(said)} cell{'s' if len(said) > 1 else ''} a judge said one label to every "
                     f"readable example (e.g. {first}: all {label}): BAcc there is 50 by construction, whatever the "
                     "examples")
    flat = []
    for r in rows:
        ci = _interval(r)
        if ci is not None and ci[0] == ci[1]:
            flat.append((r, ci))
    if flat:
        r, ci = flat[0]
        notes.append(f"`{name}`: {len(flat)} interval{'s' if len(flat) > 1 else ''} of zero width (e.g. {_label(r)}: "
                     f"[{shown(ci[0])}, {shown(ci[1])}]): every resampling gives the same value, as when a judge gives one label "
                     "to every example")
    if value_col:
        for r in rows:
            ci = _interval(r)
            v = number(r.get(value_col))
            if v is None or ci is None or not _is_bacc(r, value_col):
                continue
            chance = 50.0 if max(abs(v), abs(ci[1])) > 1.0 else 0.5
            if ci[1] < chance:
                notes.append(f"`{name}`: {_label(r)} is worse than chance (BAcc {shown(v)}, interval "
                             f"[{shown(ci[0])}, {shown(ci[1])}] wholly under {shown(chance)}): check the labels' direction")
        groups: dict[str, list[str]] = {}
        for r in rows:
            groups.setdefault(r.get("metric") or "", []).append(shown(r.get(value_col)))
        for metric, vals in groups.items():
            if len(vals) >= 3 and len(set(vals)) == 1 and vals[0] is not None:
                notes.append(f"`{name}`: every one of its {len(vals)} rows{f' ({metric})' if metric else ''} has the "
                             f"same value ({vals[0]}): the table cannot tell its rows apart")
    return notes


def notes(folder: str | Path) -> list[str]:
    """Every table of a notebook's output folder (``figures/<notebook>/``), in name order."""
    out = []
    for f in sorted(Path(folder).glob("*.csv")):
        with f.open(newline="", encoding="utf-8") as fh:
            reader = csv.DictReader(fh)
            rows = list(reader)
            out += table_notes(f.stem, rows, list(reader.fieldnames or []))
    return out
