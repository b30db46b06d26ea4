"""The package's shape: a core that names no paper, one folder per paper that imports no other paper."""

import ast
import re
from pathlib import Path

import sumjudge
from sumjudge.papers import PAPERS

PKG = Path(sumjudge.__file__).parent
# The core: the engine, runs, metrics, reports, notebooks' helpers, the command line and what every judge
# builds on. Not in it: papers/ (each paper's own), judges/ other than base and settings (the shared
# judges name the paper whose prompt they send), data/ (loaders cite the papers that published the data)
# and profiles/ (a profile sets each paper's runs by method name).
CORE = sorted([*PKG.glob("*.py"), *PKG.glob("llm/*.py"), *PKG.glob("prompts/*.py"),
               PKG / "judges" / "base.py", PKG / "judges" / "settings.py"])
# a paper named as such (any case of MADISSE, MESA, FacTax; DEBATE in capitals or as the method "debate")
PAPER_NAME = re.compile(r"(?i:madisse|mesa|factax)|\bDEBATE\b|[\"']debate[\"'/]")


def test_the_core_names_no_paper():
    assert len(CORE) > 15
    found = {str(f.relative_to(PKG)): line.strip() for f in CORE
             for line in f.read_text(encoding="utf-8").splitlines() if PAPER_NAME.search(line)}
    assert found == {}


def test_the_grep_would_see_a_paper_name():
    for line in ('if method == "madisse":', "# MESA's Table 3", "FacTax", 'get_method("debate")', "DEBATE Table 1"):
        assert PAPER_NAME.search(line), line
    assert not PAPER_NAME.search("the agents of a debate over one document")


def _imports(f: Path) -> list[str]:
    """Absolute module names ``f`` imports (relative imports resolved against its package)."""
    rel = f.relative_to(PKG.parent).with_suffix("")
    package = list(rel.parts[:-1]) if rel.name != "__init__" else list(rel.parts[:-1])
    out = []
    for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            mod = ".".join(base + ([node.module] if node.module else []))
            out += [mod] if node.module else [f"{mod}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            out += [a.name for a in node.names]
    return out


def test_no_paper_imports_another_papers_code():
    bad = []
    for paper in PAPERS:
        for f in (PKG / "papers" / paper).rglob("*.py"):
            for mod in _imports(f):
                other = re.match(r"sumjudge\.papers\.(\w+)", mod)
                if other and other.group(1) != paper:
                    bad.append(f"{f.relative_to(PKG)} imports {mod}")
    assert bad == []


def test_the_core_does_not_import_a_papers_internals():
    """The core reaches the papers only through the package (registration, their commands), never a module."""
    bad = [f"{f.relative_to(PKG)} imports {mod}" for f in CORE for mod in _imports(f)
           if re.match(r"sumjudge\.papers\.\w+", mod)]
    assert bad == []


def test_every_paper_folder_holds_its_own_parts():
    folders = {d.name for d in (PKG / "papers").iterdir() if d.is_dir() and not d.name.startswith("_")}
    assert folders == set(PAPERS)  # a new paper folder is listed, so the layout tests cover it
    for paper in PAPERS:
        d = PKG / "papers" / paper
        for part in ("README.md", "results.yaml", "protocol.py", "tables.py"):
            assert (d / part).is_file(), f"papers/{paper}/{part}"
        assert any((d / "prompts").glob("*.txt")), f"papers/{paper}/prompts"
