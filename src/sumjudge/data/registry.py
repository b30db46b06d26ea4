"""Dataset registry: CLI names -> loaders, with where each comes from."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from . import tofueval
from .records import Example, FaithExample, MeetingErrorExample, RatedExample
from .sources import DataFormatError


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


def subset(examples: list[Example], limit: int | None, seed: int = 0) -> list[Example]:
    """A seeded subset of ``limit`` examples that keeps what the metrics need, in the dataset's order.

    - rated examples (correlation per group): whole groups, drawn at random, until ``limit`` examples;
    - labelled examples: stratified by label (each label keeps its share, at least one of each when
      ``limit`` allows), so balanced accuracy is defined even for small ``limit``;
    - otherwise: a random sample.
    ``limit`` None or >= the dataset size returns everything unchanged.
    """
    import random

    if not limit or limit >= len(examples):
        return list(examples)
    rng = random.Random(seed)
    if all(isinstance(e, RatedExample) for e in examples):
        groups: dict[str, list[int]] = {}
        for i, e in enumerate(examples):
            groups.setdefault(e.group_id, []).append(i)
        order = list(groups)
        rng.shuffle(order)
        chosen: list[int] = []
        for g in order:
            if len(chosen) >= limit:
                break
            chosen += groups[g]
        return [examples[i] for i in sorted(chosen)]
    if all(isinstance(e, FaithExample) for e in examples):
        by_label: dict[object, list[int]] = {}
        for i, e in enumerate(examples):
            by_label.setdefault(e.label, []).append(i)
        quotas = {k: max(1, round(limit * len(v) / len(examples))) for k, v in by_label.items()}
        while sum(quotas.values()) > limit:  # rounding / the at-least-one rule overshot: trim the largest
            k = max(quotas, key=quotas.get)
            quotas[k] -= 1
        chosen = [i for k, idx in by_label.items() for i in rng.sample(idx, min(quotas[k], len(idx)))]
        return [examples[i] for i in sorted(chosen)]
    return [examples[i] for i in sorted(rng.sample(range(len(examples)), limit))]


def load(name: str, *, split: str | None = None, level: str | None = None, limit: int | None = None,
         seed: int = 0) -> list[Example]:
    spec = get(name)
    level = level or spec.levels[0]
    if level not in spec.levels:
        raise ValueError(f"dataset {name} has levels {spec.levels}, not {level!r}")
    split = split or spec.splits[0]
    if split not in spec.splits:
        raise ValueError(f"dataset {name} has splits {spec.splits}, not {split!r}")
    examples = spec.loader(split=split, level=level)
    check_examples(name, examples)
    return subset(examples, limit, seed)


REQUIRED_TEXT = {FaithExample: ("document", "summary"), RatedExample: ("source", "output"),
                 MeetingErrorExample: ("transcript", "summary")}


def check_examples(dataset: str, examples: list[Example]) -> None:
    """Refuse examples whose text fields are empty, naming the dataset, the example and the field
    (a judge would otherwise be asked about nothing and its answer scored as if it meant something)."""
    seen: set[str] = set()
    for e in examples:
        if e.id in seen:
            raise DataFormatError(dataset, e.id, "id", "duplicate example id")
        seen.add(e.id)
        for f in REQUIRED_TEXT.get(type(e), ()):
            if not str(getattr(e, f) or "").strip():
                raise DataFormatError(dataset, e.id, f, "empty text; fix or drop this example")
