"""Live tests against a real vLLM server (CPU build, ``make test-vllm``): the server is started once for the
session on a tiny random Llama-3 with 32-dimensional heads (vLLM's CPU attention takes no smaller head size),
and stopped at the end whatever happened. ``SUMJUDGE_VLLM_PYTHON`` names the Python of vLLM's own
environment (the Makefile installs it outside the repository)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

SERVED_NAME = "tiny-llama3-hd32"
MAX_MODEL_LEN = 4096
START_TIMEOUT_S = 600


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory) -> Path:
    from sumjudge.llm.models import TINY_SHAPE_HEAD32, build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("models") / "tiny-llama3-hd32", seed=0, shape=TINY_SHAPE_HEAD32)


@pytest.fixture(scope="session")
def vllm_server(model_dir, tmp_path_factory):
    """(base_url, served model name, server log path) of a running vLLM OpenAI-compatible server."""
    import httpx

    python = os.environ.get("SUMJUDGE_VLLM_PYTHON")
    if not python or not Path(python).exists():
        pytest.fail("SUMJUDGE_VLLM_PYTHON must name the Python of a vLLM environment (run `make test-vllm`)")
    port = _free_port()
    log = tmp_path_factory.mktemp("vllm") / "server.log"
    # Recipe for vLLM's CPU build on a small machine (README, "vLLM on a CPU"): eager mode starts fastest;
    # chunked prefill off, since seeded sampling with it crashes the CPU server; a 1 GiB KV cache;
    # fp32 so that its option scores can be compared with the hf backend's to a tight tolerance.
    cmd = [python, "-m", "vllm.entrypoints.openai.api_server", "--model", str(model_dir), "--served-model-name",
           SERVED_NAME, "--host", "127.0.0.1", "--port", str(port), "--enable-prefix-caching",
           "--max-model-len", str(MAX_MODEL_LEN), "--enforce-eager", "--no-enable-chunked-prefill",
           "--dtype", "float32"]
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1", "HF_HUB_OFFLINE": "1"}
    with log.open("w") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    t0 = time.time()
    try:
        while True:
            if proc.poll() is not None:
                pytest.fail(f"the vLLM server exited with {proc.returncode}:\n{log.read_text()[-4000:]}")
            try:
                if httpx.get(url + "/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.time() - t0 > START_TIMEOUT_S:
                pytest.fail(f"the vLLM server did not start in {START_TIMEOUT_S} s:\n{log.read_text()[-4000:]}")
            time.sleep(2)
        print(f"\nvLLM server up in {time.time() - t0:.0f} s", file=sys.stderr)
        yield f"{url}/v1", SERVED_NAME, log
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "false")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
