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


def machine() -> dict[str, Any]:
    """The machine the figures were measured on: CPU model (``cpu_name``), cores, Python and the date."""
    return {"cpu": cpu_name(), "cores": os.cpu_count(), "python": platform.python_version(),
            "date": time.strftime("%Y-%m-%d")}
