"""Run profiles (smoke | ci | paper): small YAML files saying which model, backend and how many examples; whether
a notebook runs in a paper's own setting is ``paper_setting``."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field, fields, replace
from importlib.resources import files
from typing import Any

import yaml

from sumjudge.errors import ConfigError
from sumjudge.profiles.paper_setting import papers


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
    dtype: str | None = None  # hf: float32 | bfloat16 | float16 | cpu-native (None: bf16 on a GPU, fp32 on a CPU)
    token_budget: int | None = None  # hf: rows x padded tokens of the decoding batch (None: the backend's, 32,768)
    # a paper's methods on another model, by paper: {paper: {model, backend, base_url}} (e.g. a long-context
    # model for meeting transcripts an 8k model cannot hold); backend defaults to the profile's
    paper_engines: dict[str, dict[str, Any]] = field(default_factory=dict)
    # notebook parameters this profile sets (e.g. fewer self-consistency samples on a CPU), in its file under each
    # paper's key, here one flat mapping (``paper_parameters``); explicit
    # `make reproduce` overrides and the notebooks' own defaults apply otherwise
    parameters: dict[str, Any] = field(default_factory=dict)
    # method settings by method name (e.g. more answer tokens for chain-of-thought), under explicit settings
    method_settings: dict[str, dict[str, Any]] = field(default_factory=dict)
    # per-notebook settings, keyed by the notebook's number ("10"): profile fields (n, context_length,
    # max_new_tokens, ...) and notebook parameters, applied over the above for that notebook only
    notebooks: dict[str, dict[str, Any]] = field(default_factory=dict)
    # notebook numbers, the longest first as measured: the order make reproduce's workers take them in when this
    # machine has no time profile of its own yet (a fresh clone); empty: the numbered order
    longest_first: list[str] = field(default_factory=list)

    def engine_for(self, paper: str) -> tuple[str, str, str | None]:
        """(backend, model, base_url) that runs the methods of ``paper``: its own (``paper_engines``) or the profile's."""
        own = self.paper_engines.get(paper) or {}
        if own.get("model"):
            return own.get("backend") or self.backend, own["model"], own.get("base_url")
        return self.backend, self.model, self.base_url

    def settings_for(self, method: str | None = None, accepted: Collection[str] | None = None) -> dict[str, Any]:
        """The profile's generation policy as method settings (those of its fields in ``accepted``, the names the
        method's config has: every paper's config has all three, a judge of your own may have none;
        ``run.methods.settings_from`` passes them), then the profile's settings for ``method``."""
        policy = {"max_new_tokens": self.max_new_tokens, "truncate": self.truncate, "fallback": self.label_fallback}
        if accepted is not None:
            policy = {k: v for k, v in policy.items() if k in accepted}
        return {**policy, **self.method_settings.get(method or "", {})}

    def engine_options(self) -> dict[str, Any]:
        """Keyword arguments for ``make_llm`` beyond backend/model/base_url."""
        opts: dict[str, Any] = {"parse_retries": self.parse_retries}
        if self.context_length and self.backend == "hf":
            opts["context_length"] = self.context_length
        if self.dtype and self.backend == "hf":
            opts["dtype"] = self.dtype
        if self.token_budget and self.backend == "hf":
            opts["token_budget"] = self.token_budget
        return opts

    def for_notebook(self, notebook: str) -> "Profile":
        """This profile as ``notebook`` (e.g. "51_your_own_judge") runs it: its section's profile fields replace
        the profile's, its other keys are notebook parameters added to ``parameters``."""
        own = {f.name for f in fields(self)} - {"name", "parameters", "notebooks", "method_settings"}
        prof = self
        for key, section in self.notebooks.items():
            if notebook.split("_", 1)[0] == str(key):
                prof = replace(prof, **{k: v for k, v in section.items() if k in own},
                               parameters={**prof.parameters, **{k: v for k, v in section.items() if k not in own}})
        return prof

    def with_overrides(self, **kw: Any) -> "Profile":
        """Override fields with the values that are set (None / '' mean: keep the profile's)."""
        vals = {k: v for k, v in kw.items() if v not in (None, "") and k in {f.name for f in fields(self)}}
        if "n" in vals:
            vals["n"] = int(vals["n"])
        return replace(self, **vals)


NOT_PROFILES = {"scale"}  # scale.yaml: the runs `sumjudge scale` and `sumjudge plan` execute, not a profile


def available() -> list[str]:
    return sorted(f.name[:-5] for f in files("sumjudge.profiles").iterdir()
                  if f.name.endswith(".yaml") and f.name[:-5] not in NOT_PROFILES)


def load(name: str, notebook: str | None = None, **overrides: Any) -> Profile:
    """The profile ``name`` (as ``notebook`` runs it, when given), with the set ``overrides`` applied last."""

    f = files("sumjudge.profiles").joinpath(f"{name}.yaml")
    if not f.is_file():
        raise ConfigError(f"unknown profile {name!r}; known: {', '.join(available())}")
    data = yaml.safe_load(f.read_text())
    unknown = set(data) - {x.name for x in fields(Profile)}
    if unknown:
        raise ConfigError(f"profile {f.name}: unknown key(s) {', '.join(sorted(unknown))}")
    for paper, engine in (data.get("paper_engines") or {}).items():
        bad = set(engine or {}) - {"backend", "model", "base_url"}
        if bad or not (engine or {}).get("model"):
            raise ConfigError(f"profile {f.name}: paper_engines.{paper} takes model (required), backend, base_url; "
                              f"got {', '.join(sorted(engine or {})) or 'nothing'}")
    prof = Profile(**{**data, "parameters": paper_parameters(f.name, data.get("parameters") or {})})
    return (prof.for_notebook(notebook) if notebook else prof).with_overrides(**overrides)


def paper_parameters(source: str, parameters: dict[str, Any]) -> dict[str, Any]:
    """A profile file's notebook parameters, which sit under their paper's key (its folder's name): the one flat
    mapping the notebooks are given (papermill passes a notebook the names it declares). A key that is no paper, or a
    name two papers both set, is refused naming the file and the key."""
    known = papers()
    flat: dict[str, Any] = {}
    owner: dict[str, str] = {}
    for paper, values in parameters.items():
        if paper not in known or not isinstance(values, dict):
            raise ConfigError(f"profile {source}: parameters.{paper}: notebook parameters sit under their paper's key "
                              f"({', '.join(known)}), each a mapping of name: value")
        for name, value in values.items():
            if name in owner:
                raise ConfigError(f"profile {source}: parameter {name!r} is set under both parameters.{owner[name]} "
                                  f"and parameters.{paper}; a name belongs to one paper")
            owner[name], flat[name] = paper, value
    return flat
