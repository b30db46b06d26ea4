"""The backends by name (hf | openai | scripted): ``make_backend`` builds one; below the engine, which builds a
companion model's backend with it."""

from __future__ import annotations

from .errors import ConfigError

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
