"""Starting and stopping a live server for a test session (shared by tests_live/vllm and tests_live/llamacpp)."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serving(name: str, cmd: list[str], url: str, log: Path, timeout_s: float, env: dict | None = None):
    """Run ``cmd`` (logging to ``log``) until ``url``/health answers 200, yield, then stop it whatever happened;
    a server that exits or does not come up in ``timeout_s`` fails the session with its log's end."""
    import httpx

    with log.open("w") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    t0 = time.time()
    try:
        while True:
            if proc.poll() is not None:
                pytest.fail(f"the {name} server exited with {proc.returncode}:\n{log.read_text()[-4000:]}")
            try:
                if httpx.get(url + "/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.time() - t0 > timeout_s:
                pytest.fail(f"the {name} server did not start in {timeout_s} s:\n{log.read_text()[-4000:]}")
            time.sleep(1)
        print(f"\n{name} server up in {time.time() - t0:.0f} s", file=sys.stderr)
        yield
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    """Every live test runs without the hub and without tokenizer threads (imported by each conftest)."""
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "false")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
