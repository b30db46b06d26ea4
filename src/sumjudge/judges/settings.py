"""Method settings: every ``--set key=value`` (and every notebook setting) is checked here, before any model
loads, against the config dataclass it is meant for.

One mechanism for every method:

1. the key must be a field of the config dataclass;
2. the value is converted to the field's annotated type (``int``, ``float``, ``bool``, ``str``, ``X | None``,
   ``tuple[str, ...]``; ``Any`` is left as given): ``rounds=two`` or ``sessions=2.5`` are refused;
3. the field's rule, if any, is checked: a rule comes from the field's metadata (``choices``, ``min``,
   ``max``: for settings whose allowed values live with one method) or from ``RULES`` below (settings that
   several methods share, by name);
4. the config's own ``check()``, where it has one, runs the checks that involve several fields or files.

Every failure is one ``ConfigError`` naming the config, the key, the value and what is allowed (the CLI
exits 2 with it).
"""

from __future__ import annotations

import dataclasses
import json
import re
import types
import typing
from dataclasses import dataclass
from typing import Any

from sumjudge.errors import ConfigError


@dataclass(frozen=True)
class Rule:
    min: float | None = None
    max: float | None = None
    min_exclusive: bool = False
    choices: tuple | None = None

    def allowed(self) -> str:
        if self.choices is not None:
            return "one of " + ", ".join(str(c) for c in self.choices)
        parts = []
        if self.min is not None:
            parts.append(f"{'>' if self.min_exclusive else '>='} {self.min:g}")
        if self.max is not None:
            parts.append(f"<= {self.max:g}")
        return " and ".join(parts)

    def ok(self, v: Any) -> bool:
        if v is None:
            return True
        if self.choices is not None:
            return v in self.choices
        if self.min is not None and (v <= self.min if self.min_exclusive else v < self.min):
            return False
        return self.max is None or v <= self.max


@dataclass
class Generation:
    """The generation settings every method's config shares; a method's config subclasses it and overrides the
    defaults its paper used. ``max_new_tokens``: the answer's token budget; ``temperature``: 0 decodes greedily;
    ``seed``: the run's seed, from which each sampled call derives its own; ``truncate``: what a prompt over the
    model's context does (``error``: the run stops and names the example; ``truncate``: the document's end is cut,
    the words cut recorded); ``fallback``: what an answer whose value cannot be read does (``none``: it stays
    unreadable and is counted; ``option_scores``: the likelier option by the model's own scores, recorded as
    such)."""

    max_new_tokens: int = 512
    temperature: float = 0.0
    seed: int = 0
    truncate: str = "error"
    fallback: str = "none"


# Settings shared by several methods, by field name.
RULES: dict[str, Rule] = {
    "temperature": Rule(min=0),
    "top_p": Rule(min=0, max=1, min_exclusive=True),
    "max_new_tokens": Rule(min=1),
    "samples": Rule(min=1),
    "rounds": Rule(min=1),
    "sessions": Rule(min=1),
    "adjudicators": Rule(min=1),
    "faithful_agents": Rule(min=0),
    "unfaithful_agents": Rule(min=0),
    "intervention_after": Rule(min=0),
    "iterations": Rule(min=1),
    "challengers": Rule(min=1),
    "history_tokens": Rule(min=1),
    "align_over": Rule(min=1),
    "align_tokens": Rule(min=1),
    "align_sentences": Rule(min=1),
    "window_words": Rule(min=0),
    "steps": Rule(choices=(1, 3)),
    "truncate": Rule(choices=("error", "truncate")),
    "fallback": Rule(choices=("none", "option_scores")),
    "label_retry": Rule(choices=("resample", "follow_up")),
    "init": Rule(choices=("stance", "none")),
    "prompts": Rule(choices=("code", "printed")),
    "adjudicate": Rule(choices=("tie", "disagreement")),
    "critic_stop": Rule(choices=("instructed", "paper")),
    "madp_prompts": Rule(choices=("code", "sumjudge")),
    "transcript_tokens": Rule(min=1),
    "protocol": Rule(choices=("paper", "repository")),
    "min_coverage": Rule(min=0, max=1),
    "session_adjudicators": Rule(min=1),
    "stance_retries": Rule(min=0),
    "aspect_mode": Rule(choices=("single", "multi")),
    "mode": Rule(choices=("probs", "samples", "auto")),
    "inference": Rule(choices=("binary", "taxonomy")),
}
_INTEGER = re.compile(r"[+-]?\d+")


def rule_for(f: dataclasses.Field) -> Rule | None:
    meta = {k: f.metadata[k] for k in ("min", "max", "choices") if k in f.metadata}
    if meta:
        return Rule(**{k: tuple(v) if k == "choices" else v for k, v in meta.items()})
    return RULES.get(f.name)


def _convert(value: Any, tp: Any) -> Any:
    """``value`` as type ``tp``; raises ValueError with what was expected."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        if value is None or (isinstance(value, str) and value.strip().lower() in ("none", "null")):
            if type(None) in args:
                return None
        errors = []
        for a in (a for a in args if a is not type(None)):
            try:
                return _convert(value, a)
            except ValueError as e:
                errors.append(str(e))
        raise ValueError(" or ".join(errors))
    if tp is bool:
        if isinstance(value, bool):
            return value
        word = str(value).strip().lower()
        if word in ("true", "yes", "1", "on"):
            return True
        if word in ("false", "no", "0", "off"):
            return False
        raise ValueError("true or false")
    if tp is int:
        if isinstance(value, bool):
            raise ValueError("an integer")
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str) and _INTEGER.fullmatch(value.strip()):
            return int(value.strip())
        raise ValueError("an integer")
    if tp is float:
        if isinstance(value, bool):
            raise ValueError("a number")
        if isinstance(value, (int, float)):
            v = float(value)
        else:
            try:
                v = float(str(value).strip())
            except ValueError:
                raise ValueError("a number") from None
        if v != v or v in (float("inf"), float("-inf")):
            raise ValueError("a finite number")
        return v
    if tp is str:
        if isinstance(value, (dict, list)) or value is None:
            raise ValueError("a string")
        return str(value)
    if origin is tuple:
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except json.JSONDecodeError:
                value = [value]
        if not isinstance(value, (list, tuple)):
            raise ValueError("a list")
        return tuple(_convert(v, args[0]) for v in value)
    return value


def check_setting(cls: type, f: dataclasses.Field, value: Any, hints: dict[str, Any]) -> Any:
    """One setting, converted and checked; ``ConfigError`` naming key, value and what is allowed."""
    rule = rule_for(f)
    try:
        v = _convert(value, hints[f.name])
    except ValueError as e:
        allowed = f" ({rule.allowed()})" if rule else ""
        raise ConfigError(f"setting {f.name}={value!r} for {cls.__name__}: expected {e}{allowed}") from None
    if rule is not None:
        numeric = isinstance(v, (int, float)) and not isinstance(v, bool)
        if rule.choices is None and v is not None and not numeric:
            raise ConfigError(f"setting {f.name}={value!r} for {cls.__name__}: expected a number {rule.allowed()}")
        if not rule.ok(v):
            raise ConfigError(f"setting {f.name}={value!r} for {cls.__name__}: allowed values are {rule.allowed()}")
    return v


def build_config(cls: type, values: dict[str, Any]):
    """``cls(**values)`` with every value converted and checked, then the config's own ``check()``."""
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = [k for k in values if k not in fields]
    if unknown:
        raise ConfigError(f"unknown setting {unknown[0]!r} for {cls.__name__}; known: {', '.join(sorted(fields))}")
    checked = {k: check_setting(cls, fields[k], v, hints) for k, v in values.items()}
    for name, f in fields.items():  # defaults obey the rules too (a subclass may change one)
        if name not in checked and rule_for(f) is not None and f.default is not dataclasses.MISSING:
            check_setting(cls, f, f.default, hints)
    cfg = cls(**checked)
    check = getattr(cfg, "check", None)
    if callable(check):
        check()
    return cfg


def make_config(cls: type, sets: dict[str, Any] | list[str] | None = None, **defaults: Any):
    """Build a config dataclass from ``key=value`` strings (CLI ``--set``) or a dict, every value converted to
    the field's type and checked against its rule (``build_config``). Unknown keys are errors."""
    names = {f.name for f in dataclasses.fields(cls)}
    values: dict[str, Any] = {k: v for k, v in defaults.items() if k in names}
    items = sets.items() if isinstance(sets, dict) else [s.split("=", 1) if "=" in s else (s, None) for s in sets or []]
    for k, v in items:
        if v is None and not isinstance(sets, dict):  # "--set key" without a value (a dict may hold None)
            raise ConfigError(f"--set {k}: expected key=value")
        if isinstance(v, str) and k in names and _wants_json(cls, k):
            try:
                v = json.loads(v)
            except json.JSONDecodeError:
                pass
        values[k] = v
    return build_config(cls, values)


def _wants_json(cls: type, name: str) -> bool:
    """Free-form settings (``Any``: lists, mappings) take JSON from the command line; typed ones are converted
    from the string by ``build_config``."""
    return typing.get_type_hints(cls)[name] is Any
