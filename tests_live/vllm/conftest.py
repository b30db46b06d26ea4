"""Live tests against a real vLLM server (CPU build, ``make test-vllm``): the server is started once for the
session on a tiny random Llama-3 with 32-dimensional heads (vLLM's CPU attention takes no smaller head size),
and stopped at the end whatever happened. ``SUMJUDGE_VLLM_PYTHON`` names the Python of vLLM's own
environment (the Makefile installs it outside the repository)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests_live.serve import free_port, offline, serving  # noqa: F401 (offline: an autouse fixture)

SERVED_NAME = "tiny-llama3-hd32"
MAX_MODEL_LEN = 4096
START_TIMEOUT_S = 600


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory) -> Path:
    from sumjudge.llm.models import TINY_SHAPE_HEAD32, build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("models") / "tiny-llama3-hd32", seed=0, shape=TINY_SHAPE_HEAD32)


@pytest.fixture(scope="session")
def vllm_server(model_dir, tmp_path_factory):
    """(base_url, served model name, server log path) of a running vLLM OpenAI-compatible server."""

    python = os.environ.get("SUMJUDGE_VLLM_PYTHON")
    if not python or not Path(python).exists():
        pytest.fail("SUMJUDGE_VLLM_PYTHON must name the Python of a vLLM environment (run `make test-vllm`)")
    port = free_port()
    log = tmp_path_factory.mktemp("vllm") / "server.log"
    # Recipe for vLLM's CPU build on a small machine (README, "vLLM on a CPU"): eager mode starts fastest;
    # chunked prefill off, since seeded sampling with it crashes the CPU server; a 1 GiB KV cache;
    # fp32 so that its option scores can be compared with the hf backend's to a tight tolerance.
    cmd = [python, "-m", "vllm.entrypoints.openai.api_server", "--model", str(model_dir), "--served-model-name",
           SERVED_NAME, "--host", "127.0.0.1", "--port", str(port), "--enable-prefix-caching",
           "--max-model-len", str(MAX_MODEL_LEN), "--enforce-eager", "--no-enable-chunked-prefill",
           "--dtype", "float32"]
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1", "HF_HUB_OFFLINE": "1"}
    url = f"http://127.0.0.1:{port}"
    with serving("vLLM", cmd, url, log, START_TIMEOUT_S, env=env):
        yield f"{url}/v1", SERVED_NAME, log
