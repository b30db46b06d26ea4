"""Figures drawn from a results table as the table shows it: each value with the 95% interval of the table's own
interval column (``[low, high]`` text or two number columns), its n, a labelled chance line where one exists, and the
dataset in the title, read from the data."""

from __future__ import annotations

import re
from typing import Any, Iterable, Sequence

from sumjudge.report import read_results

CHANCE_COLOR = "grey"


def parse_ci(ci: Any) -> tuple[float, float] | None:
    """A table's interval cell (``"[37.5, 93.8]"`` as ``report.ci_text`` writes it, or a pair) as numbers; None where
    the table shows none."""
    if isinstance(ci, str):
        nums = re.findall(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|nan|inf", ci)
        if len(nums) != 2:
            return None
        low, high = (float(v) for v in nums)
    else:
        try:
            low, high = (float(v) for v in ci)
        except (TypeError, ValueError):
            return None
    return None if low != low or high != high else (low, high)


def _present(values: Iterable[Any]) -> list[Any]:
    return [v for v in values if v is not None and v == v and str(v) != ""]


def n_text(ns: Iterable[Any], noun: str | None = None) -> str | None:
    """``n = 12`` (one n), ``n = 16-20`` (several), or ``12 <noun>`` where n names something else in the figure; None
    where no n is given."""
    ns = sorted({int(v) for v in _present(ns)})
    if not ns:
        return None
    count = str(ns[0]) if len(ns) == 1 else f"{ns[0]}-{ns[-1]}"
    return f"{count} {noun}" if noun else f"n = {count}"


def title(what: str, datasets: Iterable[Any], ns: Iterable[Any] = (), noun: str | None = None) -> str:
    """``what``, then the datasets the values come from (in order, once each) and their n, on a second line."""
    names = list(dict.fromkeys(str(d) for d in _present(datasets)))
    second = ", ".join(names) + (f" ({n})" if (n := n_text(ns, noun)) else "")
    return f"{what}\n{second}" if second else what


def datasets_of(run_dirs: Iterable[Any]) -> list[str]:
    """The datasets of the examples judged in some run folders (in order, once each)."""

    return list(dict.fromkeys(r["example"].get("dataset") for d in run_dirs for r in read_results(d)
                              if r["example"].get("dataset")))


def chance(ax, value: float, label: str, *, horizontal: bool = False, ls: str = "--"):
    """A line (dashed unless ``ls`` says otherwise: two references apart) at ``value`` on the value axis (x when
    ``horizontal``), labelled for the legend."""
    draw = ax.axvline if horizontal else ax.axhline
    return draw(value, color=CHANCE_COLOR, lw=1, ls=ls, label=label, zorder=1)


def intervals(ax, pos: Sequence[float], cis: Sequence[Any], *, horizontal: bool = False, cap: float = 0.08,
              color: str = "black"):
    """Each interval as a segment from its low to its high end with short caps, at ``pos`` on the category axis
    (y when ``horizontal``); the interval cells as the table shows them (see ``parse_ci``), none drawn where absent."""
    from matplotlib.collections import LineCollection

    segs = []
    for p, ci in zip(pos, cis):
        ci = parse_ci(ci)
        if ci is None:
            continue
        for seg in ([(p, ci[0]), (p, ci[1])], [(p - cap, ci[0]), (p + cap, ci[0])], [(p - cap, ci[1]), (p + cap, ci[1])]):
            segs.append([(v, c) for c, v in seg] if horizontal else seg)
    lines = LineCollection(segs, colors=color, linewidths=1.1, zorder=3)
    ax.add_collection(lines)
    ax.autoscale_view()
    return lines


def bars(ax, table, *, category: str, value: str = "reproduced", ci: str = "95% CI", series: str | None = None,
         horizontal: bool = False, colors: Sequence[str] | None = None, n: str | None = "n"):
    """Bars of ``table[value]`` per ``category`` (in the table's order), one bar per ``series`` value side by side,
    each with the interval in ``table[ci]``; a series' legend label carries its n where the n differ between series.
    Returns the categories."""
    cats = list(dict.fromkeys(table[category]))
    groups = list(dict.fromkeys(table[series])) if series else [None]
    width = 0.8 / len(groups)
    colors = colors or [f"C{i}" for i in range(len(groups))]
    split = series and n and n in table.columns and len({n_text([v]) for v in table[n]}) > 1
    for i, g in enumerate(groups):
        sub = table if g is None else table[table[series] == g]
        pos = [cats.index(c) + (i - (len(groups) - 1) / 2) * width for c in sub[category]]
        vals = [float("nan") if v is None else float(v) for v in sub[value]]
        label = None if g is None else (f"{g} ({n_text(sub[n])})" if split else str(g))
        draw = ax.barh if horizontal else ax.bar
        draw(pos, vals, width * 0.95, color=colors[i % len(colors)], label=label, zorder=2)
        intervals(ax, pos, list(sub[ci]), horizontal=horizontal, cap=width / 4)
    ticks = (ax.set_yticks if horizontal else ax.set_xticks)
    ticks(range(len(cats)), [str(c) for c in cats])
    if horizontal:
        ax.set_ylim(len(cats) - 0.5, -0.5)  # the table's first row on top
    return cats


def legend_outside(ax, *, below: bool = False, **kw):
    """The axes' legend beside it (right, or ``below`` its axis label), where it covers no bar or point."""
    where = ({"loc": "upper center", "bbox_to_anchor": (0.5, -0.2)} if below else
             {"loc": "upper left", "bbox_to_anchor": (1.02, 1)})
    return ax.legend(**where, borderaxespad=0, fontsize=8, **kw)


def figure_legend(fig, axes):
    """One legend for several axes (each label once), under them all."""
    seen: dict[str, Any] = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(label, handle)
    return fig.legend(list(seen.values()), list(seen), loc="upper center", bbox_to_anchor=(0.5, 0), ncol=len(seen),
                      fontsize=9, frameon=False)
