"""Rated aspects (SummEval, Topical-Chat): which template scores which aspect on which scale, and the
per-aspect fan-out every scoring method shares.

The templates of a dataset's aspects are registered by the paper that prints them (``register_templates``, in
``TEMPLATES``, a ``registry.Registry``: the plug-in packages are imported on first lookup). The scale of an aspect is read from its template's front
matter (``scale: 1-5``), so the prompt and the parser cannot disagree.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from typing import Any, Awaitable, Callable

from sumjudge.data.records import RatedExample
from sumjudge.errors import ConfigError
from sumjudge.judges.base import Judgement
from sumjudge.prompts import load as load_template
from sumjudge.registry import Registry

# dataset -> its aspects' templates (aspect -> template, in the order of the paper's table), as the papers register
# them (``register_templates``); a dataset not there yet is looked for in the plug-in packages first
TEMPLATES: Registry[dict[str, str]] = Registry("dataset with rated aspects")
# dataset -> template field -> example attribute; the first field is the one cut when a prompt must be shortened (a
# paper that scores aspects of its own data registers its fields)
FIELDS: Registry[dict[str, str]] = Registry("dataset with aspect fields")
FIELDS.add("summeval", {"document": "source", "summary": "output"})
FIELDS.add("topical-chat", {"dialogue": "source", "fact": "context", "response": "output"})
FIELDS.add("faithfulness", {"document": "document", "summary": "summary"})  # a binary faithfulness example
KIND: dict[str, str] = {"summeval": "summary", "topical-chat": "dialogue", "faithfulness": "summary"}  # what a judge is told it reads


def register_templates(dataset: str, templates: dict[str, str]) -> None:
    """The templates that score ``dataset``'s aspects (aspect -> template name), as the paper that prints them
    lists them."""
    TEMPLATES.add(dataset, dict(templates))


def _templates(dataset: str) -> dict[str, str]:
    return TEMPLATES.find(dataset)  # the papers register their templates when they are imported


@dataclass(frozen=True)
class Aspect:
    dataset: str
    name: str
    template: str
    lo: int
    hi: int
    constants: tuple[tuple[str, str], ...] = ()  # template slots that are the same for every example


    @property
    def title(self) -> str:
        return self.name.capitalize()

    @property
    def options(self) -> tuple[str, ...]:
        return tuple(str(v) for v in range(self.lo, self.hi + 1))

    def fields(self, ex: RatedExample) -> dict[str, str]:
        """The template's slots for one example (only those the template uses)."""
        used = load_template(self.template).fields
        return {**{k: str(getattr(ex, attr) or "") for k, attr in FIELDS.find(self.dataset).items() if k in used},
                **dict(self.constants)}

    @property
    def shrink(self) -> str:
        """The field cut (from its end) when the prompt must be shortened to fit the model context."""
        used = load_template(self.template).fields
        return next(k for k in FIELDS.find(self.dataset) if k in used)


def consistency_aspect() -> Aspect:
    """G-Eval's SummEval consistency prompt (the registered SummEval ``consistency`` aspect) over a binary
    faithfulness example's document and summary."""
    return replace(aspect("summeval", "consistency"), dataset="faithfulness")


def thresholded(example_id: str, score: float | None, threshold: float, details: dict[str, Any]) -> Judgement:
    """A binary faithfulness judgement from a graded consistency score: faithful (1) when ``score >= threshold``;
    an unreadable score gives no label (counted, never guessed). The score stays in the judgement."""
    label = None if score is None else int(score >= threshold)
    return Judgement(example_id=example_id, label=label, score=score, parsed=label is not None,
                     label_source="parsed" if label is not None else "unparsed", details=details)


def aspect(dataset: str, name: str, overrides: dict[str, dict[str, str]] | None = None) -> Aspect:
    """The aspect ``name`` of ``dataset``: its template (a method's ``overrides`` first) and scale."""
    templates = _templates(dataset)
    if name not in templates:
        raise ConfigError(f"unknown aspect {name!r} for {dataset}; known: {', '.join(templates)}")
    tmpl = load_template((overrides or {}).get(dataset, {}).get(name) or templates[name])
    try:
        lo, hi = (int(x) for x in tmpl.meta["scale"].split("-"))
    except (KeyError, ValueError):
        raise ConfigError(f"template {tmpl.name} has no 'scale: lo-hi' line in its front matter") from None
    return Aspect(dataset=dataset, name=name, template=tmpl.name, lo=lo, hi=hi)


def aspects_for(dataset: str, names: str | list[str] | tuple[str, ...] | None,
                overrides: dict[str, dict[str, str]] | None = None) -> list[Aspect]:
    """The aspects to score: ``None``/``"all"`` = every aspect of the dataset (Table 1 order); else a
    list or a comma-separated string of names."""
    templates = _templates(dataset)
    if names is None or names == "all" or names == ["all"]:
        names = list(templates)
    elif isinstance(names, str):
        names = [n.strip() for n in names.split(",") if n.strip()]
    if not names:
        raise ConfigError("aspects: give at least one aspect (or 'all')")
    return [aspect(dataset, n, overrides) for n in names]


async def score_aspects(example: RatedExample, names, one: Callable[[Aspect], Awaitable[tuple[float | None, dict]]],
                        overrides: dict[str, dict[str, str]] | None = None) -> Judgement:
    """Score every requested aspect of ``example`` concurrently (their calls reach the backend together);
    ``one(aspect)`` returns (score or None, details). ``score`` is set when a single aspect is scored. Each
    aspect's details record its scale and template (a method may score an aspect on its own scale)."""
    asp = aspects_for(example.dataset, names, overrides)
    results = await asyncio.gather(*(one(a) for a in asp))
    scores = {a.name: s for a, (s, _) in zip(asp, results)}
    details: dict[str, Any] = {a.name: {**d, "scale": [a.lo, a.hi], "template": a.template}
                               for a, (_, d) in zip(asp, results)}
    return Judgement(example_id=example.id, score=scores[asp[0].name] if len(asp) == 1 else None, scores=scores,
                     parsed=all(v is not None for v in scores.values()),
                     label_source="parsed" if all(v is not None for v in scores.values()) else "unparsed",
                     details={"aspects": details})
