"""Dataset registry: CLI names -> loaders, with where each comes from."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from . import tofueval
from .records import Example


@dataclass(frozen=True)
class DatasetSpec:
    name: str
    kind: str  # "faithfulness" | "rated" | "meeting-errors"
    description: str
    source: str
    files: tuple[str, ...]
    levels: tuple[str, ...]
    splits: tuple[str, ...]
    loader: Callable[..., list[Example]]


DATASETS: dict[str, DatasetSpec] = {}


def register(spec: DatasetSpec) -> None:
    DATASETS[spec.name] = spec


register(DatasetSpec(
    name="tofueval-meetingbank", kind="faithfulness",
    description="TofuEval MeetingBank test: 777 topic-focused summary sentences (267 summaries), yes/no faithfulness; "
                "transcripts from the MADISSE ambiguity file",
    source="github.com/amazon-science/tofueval + github.com/amazon-science/madisse",
    files=(tofueval.TOFU_CSV.format(domain="meetingbank", split="test"), tofueval.AMBIGUITY_JSON),
    levels=("summary", "sentence"), splits=("test",),
    loader=lambda split="test", level="summary": tofueval.load_meetingbank(split, level)))
register(DatasetSpec(
    name="meetingbank-ambiguity", kind="faithfulness",
    description="MADISSE ambiguity annotations: 770 unique MeetingBank test sentences, 131 ambiguous, 16-type taxonomy",
    source="github.com/amazon-science/madisse",
    files=(tofueval.AMBIGUITY_JSON, tofueval.TOFU_CSV.format(domain="meetingbank", split="test")),
    levels=("sentence",), splits=("test",),
    loader=lambda split="test", level="sentence": tofueval.load_ambiguity()))


def get(name: str) -> DatasetSpec:
    if name not in DATASETS:
        raise KeyError(f"unknown dataset {name!r}; known: {', '.join(sorted(DATASETS))}")
    return DATASETS[name]


def load(name: str, *, split: str | None = None, level: str | None = None, limit: int | None = None) -> list[Example]:
    spec = get(name)
    level = level or spec.levels[0]
    if level not in spec.levels:
        raise ValueError(f"dataset {name} has levels {spec.levels}, not {level!r}")
    split = split or spec.splits[0]
    if split not in spec.splits:
        raise ValueError(f"dataset {name} has splits {spec.splits}, not {split!r}")
    examples = spec.loader(split=split, level=level)
    return examples[:limit] if limit else examples
