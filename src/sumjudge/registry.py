"""The plug-in packages: every paper's folder. A paper registers what it defines (its methods, its aspect templates,
the taxonomies its data is converted to) when its package is imported, and the package is imported by name on the
first lookup of any of them (``discover``), as lm-evaluation-harness finds its tasks: nothing below the entry points
imports a paper, and a paper imports what it builds on without a circle."""

from __future__ import annotations

PLUGIN_PACKAGES = ("sumjudge.papers",)
_discovered: list[str] = []


def discover() -> None:
    """Import every plug-in package not imported yet (each once; marked before its import, so that a package that
    looks something up while it loads does not import itself again)."""
    import importlib

    for package in PLUGIN_PACKAGES:
        if package not in _discovered:
            _discovered.append(package)
            importlib.import_module(package)
