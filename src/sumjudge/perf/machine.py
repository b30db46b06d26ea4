"""The machine a measurement or a recording was made on, as the files that keep it name it: its CPU model (from
``/proc/cpuinfo`` where there is one), its cores, Python and the date."""

from __future__ import annotations

import os
import platform
import time
from pathlib import Path
from typing import Any


def cpu_name() -> str:
    """The CPU's model name (``/proc/cpuinfo``), else what ``platform`` says of the processor or the machine."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name") and line.split(":", 1)[1].strip():
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


# the instruction sets a CPU timing depends on most (torch's and oneDNN's kernels for float32 and bfloat16), as
# /proc/cpuinfo names them: one model name can stand for CPUs with and without them
CPU_FEATURES = ("avx2", "avx512f", "avx512_bf16", "amx_bf16")


def cpu_flags() -> list[str]:
    """The CPU's flags as ``/proc/cpuinfo`` lists them (its first processor's; empty where there is none)."""
    try:
        return next((line.split(":", 1)[1].split() for line in Path("/proc/cpuinfo").read_text().splitlines()
                     if line.startswith("flags")), [])
    except OSError:
        return []


def cpu_features() -> list[str]:
    """Which of ``CPU_FEATURES`` this CPU has (empty where ``/proc/cpuinfo`` is not there)."""
    flags = cpu_flags()
    return [f for f in CPU_FEATURES if f in flags]


def machine() -> dict[str, Any]:
    """The machine the figures were measured on: CPU model (``cpu_name``), the instruction sets of ``CPU_FEATURES``
    it has, cores, Python and the date."""
    return {"cpu": cpu_name(), "cpu_features": cpu_features(), "cores": os.cpu_count(),
            "python": platform.python_version(), "date": time.strftime("%Y-%m-%d")}


def described(m: dict[str, Any]) -> str:
    """``machine``'s record as the docs name it: "2 cores of an <CPU> (<features>)"."""
    features = ", ".join(m.get("cpu_features") or []) or "none of " + ", ".join(CPU_FEATURES)
    return f"{m['cores']} cores of an {m['cpu']} ({features})"
