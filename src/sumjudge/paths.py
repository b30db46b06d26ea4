"""Project folders. Everything generated lives under ``data/`` (git-ignored) of the project root.

The root is ``SUMJUDGE_HOME`` when set, else the checkout this package was installed from
(editable install), else the working directory. So a notebook run from ``notebooks/`` and the
CLI run from the root share one cache, one model folder and one data folder.
"""

from __future__ import annotations

from pathlib import Path

from sumjudge.environment import read


def project_root() -> Path:
    env = read("SUMJUDGE_HOME")
    if env:
        return Path(env).resolve()
    return checkout_root() or Path.cwd()


def checkout_root() -> Path | None:
    """The checkout this package was installed from (an editable install or the source tree), whatever
    ``SUMJUDGE_HOME`` says; None for an installed wheel."""
    here = Path(__file__).resolve().parents[2]
    if (here / "pyproject.toml").exists() and (here / "src" / "sumjudge").is_dir():
        return here
    return None


def data_dir() -> Path:
    return project_root() / "data"


def cache_path() -> Path:
    return Path(read("SUMJUDGE_CACHE") or data_dir() / "cache" / "llm_cache.sqlite")


def models_dir() -> Path:
    return Path(read("SUMJUDGE_MODELS") or data_dir() / "models")


def runs_dir() -> Path:
    """Where notebooks keep their run folders (``SUMJUDGE_RUNS``, default ``build/runs``)."""
    return Path(read("SUMJUDGE_RUNS") or project_root() / "build" / "runs")


def raw_dir() -> Path:
    return Path(read("SUMJUDGE_DATA_RAW") or data_dir() / "raw")


def figures_dir() -> Path:
    """Where notebooks write their tables and figures (``SUMJUDGE_FIGURES``: elsewhere, e.g. a planned notebook's)."""
    return Path(read("SUMJUDGE_FIGURES") or project_root() / "figures")
