"""Each paper's printed values (its ``results.yaml``) and the model its tables come from (``model`` there), and
whether a notebook runs in the paper's own setting: the ``paper`` profile on whole datasets, with the paper's model.
Only there does a table show ours minus the paper's number (``report.comparison``'s ``difference``); anywhere else
such a difference mixes the method with another model and a subset, and says nothing of the paper's claim.

The core names no paper: the papers are the folders of ``sumjudge.papers`` that print values (a ``results.yaml``).
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib.resources import files
from typing import Any, Iterable

import yaml

from sumjudge.paths import project_root

PAPER_PROFILE = "paper"  # the profile that runs the papers' whole datasets


@lru_cache(maxsize=None)
def paper_results(paper: str) -> dict[str, Any]:
    f = files("sumjudge").joinpath("papers", paper, "results.yaml")  # read as a file: no paper imported
    return yaml.safe_load(f.read_text())


@lru_cache(maxsize=None)
def papers() -> tuple[str, ...]:
    """The papers whose printed values the project holds (their folder names, sorted)."""
    papers_folder = files("sumjudge").joinpath("papers")  # read as files: importing the package would register them all
    return tuple(sorted(d.name for d in papers_folder.iterdir() if d.joinpath("results.yaml").is_file()))


def paper_model(paper: str) -> dict[str, Any]:
    """The judge model of the paper's tables, as its ``results.yaml`` records it (paper, name, parameters, ids,
    others)."""
    return paper_results(paper).get("model") or {}


@lru_cache(maxsize=None)
def paper_of(notebook: str) -> str | None:
    """The paper whose numbers a notebook's tables print beside its own: the paper its name carries
    (``10_<paper>_main``), else the one paper whose tables it imports (the quickstart's); None for a notebook of
    several papers or of none (the datasets, the arena, the lab)."""

    named = [p for p in papers() if p in notebook.split("_")]
    if named:
        return named[0]
    try:
        text = (project_root() / "notebooks" / f"{notebook}.ipynb").read_text(encoding="utf-8")
    except OSError:
        return None
    used = [p for p in papers() if re.search(rf"sumjudge\.papers\.{p} import tables\b", text)]
    return used[0] if len(used) == 1 else None


def is_papers_model(paper: str | None, model: str | None) -> bool:
    """Whether ``model`` (as an engine names it) is the judge model of ``paper``'s tables."""
    if not paper or not model:
        return False
    m = paper_model(paper)
    return model.lower() in {x.lower() for x in [m.get("name") or "", *(m.get("ids") or [])] if x}


def answered_by_papers_model(paper: str | None, models: Iterable[str | None]) -> bool:
    """Whether every model that answered (at least one) is ``paper``'s."""
    models = list(models)
    return bool(models) and all(is_papers_model(paper, m) for m in models)


def papers_setting(profile: str, paper: str | None, models: Iterable[str | None]) -> bool:
    """The paper's own setting: the ``paper`` profile, and every model that answered is the paper's."""
    return profile == PAPER_PROFILE and answered_by_papers_model(paper, models)


def session_is_papers_setting(session: Any) -> bool:
    """Whether a notebook's session (``notebook.Session``) runs in the paper's setting: the model that runs the
    notebook's paper is the paper's, on the paper profile's whole datasets (no ``n`` cap)."""
    if session is None:
        return False
    paper = paper_of(session.notebook)
    prof = session.prof
    return bool(paper) and prof.n is None and papers_setting(prof.name, paper, [prof.engine_for(paper)[1]])
