"""Run profiles (smoke | ci | paper): small YAML files saying which model, backend and how many examples."""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from importlib.resources import files
from typing import Any

import yaml


@dataclass(frozen=True)
class Profile:
    name: str
    backend: str
    model: str
    base_url: str | None
    n: int | None  # examples per experiment (None = all)
    seed: int
    max_new_tokens: int
    truncate: str  # error | truncate: what to do with prompts over the model context
    label_fallback: str  # none | option_scores: what to do with an unparseable label
    parse_retries: int = 2  # extra sampled attempts after an unparseable answer
    context_length: int | None = None  # hf: cap the prompt + answer tokens (None = the model's context)
    # notebook parameters this profile sets (e.g. fewer self-consistency samples on a CPU); explicit
    # `make reproduce` overrides and the notebooks' own defaults apply otherwise
    parameters: dict[str, Any] = field(default_factory=dict)

    def engine_options(self) -> dict[str, Any]:
        """Keyword arguments for ``make_llm`` beyond backend/model/base_url."""
        opts: dict[str, Any] = {"parse_retries": self.parse_retries}
        if self.context_length and self.backend == "hf":
            opts["context_length"] = self.context_length
        return opts

    def with_overrides(self, **kw: Any) -> "Profile":
        """Override fields with the values that are set (None / '' mean: keep the profile's)."""
        vals = {k: v for k, v in kw.items() if v not in (None, "") and k in {f.name for f in fields(self)}}
        if "n" in vals:
            vals["n"] = int(vals["n"])
        return replace(self, **vals)


def available() -> list[str]:
    return sorted(f.name[:-5] for f in files("sumjudge.profiles").iterdir() if f.name.endswith(".yaml"))


def load(name: str, **overrides: Any) -> Profile:
    f = files("sumjudge.profiles").joinpath(f"{name}.yaml")
    if not f.is_file():
        raise ValueError(f"unknown profile {name!r}; known: {', '.join(available())}")
    data = yaml.safe_load(f.read_text())
    return Profile(**data).with_overrides(**overrides)
