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

Variants (parameters; ``config.variant`` names them as the paper does):

- ``aspect_mode=multi``: all selected types in one prompt per step (Section 2.2's multi-aspect baseline;
  ``mesa/s22_multi_*``, sumjudge's adaptation of Figures 3-5);
- ``madp=true``: every step runs as a multi-agent discussion (``mesa_madp``): MADP-S with the run's model,
  MADP-M with ``challenger_models``;
- ``feedback=PATH``: the self-training report of ``mesa_feedback`` (Section 2.5) is appended to every step
  prompt of its error type ("Single-1" / "Multi-1"); examples from the meetings it was learned on are
  refused, so training and test never share a summary or a transcript.

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
from typing import Any, Callable

from ..data.records import MeetingErrorExample
from ..llm import ConfigError
from ..llm.engine import LLM
from ..llm.parsing import ParseError, json_number, lenient_json
from ..prompts import render
from . import mesa_madp as madp
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
    aspect_mode: str = "single"  # single: one error type per prompt (MESA) | multi: all types in one prompt (2.2)
    types: Any = None  # error-type codes (list or comma-separated); None = every type of the criteria file
    criteria: str = ""  # YAML of error types; "" = prompts/mesa/error_types.yaml
    madp: bool = False  # wrap every step in the multi-agent discussion protocol (Section 2.4)
    challengers: int = 3
    perspectives: Any = None  # the challengers' perspectives (list); None = mesa_madp.PERSPECTIVES
    challenger_models: Any = None  # MADP-M: ["backend:model[@base_url]", ...]; None = MADP-S (the run's model)
    feedback: Any = None  # self-training reports (a mesa_feedback JSON file or its mapping); None = iteration 0
    max_new_tokens: int = 1024
    temperature: float = 0.0
    seed: int = 0
    truncate: str = "error"
    fallback: str = "none"  # none | option_scores (see the module docstring; recorded as score_source)

    def check(self) -> None:
        """Cross-field checks, run when the config is built (before any model loads)."""
        self.selected()

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
        if self.madp and self.challengers < 1:
            raise ConfigError("madp needs at least one challenger")
        return [known[c] for c in codes]

    @property
    def variant(self) -> str:
        """The paper's name for this setup: Single / MADP-S / MADP-M, single- or three-step, aspect mode."""
        madp = ("MADP-M" if self.challenger_models else "MADP-S") if self.madp else "Single"
        return f"{madp}, {'three' if self.steps == 3 else 'single'}-step, {self.aspect_mode}-aspect"


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
    discussion: dict[str, list[dict]] = field(default_factory=dict)  # MADP: step -> contributions
    feedback_used: bool = False


def parse_instances(text: str) -> list[dict]:
    """Steps 1-2: a JSON list of instance objects. Also accepted: an object wrapping one such list
    (``{"instances": [...]}``; ``{"omissions": []}`` is an empty list, not an instance) and a single instance
    object (no list inside). An object with several lists is unreadable."""
    data = lenient_json(text)
    if isinstance(data, dict):
        lists = [v for v in data.values() if isinstance(v, list)]
        if "instances" in data:
            data = data["instances"]
        elif len(lists) == 1:
            data = lists[0]
        elif lists:
            raise ParseError(f"an object with {len(lists)} lists: which one holds the instances is not stated")
        else:
            data = [data]
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
                    "severity": None if sev is None else json_number(sev, 0, 10, "severity")})
    return out


def parse_score(text: str) -> tuple[float, float, str]:
    """Step 3 / single step: (rating 0-5, confidence 0-10, reasoning)."""
    data = lenient_json(text)
    if not isinstance(data, dict):
        raise ParseError("expected a JSON object with rating and confidence")
    for key in ("rating", "confidence"):
        if key not in data:
            raise ParseError(f"no '{key}' in the JSON answer")
    return (json_number(data["rating"], 0, 5, "rating"), json_number(data["confidence"], 0, 10, "confidence"),
            str(data.get("reasoning", "")))


def parse_multi_score(codes: list[str]) -> Callable[[str], dict[str, tuple[float, float, str]]]:
    """Multi-aspect step 3 / single step: {"<code>": {"rating", "confidence", "reasoning"}, ...} for every code."""
    def parse(text: str) -> dict[str, tuple[float, float, str]]:
        data = lenient_json(text)
        if not isinstance(data, dict):
            raise ParseError("expected a JSON object keyed by error type code")
        missing = [c for c in codes if not isinstance(data.get(c), dict)]
        if missing:
            raise ParseError(f"no rating for error type(s) {missing}")
        return {c: parse_score(json.dumps(data[c])) for c in codes}
    return parse


@lru_cache(maxsize=8)
def _read_feedback(path: str) -> dict[str, Any]:
    """A feedback file, read once per run (every example of a run uses the same one)."""
    if not Path(path).exists():
        raise ConfigError(f"feedback file {path} does not exist")
    return json.loads(Path(path).read_text(encoding="utf-8"))


def feedback_reports(config: MesaConfig) -> dict[str, Any]:
    """The self-training feedback in use: {"reports": {code: text}, "train_meetings": [...], ...} or {}."""
    fb = config.feedback
    if not fb:
        return {}
    if isinstance(fb, (str, Path)):
        fb = _read_feedback(str(fb))
    if not isinstance(fb, dict) or not isinstance(fb.get("reports"), dict):
        raise ConfigError("feedback: expected a mapping with 'reports' (error type -> report), as mesa_feedback writes")
    return fb


class Steps:
    """Runs one assessment step: fits the prompt, appends the self-training report, asks (or discusses
    under MADP), records truncation, discussion and the first unparsed step on the assessments."""

    def __init__(self, example: MeetingErrorExample, llm: LLM, config: MesaConfig, reports: dict[str, str]):
        self.example, self.llm, self.config, self.reports = example, llm, config, reports

    async def ask(self, template: str, fields: dict[str, str], parse, step: int, outs: list[TypeAssessment],
                  report_code: str | None):
        cfg, llm = self.config, self.llm
        report = self.reports.get(report_code or "", "")
        if report_code is None:  # multi-aspect: every selected type's report
            report = "\n".join(f"{a.code}: {self.reports[a.code]}" for a in outs if a.code in self.reports)
        appendix = "\n\n" + render("mesa/s25_feedback_appendix", report=report).strip() if report else ""
        room = cfg.max_new_tokens + FALLBACK_ROOM + (llm.count_tokens(appendix) or 2 * len(appendix.split()))
        if cfg.madp:
            room += madp.room(cfg.max_new_tokens, cfg.challengers)
        tag = f"{self.example.id}/{report_code or 'multi'}"
        prompt, fit = fit_prompt(llm, template, fields, max_new_tokens=room, policy=cfg.truncate, tag=tag,
                                 shrink="transcript")
        req = request(prompt + appendix, max_new_tokens=cfg.max_new_tokens, temperature=cfg.temperature,
                      seed=cfg.seed, tag=f"{tag}/step{step}")
        if cfg.madp:
            res, log = await madp.discuss(llm, req, parse, challengers=cfg.challengers,
                                          perspectives=list(cfg.perspectives or madp.PERSPECTIVES),
                                          models=list(cfg.challenger_models or []))
        else:
            res, log = await llm.chat_parsed(req, parse), None
        for a in outs:
            a.truncated_words = max(a.truncated_words, fit.get("truncated_words", 0))
            a.feedback_used = a.feedback_used or bool(appendix)
            if log:
                a.discussion[f"step{step}"] = log
            if not res.ok:
                a.unparsed_step = a.unparsed_step or step
        return res, req

    async def fallback_score(self, req, prefix: str = "") -> tuple[float, float, str]:
        """The likeliest rating 0-5 and confidence 0-10 after the JSON keys (engine option scoring)."""
        rating = await self.llm.score_fallback(req.messages, [str(v) for v in range(6)], prefix=prefix + '{"rating": ',
                                               tag=req.tag + "-rating")
        conf = await self.llm.score_fallback(req.messages, [str(v) for v in range(11)],
                                             prefix=f'{prefix}{{"rating": {rating.best()}, "confidence": ',
                                             tag=req.tag + "-confidence")
        return float(rating.best()), float(conf.best()), ""


async def assess_type(example: MeetingErrorExample, t: ErrorType, llm: LLM, config: MesaConfig,
                      reports: dict[str, str] | None = None) -> TypeAssessment:
    """Single-aspect assessment of one error type (Figures 3-5, or the single step)."""
    out = TypeAssessment(code=t.code, steps=config.steps)
    steps = Steps(example, llm, config, reports or {})
    base = {"criteria": t.definition, "summary": example.summary, "transcript": example.transcript}

    async def ask(template: str, fields: dict[str, str], parse, step: int):
        res, req = await steps.ask(template, fields, parse, step, [out], t.code)
        if res.ok:
            return res.value
        if config.fallback != "option_scores":
            return None
        if step == 3 or config.steps == 1:
            out.score_source = "option_scores"
            return await steps.fallback_score(req)
        return []

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


async def assess_multi(example: MeetingErrorExample, selected: list[ErrorType], llm: LLM, config: MesaConfig,
                       reports: dict[str, str] | None = None) -> list[TypeAssessment]:
    """Multi-aspect assessment (Section 2.2): every selected type in one prompt per step (``s22_multi_*``)."""
    outs = [TypeAssessment(code=t.code, steps=config.steps) for t in selected]
    by_code = {a.code: a for a in outs}
    steps = Steps(example, llm, config, reports or {})
    codes = [t.code for t in selected]
    base = {"criteria": "\n".join(f"- {t.code} ({t.name}): {t.definition}" for t in selected),
            "summary": example.summary, "transcript": example.transcript}

    def unparsed() -> list[TypeAssessment]:
        for a in outs:
            a.score_source = "unparsed"
        return outs

    def own(items: list[dict], code: str) -> list[dict]:
        return [x for x in items if str(x.get("error_type", "")).strip().upper() == code.upper()]

    if config.steps == 3:
        res, _ = await steps.ask("mesa/s22_multi_step1_identify", base, parse_instances, 1, outs, None)
        found = res.value if res.ok else ([] if config.fallback == "option_scores" else None)
        if found is None:
            return unparsed()
        rated: list[dict] = []
        if found:
            res, _ = await steps.ask("mesa/s22_multi_step2_rate",
                                     {**base, "instances": json.dumps(found, ensure_ascii=False)}, parse_rated, 2, outs, None)
            rated = res.value if res.ok else ([] if config.fallback == "option_scores" else None)
            if rated is None:
                return unparsed()
        kept = [x for x in rated if x["error_exists"]]
        for a in outs:
            a.instances, a.rated, a.detected = own(found, a.code), own(rated, a.code), bool(own(kept, a.code))
        res, req = await steps.ask("mesa/s22_multi_step3_score", {**base, "codes": ", ".join(codes),
                                   "instances": json.dumps(kept, ensure_ascii=False)}, parse_multi_score(codes), 3, outs, None)
    else:
        res, req = await steps.ask("mesa/s22_multi_single_step", {**base, "codes": ", ".join(codes)},
                                   parse_multi_score(codes), 1, outs, None)
    if res.ok:
        scores = res.value
    elif config.fallback == "option_scores":
        scores = {c: await steps.fallback_score(req, prefix=f'{{"{c}": ') for c in codes}
        for a in outs:
            a.score_source = "option_scores"
    else:
        return unparsed()
    for c, (rating, conf, why) in scores.items():
        a = by_code[c]
        a.rating, a.confidence, a.reasoning = rating, conf, why
        a.score_source = a.score_source or "parsed"
        if config.steps == 1:
            a.detected = rating > 0
    return outs


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
    fb = feedback_reports(config)
    if example.meeting in set(fb.get("train_meetings", [])):
        raise ConfigError(f"example {example.id} is from a meeting the self-training feedback was learned on; "
                          "evaluate on the test split (--split test)")
    reports = {str(k): str(v) for k, v in fb.get("reports", {}).items()}
    if config.aspect_mode == "multi":
        found = await assess_multi(example, selected, llm, config, reports)
    else:
        found = list(await asyncio.gather(*(assess_type(example, t, llm, config, reports) for t in selected)))
    impact, quality = overall(found, error_types(config.criteria))
    scores = {a.code: a.rating for a in found}
    ok = all(v is not None for v in scores.values())
    return Judgement(example_id=example.id, score=quality, scores=scores, parsed=ok,
                     label_source="parsed" if ok else "unparsed",
                     details={"impact": impact, "quality": quality, "variant": config.variant,
                              "feedback_iteration": fb.get("iteration", 0) if fb else 0,
                              "types": {a.code: asdict(a) for a in found}})


register(MethodSpec(name="mesa", paper="mesa", kind="meeting-errors", config_cls=MesaConfig, judge=mesa,
                    description="MESA: per-error-type identify / rate / score, weighted impact and quality"))
