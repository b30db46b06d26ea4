"""Checks of the decode levers' Triton kernels (``make test-kernels``): run on a CPU under Triton's interpreter
(``TRITON_INTERPRET=1``, Triton installed outside the repository by the Makefile) or on a CUDA GPU as compiled
(``kernels_run``), and compiled for NVIDIA GPUs without one (``test_cascade_compiles.py``, in a process without the
interpreter)."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(scope="session")
def kernels_run():
    """Fails the test where the kernels cannot run: no Triton, or neither a CUDA device nor the interpreter."""
    try:
        import triton  # noqa: F401
    except ImportError:
        pytest.fail("Triton is not importable (run `make test-kernels`, which installs it)")
    import torch

    if not torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1":
        pytest.fail("no CUDA device and TRITON_INTERPRET is not 1: the kernels cannot run (run `make test-kernels`)")
