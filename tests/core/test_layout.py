"""The package's shape: a core that names no paper, one folder per paper that imports no other paper."""

import ast
import re
from pathlib import Path

import sumjudge
from sumjudge.papers import LEADERBOARDS, PAPERS

PKG = Path(sumjudge.__file__).parent
# The core: the engine, runs, metrics, reports, notebooks' helpers, the command line, the methods' registry, the
# pieces judges share, the profiles' code and the data layer (records, loaders, the taxonomies' registry). Not in it:
# papers/ (each paper's own) and the profiles' YAML files (a profile sets each paper's runs by method name).
ROOMS = ("llm", "prompts", "judges", "profiles", "data", "run", "results", "reproduce", "perf", "classroom", "cli")
CORE = sorted([*PKG.glob("*.py"), *(f for room in ROOMS for f in PKG.glob(f"{room}/*.py"))])
# a paper named as such (any case of MADISSE, MESA, FacTax; DEBATE in capitals or as the method "debate")
PAPER_NAME = re.compile(r"(?i:madisse|mesa|factax)|\bDEBATE\b|[\"']debate[\"'/]")
# where a file comes from: a repository's address, or a quoted path with a folder (the layout of data/raw and of the
# mirror, which follow the publishers' repositories). A loader may cite its source; nothing else may name a paper.
PROVENANCE = re.compile(r"github\.com/\S+|f?\"[^\"]*/[^\"]*\"|f?'[^']*/[^']*'")


def _paper_names(f: Path) -> dict[str, str]:
    data = f.parent.name == "data"
    return {f"{f.relative_to(PKG)}:{i}": line.strip() for i, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1)
            if PAPER_NAME.search(PROVENANCE.sub("", line) if data else line)}


def test_the_core_names_no_paper():
    assert len(CORE) > 30 and PKG / "data" / "loaders.py" not in CORE and PKG / "data" / "tofueval.py" in CORE
    found = {k: v for f in CORE for k, v in _paper_names(f).items()}
    assert found == {}


def test_a_data_module_may_cite_its_sources_only():
    assert not PAPER_NAME.search(PROVENANCE.sub("", 'X = "madisse/sample_data.json"  # github.com/amazon-science/madisse'))
    for line in ("MESA_TYPES = (", "# converted to FacTax's five types", 'f"{_MADISSE}"'):
        assert PAPER_NAME.search(PROVENANCE.sub("", line)), line


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
    assert folders == set(PAPERS) | set(LEADERBOARDS)  # a new folder is listed, so the layout tests cover it
    for board in LEADERBOARDS:  # a leaderboard's judge: its notes and its prompt, no paper tables
        assert (PKG / "papers" / board / "README.md").is_file() and any((PKG / "papers" / board / "prompts").glob("*.txt"))
    for paper in PAPERS:
        d = PKG / "papers" / paper
        for part in ("README.md", "results.yaml", "protocol.py", "tables.py"):
            assert (d / part).is_file(), f"papers/{paper}/{part}"
        assert any((d / "prompts").glob("*.txt")), f"papers/{paper}/prompts"


def _module_graph() -> dict[str, set[str]]:
    """Every module of the package -> the package's modules it imports (at the top or inside a function; imports
    under ``if TYPE_CHECKING:`` aside). ``from .x import y`` points at the module ``x.y`` where there is one, else
    at ``x``; a package is its ``__init__``."""
    modules = {}
    for f in PKG.rglob("*.py"):
        rel = f.relative_to(PKG.parent).with_suffix("")
        name = ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
        modules[name] = f
    graph = {}
    for name, f in modules.items():
        is_pkg = f.name == "__init__.py"
        package = name.split(".") if is_pkg else name.split(".")[:-1]
        tree = ast.parse(f.read_text(encoding="utf-8"))
        skip = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
                for n in ast.walk(node)}
        deps = set()
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            if isinstance(node, ast.ImportFrom):
                base = package[: len(package) - node.level + 1] if node.level else []
                mod = ".".join(base + ([node.module] if node.module else []))
                for a in node.names:
                    deps.add(f"{mod}.{a.name}" if f"{mod}.{a.name}" in modules else mod)
            elif isinstance(node, ast.Import):
                deps |= {a.name for a in node.names}
        graph[name] = {d for d in deps if d in modules and d != name}
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    import sys

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_circle_among_the_packages_modules():
    graph = _module_graph()
    assert len(graph) > 60 and "sumjudge.judges.base" in graph["sumjudge.judges.aspects"]
    assert _circles(graph) == []


def test_the_entry_points_read_the_methods_registry_not_the_judges_package():
    """Method lookup lives in one module (``run/methods.py``); the judges' package face imports nothing (importing a judge's
    helper never loads the registry, and the registry never loads a judge)."""
    graph = _module_graph()
    assert graph["sumjudge.judges"] == set()
    for entry in ("run.runs", "notebook", "arena", "results.parse_rates"):
        assert "sumjudge.run.methods" in graph[f"sumjudge.{entry}"], entry
    assert not {d for d in graph["sumjudge.run.methods"] if d.startswith(("sumjudge.papers", "sumjudge.judges"))}
    assert not {d for d in graph if d.startswith("sumjudge.judges") and "sumjudge.run.methods" in graph[d]}


def test_the_rooms_import_each_other_in_no_circle():
    """Drawn by folder (each subpackage one part, each top-level module one part), the package has no circle: a
    room is above every room it imports."""
    graph = _module_graph()
    room = {m: ".".join(m.split(".")[:2]) for m in graph}
    rooms: dict[str, set[str]] = {}
    for m, deps in graph.items():
        rooms.setdefault(room[m], set()).update(room[d] for d in deps if room[d] != room[m])
    assert len(rooms) <= 26 and {"sumjudge.run", "sumjudge.results", "sumjudge.reproduce"} <= set(rooms)
    assert _circles(rooms) == []


def test_the_circle_finder_sees_a_circle():
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_backends_are_named_in_one_registry():
    """The command line's --backend choices, make_backend and the docs' list all read llm.backend_registry.BACKENDS."""
    import argparse

    from sumjudge.cli.main import build_parser
    from sumjudge.llm.backend_registry import BACKENDS

    choices = {}
    for name, sp in next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)).choices.items():
        for act in sp._actions:
            if "--backend" in act.option_strings:
                choices[name] = tuple(act.choices)
    assert {"run", "arena", "learn-guidelines", "mesa-feedback", "cache", "bench"} <= set(choices)
    assert all(c == tuple(BACKENDS) for n, c in choices.items() if n != "bench")
    assert choices["bench"] == tuple(n for n, b in BACKENDS.items() if b.serves_a_model)
    engine_doc = (PKG.parent.parent / "docs" / "engine.md").read_text(encoding="utf-8")
    assert f"backend ({' | '.join(BACKENDS)})" in engine_doc
    source = "\n".join(f.read_text(encoding="utf-8") for f in PKG.rglob("*.py") if f.name != "backend_registry.py")
    assert '"hf", "openai"' not in source and "('hf', 'openai'" not in source  # no second list of the names


def test_environment_variables_are_listed_and_read_in_one_place():
    """Every SUMJUDGE_* name the package uses is listed in environment.VARIABLES with its purpose, only
    environment.py reads os.environ for one (a command may set one for the notebooks it starts), and docs/command-line.md lists them as the module says."""
    from sumjudge.environment import VARIABLES

    used, readers = set(), []
    for f in PKG.rglob("*.py"):
        text = f.read_text(encoding="utf-8")
        used |= set(re.findall(r"SUMJUDGE_[A-Z_]+", text))
        if f.name != "environment.py" and re.search(r"environ\.get\(\s*[\"']SUMJUDGE_|environ\[\s*[\"']SUMJUDGE_\w+[\"']\](?!\s*=)|getenv\(",
                                                     text):
            readers.append(str(f.relative_to(PKG)))
    assert used == set(VARIABLES) and readers == []
    doc = (PKG.parent.parent / "docs" / "command-line.md").read_text(encoding="utf-8")
    assert all(f"| `{k}` | {v} |" in doc for k, v in VARIABLES.items())
    assert set(re.findall(r"\| `(SUMJUDGE_[A-Z_]+)` \|", doc)) == set(VARIABLES)


def test_every_papers_config_shares_the_generation_settings():
    """One declaration of the generation settings (``judges.settings.Generation``): every paper's method config
    subclasses it, and none declares a generation field again unless it changes its default or type."""
    import dataclasses

    from sumjudge.judges.settings import Generation
    from sumjudge.run.methods import methods

    shared = {f.name: f for f in dataclasses.fields(Generation)}
    specs = [s for s in methods().values() if s.paper in PAPERS]
    assert len(specs) > 15
    for spec in specs:
        assert issubclass(spec.config_cls, Generation), spec.name
        for klass in spec.config_cls.__mro__:
            if klass is Generation or not dataclasses.is_dataclass(klass):
                continue
            for name in set(vars(klass).get("__annotations__", {})) & set(shared):
                parent = next(k for k in klass.__mro__[1:] if dataclasses.is_dataclass(k)
                              and name in {f.name for f in dataclasses.fields(k)})
                before = {f.name: f for f in dataclasses.fields(parent)}[name]
                now = {f.name: f for f in dataclasses.fields(klass)}[name]
                assert (now.default, now.type) != (before.default, before.type), f"{klass.__name__}.{name} said again"


def test_the_papers_import_no_entry_point():
    """The papers sit between the judges and the entry points: they import the core's lower parts (runs, judges,
    data, the engine), never a command, a notebook's session or a report that imports them."""
    graph = _module_graph()
    entry = {f"sumjudge.{m}" for m in ("cli.main", "notebook", "run.notebooks", "arena", "reproduce.record", "perf.plan",
                                       "perf.scale", "perf.bench", "results.page", "reproduce.check", "reproduce.drift",
                                       "reproduce.readme_numbers")}
    assert entry <= set(graph)
    assert {m: sorted(d & entry) for m, d in graph.items() if m.startswith("sumjudge.papers") and d & entry} == {}
    command_line = {m for m in graph if m == "sumjudge.cli" or m.startswith("sumjudge.cli.")}  # argparse: the command line's own
    assert {m: sorted(d & command_line) for m, d in graph.items() if m.startswith("sumjudge.papers") and d & command_line} == {}


def test_run_names_no_papers_example_kind_or_task():
    """The kinds of method a paper registers for its own task (``run.metrics.KINDS``: MADISSE's ambiguity detection,
    MESA's meeting errors), with their metrics, checks and example types, are the paper's: run/ looks a kind up and
    names none of them."""
    from sumjudge.run.metrics import KINDS

    papers = {name for name, kind in KINDS.all().items() if kind.metrics.__module__.startswith("sumjudge.papers.")}
    assert {"ambiguity", "meeting-errors"} <= papers and not {"faithfulness", "rated"} & papers
    words = papers | {n.replace("-", "_") for n in papers} | {"MeetingErrorExample"}
    found = {f"{f.relative_to(PKG)}:{i}": line.strip() for f in sorted((PKG / "run").glob("*.py"))
             for i, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1)
             if any(w.lower() in line.lower() for w in words)}
    assert found == {}


def test_the_data_layer_imports_no_paper():
    """Nothing the data layer imports, directly or through the modules it imports, is a paper's (the taxonomies its
    records are converted to are its own), and it never asks the registry to import the plug-in packages (each of
    its registries is closed: ``plugins=False``; no ``discover``). tests/core/data/test_no_paper_imported.py loads
    every dataset in a fresh interpreter and finds no paper imported."""
    graph = _module_graph()
    data = sorted(m for m in graph if m == "sumjudge.data" or m.startswith("sumjudge.data."))
    assert {"sumjudge.data.taxonomies", "sumjudge.data.error_taxonomy", "sumjudge.data.ambiguity_taxonomy"} <= set(data)
    reached, todo = set(), list(data)
    while todo:
        for dep in graph[todo.pop()] - reached:
            reached.add(dep)
            todo.append(dep)
    assert sorted(m for m in reached if m.startswith("sumjudge.papers")) == []
    opened = []
    for f in sorted((PKG / "data").glob("*.py")):
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            name = ast.unparse(node.func)
            closed = any(k.arg == "plugins" and isinstance(k.value, ast.Constant) and k.value.value is False
                         for k in node.keywords)
            if name.endswith("discover") or name.endswith("import_module") or (name.endswith("Registry") and not closed):
                opened.append(f"{f.relative_to(PKG)}:{node.lineno} {ast.unparse(node)}")
    assert opened == []


# Strings that spell another paper's name for something of the paper's own, not a use (file, string): why.
NOT_A_USE = {
    ("papers/madisse/tables.py", "debate"): "the column of MADISSE's own debate label in its session table",
}


def _names_by_owner() -> dict[str, str]:
    """Every name a paper (or leaderboard) owns -> its folder: its registered methods, its prompt templates
    ("paper/stem") and the rated aspects ("dataset/aspect") whose templates it registers."""
    from sumjudge.judges.aspects import TEMPLATES
    from sumjudge.run.methods import methods

    owner = {name: spec.paper for name, spec in methods().items()}
    for folder in (*PAPERS, *LEADERBOARDS):
        owner |= {f"{folder}/{t.stem}": folder for t in (PKG / "papers" / folder / "prompts").glob("*")}
    owner |= {f"{dataset}/{name}": template.split("/")[0] for dataset, by_name in TEMPLATES.items()
              for name, template in by_name.items()}
    return owner


def _uses_of_others(folder: str, owner: dict[str, str], package: Path = PKG) -> dict[tuple[str, str], list[str]]:
    """(other paper, name) -> where ``folder``'s code names it: a string that is the name or holds a "paper/stem"
    name, or a call that reads a rated aspect (``aspect("dataset", "name")``, ``consistency_aspect()``)."""
    found: dict[tuple[str, str], list[str]] = {}
    for f in sorted((package / "papers" / folder).rglob("*.py")):
        rel = str(f.relative_to(package))
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            names: list[str] = []
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                names = [node.value, *re.findall(r"\b[a-z_]+/[\w.-]+", node.value)]
            elif isinstance(node, ast.Call):
                called = ast.unparse(node.func).rsplit(".", 1)[-1]
                args = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
                if called == "consistency_aspect":
                    names = ["summeval/consistency"]
                elif called == "aspect" and len(args) >= 2:
                    names = [f"{args[0]}/{args[1]}"]
            for name in names:
                other = owner.get(name)
                if other and other != folder and (rel, name) not in NOT_A_USE:
                    found.setdefault((other, name), []).append(f"{rel}:{node.lineno}")
    return found


def test_a_paper_uses_another_papers_names_only_as_declared():
    """A paper reaches another paper's methods, templates and aspects only by a name ``papers.USES`` declares (and
    never by an import: test_no_paper_imports_another_papers_code); every declared use is made."""
    from sumjudge.papers import USES

    owner = _names_by_owner()
    assert {"zero-shot": "madisse", "debate/g1_scorer": "debate", "summeval/consistency": "debate"}.items() <= owner.items()
    undeclared, made = {}, set()
    for folder in (*PAPERS, *LEADERBOARDS):
        for (other, name), where in _uses_of_others(folder, owner).items():
            if name in USES.get(folder, {}).get(other, ()):
                made.add((folder, other, name))
            else:
                undeclared[f"{folder} uses {other}'s {name!r}"] = where
    assert undeclared == {}
    declared = {(folder, other, name) for folder, by_other in USES.items() for other, names in by_other.items()
                for name in names}
    assert {d for d in declared if owner.get(d[2]) != d[1]} == set()  # each declared name is the other paper's
    assert declared - made == set()  # no declaration outlives its use
    for (rel, name), why in NOT_A_USE.items():
        assert f'"{name}"' in (PKG / rel).read_text(encoding="utf-8"), (rel, name, why)


def test_the_use_scan_sees_an_undeclared_use(tmp_path):
    """A paper that names another paper's method, template or aspect is found (its own names are not)."""
    folder = tmp_path / "papers" / "mesa"
    folder.mkdir(parents=True)
    (folder / "x.py").write_text('RUN = ("cot", "self-consistency")\nT = "debate/g1_scorer"\nA = aspect("summeval", '
                                 '"fluency")\nB = consistency_aspect()\nOWN = "mesa-g-eval"\n', encoding="utf-8")
    assert set(_uses_of_others("mesa", _names_by_owner(), tmp_path)) == {("madisse", "cot"), ("madisse", "self-consistency"),
                                                   ("debate", "debate/g1_scorer"), ("debate", "summeval/fluency"),
                                                   ("debate", "summeval/consistency")}
