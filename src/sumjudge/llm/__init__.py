"""The LLM engine: request types, backends (hf | openai | scripted), cache, parsing."""

from __future__ import annotations

from pathlib import Path

from sumjudge.llm.backend_registry import BACKENDS, make_backend
from sumjudge.llm.cache import NullCache, ResponseCache
from sumjudge.llm.engine import LLM, CallLog, Parsed, run_sync
from sumjudge.llm.errors import (
    BackendRequestError,
    BackendUnavailableError,
    ConfigError,
    OptionScoringError,
    PromptTooLongError,
    SumjudgeError,
)
from sumjudge.llm.parsing import ParseError
from sumjudge.llm.types import ChatRequest, ChatResponse, OptionRequest, OptionScores


def make_llm(backend, model: str | None = None, *, base_url: str | None = None, cache: str | Path | None = None,
             no_cache: bool = False, log: str | Path | None = None, parse_retries: int = 2, **options) -> LLM:
    """An ``LLM`` over a backend (a name, or a backend object), with the persistent cache unless ``no_cache``."""
    be = make_backend(backend, model, base_url=base_url, **options) if isinstance(backend, str) else backend
    store = NullCache() if no_cache else ResponseCache(cache)
    return LLM(be, cache=store, log=CallLog(log) if log else None, parse_retries=parse_retries)


__all__ = ["LLM", "CallLog", "Parsed", "run_sync", "ChatRequest", "ChatResponse", "OptionRequest", "OptionScores",
           "ResponseCache", "NullCache", "ParseError", "SumjudgeError", "BackendRequestError", "OptionScoringError", "PromptTooLongError", "BackendUnavailableError",
           "ConfigError", "make_backend", "make_llm", "BACKENDS"]
