"""A number a reader sees is generated, never typed: the README's numbers come from the committed results page
(generated blocks), and no notebook intro types a count of the smoke profile (the run prints it).

The hand-written text a page can contradict (the notebooks' markdown cells, the papers' READMEs, docs/profiles.md,
the smoke profile's comments and the README outside its generated blocks) types no count of examples, judges, rows,
... and no time: it names the setting (`n`, `mesa_n`, ...) or links to the page, which gives the number. The
declared exceptions, and nothing else:
- a clause that cites the paper or its authors' code ("the paper('s)", "as printed", "the authors'", "the code",
  "§N", a github.com/ address): the papers' own printed numbers and settings; so is an intro's "**The paper's
  claim(s)**" paragraph;
- an intro's "**In the paper setting**" paragraph: the plan of `sumjudge plan`, checked against docs/benchmark.md
  by tests/core/test_plan.py;
- a sentence naming an earlier commit (commit abc1234, or (abc1234)): the record of that run, not of the page;
- a lesson's schedule: a heading ending in "(N min)" / "(N minutes)", and "N-minute class/lab";
- dates, version numbers and hardware figures are no count of the kinds below (cores, GiB, 0.5B, 2026-11-26)."""

import json
import re

import pytest

from sumjudge.paths import project_root
from sumjudge.reproduce.readme_numbers import BLOCK, render

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
        "README.md's generated blocks differ from the page: python -m sumjudge.reproduce.readme_numbers --write"
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
        "|---|---|---|---|---|---|---|\n| qags-xsum | factax | 20 | 55 | 35 | 75 | 1100 |\n"
        "| qags-cnndm | factax | 20 | 65 | 45 | 85 | 1300 |\n")
    text = render("x\n<!-- generated: arena -->\nold\n<!-- end generated -->\n", tmp_path)
    assert "commit `abcdef0`, recorded): 1 judges on qags-cnndm, qags-xsum" in text
    assert "| factax | 60.0 | 55 [35, 75]; 65 [45, 85] | 40 | 1,200 |" in text and "old" not in text


NUM = r"(?<![\w+.,-])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?![\w+-])|\b(?:three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty)\b"
NOUNS = ("summaries|examples|responses|sentences|documents|contexts|pairs|judges|datasets|evaluators|rows|calls|answers|"
         "judgements|samples|meetings|transcripts|debates|mentions|notebooks|window sizes|error types|runs|cells|detectors")
# "N (adjective) things", "N of (the) M things", "n = N"; a notebook's or a table's number is no count
TYPED_COUNT = re.compile(rf"(?<!Table )(?<!Figure )(?<!notebook )(?<!notebooks )(?<!Notebook )(?<!Notebooks )"
                         rf"(?:{NUM})\s+(?:of\s+(?:the\s+)?(?:{NUM})\s+)?(?:[A-Za-z][\w/-]*\s+){{0,2}}?(?:{NOUNS})\b"
                         r"|\bn = \d", re.I)
TYPED_TIME = re.compile(r"\b\d[\d,]*(?:\.\d+)?\s?(?:ms|s|sec|seconds?|min|minutes?|h|hours?|microseconds?)\b"
                        r"|\b\d+-(?:minute|hour|second)\b")
PAPERS_OWN = re.compile(r"§\d|\bthe code\b|\bauthors'|github\.com/|\bas printed\b|"
                        r"\b(?:the|its|each|a) paper(?:'s)?(?!\s+(?:profile|setting))\b", re.I)
PAPERS_PARAGRAPH = ("**In the paper setting**", "**The paper's claim", "**The papers' claim")
EARLIER_RUN = re.compile(r"\bcommit `?[0-9a-f]{7,40}\b|\([0-9a-f]{7,40}\)")
SCHEDULE = re.compile(r"^#.*\(\d+ min(?:utes)?\)$|\b\d+-minute (?:class|lab)\b", re.M)


def typed_numbers(text: str) -> list[str]:
    """The sentences of ``text`` that type a count or a time outside the declared exceptions (module docstring)."""
    found = []
    for para in re.split(r"\n\s*\n", SCHEDULE.sub("", text)):
        if para.lstrip().startswith(PAPERS_PARAGRAPH):
            continue
        for s in re.split(r"(?<=[.!?])\s+(?=[-*`(\[A-Z0-9])|\n(?=\s*[-*] )", para):
            if EARLIER_RUN.search(s):
                continue
            if any((TYPED_COUNT.search(c) or TYPED_TIME.search(c)) and not PAPERS_OWN.search(c)
                   for c in re.split(r";\s+", s)):
                found.append(" ".join(s.split())[:200])
    return found


def hand_written() -> dict[str, str]:
    """Every hand-written text the results page can contradict, by where it is."""
    root = project_root()
    texts = {f"notebooks/{nb.name} (markdown)": "\n\n".join(
        "".join(c["source"]) for c in json.loads(nb.read_text())["cells"] if c["cell_type"] == "markdown")
        for nb in sorted((root / "notebooks").glob("[0-9][0-9]_*.ipynb"))}
    texts |= {str(p.relative_to(root)): p.read_text() for p in sorted((root / "src/sumjudge/papers").glob("*/README.md"))}
    texts["docs/profiles.md"] = (root / "docs" / "profiles.md").read_text()
    smoke = (root / "src" / "sumjudge" / "profiles" / "smoke.yaml").read_text().splitlines()
    texts["src/sumjudge/profiles/smoke.yaml (comments)"] = "\n".join(line.split("#", 1)[1] if "#" in line else ""
                                                                    for line in smoke)
    texts["README.md (outside its generated blocks)"] = BLOCK.sub("", (root / "README.md").read_text())
    return texts


def test_no_hand_written_text_types_a_count_or_a_time_the_page_gives():
    typed = [f"{where}: {s}" for where, text in hand_written().items() for s in typed_numbers(text)]
    assert not typed, ("typed counts or times (name the setting, link to the results page, or generate the number "
                       "into a README block):\n" + "\n".join(typed))


@pytest.mark.parametrize("planted", [
    "Under the smoke profile MESA assesses one error type on 4 meeting summaries.",
    "The arena compares six judges on QAGS-XSum.",
    "The single-agent three steps reached step 3 on 4 of the 8 summaries (n = 4).",
    "The latest run took 89 min 13 s on 2 cores.",
    "- DEBATE: one iteration on 32 Topical-Chat responses; the ablation grid as printed.",
])
def test_a_planted_typed_number_fails(planted):
    assert typed_numbers(f"Intro.\n\n{planted}\n") == [" ".join(planted.split())[:200]]
    readme = (project_root() / "README.md").read_text()
    assert typed_numbers(BLOCK.sub("", readme) + f"\n\n{planted}\n")  # the same check fails on the README


@pytest.mark.parametrize("allowed", [
    "The paper reports 75.1 BAcc on 267 summaries (Table 3).",
    "**In the paper setting** (`profile=paper`), `sumjudge plan` counts 267 model calls: about 2 minutes.",
    "An earlier smoke page (commit 65847bc) showed MADISSE on 12 summaries.",
    "## Part A · Reading a results table (25 min)",
    "Measured 2026-11-26 on 2 AMD EPYC cores with torch==2.13.0 and a 0.5B model.",
    "Notebook 20 runs both; Table 2 runs are skipped.",
])
def test_the_declared_exceptions_pass(allowed):
    assert typed_numbers(allowed) == []


def test_the_readme_counts_a_judge_read_two_ways_once(tmp_path):
    (tmp_path / "provenance.json").write_text(json.dumps({"notebooks": {"50_judge_arena": {
        "commit": "abcdef0123", "check": {"state": "recorded"}}}}))
    head = "| dataset | judge | n | bacc | bacc_ci_low | bacc_ci_high | prompt_tokens_per_example |\n|---|---|---|---|---|---|---|\n"
    (tmp_path / "50_judge_arena.md").write_text(
        "# 50\n\n## arena\n\n" + head + "| qags-xsum | zero-shot | 20 | 0.45 | 0.25 | 0.65 | 1370 |\n"
        "| qags-xsum | factax | 20 | 0.55 | 0.35 | 0.75 | 1100 |\n"
        "| qags-xsum | zero-shot[prompts=printed] | 20 | 0.45 | 0.25 | 0.65 | 1110 |\n")
    text = render("<!-- generated: arena -->\n<!-- end generated -->\n", tmp_path)
    assert "recorded): 2 judges (zero-shot[prompts=printed] beside its judge: 3 rows) on qags-xsum." in text
