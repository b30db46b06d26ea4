"""The ambiguity taxonomy of the MeetingBank ambiguity annotations (Koupaee et al., Table 6 / Table 24; the file from
github.com/amazon-science/madisse): 16 fine-grained types in 3 + 1 categories, and the mapping from the
annotation file's raw strings onto it."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from sumjudge.data.sources import DataFormatError


@dataclass(frozen=True)
class AmbiguityTaxonomy:
    """Ambiguity types of summary sentences, by category, and the normalisation of an annotation file's strings."""

    types: tuple[tuple[str, str], ...]  # (category, type)
    category: Callable[..., tuple[str, ...]]  # (raw category, file=, row=) -> categories
    subcategory: Callable[..., tuple[str, ...]]  # (raw sub-category, raw category, file=, row=) -> types


# (category, Table 24 type name)
TAXONOMY: tuple[tuple[str, str], ...] = (
    ("implicit_reasoning", "Deduction"),
    ("implicit_reasoning", "Inference: Common-sense"),
    ("implicit_reasoning", "Inference: Value-based"),
    ("implicit_reasoning", "Other implicit reasoning"),
    ("meaning", "Semantic relations: Hypernymy/Generalization"),
    ("meaning", "Semantic relations: Hyponymy/Specialization"),
    ("meaning", "Semantic relations: Synonymy/Paraphrasing"),
    ("meaning", "Linguistic ambiguity: Structural"),
    ("meaning", "Linguistic ambiguity: Lexical"),
    ("meaning", "Vagueness"),
    ("meaning", "Non-assertion"),
    ("meaning", "Other meaning phenomenon"),
    ("context", "Decontextualization"),
    ("context", "Conflation"),
    ("context", "Other context phenomenon"),
    ("other", "Other evaluability issue"),
)
CATEGORY_OF = {t: c for c, t in TAXONOMY}
CATEGORY_NAMES = {"implicit_reasoning": "Implicit reasoning phenomena", "meaning": "Meaning phenomena",
                  "context": "Context phenomena", "other": "Other"}


def _norm(s: str) -> str:
    return re.sub(r"[^a-z]+", " ", s.lower()).strip()


# Every spelling seen in the annotation file (and the paper's own names), normalised -> Table 24 type.
_ALIASES = {_norm(t): t for _, t in TAXONOMY}
_ALIASES.update({_norm(k): v for k, v in {
    "Inference-commonsense": "Inference: Common-sense",
    "Common-sense inference": "Inference: Common-sense",
    "Inference-value-based": "Inference: Value-based",
    "Value-based inference": "Inference: Value-based",
    "Other implicit reasoning phenomenon": "Other implicit reasoning",
    "Semantic relations: Synonymy": "Semantic relations: Synonymy/Paraphrasing",
    "Semantic relations:Synonymy": "Semantic relations: Synonymy/Paraphrasing",
    "Synonymy/Paraphrasing": "Semantic relations: Synonymy/Paraphrasing",
    "Semantic relations: Hypernymy": "Semantic relations: Hypernymy/Generalization",
    "Hypernymy/Generalization": "Semantic relations: Hypernymy/Generalization",
    "Semantic relations: Hyponymy": "Semantic relations: Hyponymy/Specialization",
    "Hyponymy/Specialization": "Semantic relations: Hyponymy/Specialization",
    "Structural ambiguity": "Linguistic ambiguity: Structural",
    "Lexical ambiguity": "Linguistic ambiguity: Lexical",
    "Other meaning phenomena": "Other meaning phenomenon",
    "Other ambiguity phenomenon": "Other meaning phenomenon",
    "Other context phenoma": "Other context phenomenon",
    "Other context phenomena": "Other context phenomenon",
    "Other evaluability issue": "Other evaluability issue",
}.items()})
_CATEGORY_ALIASES = {"implicit reasoning phenomena": "implicit_reasoning", "meaning phenomena": "meaning",
                     "context phenomena": "context", "other": "other"}


def normalise_subcategory(raw: str, raw_category: str = "", *, file: str = "", row: int | None = None) -> tuple[str, ...]:
    """Raw sub-category string -> Table 24 types. '' means not ambiguous; '-' under category 'Other'
    is the overflow type "Other evaluability issue"; 'A/B' is two types unless A/B is itself a type name."""
    s = raw.strip()
    if not s:
        return ()
    if s == "-":
        if _norm(raw_category) == "other":
            return ("Other evaluability issue",)
        raise DataFormatError(file, row, "sub-category", f"'-' outside category 'Other' (category {raw_category!r})")
    if _norm(s) in _ALIASES:
        return (_ALIASES[_norm(s)],)
    parts = [p for p in re.split(r"\s*/\s*", s) if p]
    out = []
    for p in parts:
        if _norm(p) not in _ALIASES:
            raise DataFormatError(file, row, "sub-category", f"unknown ambiguity type {p!r} in {raw!r}")
        out.append(_ALIASES[_norm(p)])
    return tuple(dict.fromkeys(out))


def normalise_category(raw: str, *, file: str = "", row: int | None = None) -> tuple[str, ...]:
    s = raw.strip()
    if not s:
        return ()
    out = []
    for p in s.split("/"):
        key = p.strip().lower()
        if key not in _CATEGORY_ALIASES:
            raise DataFormatError(file, row, "category", f"unknown ambiguity category {p!r}")
        out.append(_CATEGORY_ALIASES[key])
    return tuple(dict.fromkeys(out))


# The loaders read the annotation file's strings through this (registered as ``taxonomies.AMBIGUITY``).
AMBIGUITY_TAXONOMY = AmbiguityTaxonomy(TAXONOMY, normalise_category, normalise_subcategory)
