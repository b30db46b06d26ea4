"""The LLM engine: request types, backends (hf | openai | scripted), cache, parsing."""

from __future__ import annotations

from pathlib import Path

from .cache import NullCache, ResponseCache
from .engine import LLM, CallLog, Parsed, run_sync
from .errors import (
    BackendRequestError,
    BackendUnavailableError,
    ConfigError,
    OptionScoringError,
    PromptTooLongError,
    SumjudgeError,
)
from .parsing import ParseError
from .types import ChatRequest, ChatResponse, OptionRequest, OptionScores

BACKENDS = ("hf", "openai", "scripted")


def make_backend(backend: str, model: str | None = None, *, base_url: str | None = None, **options):
    """Build a backend by name. ``options`` go to its constructor (token_budget, concurrency, ...)."""
    if backend == "hf":
        from .hf import HFBackend
        from .shared_engine import shared_engine_for

        # a shared engine (SUMJUDGE_SHARED_ENGINE) already holding this model answers as the local backend would
        return shared_engine_for(model or "tiny", options) or HFBackend(model or "tiny", **options)
    if backend == "openai":
        from .openai import OpenAIBackend

        if not model:
            raise ConfigError("the openai backend needs --model (the name the server knows the model by)")
        return OpenAIBackend.connect(model, base_url=base_url, **options)
    if backend == "scripted":
        from .scripted import ScriptedBackend

        return ScriptedBackend(**options)
    raise ConfigError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")


def make_llm(backend, model: str | None = None, *, base_url: str | None = None, cache: str | Path | None = None,
             no_cache: bool = False, log: str | Path | None = None, parse_retries: int = 2, **options) -> LLM:
    """An ``LLM`` over a backend (a name, or a backend object), with the persistent cache unless ``no_cache``."""
    be = make_backend(backend, model, base_url=base_url, **options) if isinstance(backend, str) else backend
    store = NullCache() if no_cache else ResponseCache(cache)
    return LLM(be, cache=store, log=CallLog(log) if log else None, parse_retries=parse_retries)


__all__ = ["LLM", "CallLog", "Parsed", "run_sync", "ChatRequest", "ChatResponse", "OptionRequest", "OptionScores",
           "ResponseCache", "NullCache", "ParseError", "SumjudgeError", "BackendRequestError", "OptionScoringError", "PromptTooLongError", "BackendUnavailableError",
           "ConfigError", "make_backend", "make_llm", "BACKENDS"]
