"""The results page make reproduce writes: one page per notebook with its own saved tables and figures, an index
with the provenance."""

import hashlib
import json

from sumjudge import reproduce
from sumjudge.results_page import weights_sha256, write_results_page


def test_the_page_holds_each_notebooks_tables_and_figures_and_the_index_its_provenance(tmp_path):
    figures = tmp_path / "figures"
    nb = reproduce.notebooks("50")[0]
    (figures / nb.stem).mkdir(parents=True)
    (figures / nb.stem / "arena.md").write_text("| judge | bacc |\n|---|---|\n| zero-shot | 0.55 |\n")
    (figures / nb.stem / "arena.csv").write_text("judge,bacc\nzero-shot,0.55\n")
    (figures / nb.stem / "pareto.png").write_bytes(b"\x89PNG fake")
    (figures / "parse_rates_smoke.md").write_text("# Parse rates\n\n| method | first try |\n|---|---|\n| cot | 0.9 |\n")
    walls = [{"notebook": nb.stem, "wall_s": 61.2, "status": "ok"}]
    index = write_results_page("smoke", [nb], walls + [{"notebook": "51_your_own_judge", "wall_s": 58.8, "status": "ok"}],
                               figures, time_rows=[{"notebook": nb.stem, "calls": 30, "backend_calls": 12},
                                                   {"notebook": nb.stem, "calls": 5, "backend_calls": 0}],
                               run={"wall_s": 90.0, "jobs": 3})
    text = index.read_text()
    # the run's own wall time, not the sum of notebooks that ran side by side
    assert "- wall time: 1.5 min for the whole run" in text and "3 notebooks at a time" in text
    assert "add up to 2.0 min: they overlap" in text
    assert f"[{nb.stem}]({nb.stem}.md) | 61 | ok | 35 | 12 |" in text and "response cache" not in text and "| cot | 0.9 |" in text and "- commit: `" in text
    page = (index.parent / f"{nb.stem}.md").read_text()
    assert page.startswith("# 50 · Judge arena") and "| zero-shot | 0.55 |" in page
    assert f"![pareto]({nb.stem}/pareto.png)" in page and (index.parent / nb.stem / "pareto.png").exists()
    assert page.index("## arena") < page.index("## pareto")  # in the order the notebook saved them
    prov = json.loads((index.parent / "provenance.json").read_text())
    assert prov["profile"] == "smoke" and prov["notebooks"][0]["backend_calls"] == 12 and prov["machine"]["cores"] >= 1
    replay = write_results_page("smoke", [nb], walls, figures, time_rows=[{"notebook": nb.stem, "calls": 35,
                                                                          "backend_calls": 0}])
    assert "1 of 1 notebooks made no backend call" in replay.read_text()


def test_weights_are_named_by_their_sha256(tmp_path):
    (tmp_path / "model.safetensors").write_bytes(b"weights")
    (tmp_path / "config.json").write_text("{}")
    assert weights_sha256(tmp_path) == {"model.safetensors": hashlib.sha256(b"weights").hexdigest()}
