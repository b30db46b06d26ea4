"""One registry type for everything looked up by name, and the plug-in packages that fill it.

The plug-in packages are every paper's folder. A paper registers what it defines (its methods, the kinds of method
of its own tasks, its aspect templates, its commands) when its package is imported, and the package is imported by
name on the first lookup of any of them (``discover``), as lm-evaluation-harness finds its tasks: nothing below the
entry points imports a paper, and a paper imports what it builds on without a circle. A registry that nothing
outside its own module fills is closed (``plugins=False``: the backends, the datasets, the taxonomies): a lookup
there imports no paper, so loading a dataset imports none.

A ``Registry`` (the methods, the kinds of method, the backends, the datasets, the taxonomies, the aspect templates
and fields, the papers' commands) is a dict of name -> thing with three more
verbs: ``add`` (by a call), ``register`` (as a decorator) and ``find`` (a lookup that imports the plug-in packages
once when the name is not there yet, and then names what is known in one ``UnknownName`` error). ``all`` is every
entry, the plug-ins' included.
"""

from __future__ import annotations

import importlib
from typing import Callable, Generic, TypeVar

from sumjudge.errors import UnknownName

T = TypeVar("T")


class Registry(dict, Generic[T]):
    """Things of one kind by name (``what`` names the kind in errors). ``plugins``: a name missing at lookup is
    looked for in the plug-in packages first (the papers register their methods, kinds, templates and commands when imported)."""

    def __init__(self, what: str, *, plugins: bool = True):
        super().__init__()
        self.what = what
        self.plugins = plugins

    def add(self, name: str, item: T) -> T:
        """Register ``item`` under ``name`` (a later entry under a name replaces the earlier one) and return it."""
        self[name] = item
        return item

    def register(self, name: str) -> Callable[[T], T]:
        """The decorator form of ``add``: ``@REGISTRY.register("name")``."""
        return lambda item: self.add(name, item)

    def _discover(self) -> None:
        if self.plugins:
            discover()

    def all(self) -> "Registry[T]":
        """Every entry, the plug-in packages' included."""
        self._discover()
        return self

    def find(self, name: str) -> T:
        """The entry under ``name``, the plug-in packages imported first where it is missing; ``UnknownName``
        (a ConfigError and a KeyError) naming every known name where it is not there either."""
        if name not in self:
            self._discover()
        if name not in self:
            raise UnknownName(f"unknown {self.what} {name!r}; known: {', '.join(sorted(self)) or 'none'}")
        return self[name]


PLUGIN_PACKAGES = ("sumjudge.papers",)
_discovered: list[str] = []


def discover() -> None:
    """Import every plug-in package not imported yet (each once; marked before its import, so that a package that
    looks something up while it loads does not import itself again)."""

    for package in PLUGIN_PACKAGES:
        if package not in _discovered:
            _discovered.append(package)
            importlib.import_module(package)
