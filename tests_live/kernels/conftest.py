"""Checks of the decode levers' Triton kernels (``make test-kernels``): on a CPU under Triton's interpreter
(``TRITON_INTERPRET=1``, Triton installed outside the repository by the Makefile), or on a CUDA GPU as compiled."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(scope="session", autouse=True)
def triton_here():
    try:
        import triton  # noqa: F401
    except ImportError:
        pytest.fail("Triton is not importable (run `make test-kernels`, which installs it)")
    import torch

    if not torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1":
        pytest.fail("no CUDA device and TRITON_INTERPRET is not 1: the kernels cannot run (run `make test-kernels`)")
