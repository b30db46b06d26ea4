"""The notebooks' reading guides, for the results page: the words a notebook sets beside the cell that saves a table
or a figure (the heading cell above it, a "How to read" cell below it), so that a page says beside each table what
its notebook says, in the notebook's order, and a reader of the page alone can read it.

A guide is the notebook's own text, never a number computed here. A markdown cell that opens with ``GUIDE`` goes with
the saving cell above it (where there is one; else the one below it); any other markdown cell goes with the saving
cell below it, its heading lines as the guide's title. A cell that saves several tables gives its guide to the first.
"""

from __future__ import annotations

import re
from pathlib import Path

GUIDE = "How to read"
# the first argument may hold one call (``pd.DataFrame(rows)``); the name may be an f-string (``f"zero_shot_{level}"``)
SAVES = re.compile(r'save_(table|figure)\(\s*(?:[^,()]|\([^()]*\))+,\s*NOTEBOOK\s*,\s*f?"([^"]+)"')
PLACEHOLDER = re.compile(r"\{[^{}]*\}")
KIND_OF = {"table": ".md", "figure": ".png"}  # what a saved name's file on the page ends with


def _saves(cell) -> list[tuple[str, str]]:
    return SAVES.findall(cell.source) if cell.cell_type == "code" else []


def _heading_and_body(text: str) -> list[str]:
    """A markdown cell as guide paragraphs: its heading lines as one italic title, then its other lines."""
    lines = text.strip().splitlines()
    titles = [ln.lstrip("#").strip() for ln in lines if ln.startswith("#")]
    body = "\n".join(ln for ln in lines if not ln.startswith("#")).strip()
    return ([f"*{' · '.join(titles)}*"] if titles else []) + ([body] if body else [])


def _split_at_heading(text: str) -> tuple[str, str]:
    """(a markdown cell's text before its first heading line, the text from that heading on)."""
    lines = text.strip().splitlines()
    at = next((i for i, ln in enumerate(lines) if ln.startswith("#")), len(lines))
    return "\n".join(lines[:at]).strip(), "\n".join(lines[at:]).strip()


def reading_guides(nb: Path) -> dict[str, tuple[str, str]]:
    """``{file name of a saved table or figure (``table4.md``, ``figure2.png``): (the words above it, those below
    it)}`` for notebook ``nb`` ("" where there are none); a saved name without words beside it is not in it. A
    cell's text from a heading on opens the next section: it goes with the saving cell below it."""
    import nbformat

    cells = nbformat.read(nb, as_version=4).cells
    out: dict[str, tuple[str, str]] = {}
    for i, cell in enumerate(cells):
        saved = _saves(cell)
        if not saved:
            continue
        above: list[str] = []
        before = cells[i - 1] if i else None
        if before is not None and before.cell_type == "markdown":
            guide_of_above = before.source.lstrip().startswith(GUIDE) and i >= 2 and _saves(cells[i - 2])
            above += _heading_and_body(_split_at_heading(before.source)[1] if guide_of_above else before.source)
        after = cells[i + 1] if i + 1 < len(cells) else None
        below = (_split_at_heading(after.source)[0] if after is not None and after.cell_type == "markdown"
                 and after.source.lstrip().startswith(GUIDE) else "")
        kind, name = saved[0]
        if above or below:
            out[name + KIND_OF[kind]] = ("\n\n".join(above), below)
    return out


def guide_for(guides: dict[str, tuple[str, str]], file_name: str) -> tuple[str, str]:
    """The guide of a saved file (``reading_guides``' value): its own name's, else that of an f-string name whose
    placeholders match (``zero_shot_{level}.md`` for ``zero_shot_summary.md``); ("", "") where none."""
    if file_name in guides:
        return guides[file_name]
    patterns = sorted(((name, PLACEHOLDER.split(name)) for name in guides if PLACEHOLDER.search(name)),
                      key=lambda x: -len("".join(x[1])))  # the most literal text first
    for name, parts in patterns:
        stem = "".join(parts).removesuffix(".md").removesuffix(".png")
        if stem.strip("_") and re.fullmatch(".+".join(re.escape(part) for part in parts), file_name):
            return guides[name]  # a name of placeholders only (``f"{name}"``) would match every file: none
    return "", ""
