"""The taxonomies a dataset's annotations are converted to, by name: the data layer's own.

A loader reads the classes its file gives (and keeps them in ``meta``); the types its records carry come from the
taxonomy registered under a name (``ERRORS``: summary error types, ``error_taxonomy.py``; ``AMBIGUITY``: the
ambiguity types of summary sentences, ``ambiguity_taxonomy.py``), through that taxonomy's conversion of the file's
annotation scheme. Both describe the data (the records carry their type names), so both are defined in the data
layer (those two modules) and registered here when this module is imported: loading a dataset imports no paper, and the papers import the taxonomies
from here. A lookup reads this registry only (a test may put another taxonomy under a name).
"""

from __future__ import annotations

from typing import Any

from sumjudge.data.ambiguity_taxonomy import AMBIGUITY_TAXONOMY, AmbiguityTaxonomy
from sumjudge.data.error_taxonomy import ERROR_TAXONOMY, ErrorTaxonomy
from sumjudge.registry import Registry

__all__ = ["AMBIGUITY", "ERRORS", "AmbiguityTaxonomy", "ErrorTaxonomy", "get", "register"]

ERRORS = "summary-errors"
AMBIGUITY = "ambiguity"

_TAXONOMIES: Registry[Any] = Registry("taxonomy", plugins=False)  # the data layer's own: no plug-in is asked


def register(name: str, taxonomy: Any) -> Any:
    return _TAXONOMIES.add(name, taxonomy)


def get(name: str) -> Any:
    """The taxonomy registered under ``name`` (``UnknownName`` naming the known ones when there is none)."""
    return _TAXONOMIES.find(name)


register(ERRORS, ERROR_TAXONOMY)
register(AMBIGUITY, AMBIGUITY_TAXONOMY)
