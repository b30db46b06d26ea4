"""Replay: a notebook run against its recorded answers (``llm.recording``) instead of a model.

``make reproduce REPLAY=1`` executes every notebook with ``SUMJUDGE_REPLAY`` naming the results page
(``figures/results-<profile>/``): each ``notebook.Session`` then answers from ``<page>/<notebook>/answers.jsonl.xz``,
loads no weights and calls no model, writes its run folders under ``build/replay/runs/`` and its tables and figures
under ``build/replay/figures/`` (``SUMJUDGE_FIGURES``), where ``results_check`` compares them with the page.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .environment import read

ANSWERS = "answers.jsonl.xz"  # beside a notebook's results page
ANSWERS_PLAIN = "answers.jsonl"  # what a notebook writes under figures/<notebook>/ as it runs
REPLAY_ENV = "SUMJUDGE_REPLAY"


def replay_from_env() -> str | None:
    """The results page a replayed notebook answers from (``SUMJUDGE_REPLAY``, set by ``make reproduce
    REPLAY=1`` for the notebooks it executes), or None."""
    return read(REPLAY_ENV)


def model_label(model: str | None) -> str:
    """A model as a recording names it: a local folder by its folder name (a run folder's path differs between a
    recording and its replay, and between machines), anything else as given."""
    if not model:
        return ""
    p = Path(model)
    return p.name if (p.is_absolute() or p.exists()) and p.name else model


def replay_llm(recording, backend: str, model: str | None, base_url: str | None, options: dict[str, Any]):
    """An engine answering from ``recording`` as its recorded engine (backend, model and options as now) did."""
    from .llm.engine import LLM
    from .llm.recording import MemoryCache

    engine = recording.engine_for(backend, model_label(model), base_url, options)
    return LLM(recording.backend(engine), cache=MemoryCache(), parse_retries=options.get("parse_retries", 2))
