"""Replay: a notebook run against its recorded answers (``llm.recording``) instead of a model.

``make reproduce REPLAY=1`` executes every notebook with ``SUMJUDGE_REPLAY`` naming the results page
(``figures/results-<profile>/``): each ``notebook.Session`` then answers from ``<page>/<notebook>/answers.jsonl.xz``,
loads no weights and calls no model, writes its run folders under ``build/replay/runs/`` and its tables and figures
under ``build/replay/figures/`` (``SUMJUDGE_FIGURES``), where ``reproduce.check`` compares them with the page.

``make lab REPLAY=1`` (docs/explore.md) opens the notebooks in JupyterLab on the same answers. A notebook run by hand
has no parameters injected, so its ``Session`` sets the parameters the profile gives that notebook, as the recording
ran it (``set_recorded_parameters``); and with ``SUMJUDGE_REPLAY_ASK`` set, a request the recording does not hold (a
changed prompt or parameter) is asked of a real engine (``Ask``), only that request, instead of stopping the notebook.
"""

from __future__ import annotations

import asyncio
import copy
from pathlib import Path
from typing import Any

from sumjudge.environment import read
from sumjudge.errors import ConfigError
from sumjudge.llm import BACKENDS, make_llm
from sumjudge.llm.engine import LLM
from sumjudge.llm.recording import MemoryCache
from sumjudge.paths import project_root
from sumjudge.run.notebooks import notebook_parameters

ANSWERS = "answers.jsonl.xz"  # beside a notebook's results page
ANSWERS_PLAIN = "answers.jsonl"  # what a notebook writes under figures/<notebook>/ as it runs
REPLAY_ENV = "SUMJUDGE_REPLAY"
ASK_ENV = "SUMJUDGE_REPLAY_ASK"
ASK_PROFILE = "profile"  # SUMJUDGE_REPLAY_ASK's value for the engine the profile names (else backend:model@url)
INJECTED = "# Parameters\n"  # how the cell papermill injects begins


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


def replay_llm(recording, backend: str, model: str | None, base_url: str | None, options: dict[str, Any],
               ask: "Ask | None" = None):
    """An engine answering from ``recording`` as its recorded engine (backend, model and options as now) did; what
    the recording does not hold is asked of ``ask`` where given, else stops the notebook (``ReplayMiss``)."""

    engine = recording.engine_for(backend, model_label(model), base_url, options)
    return LLM(recording.backend(engine, ask), cache=MemoryCache(), parse_retries=options.get("parse_retries", 2))


class Ask:
    """The engine that answers a replay's requests its recording does not hold (``SUMJUDGE_REPLAY_ASK``):
    ``profile``, the engine the profile names for them (its backend, model and options: e.g. the smoke model), or
    ``backend:model@base_url`` (e.g. ``openai:qwen2.5-0.5b@http://host:8000/v1``, a class's server). Built on the
    first such request (a replay that asks nothing loads nothing), with the response cache: each answer is kept
    under that engine's own identity, and a rerun takes it from there. Counts what it asked (``news``)."""

    def __init__(self, spec: str, backend: str, model: str | None, base_url: str | None, options: dict[str, Any]):
        if spec == ASK_PROFILE:
            self.args = (backend, model, base_url, dict(options))
        else:
            b, _, rest = spec.partition(":")
            m, _, url = rest.partition("@")
            if b not in BACKENDS or not m:
                raise ConfigError(f"{ASK_ENV}={spec!r}: give {ASK_PROFILE!r} (the profile's model) or "
                                  "backend:model@base_url (e.g. openai:<served model>@http://host:8000/v1)")
            self.args = (b, m, url or None, {})
        b, m, url, _ = self.args
        self.label = f"{b}:{model_label(m)}" + (f"@{url}" if url else "")
        self._llm = None
        self.asked = self.cached = 0  # requests asked, those of them its response cache answered
        self._said = (0, 0)

    def engine(self):
        if self._llm is None:
            backend, model, base_url, options = self.args
            self._llm = make_llm(backend, model, base_url=base_url, **options)
        return self._llm

    async def answer(self, kind: str, reqs: list) -> list:
        """The engine's answers to ``reqs`` (or each one's exception), batched together."""

        llm = self.engine()
        calls = [llm.chat(r) if kind == "chat" else llm.score_options(r.messages, r.options, prefix=r.prefix, tag=r.tag)
                 for r in reqs]
        out = list(await asyncio.gather(*calls, return_exceptions=True))
        self.asked += len(reqs)
        self.cached += sum(bool(getattr(a, "cache_hit", False)) for a in out)
        return out

    def count(self, what: tuple) -> int | None:
        """A token count the recording does not hold (``("t", text)`` or ``("m", messages)``), by the engine's
        tokenizer; None where it has none (the replay then stops on it)."""
        backend = self.engine().backend
        if backend.capabilities.tokenizer == "none":
            return None
        kind, value = what
        if kind == "t":
            return backend.count_tokens(value)
        return backend.prompt_tokens([{"role": r, "content": c} for r, c in value])

    def news(self) -> str | None:
        """One line on what was asked since the last line (None: nothing)."""
        if self.asked == self._said[0]:
            return None
        new, cached = self.asked - self._said[0], self.cached - self._said[1]
        self._said = (self.asked, self.cached)
        return (f"{new} request(s) the recording does not hold were asked of {self.label}"
                + (f" ({cached} of them answered from its response cache)" if cached else "")
                + "; everything else was answered from the recording")


def ask_from_env(backend: str, model: str | None, base_url: str | None, options: dict[str, Any]) -> Ask | None:
    """The ``Ask`` that ``SUMJUDGE_REPLAY_ASK`` names for an engine of the profile (None where it is unset)."""
    spec = read(ASK_ENV)
    return Ask(spec, backend, model, base_url, options) if spec else None


def page_path(page: str | Path) -> Path:
    """A results page named relative to the project root (``figures/results-smoke``) from a notebook's folder too."""

    p = Path(page)
    return p if p.is_absolute() or p.exists() else project_root() / p


def set_recorded_parameters(notebook: str, parameters: dict[str, Any]) -> dict[str, Any]:
    """In a notebook run by hand (a Jupyter kernel, no parameters injected by papermill), its parameters set to
    ``parameters`` (the profile's for it: what ``make reproduce`` injected when it recorded the notebook), those its
    parameters cell declares; said in one line. Returns what changed ({} outside a kernel or when injected)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return {}
    shell = get_ipython()
    if shell is None or not hasattr(shell, "user_ns"):
        return {}
    ns = shell.user_ns
    if any(str(src).startswith(INJECTED) for src in ns.get("In", ())):  # papermill set them: as it says
        return {}

    nb = project_root() / "notebooks" / f"{notebook}.ipynb"
    declared = notebook_parameters(nb) if nb.exists() else set()
    changed = {k: copy.deepcopy(v) for k, v in parameters.items() if k in declared and (k not in ns or ns[k] != v)}
    ns.update(changed)
    if changed:
        print("replay: the parameters this notebook was recorded with: "
              + ", ".join(f"{k} = {v!r}" for k, v in changed.items())
              + " (set one after this cell to explore another value)")
    return changed
