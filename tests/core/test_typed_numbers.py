"""A number a reader sees is generated, never typed: the README's numbers come from the committed results page
(generated blocks), and no notebook intro types a count of the smoke profile (the run prints it)."""

import json
import re

from sumjudge.paths import project_root
from sumjudge.readme_numbers import BLOCK, render

COUNT = re.compile(r"\b\d+\s+(summaries|examples|responses|sentences|documents|contexts|pairs|judges|datasets)\b")


def sentences(text):
    return re.split(r"(?<=[.!?:;])\s+", text)


def test_no_notebook_intro_types_a_count_of_the_smoke_profile():
    typed = []
    for nb in sorted((project_root() / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        for cell in json.loads(nb.read_text())["cells"]:
            if cell["cell_type"] != "markdown":
                continue
            for s in sentences("".join(cell["source"])):
                if "smoke" in s and COUNT.search(s):
                    typed.append(f"{nb.name}: {s[:160]}")
    assert not typed, "typed counts (the run prints them):\n" + "\n".join(typed)


def test_the_readmes_numbers_are_the_pages():
    readme = (project_root() / "README.md").read_text()
    assert {m.group("name") for m in BLOCK.finditer(readme)} == {"arena", "page-states"}
    assert render(readme, project_root() / "figures" / "results-smoke") == readme, \
        "README.md's generated blocks differ from the page: python -m sumjudge.readme_numbers --write"
    outside = BLOCK.sub("", readme)
    start, end = outside.index("## Commands"), outside.index("## Where outputs land")
    assert not COUNT.search(outside[start:end]), "the README types a count of the smoke run outside its blocks"
    status = outside[outside.index("| paper | notebooks |"):outside.index("## Commands")]
    assert not COUNT.search(status) and not re.search(r"\bn = \d", status)


def test_a_readme_block_follows_the_page(tmp_path):
    (tmp_path / "provenance.json").write_text(json.dumps({"notebooks": {"50_judge_arena": {
        "commit": "abcdef0123", "check": {"state": "recorded"}}}}))
    (tmp_path / "50_judge_arena.md").write_text(
        "# 50\n\n## arena\n\n| dataset | judge | n | bacc | bacc_ci_low | bacc_ci_high | prompt_tokens_per_example |\n"
        "|---|---|---|---|---|---|---|\n| qags-xsum | factax | 20 | 0.55 | 0.35 | 0.75 | 1100 |\n"
        "| qags-cnndm | factax | 20 | 0.65 | 0.45 | 0.85 | 1300 |\n")
    text = render("x\n<!-- generated: arena -->\nold\n<!-- end generated -->\n", tmp_path)
    assert "commit `abcdef0`, recorded): 1 judges on qags-cnndm, qags-xsum" in text
    assert "| factax | 0.600 | 0.55 [0.35, 0.75]; 0.65 [0.45, 0.85] | 40 | 1,200 |" in text and "old" not in text
