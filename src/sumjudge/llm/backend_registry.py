"""The backends by name: one registry (``BACKENDS``) that ``make_backend``, the command line's ``--backend``
choices and the docs' list read. Below the engine, which builds a companion model's backend with it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from sumjudge.errors import ConfigError
from sumjudge.llm.hf import HFBackend
from sumjudge.llm.openai import OpenAIBackend
from sumjudge.llm.scripted import ScriptedBackend
from sumjudge.llm.shared_engine import shared_engine_for
from sumjudge.registry import Registry


@dataclass(frozen=True)
class BackendKind:
    name: str
    about: str  # one line, shown by ``--help`` and checked against the docs
    build: Callable[..., object]  # (model, base_url=..., **options) -> a Backend
    serves_a_model: bool = True  # False: a test double (no model to benchmark)


BACKENDS: Registry[BackendKind] = Registry("backend", plugins=False)  # the three below


def register_backend(name: str, about: str, *, serves_a_model: bool = True):
    """Add a backend under ``name``: the decorated function builds it from (model, base_url=..., **options)."""
    def add(build):
        BACKENDS.add(name, BackendKind(name, about, build, serves_a_model))
        return build
    return add


def backend_names(*, serving: bool = False) -> tuple[str, ...]:
    """The registered names (``serving``: only those that run a model), for ``--backend`` choices."""
    return tuple(n for n, b in BACKENDS.items() if b.serves_a_model or not serving)


@register_backend("hf", "a local Hugging Face transformers model (device_map=auto across GPUs, or the CPU)")
def _hf(model, *, base_url=None, **options):
    # a shared engine (SUMJUDGE_SHARED_ENGINE) already holding this model answers as the local backend would
    return shared_engine_for(model or "tiny", options) or HFBackend(model or "tiny", **options)


@register_backend("openai", "any OpenAI-compatible server (vLLM, llama.cpp, ollama, the OpenAI API) at --base-url")
def _openai(model, *, base_url=None, **options):
    if not model:
        raise ConfigError("the openai backend needs --model (the name the server knows the model by)")
    return OpenAIBackend.connect(model, base_url=base_url, **options)


@register_backend("scripted", "a rule-driven test double for protocol tests (not a model)", serves_a_model=False)
def _scripted(model, *, base_url=None, **options):
    return ScriptedBackend(**options)


def make_backend(backend: str, model: str | None = None, *, base_url: str | None = None, **options):
    """Build a backend by name. ``options`` go to its constructor (token_budget, concurrency, ...)."""
    return BACKENDS.find(backend).build(model, base_url=base_url, **options)
