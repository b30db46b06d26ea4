"""The README's numbers, generated from the committed results page (never typed): the blocks between
``<!-- generated: NAME -->`` and ``<!-- end generated -->`` are written by ``python -m sumjudge.reproduce.readme_numbers
--write`` and checked by a test (``check``), so the README cannot contradict the page."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Callable

from sumjudge.paths import project_root
from sumjudge.reproduce.check import parse_sections, table_rows
from sumjudge.results.notes import number as num
from sumjudge.results.page import load_provenance, state_word

BLOCK = re.compile(r"(<!-- generated: (?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- end generated -->)", re.S)


def _page_table(page: Path, notebook: str, section: str) -> tuple[list[str], list[list[str]]]:
    f = page / f"{notebook}.md"
    if not f.exists():
        return [], []
    return table_rows(parse_sections(f.read_text(encoding="utf-8").splitlines()).get(section, ""))


def _record(page: Path, notebook: str) -> dict:
    return load_provenance(page)["notebooks"].get(notebook, {})


def arena(page: Path) -> str:
    """The judge arena's table as the page has it: each judge's mean BAcc over the datasets, its interval on each
    dataset, n, prompt tokens per example; with the page's commit and state."""

    head, rows = _page_table(page, "50_judge_arena", "arena")
    if not rows:
        return "The judge arena has no table on the results page yet.\n"
    col = {h: i for i, h in enumerate(head)}
    judges: dict[str, list[list[str]]] = {}
    for r in rows:
        judges.setdefault(r[col["judge"]], []).append(r)
    rec = _record(page, "50_judge_arena")
    state = (rec.get("check") or {}).get("state", "recorded")
    datasets = sorted({r[col["dataset"]] for r in rows})
    # a judge run in another reading (``zero-shot[prompts=printed]``) is a row of its judge, not another judge
    variants = [j for j in judges if "[" in j]
    counted = f"{len({j.split('[')[0] for j in judges})} judges" + (
        f" ({', '.join(variants)} beside its judge: {len(judges)} rows)" if variants else "")
    lines = [f"From the results page ([notebook 50](figures/results-smoke/50_judge_arena.md), commit "
             f"`{str(rec.get('commit', '?'))[:7]}`, {state}): {counted} on {', '.join(datasets)}.", "",
             "| judge | mean BAcc (%) | BAcc (%) and 95% interval per dataset | n | prompt tokens per example |",
             "|---|---|---|---|---|"]

    table = []
    for judge, rs in judges.items():
        baccs = [num(r[col["bacc"]]) for r in rs]
        known = [b for b in baccs if b is not None]
        mean = sum(known) / len(known) if known else None
        per = "; ".join(f"{r[col['bacc']]} [{r[col['bacc_ci_low']]}, {r[col['bacc_ci_high']]}]" for r in rs)
        n = sum(int(float(r[col["n"]])) for r in rs if num(r[col["n"]]) is not None)
        tokens = [num(r[col["prompt_tokens_per_example"]]) for r in rs]
        tok = sum(t for t in tokens if t is not None) / max(1, len([t for t in tokens if t is not None]))
        table.append((mean if mean is not None else -1.0, f"| {judge} | {'' if mean is None else f'{mean:.1f}'} | "
                                                          f"{per} | {n} | {tok:,.0f} |"))
    lines += [t for _, t in sorted(table, key=lambda x: -x[0])]
    flat = [j for j, rs in judges.items() if all(r[col["bacc_ci_low"]] == r[col["bacc_ci_high"]] for r in rs)]
    if flat:
        lines += ["", f"{', '.join(flat)}: an interval of zero width on every dataset: one label for every example "
                  "(their 50 is no measurement of what they can tell apart)."]
    return "\n".join(lines) + "\n"


def states(page: Path) -> str:
    """Each notebook's state on the page (recorded at a commit, stale, not recorded)."""

    prov = load_provenance(page)
    out = []
    for nb, r in sorted(prov["notebooks"].items()):
        state = state_word(r)
        if state.startswith("recorded"):
            state += f" at `{str(r.get('commit', '?'))[:7]}`"
        elif state == "not recorded":
            state += " (no replay checks it)"
        out.append(f"[{nb[:2]}](figures/results-smoke/{nb}.md) {state}")
    return "Notebooks on the committed page: " + "; ".join(out) + ".\n"


BLOCKS: dict[str, Callable[[Path], str]] = {"arena": arena, "page-states": states}


def render(text: str, page: Path) -> str:
    return BLOCK.sub(lambda m: m.group(1) + BLOCKS[m.group("name")](page) + m.group(4), text)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m sumjudge.reproduce.readme_numbers")
    p.add_argument("--write", action="store_true", help="rewrite the README's generated blocks from the page")
    a = p.parse_args(argv)
    readme = project_root() / "README.md"
    text = readme.read_text(encoding="utf-8")
    new = render(text, project_root() / "figures" / "results-smoke")
    if a.write:
        readme.write_text(new, encoding="utf-8")
        return 0
    if new != text:
        print("README.md's generated blocks differ from the results page: python -m sumjudge.reproduce.readme_numbers --write")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
