"""Live tests of replicas behind a real router (``make test-router``): stand-in servers (``sumjudge.perf.standin_server``, one
process each) behind vLLM's ``vllm-router`` and SGLang's ``sglang-router`` from PyPI. ``SUMJUDGE_ROUTER`` and
``SUMJUDGE_SGLANG_ROUTER`` name their executables (the Makefile installs them outside the repository)."""

from __future__ import annotations

import os

import pytest

from tests_live.serve import offline  # noqa: F401 (an autouse fixture)


def executable(variable: str, what: str) -> str:
    path = os.environ.get(variable)
    if not path or not os.access(path, os.X_OK):
        pytest.fail(f"{variable} must name the {what} executable (run `make test-router`)")
    return path


@pytest.fixture(scope="session")
def router() -> str:
    return executable("SUMJUDGE_ROUTER", "vllm-router")


@pytest.fixture(scope="session")
def sglang_router() -> str:
    return executable("SUMJUDGE_SGLANG_ROUTER", "sglang-router")
