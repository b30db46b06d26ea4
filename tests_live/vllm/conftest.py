"""Live tests against a real vLLM server (CPU build, ``make test-vllm``): the server is started once for the
session on a tiny random Llama-3 with 32-dimensional heads (vLLM's CPU attention takes no smaller head size),
and stopped at the end whatever happened. ``SUMJUDGE_VLLM_PYTHON`` names the Python of vLLM's own
environment (the Makefile installs it outside the repository)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests_live.serve import free_port, offline, serving  # noqa: F401 (offline: an autouse fixture)
from tests_live.vllm.server import SERVED_NAME, START_TIMEOUT_S, tiny_model, vllm_command, vllm_environment


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory) -> Path:
    return tiny_model(tmp_path_factory.mktemp("models") / "tiny-llama3-hd32")


@pytest.fixture(scope="session")
def vllm_server(model_dir, tmp_path_factory):
    """(base_url, served model name, server log path) of a running vLLM OpenAI-compatible server."""

    python = os.environ.get("SUMJUDGE_VLLM_PYTHON")
    if not python or not Path(python).exists():
        pytest.fail("SUMJUDGE_VLLM_PYTHON must name the Python of a vLLM environment (run `make test-vllm`)")
    port = free_port()
    log = tmp_path_factory.mktemp("vllm") / "server.log"
    cmd, env = vllm_command(python, model_dir, port), vllm_environment()
    url = f"http://127.0.0.1:{port}"
    with serving("vLLM", cmd, url, log, START_TIMEOUT_S, env=env):
        yield f"{url}/v1", SERVED_NAME, log
