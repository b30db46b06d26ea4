"""Paper-vs-reproduced tables, figure/table writers and the transcript viewer used by the notebooks."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any, Iterable, Sequence

from sumjudge.notebook import current_session
from sumjudge.paths import figures_dir
from sumjudge.profiles.paper_setting import paper_results, session_is_papers_setting
from sumjudge.run.metrics import COLUMN_WORDS, GOLD_COLUMN, SAID_COLUMN


def paper_value(paper: str, table: str, row: str, column: str) -> Any:
    """A value as printed in the paper (None where the paper has no such cell)."""
    return paper_results(paper).get(table, {}).get("rows", {}).get(row, {}).get(column)


def comparison(rows: Iterable[dict[str, Any]], papers_setting: bool | None = None):
    """DataFrame with the paper's number beside ours for every row; rows are dicts with at least
    experiment, metric, paper, reproduced (plus any context columns such as model, n); ``ci``: the 95% interval of
    ``reproduced`` where one is computed (a bootstrap for BAcc, Fisher's z for a correlation), shown as ``95% CI``.
    A ``difference`` column (reproduced minus paper) only in the paper's own setting (``papers_setting``; None: the
    running notebook's session says, ``profiles.paper_setting.session_is_papers_setting``): the paper profile on whole datasets
    with the paper's model; anywhere else it would mix the method with another model and a subset."""
    import pandas as pd

    df = pd.DataFrame(list(rows))
    if "ci" in df.columns:  # (low, high) in the unit of ``reproduced``: shown as one column
        df["95% CI"] = [ci_text(c) for c in df.pop("ci")]
    front = [c for c in ("experiment", "evaluator", "detector", "dataset", "level", "aspect", "metric", "paper", "reproduced",
                         "95% CI", "n") if c in df.columns]
    df = df[front + [c for c in df.columns if c not in front]]
    if papers_setting is None:
        papers_setting = session_is_papers_setting(current_session())
    if papers_setting and {"paper", "reproduced"} <= set(df.columns):
        df["difference"] = [
            (r - p) if isinstance(p, (int, float)) and isinstance(r, (int, float)) else None
            for p, r in zip(df["paper"], df["reproduced"])
        ]
    return df


def ci_text(ci: Any) -> str | None:
    """A 95% interval as table text, ``[low, high]``; None where there is none."""
    try:
        low, high = ci
    except (TypeError, ValueError):
        return None
    if low is None or high is None or low != low or high != high:
        return None
    return f"[{low:.3g}, {high:.3g}]"


def percent(share: float | None) -> float | None:
    """A share (0-1) in percent, as the tables print it; None for None or NaN (a cell with no number)."""
    return None if share is None or share != share else 100 * share


def scaled_ci(ci: Any, factor: float = 100.0) -> tuple[float, float] | None:
    """An interval in another unit (a BAcc interval in %)."""
    return None if not ci or ci[0] is None else (factor * ci[0], factor * ci[1])


def out_dir(notebook: str) -> Path:
    d = figures_dir() / notebook
    d.mkdir(parents=True, exist_ok=True)
    return d


TABLE_DIGITS = 3  # the significant digits a table shows (the page check and the notes compare at this precision)


def shown_number(v: float) -> str:
    """A float as a table shows it: ``TABLE_DIGITS`` significant digits (``.3g``), except that a number with more
    digits before the point than that is shown whole (1005, 9066 and 116000, never 1.01e+03: a count of 1,005 test
    examples read as 1.01e+03 is a count lost); NaN as ``nan``. The float is first rounded to 12 digits, so that a
    value on a rounding edge (31.25 computed as 31.249999999999996) is shown one way on every CPU kind."""
    if v != v or v in (float("inf"), float("-inf")):
        return str(v)
    v = float(format(v, ".12g"))
    text = format(v, f".{TABLE_DIGITS}g")
    return f"{v:.0f}" if "e+" in text else text


def _is_float(v: Any) -> bool:
    import numpy as np

    return isinstance(v, (float, np.floating))


def _is_number(v: Any) -> bool:
    import numpy as np

    return v is None or (isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_)))


def markdown_table(df) -> str:
    """A DataFrame as a Markdown table, every float as ``shown_number`` gives it (integers and text as they are): a
    column of numbers aligned right, as tabulate aligns one."""
    import pandas as pd

    shown = df.astype(object)
    formatted, align = [], []
    for i, c in enumerate(df.columns):
        cells = list(df[c])
        numbers = all(_is_number(v) for v in cells)
        if any(_is_float(v) for v in cells):  # NaN: "nan" among numbers, an empty cell among words (as tabulate)
            shown[c] = pd.Series([(shown_number(float(v)) if numbers or v == v else None) if _is_float(v) else v
                                  for v in cells], index=df.index, dtype=object)
            formatted.append(i)
        align.append("right" if i in formatted and numbers else "global")
    return shown.to_markdown(index=False, disable_numparse=formatted or False, colalign=align)


FAITHFUL = "faithful (the summary is consistent with its document), 0 = unfaithful"  # the papers' convention
FAITHFUL_SENTENCE = "faithful (the summary sentence is consistent with its document), 0 = unfaithful"  # one a row


def label_key(columns: Sequence[str], label_one: str = FAITHFUL) -> str | None:
    """The line below a table that counts labels (``run_metrics.said_column``): what its counts count and what
    label 1 stands for in them (``label_one``: what follows "1 = "), so that "11 × 1, 1 × 0" reads as a judge that
    called 11 summaries faithful; None for a table without such a column."""
    said, gold = SAID_COLUMN in columns, GOLD_COLUMN in columns
    if not (said or gold):
        return None
    parts = ([f"`{SAID_COLUMN}` is how many readable examples the judge labelled 1 and how many 0"] if said else []) + (
        [f"`{GOLD_COLUMN}`{', how many of them' if said else ' is how many of the examples'} the gold labels call 1 and 0"]
        if gold else [])
    return f"*Label counts:* {'; '.join(parts)}; 1 = {label_one}."


def column_key(columns: Sequence[str]) -> str | None:
    """The line below a table that shows the columns every run's metrics give (``run.metrics.COLUMN_WORDS``: the
    sizes ``n`` and ``n_examples``, the parse rates), saying what each means; None for a table without them."""
    parts = [words for need, words in COLUMN_WORDS if all(c in columns for c in need)]
    return f"*Columns:* {'; '.join(parts)}." if parts else None


def _blank(v: Any) -> bool:
    return v is None or (isinstance(v, float) and v != v) or (isinstance(v, str) and not v.strip())


PAPER_ONLY_ROW = "(paper only)"  # how a row the paper prints and no run computes names its experiment


def empty_key(df) -> str | None:
    """The line below a table naming the columns empty in every row (NaN or blank), which a reader would otherwise
    read as values; None where every column holds something, or every row is a paper's printed one (its
    ``experiment`` ends with ``PAPER_ONLY_ROW``: nothing was computed there by design, and the page says so)."""
    if not len(df) or ("experiment" in df.columns
                       and all(str(v).endswith(PAPER_ONLY_ROW) for v in df["experiment"])):
        return None
    empty = [str(c) for c in df.columns if all(_blank(v) for v in df[c])]
    return (f"*Empty in every row:* {', '.join(f'`{c}`' for c in empty)}: no row of this table has a value "
            "there.") if empty else None


def save_table(df, notebook: str, name: str, label_one: str = FAITHFUL, key: str | None = None) -> Path:
    """Write ``figures/<notebook>/<name>.csv`` and ``.md`` (numbers as ``shown_number`` shows them; below a table
    that counts labels, ``label_key``'s line, ``label_one`` saying what 1 stands for there; below a table with the
    columns every run gives, ``column_key``'s line; ``empty_key``'s for columns empty in every row; below that,
    ``key``: words on how to read the table, no number in them); returns the csv path."""
    d = out_dir(notebook)
    df.to_csv(d / f"{name}.csv", index=False)
    cols = [str(c) for c in df.columns]
    shown = [str(c) for c in df.columns if not all(_blank(v) for v in df[c])]  # an empty column: named apart
    words = [w for w in (label_key(cols, label_one), column_key(shown), empty_key(df), key) if w]
    (d / f"{name}.md").write_text(markdown_table(df) + "\n" + "".join(f"\n{w}\n" for w in words))
    return d / f"{name}.csv"


NOT_RUN = "not_run_under_this_profile"


def save_not_run(not_run: Sequence[str], notebook: str, what: str = "") -> Path | None:
    """The paper's rows, settings and sections a notebook's parameters leave out (``what``: of which tables), printed
    and saved beside its tables (``not_run_under_this_profile.md``), so that its results page says it in a section
    of its own; nothing where it runs them all."""
    if not not_run:
        return None
    line = f"Not run under this profile{f' ({what})' if what else ''}: " + "; ".join(not_run) + "."
    print(line)
    path = out_dir(notebook) / f"{NOT_RUN}.md"
    path.write_text(line + "\n", encoding="utf-8")
    return path


def save_figure(fig, notebook: str, name: str) -> Path:
    """Write ``figures/<notebook>/<name>.png`` and ``.pdf``, and what it plots as ``<name>.plot.json``
    (``figure_data``: a replay compares that, not the pixels)."""
    d = out_dir(notebook)
    fig.savefig(d / f"{name}.png", dpi=150, bbox_inches="tight")
    fig.savefig(d / f"{name}.pdf", bbox_inches="tight")
    (d / f"{name}.plot.json").write_text(json.dumps(figure_data(fig), indent=1, sort_keys=True) + "\n")
    return d / f"{name}.png"


def _num(v: Any) -> Any:
    """A plotted number to 6 significant digits (None for NaN), so that float noise is not a difference."""
    try:
        f = float(v)
    except (TypeError, ValueError):
        return str(v)
    return None if f != f else float(f"{f:.6g}")


def figure_data(fig) -> list[dict[str, Any]]:
    """What a figure plots, per axes: title, axis labels and limits, each line's points, each collection's points or
    segments (scatter points, error bars), each bar (x, y, width, height) and each text with its place."""
    from matplotlib.collections import LineCollection
    from matplotlib.patches import Rectangle

    out = []
    for ax in fig.get_axes():
        out.append({
            "title": ax.get_title(), "xlabel": ax.get_xlabel(), "ylabel": ax.get_ylabel(),
            "xlim": [_num(v) for v in ax.get_xlim()], "ylim": [_num(v) for v in ax.get_ylim()],
            "lines": [{"label": ln.get_label(), "x": [_num(v) for v in ln.get_xdata()],
                       "y": [_num(v) for v in ln.get_ydata()]} for ln in ax.get_lines()],
            "collections": [{"segments": [[[_num(v) for v in p] for p in seg] for seg in c.get_segments()]}
                            if isinstance(c, LineCollection) else
                            {"points": [[_num(v) for v in p] for p in c.get_offsets()]} for c in ax.collections],
            "bars": [[_num(v) for v in (p.get_x(), p.get_y(), p.get_width(), p.get_height())]
                     for p in ax.patches if isinstance(p, Rectangle)],
            "texts": [{"text": t.get_text(), "at": [_num(v) for v in t.get_position()]} for t in ax.texts],
        })
    return out


def markdown_rows(rows: Iterable[dict[str, Any]], columns: Sequence[str]) -> list[str]:
    """A markdown table's lines: ``columns`` as the header, one line a row (a missing or None value blank)."""
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    return lines + ["| " + " | ".join("" if r.get(c) is None else str(r[c]) for c in columns) + " |" for r in rows]


def read_calls(run_dir: str | Path) -> list[dict[str, Any]]:
    p = Path(run_dir) / "calls.jsonl"
    return [json.loads(line) for line in p.read_text().splitlines() if line.strip()]


def transcript_html(calls: list[dict[str, Any]], scope: str, max_chars: int = 1500) -> str:
    """HTML of every call made for one example (scope = example id), in order: role tag, prompt
    (shortened), answer, tokens, cache hit."""
    esc = html.escape
    parts = [f"<div style='font-family:sans-serif'><h4>Transcript: {esc(scope)}</h4>"]
    seen = set()
    for c in calls:
        if c.get("scope") != scope or c.get("event") not in ("chat", "options") or c["key"] in seen:
            continue
        seen.add(c["key"])
        req, resp = c["request"], c["response"]
        prompt = req["messages"][-1]["content"]
        if len(prompt) > max_chars:
            prompt = prompt[: max_chars // 2] + "\n[...]\n" + prompt[-max_chars // 2:]
        answer = resp.get("text") if c["event"] == "chat" else json.dumps(resp.get("probs"))
        meta = (f"{resp.get('prompt_tokens', '')} prompt / {resp.get('completion_tokens', '')} completion tokens"
                if c["event"] == "chat" else "option scores")
        parts.append(
            f"<details><summary><b>{esc(c.get('tag') or c['event'])}</b> &middot; {esc(meta)}"
            f"{' &middot; cache hit' if c.get('cache_hit') else ''}</summary>"
            f"<pre style='white-space:pre-wrap;background:#f6f6f6'>{esc(prompt)}</pre></details>"
            f"<pre style='white-space:pre-wrap;border-left:3px solid #4a8;padding-left:6px'>{esc(answer or '')}</pre>")
    parts.append("</div>")
    return "".join(parts)


def read_results(run_dir: str | Path) -> list[dict[str, Any]]:
    p = Path(run_dir) / "results.jsonl"
    return [json.loads(line) for line in p.read_text().splitlines() if line.strip()]
