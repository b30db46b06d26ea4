"""Record types shared by every loader and method."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

FAITHFUL, UNFAITHFUL = 1, 0


@dataclass
class Ambiguity:
    """MADISSE ambiguity annotation of one summary sentence (Section 4.2, Table 6/24)."""

    ambiguous: bool
    categories: tuple[str, ...] = ()  # high-level: implicit_reasoning | meaning | context | other
    subtypes: tuple[str, ...] = ()  # normalised fine-grained types (16-type taxonomy, Table 24 names)
    raw_category: str = ""
    raw_subcategory: str = ""
    explanation: str = ""


@dataclass
class FaithExample:
    """A (document, summary) pair with a binary faithfulness label (1 = faithful, 0 = unfaithful).

    At summary level ``sentences``/``sentence_labels`` keep the sentence annotations the label was
    built from; at sentence level ``summary`` is one sentence.
    """

    id: str
    dataset: str
    document: str
    summary: str
    label: int | None
    level: str = "summary"  # "sentence" | "summary"
    sentences: list[str] = field(default_factory=list)
    sentence_labels: list[int] = field(default_factory=list)
    error_types: list[str] = field(default_factory=list)
    ambiguity: Ambiguity | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class RatedExample:
    """An output rated by humans on one or more aspects (SummEval, Topical-Chat)."""

    id: str
    dataset: str
    group_id: str  # summary-level correlation is computed within a group (source document / dialogue)
    source: str
    output: str
    scores: dict[str, float]
    context: str = ""  # Topical-Chat: the fact the response should use
    meta: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class MeetingErrorExample:
    """A meeting transcript, a model summary and human yes/no labels per error type (MESA's types)."""

    id: str
    dataset: str
    transcript: str
    summary: str
    labels: dict[str, int | None]  # MESA type -> 1 error present / 0 absent / None not annotated
    meta: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


Example = FaithExample | RatedExample | MeetingErrorExample
