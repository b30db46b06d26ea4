"""Record types shared by every loader and method."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, TypeVar

FAITHFUL, UNFAITHFUL = 1, 0


def meeting_key(transcript: str) -> str:
    """A stable name for a transcript (its opening 2000 characters, whitespace-normalised, hashed)."""

    return hashlib.sha1(" ".join(transcript[:2000].split()).encode("utf-8")).hexdigest()[:12]


@dataclass
class Ambiguity:
    """The ambiguity annotation of one summary sentence (types of the registered ``taxonomies.AMBIGUITY``)."""

    ambiguous: bool
    categories: tuple[str, ...] = ()  # high-level: implicit_reasoning | meaning | context | other
    subtypes: tuple[str, ...] = ()  # normalised fine-grained types (16-type taxonomy, Table 24 names)
    raw_category: str = ""
    raw_subcategory: str = ""
    explanation: str = ""


@dataclass
class FaithExample:
    """A (document, summary) pair with a binary faithfulness label (1 = faithful, 0 = unfaithful), or,
    for score-labelled benchmarks, a human consistency ``score`` instead (``label`` None).

    At summary level ``sentences``/``sentence_labels`` keep the sentence annotations the label was
    built from; at sentence level ``summary`` is one sentence.
    """

    id: str
    dataset: str
    document: str
    summary: str
    label: int | None
    level: str = "summary"  # "sentence" | "summary"
    score: float | None = None  # human consistency score (0-1) of score-labelled data (GovReport, SQuALITY; label None)
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
    """A meeting transcript, a model summary and human yes/no labels per error type (by code: OM, RED, ...)."""

    id: str
    dataset: str
    transcript: str
    summary: str
    labels: dict[str, int | None]  # error code -> 1 error present / 0 absent / None not annotated
    likert: dict[str, float | None] = field(default_factory=dict)  # error code -> human impact 0-5, where annotated
    reasoning: dict[str, str] = field(default_factory=dict)  # error code -> the annotators' reasoning, where given
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def meeting(self) -> str:
        """The source meeting: summaries of one transcript share it (train/test splits never divide it)."""
        return str(self.meta.get("meeting") or meeting_key(self.transcript))

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


Example = FaithExample | RatedExample | MeetingErrorExample
E = TypeVar("E", FaithExample, RatedExample, MeetingErrorExample)


def of_kind(examples: Sequence[Example], kind: type[E]) -> list[E] | None:
    """``examples`` as a list of ``kind`` when every one of them is one (a dataset holds one kind), else None."""
    out = [e for e in examples if isinstance(e, kind)]
    return out if len(out) == len(examples) else None
