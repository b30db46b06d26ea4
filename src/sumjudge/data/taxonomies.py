"""The taxonomies a dataset's annotations are converted to, registered by the papers that define them.

A loader reads the classes its file gives (and keeps them in ``meta``); the types its records carry come from the
taxonomy registered under a name (``ERRORS``: summary error types; ``AMBIGUITY``: the ambiguity types of summary
sentences), through that taxonomy's conversion of the file's annotation scheme. The papers register theirs when
their package is imported, on the first lookup (``registry.discover``): the data layer defines no taxonomy itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..registry import Registry

ERRORS = "summary-errors"
AMBIGUITY = "ambiguity"


@dataclass(frozen=True)
class ErrorTaxonomy:
    """Summary error types and the conversion of each annotation scheme's classes to them."""

    types: tuple[str, ...]  # the taxonomy's types
    unmapped: str  # an annotated class the conversion leaves without a type (kept, counted)
    unmapped_types: tuple[str, ...]  # labels kept on the example but left out of per-type metrics
    extrinsic: tuple[str, ...]  # what an error its annotators mark extrinsic also counts as
    conversions: Mapping[str, Mapping[str, tuple[str, ...]]]  # scheme -> the scheme's class -> types

    def knows(self, scheme: str, cls: str) -> bool:
        return cls in self.conversions[scheme]

    def convert(self, scheme: str, classes: Iterable[str]) -> list[str]:
        """The types of ``classes`` of ``scheme``, sorted and distinct (``KeyError`` names an unknown class)."""
        table = self.conversions[scheme]
        return sorted({t for c in classes for t in table[c]})


@dataclass(frozen=True)
class AmbiguityTaxonomy:
    """Ambiguity types of summary sentences, by category, and the normalisation of an annotation file's strings."""

    types: tuple[tuple[str, str], ...]  # (category, type)
    category: Callable[..., list[str]]  # (raw category, file=, row=) -> categories
    subcategory: Callable[..., list[str]]  # (raw sub-category, raw category, file=, row=) -> types


_TAXONOMIES: Registry[Any] = Registry("taxonomy")


def register(name: str, taxonomy: Any) -> Any:
    return _TAXONOMIES.add(name, taxonomy)


def get(name: str) -> Any:
    """The taxonomy registered under ``name`` (the plug-in packages imported first when it is not there yet)."""
    return _TAXONOMIES.find(name)
