"""Every numbered notebook: committed without outputs, parameterised, and executed headlessly by papermill
with the ``ci`` profile (tiny local model), so no notebook can rot."""

import json
import re
from pathlib import Path

import nbformat
import pytest
from conftest import needs_mirror

from sumjudge import reproduce
from sumjudge.data import sources
from sumjudge.paths import project_root

NOTEBOOKS = reproduce.notebooks()
COMMON_PARAMETERS = ("profile", "backend", "model", "base_url", "n", "seed")


def test_there_are_notebooks():
    assert [nb.name for nb in NOTEBOOKS][:1] == ["00_quickstart.ipynb"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_committed_clean_and_parameterised(path: Path):
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(not c.outputs and c.execution_count is None for c in code), "commit notebooks without outputs"
    params = [c for c in code if "parameters" in c.metadata.get("tags", [])]
    assert len(params) == 1
    for name in COMMON_PARAMETERS:
        assert f"\n{name} = " in "\n" + params[0].source
    first = nb.cells[0]
    assert first.cell_type == "markdown" and first.source.startswith(f"# {path.name[:2]} · ")
    assert re.search(r"\*\*The paper(?:'s|s') claims?\b", first.source), "open with the paper's claim, in bold"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_saved_table_has_a_reading_guide_beside_it(path: Path):
    """Course material: each table a notebook saves comes with "How to read" in the markdown just before
    or just after the cell that writes it."""
    cells = nbformat.read(path, as_version=4).cells
    written = sum(c.source.count("save_table(") for c in cells if c.cell_type == "code")
    missing, seen = [], 0
    for i, c in enumerate(cells):
        for name in re.findall(r"report\.save_table\([^,]+,\s*NOTEBOOK,\s*f?\"([^\"]+)\"", c.source) if c.cell_type == "code" else []:
            near = [cells[j] for j in (i - 1, i + 1) if 0 <= j < len(cells) and cells[j].cell_type == "markdown"]
            seen += 1
            if not any("How to read" in m.source for m in near):
                missing.append(name)
    assert seen == written, "a save_table call this test does not read"
    assert missing == []


@pytest.mark.slow
@needs_mirror
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_runs_with_the_ci_profile(path: Path, tmp_path, monkeypatch):
    mirror = sources.mirror_dir()
    home = tmp_path / "home"
    monkeypatch.setenv("SUMJUDGE_HOME", str(home))  # runs, cache, figures of this test stay in tmp
    monkeypatch.setenv("SUMJUDGE_DATA_MIRROR", str(mirror))
    monkeypatch.setenv("SUMJUDGE_MODELS", str(project_root() / "data" / "models"))
    out = reproduce.execute(path, "ci", tmp_path / "executed")
    executed = nbformat.read(out, as_version=4)
    assert not [o for c in executed.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    figures = home / "figures" / path.stem
    assert any(figures.glob("*.csv")), f"{path.name} wrote no table to figures/{path.stem}/"
    runs = home / "build" / "runs" / path.stem
    if any(runs.glob("*/*/metrics.json")):  # a notebook that ran something says where its time went
        profiles = [p for f in runs.glob("*/time_profile.json") for p in json.loads(f.read_text())]
        assert profiles and all(p["calls"] >= p["backend_calls"] >= 0 and p["waves"] >= 0 for p in profiles)
