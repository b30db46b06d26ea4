"""MESA (Kirstein et al.): per-error-type assessment of meeting summaries, overall impact and quality.

For each error type independently (single-aspect, Section 2.2; the types of one summary reach the
backend together):

- ``steps=3`` (Section 2.3, Figures 3-5): step 1 lists candidate instances with a certainty; step 2
  decides per instance whether the error exists, with severity 0-10 and certainty; step 3 scores the
  summary for the type (Likert 0-5 impact, confidence 0-10) from the instances step 2 kept. A step-1
  list with no instance skips step 2 (nothing to rate) and step 3 sees an empty list;
- ``steps=1``: the single-step baseline of Table 1 (``mesa/table1_single_step``).

Outputs are JSON, parsed leniently (``lenient_json``); an unparseable answer is retried (engine
``parse_retries``) and then counted (``unparsed_step``): that type gets no score, it is never guessed.
Only with ``fallback=option_scores`` (the offline smoke/ci profiles) does an unreadable step 1 or 2
continue with no instances, and an unreadable score become the likeliest rating 0-5 and confidence 0-10
after the JSON keys (engine option scoring), recorded as ``score_source = option_scores``.

Error identification (Table 1): a type counts as *detected* when step 2 keeps at least one instance
(three-step) or the rating is above 0 (single-step). Overall (Section 2.5, Eq. 1-2):
impact = sum(s_n * c_n * i_n) / sum(c_n * i_n) over the scored types, c_n = confidence / 10, i_n the
type's importance; quality = 1 + (5 - impact) / 5 * 9.

Error types (codes, full-length definitions, importance) are data: ``prompts/mesa/error_types.yaml``, or
your own file with ``criteria=PATH``. Long transcripts are cut from the end to fit the model context
under ``truncate=truncate`` (recorded per type as ``truncated_words``); ``truncate=error`` refuses them.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from importlib.resources import files
from pathlib import Path
from typing import Any

from ..data.records import MeetingErrorExample
from ..llm import ConfigError
from ..llm.engine import LLM
from ..llm.parsing import ParseError, lenient_json
from .base import Judgement, MethodSpec, fit_prompt, register, request


FALLBACK_ROOM = 16  # tokens kept free for the option-score fallback's JSON prefix


@dataclass(frozen=True)
class ErrorType:
    code: str
    name: str
    definition: str
    importance: float = 1.0


@lru_cache(maxsize=None)
def error_types(path: str = "") -> dict[str, ErrorType]:
    """The error types of ``path`` (YAML: code -> name, definition, importance), or the package's."""
    import yaml

    text = (Path(path).read_text(encoding="utf-8") if path
            else files("sumjudge.prompts").joinpath("mesa/error_types.yaml").read_text(encoding="utf-8"))
    data = yaml.safe_load(text)
    where = path or "prompts/mesa/error_types.yaml"
    if not isinstance(data, dict) or not data:
        raise ConfigError(f"{where}: expected a mapping of error-type codes")
    out = {}
    for code, d in data.items():
        if not isinstance(d, dict) or not str(d.get("definition", "")).strip():
            raise ConfigError(f"{where}: error type {code!r} has no 'definition'")
        out[str(code)] = ErrorType(code=str(code), name=str(d.get("name", code)), definition=str(d["definition"]),
                                   importance=float(d.get("importance", 1.0)))
    return out


@dataclass
class MesaConfig:
    steps: int = 3  # 3: identify, rate, score (Figures 3-5) | 1: single-step (Table 1)
    types: Any = None  # error-type codes (list or comma-separated); None = every type of the criteria file
    criteria: str = ""  # YAML of error types; "" = prompts/mesa/error_types.yaml
    max_new_tokens: int = 1024
    temperature: float = 0.0
    seed: int = 0
    truncate: str = "error"
    fallback: str = "none"  # none | option_scores (see the module docstring; recorded as score_source)

    def selected(self) -> list[ErrorType]:
        known = error_types(self.criteria)
        codes = self.types
        if codes is None or codes == "all":
            codes = list(known)
        elif isinstance(codes, str):
            codes = [c.strip() for c in codes.split(",") if c.strip()]
        unknown = [c for c in codes if c not in known]
        if unknown or not codes:
            raise ConfigError(f"unknown error type(s) {unknown}; known: {', '.join(known)}")
        if self.steps not in (1, 3):
            raise ConfigError(f"steps={self.steps}: expected 1 (single-step) or 3 (three-step)")
        return [known[c] for c in codes]


@dataclass
class TypeAssessment:
    code: str
    steps: int
    instances: list[dict] = field(default_factory=list)  # step 1
    rated: list[dict] = field(default_factory=list)  # step 2
    rating: float | None = None  # step 3: impact 0 (none) .. 5 (very high)
    confidence: float | None = None  # 0..10
    reasoning: str = ""
    detected: bool | None = None
    unparsed_step: int | None = None  # the first step whose answer could not be read
    score_source: str = ""  # parsed | option_scores | unparsed
    truncated_words: int = 0


def _number(value: Any, lo: float, hi: float, what: str) -> float:
    try:
        v = float(str(value).strip().split("/")[0])
    except ValueError:
        raise ParseError(f"{what} {value!r} is not a number") from None
    if not lo <= v <= hi:
        raise ParseError(f"{what} {v:g} is outside [{lo:g}, {hi:g}]")
    return v


def parse_instances(text: str) -> list[dict]:
    """Steps 1-2: a JSON list of instance objects (a single object or {"instances": [...]} is accepted)."""
    data = lenient_json(text)
    if isinstance(data, dict):
        data = data.get("instances", [data])
    if not isinstance(data, list) or not all(isinstance(x, dict) for x in data):
        raise ParseError("expected a JSON list of instance objects")
    return data


def parse_rated(text: str) -> list[dict]:
    """Step 2: every instance needs a boolean-like error_exists; severity (0-10) is read where given."""
    out = []
    for x in parse_instances(text):
        flag = x.get("error_exists")
        if isinstance(flag, str):
            flag = {"true": True, "false": False, "yes": True, "no": False}.get(flag.strip().lower())
        if not isinstance(flag, bool):
            raise ParseError(f"instance without a true/false error_exists: {json.dumps(x)[:80]}")
        sev = x.get("severity")
        out.append({**x, "error_exists": flag,
                    "severity": None if sev is None else _number(sev, 0, 10, "severity")})
    return out


def parse_score(text: str) -> tuple[float, float, str]:
    """Step 3 / single step: (rating 0-5, confidence 0-10, reasoning)."""
    data = lenient_json(text)
    if not isinstance(data, dict):
        raise ParseError("expected a JSON object with rating and confidence")
    for key in ("rating", "confidence"):
        if key not in data:
            raise ParseError(f"no '{key}' in the JSON answer")
    return (_number(data["rating"], 0, 5, "rating"), _number(data["confidence"], 0, 10, "confidence"),
            str(data.get("reasoning", "")))


async def assess_type(example: MeetingErrorExample, t: ErrorType, llm: LLM, config: MesaConfig) -> TypeAssessment:
    out = TypeAssessment(code=t.code, steps=config.steps)
    base = {"criteria": t.definition, "summary": example.summary, "transcript": example.transcript}

    async def ask(template: str, fields: dict[str, str], parse, step: int):
        prompt, fit = fit_prompt(llm, template, fields, max_new_tokens=config.max_new_tokens + FALLBACK_ROOM,
                                 policy=config.truncate, tag=f"{example.id}/{t.code}", shrink="transcript")
        out.truncated_words = max(out.truncated_words, fit.get("truncated_words", 0))
        req = request(prompt, max_new_tokens=config.max_new_tokens, temperature=config.temperature,
                      seed=config.seed, tag=f"{example.id}/{t.code}/step{step}")
        res = await llm.chat_parsed(req, parse)
        if res.ok:
            return res.value
        out.unparsed_step = out.unparsed_step or step
        if step == 3 or config.steps == 1:
            return await fallback_score(req) if config.fallback == "option_scores" else None
        return [] if config.fallback == "option_scores" else None

    async def fallback_score(req) -> tuple[float, float, str]:
        rating = await llm.score_options(req.messages, [str(v) for v in range(6)], prefix='{"rating": ',
                                         tag=req.tag + "#fallback-rating")
        conf = await llm.score_options(req.messages, [str(v) for v in range(11)],
                                       prefix=f'{{"rating": {rating.best()}, "confidence": ', tag=req.tag + "#fallback-confidence")
        out.score_source = "option_scores"
        return float(rating.best()), float(conf.best()), ""

    if config.steps == 1:
        scored = await ask("mesa/table1_single_step", base, parse_score, 1)
    else:
        found = await ask("mesa/fig3_step1_identify", base, parse_instances, 1)
        if found is None:
            out.score_source = "unparsed"
            return out
        out.instances = found
        if found:
            rated = await ask("mesa/fig4_step2_rate", {**base, "instances": json.dumps(found, ensure_ascii=False)},
                              parse_rated, 2)
            if rated is None:
                out.score_source = "unparsed"
                return out
            out.rated = rated
        kept = [x for x in out.rated if x["error_exists"]]
        out.detected = bool(kept)
        scored = await ask("mesa/fig5_step3_score", {**base, "instances": json.dumps(kept, ensure_ascii=False)},
                           parse_score, 3)
    if scored is None:
        out.score_source = "unparsed"
        return out
    out.rating, out.confidence, out.reasoning = scored
    out.score_source = out.score_source or "parsed"
    if config.steps == 1:
        out.detected = out.rating > 0
    return out


def overall(assessments: list[TypeAssessment], types: dict[str, ErrorType]) -> tuple[float | None, float | None]:
    """(impact, quality), Eq. (1) and (2), over the types that have a rating and a confidence."""
    num = den = 0.0
    for a in assessments:
        if a.rating is None or a.confidence is None:
            continue
        w = (a.confidence / 10) * types[a.code].importance
        num += a.rating * w
        den += w
    if den == 0:
        return None, None
    impact = num / den
    return impact, 1 + (5 - impact) / 5 * 9


async def mesa(example: MeetingErrorExample, llm: LLM, config: MesaConfig) -> Judgement:
    selected = config.selected()
    found = await asyncio.gather(*(assess_type(example, t, llm, config) for t in selected))
    impact, quality = overall(list(found), error_types(config.criteria))
    scores = {a.code: a.rating for a in found}
    ok = all(v is not None for v in scores.values())
    return Judgement(example_id=example.id, score=quality, scores=scores, parsed=ok,
                     label_source="parsed" if ok else "unparsed",
                     details={"impact": impact, "quality": quality, "types": {a.code: asdict(a) for a in found}})


register(MethodSpec(name="mesa", paper="mesa", kind="meeting-errors", config_cls=MesaConfig, judge=mesa,
                    description="MESA: per-error-type identify / rate / score, weighted impact and quality"))
