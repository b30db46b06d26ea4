"""The machine a measurement or a recording was made on, as the files that keep it name it: its CPU model (from
``/proc/cpuinfo`` where there is one), its cores, Python and the date."""

from __future__ import annotations

import os
import platform
import time
from pathlib import Path
from typing import Any


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine() -> dict[str, Any]:
    """The machine the figures were measured on: CPU model (``/proc/cpuinfo`` where there is one), cores."""

    cpu = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "")
    except OSError:
        pass
    return {"cpu": cpu or platform.processor() or platform.machine(), "cores": os.cpu_count(),
            "python": platform.python_version(), "date": time.strftime("%Y-%m-%d")}
