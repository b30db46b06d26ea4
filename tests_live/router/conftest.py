"""Live tests of replicas behind a real router (``make test-router``): stand-in servers (``sumjudge.standin``, one
process each) behind vLLM's ``vllm-router`` from PyPI. ``SUMJUDGE_ROUTER`` names its executable (the Makefile
installs it outside the repository)."""

from __future__ import annotations

import os

import pytest

from tests_live.serve import offline  # noqa: F401 (an autouse fixture)


@pytest.fixture(scope="session")
def router() -> str:
    path = os.environ.get("SUMJUDGE_ROUTER")
    if not path or not os.access(path, os.X_OK):
        pytest.fail("SUMJUDGE_ROUTER must name the vllm-router executable (run `make test-router`)")
    return path


@pytest.fixture(scope="session")
def sglang_router() -> str:
    path = os.environ.get("SUMJUDGE_SGLANG_ROUTER")
    if not path or not os.access(path, os.X_OK):
        pytest.fail("SUMJUDGE_SGLANG_ROUTER must name the sglang-router executable (run `make test-router`)")
    return path
