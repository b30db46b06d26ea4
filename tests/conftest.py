"""Shared fixtures: a tiny random Llama-3-architecture model (built once per session), temp caches."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sumjudge.data import sources


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> Path:
    from sumjudge.llm.models import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("models") / "tiny-llama3", seed=0)


@pytest.fixture(scope="session")
def tiny_backend(tiny_model_dir):
    from sumjudge.llm.hf import HFBackend

    return HFBackend(str(tiny_model_dir))


@pytest.fixture
def cache_file(tmp_path) -> Path:
    return tmp_path / "cache.sqlite"


def mirror_available() -> bool:
    d = sources.mirror_dir()
    return d is not None and d.is_dir()


needs_mirror = pytest.mark.skipif(not mirror_available(),
                                  reason="benchmark mirror not found (set SUMJUDGE_DATA_MIRROR or place it at ../shared/data)")


@pytest.fixture(autouse=True)
def _quiet_tokenizers(monkeypatch):
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "false")
    monkeypatch.setenv("HF_HUB_OFFLINE", os.environ.get("HF_HUB_OFFLINE", "1"))
