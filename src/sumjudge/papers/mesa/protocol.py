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
type's importance; quality = 1 + (5 - impact) / 5 * 9. A rating whose confidence was written off its 0-10
scale is read, and its type left out of the impact (``parse_score``).

Variants (parameters; ``config.variant`` names them as the paper does):

- ``aspect_mode=multi``: all selected types in one prompt per step (Section 2.2's multi-aspect baseline;
  ``mesa/s22_multi_*``, sumjudge's adaptation of Figures 3-5);
- ``madp=true``: every step runs as a multi-agent discussion (``mesa_madp``): MADP-S with the run's model,
  MADP-M with ``challenger_models``;
- ``feedback=PATH``: the self-training report of ``mesa_feedback`` (Section 2.5) is appended to every step
  prompt of its error type ("Single-1" / "Multi-1"); examples from the meetings it was learned on are
  refused, so training and test never share a summary or a transcript.

Error types (codes, full-length definitions, importance) are data: ``papers/mesa/prompts/error_types.yaml``, or
your own file with ``criteria=PATH``. Long transcripts are cut from the end to fit the model context
under ``truncate=truncate`` (recorded per type as ``truncated_words``); ``truncate=error`` refuses them.
"""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from importlib.resources import files
from pathlib import Path
from typing import Any, Callable

import yaml

from sumjudge.data.records import MeetingErrorExample
from sumjudge.data.sources import resolve
from sumjudge.errors import ConfigError
from sumjudge.judges.base import Judgement
from sumjudge.judges.settings import Generation
from sumjudge.llm import ChatRequest, PromptTooLongError
from sumjudge.llm.engine import Calls, Parsed
from sumjudge.llm.fitting import certainly_fits, longest_prefix
from sumjudge.llm.parsing import ParseError, json_number, lenient_json
from sumjudge.papers.mesa import madp
from sumjudge.prompts import load as load_template
from sumjudge.prompts import render
from sumjudge.run.methods import MethodSpec, register

FALLBACK_ROOM = 16  # tokens kept free for the option-score fallback's JSON prefix


@dataclass(frozen=True)
class ErrorType:
    code: str
    name: str  # the name the prompts show beside the definition (the authors' criteria file name)
    definition: str
    importance: float = 1.0


# sumjudge's type codes -> the authors' criteria file names (github.com/FKIRSTE/coling2025-MESA criteria/*.json),
# and i_n of Eq. (1) (the code's compute_quality_score: 1.1 for omission, hallucination, irrelevance; 0.9 for
# repetition, incoherence, language; 1.0 otherwise)
AUTHORS_NAMES = {"OM": "omission", "RED": "repetition", "INC": "incoherence", "COR": "coreference",
                 "HAL": "hallucination", "LAN": "language", "STR": "structure", "IRR": "irrelevance"}
IMPORTANCE = {"OM": 1.1, "HAL": 1.1, "IRR": 1.1, "RED": 0.9, "INC": 0.9, "LAN": 0.9, "COR": 1.0, "STR": 1.0}


# the packaged criteria sets (``papers/mesa/prompts/error_types.yaml``) -> the field each reads
PACKAGED = {"table9": "definition", "printed": "short"}


def file_signature(path: str) -> tuple:
    """What tells an edited file (or folder of files) from the one read before: each file's size and time of
    change. Files read once per process are keyed by it, so an edited criteria or feedback file is read again in
    a live kernel."""
    p = Path(path)
    found = sorted(p.rglob("*")) if p.is_dir() else [p] if p.is_file() else []
    return tuple((str(f), f.stat().st_mtime_ns, f.stat().st_size) for f in found if f.is_file())


def error_types(criteria: str = "authors") -> dict[str, ErrorType]:
    """The error types of ``criteria`` (see ``_error_types``), read again when its file changes."""
    return _error_types(criteria, file_signature(criteria) if criteria not in ("", "authors", *PACKAGED) else ())


@lru_cache(maxsize=32)
def _error_types(criteria: str, signature: tuple) -> dict[str, ErrorType]:
    """The error types of a criteria set: ``authors`` (default: the authors' full definitions, ``criteria/*.json``
    of their repository, resolved like a dataset: data/raw, the mirror, or ``sumjudge data fetch meeting-error-criteria``),
    ``table9`` (``papers/mesa/prompts/error_types.yaml``: full-length texts written from the paper's Table 9),
    ``printed`` (the same file's ``short`` texts: Table 9's definitions as printed, the paper's reading), or a path: a YAML file
    (code -> name, definition, importance) or a folder of the authors' JSON format (``<name>.json`` with a
    ``definition``)."""
    if criteria in ("", "authors"):
        out = {}
        for code, name in AUTHORS_NAMES.items():
            path = resolve(f"mesa/criteria/{name}.json")
            out[code] = ErrorType(code=code, name=name, definition=_json_definition(path), importance=IMPORTANCE[code])
        return out
    path = Path(criteria)
    if criteria not in PACKAGED and path.is_dir():
        files = sorted(path.glob("*.json"))
        if not files:
            raise ConfigError(f"criteria folder {path} holds no <name>.json files")
        codes = {v: k for k, v in AUTHORS_NAMES.items()}
        return {codes.get(f.stem, f.stem.upper()): ErrorType(code=codes.get(f.stem, f.stem.upper()), name=f.stem,
                                                              definition=_json_definition(f),
                                                              importance=IMPORTANCE.get(codes.get(f.stem, ""), 1.0))
                for f in files}
    return _yaml_types(criteria)


def _json_definition(path: Path) -> str:
    try:
        definition = json.loads(path.read_text(encoding="utf-8"))["definition"]
    except (ValueError, KeyError, TypeError) as e:
        raise ConfigError(f"{path}: not an error-type definition (a JSON object with 'definition'): {e}") from None
    if not str(definition).strip():
        raise ConfigError(f"{path}: empty 'definition'")
    return str(definition).strip()


def _yaml_types(criteria: str) -> dict[str, ErrorType]:
    packaged = criteria in PACKAGED
    text = (files("sumjudge.papers").joinpath("mesa/prompts/error_types.yaml").read_text(encoding="utf-8") if packaged
            else Path(criteria).read_text(encoding="utf-8"))
    data = yaml.safe_load(text)
    where = "papers/mesa/prompts/error_types.yaml" if packaged else criteria
    key = PACKAGED.get(criteria, "definition")
    if not isinstance(data, dict) or not data:
        raise ConfigError(f"{where}: expected a mapping of error-type codes")
    out = {}
    for code, d in data.items():
        if not isinstance(d, dict) or not str(d.get(key, "")).strip():
            raise ConfigError(f"{where}: error type {code!r} has no '{key}'")
        out[str(code)] = ErrorType(code=str(code), name=str(d.get("name", code)), definition=str(d[key]).strip(),
                                   importance=float(d.get("importance", 1.0)))
    return out


@dataclass
class MesaConfig(Generation):  # greedy
    max_new_tokens: int = 1024
    steps: int = 3  # 3: identify, rate, score (Figures 3-5) | 1: single-step (Table 1)
    aspect_mode: str = "single"  # single: one error type per prompt (MESA) | multi: all types in one prompt (2.2)
    types: Any = None  # error-type codes (list or comma-separated); None = every type of the criteria file
    criteria: str = "authors"  # authors (their criteria/*.json) | printed (Table 9 as printed) | table9 (error_types.yaml's
    # full-length texts) | a YAML file | a JSON folder
    prompts: str = field(default="paper", metadata={"choices": ("paper", "code")})  # three steps: paper (Figures
    # 3-5) | code (eval_pipeline.py's step prompts)
    madp: bool = False  # wrap every step in the multi-agent discussion protocol (Section 2.4)
    madp_prompts: str = "code"  # code (panel.py's brainstorming) | sumjudge (perspective-based challengers)
    challengers: int = 3
    perspectives: Any = None  # madp_prompts=sumjudge: the challengers' perspectives; None = mesa_madp.PERSPECTIVES
    challenger_models: Any = None  # MADP-M: ["backend:model[@base_url]", ...]; None = MADP-S (the run's model)
    feedback: Any = None  # self-training reports (a mesa_feedback JSON file or its mapping); None = iteration 0
    transcript_tokens: int | None = None  # cut every transcript to at most this many tokens (a comparison's
    # shared budget: every variant then reads the same text); None = this configuration's own budget
    # fallback=option_scores: see the module docstring; recorded as score_source

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
    confidence: float | None = None  # 0..10 (None with a rating: written off its scale, see parse_score)
    reasoning: str = ""
    detected: bool | None = None
    unparsed_step: int | None = None  # the first step whose answer could not be read
    score_source: str = ""  # parsed | option_scores | unparsed
    truncated_words: int = 0
    discussion: dict[str, list[dict]] = field(default_factory=dict)  # MADP: step -> contributions
    feedback_used: bool = False


# a value that says no error was found ("None found", "No omissions identified", "There are no hallucinations");
# "No mention of the vote" is an omission's description, not this
_NOTHING_FOUND = re.compile(
    r"^\s*(?:none(?:\s+(?:found|identified|detected))?|n/?a|nothing(?:\s+(?:found|identified|detected|to\s+report))?|"
    r"(?:there\s+(?:are|is|were|was)\s+)?no\s+(?:\w+\s+){0,2}?(?:errors?|instances?|issues?|problems?|omissions?|"
    r"hallucinations?|repetitions?|redundanc\w*|incoherenc\w*|inconsistenc\w*|coreference\s+errors?|irrelevan\w*|"
    r"structur\w*\s+errors?|language\s+errors?)(?:\s+(?:were\s+|was\s+|are\s+|is\s+)?(?:found|identified|detected|"
    r"present))?(?:\s+(?:in|of|for)\b.*)?)\s*[.!]?\s*$", re.I | re.S)


def _says_nothing_found(obj: dict) -> bool:
    values = [v for v in obj.values() if v is not None]
    return bool(values) and all(isinstance(v, str) and _NOTHING_FOUND.match(v) for v in values)


def parse_instances(text: str) -> list[dict]:
    """Steps 1-2: a JSON list of instance objects. Also accepted: an object wrapping one such list
    (``{"instances": [...]}``; ``{"omissions": []}`` is an empty list, not an instance) and a single instance
    object (no list inside). An object with several lists is unreadable. An object whose every value says
    that nothing was found (``{"omissions": "None found"}``) is no instance: an empty list."""
    data = lenient_json(text)
    if isinstance(data, dict) and not any(isinstance(v, list) for v in data.values()) and _says_nothing_found(data):
        return []
    if isinstance(data, list) and len(data) == 1 and isinstance(data[0], dict) and _says_nothing_found(data[0]):
        return []
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
    """Step 2: every instance needs a boolean-like error_exists (what steps 3 and the detection rest on).
    Severity (0-10) is read where given; one off its scale ("severity": 100, a certainty's scale) or not a
    number stays as written, for step 3 to read as the authors' code passes it on, with ``severity_read``
    False: it is never turned into a number, and it does not make the step unreadable."""
    out = []
    for x in parse_instances(text):
        flag = x.get("error_exists")
        if isinstance(flag, str):
            flag = {"true": True, "false": False, "yes": True, "no": False}.get(flag.strip().lower())
        if not isinstance(flag, bool):
            raise ParseError(f"instance without a true/false error_exists: {json.dumps(x)[:80]}")
        entry = {**x, "error_exists": flag}
        sev = x.get("severity")
        if sev is not None:
            try:
                entry["severity"] = json_number(sev, 0, 10, "severity")
            except ParseError:
                entry["severity_read"] = False
        out.append(entry)
    return out


def parse_score(text: str) -> tuple[float, float | None, str]:
    """Step 3 / single step: (rating 0-5, confidence 0-10, reasoning). A confidence written off its scale (the
    model writes 95, a percentage) leaves the rating read and the confidence None (not read, never rescaled):
    the type then has no weight in the impact (``overall``), as the authors' code would weigh it 95 against
    others' 0-10."""
    data = lenient_json(text)
    if not isinstance(data, dict):
        raise ParseError("expected a JSON object with rating and confidence")
    for key in ("rating", "confidence"):
        if key not in data:
            raise ParseError(f"no '{key}' in the JSON answer")
    rating = json_number(data["rating"], 0, 5, "rating")
    confidence: float | None
    try:
        confidence = json_number(data["confidence"], 0, 10, "confidence")
    except ParseError:
        if isinstance(data["confidence"], bool) or not isinstance(data["confidence"], (int, float)):
            raise  # a word or a mark, not a number off the scale
        confidence = None
    return rating, confidence, str(data.get("reasoning", ""))


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


def read_feedback(path: str) -> dict[str, Any]:
    """A feedback file, read once while it is unchanged (every example of a run uses the same one)."""
    return _read_feedback(path, file_signature(path))


@lru_cache(maxsize=8)
def _read_feedback(path: str, signature: tuple) -> dict[str, Any]:
    if not Path(path).exists():
        raise ConfigError(f"feedback file {path} does not exist")
    return json.loads(Path(path).read_text(encoding="utf-8"))


def feedback_reports(config: MesaConfig) -> dict[str, Any]:
    """The self-training feedback in use: {"reports": {code: text}, "train_meetings": [...], ...} or {}."""
    fb = config.feedback
    if not fb:
        return {}
    if isinstance(fb, (str, Path)):
        fb = read_feedback(str(fb))
    if not isinstance(fb, dict) or not isinstance(fb.get("reports"), dict):
        raise ConfigError("feedback: expected a mapping with 'reports' (error type -> report), as mesa_feedback writes")
    return fb


# The templates of each setup: (step, template); the three steps' templates depend on ``prompts``
STEP_TEMPLATES = {"paper": ("mesa/fig3_step1_identify", "mesa/fig4_step2_rate", "mesa/fig5_step3_score"),
                  "code": ("mesa/fig3_step1_identify_as_run", "mesa/fig4_step2_rate_as_run",
                           "mesa/fig5_step3_score_as_run")}
MULTI_TEMPLATES = ("mesa/s22_multi_step1_identify", "mesa/s22_multi_step2_rate", "mesa/s22_multi_step3_score")


def templates_for(config: MesaConfig) -> list[str]:
    """Every template this configuration sends."""
    if config.aspect_mode == "multi":
        return list(MULTI_TEMPLATES) if config.steps == 3 else ["mesa/s22_multi_single_step"]
    return list(STEP_TEMPLATES[config.prompts]) if config.steps == 3 else ["mesa/table1_single_step"]


def messages_for(template: str, fields: dict[str, str], extra: str = "") -> list[dict[str, str]]:
    """The chat of a step: the template's system prompt where it names one (the authors' code sends one), then
    the rendered template (+ ``extra``, the self-training report) as the user message."""
    t = load_template(template)
    msgs = [{"role": "system", "content": load_template(t.meta["system"]).body}] if t.meta.get("system") else []
    return msgs + [{"role": "user", "content": t.render(**fields) + extra}]


def criteria_fields(selected: list[ErrorType], config: MesaConfig) -> dict[str, str]:
    """The criteria slot of the multi-aspect prompts: one line per type, "name: definition" as the authors'
    all-at-once baseline writes it (single step), "- CODE (name): definition" in sumjudge's three steps."""
    if config.steps == 1:
        return {"criteria": "\n".join(f"{t.name}: {t.definition}" for t in selected)}
    return {"criteria": "\n".join(f"- {t.code} ({t.name}): {t.definition}" for t in selected)}


def answer_room(llm: Calls, config: MesaConfig, appendix_tokens: int) -> int:
    """Tokens a step prompt must leave free: the answer (and the option-score fallback's prefix), the
    self-training report, the instances a later step carries (at most one answer), MADP's discussion."""
    room = config.max_new_tokens + FALLBACK_ROOM + appendix_tokens
    if config.steps == 3:
        room += config.max_new_tokens  # step 2 and 3 carry the previous step's instances
    if config.madp:
        room += madp.room(config.max_new_tokens, config.challengers)
    return room


async def prompt_overhead(example: MeetingErrorExample, llm: Calls, config: MesaConfig, reports: dict[str, str]
                          ) -> tuple[int, int] | None:
    """(tokens of the longest prompt this configuration sends for ``example`` without its transcript, tokens it
    must leave free: ``answer_room``); None when the backend has no context length or no tokenizer."""
    if not llm.context_length or not llm.counts_tokens:
        return None
    prompts, appendices = example_prompts(example, config, reports, transcript="")
    appendix = max(await asyncio.gather(*(llm.count_tokens(a) for a in appendices)), default=0)
    overhead = max(await asyncio.gather(*(llm.prompt_tokens(m) for m in prompts)))
    return overhead, answer_room(llm, config, appendix)


def example_prompts(example: MeetingErrorExample, config: MesaConfig, reports: dict[str, str], transcript: str
                    ) -> tuple[list[list[dict[str, str]]], list[str]]:
    """Every prompt this configuration sends for ``example`` with ``transcript`` (before the instances a step
    carries and the self-training appendix), and the appendices it may carry."""
    selected = config.selected()
    if config.aspect_mode == "multi":
        appendices = [feedback_appendix("\n".join(reports.values()))] if reports else []
        field_sets = [{**criteria_fields(selected, config), "codes": ", ".join(t.code for t in selected)}]
    else:
        appendices = [feedback_appendix(r) for r in reports.values()]
        field_sets = [{"name": t.name, "criteria": t.definition} for t in selected]
    prompts = [messages_for(template, {"summary": example.summary, "transcript": transcript, "instances": "", **extra})
               for template in templates_for(config) for extra in field_sets]
    return prompts, appendices


async def whole_transcript_fits(example: MeetingErrorExample, llm: Calls, config: MesaConfig, reports: dict[str, str]
                                ) -> bool:
    """Whether every prompt of this configuration certainly fits with the whole transcript, by ``certainly_fits``'s
    bound (no transcript is counted: a long-context model holds most meetings many times over). False: count."""
    if not llm.context_length or not llm.counts_tokens or config.transcript_tokens is not None:
        return False
    prompts, appendices = example_prompts(example, config, reports, transcript=example.transcript)
    room = answer_room(llm, config, max((len(a.encode("utf-8")) for a in appendices), default=0))
    for m in prompts:
        if not await certainly_fits(m, room, llm.context_length, llm.prompt_tokens):
            return False
    return True


async def transcript_budget(example: MeetingErrorExample, llm: Calls, config: MesaConfig, reports: dict[str, str]
                            ) -> int | None:
    """The most transcript tokens every prompt of this configuration leaves room for, for ``example``."""
    parts = await prompt_overhead(example, llm, config, reports)
    return None if parts is None else llm.context_length - parts[0] - parts[1]


async def fit_transcript(example: MeetingErrorExample, llm: Calls, config: MesaConfig, reports: dict[str, str]
                         ) -> tuple[str, dict[str, Any]]:
    """The transcript every step of this example reads: whole when it fits the budget (``transcript_budget``,
    and ``transcript_tokens`` when given), else cut from the end under ``truncate=truncate`` or refused under
    ``truncate=error``. One cut per example, so every step and type, and every variant given the same
    ``transcript_tokens``, reads the same text."""
    words = example.transcript.split()
    info = {"transcript_words": len(words), "transcript_words_kept": len(words)}
    if await whole_transcript_fits(example, llm, config, reports):
        return example.transcript, info
    parts = await prompt_overhead(example, llm, config, reports)
    limits = [x for x in (None if parts is None else llm.context_length - parts[0] - parts[1],
                          config.transcript_tokens) if x is not None]
    if not limits:
        return example.transcript, info
    limit = min(limits)
    count = llm.count_tokens if parts is not None else count_words  # no tokenizer: words
    n = await count(example.transcript)
    if n <= limit:
        return example.transcript, info
    if config.truncate == "error":
        if parts is not None and parts[0] + n + parts[1] > llm.context_length:  # over the model's context
            raise PromptTooLongError(example.id, parts[0] + n, parts[1], llm.context_length)
        raise PromptTooLongError(f"{example.id} (transcript_tokens={config.transcript_tokens})", n, 0,
                                 config.transcript_tokens)
    text, kept = await longest_prefix(example.transcript, limit, count)
    if kept == 0:
        raise PromptTooLongError(example.id, parts[0] if parts else 0, parts[1] if parts else 0, limit)
    info["transcript_words_kept"] = kept
    return text, info


async def count_words(text: str) -> int:
    """Words as the unit of ``transcript_tokens`` where the backend cannot count tokens."""
    return len(text.split())


def feedback_appendix(report: str) -> str:
    return "\n\n" + render("mesa/s25_feedback_appendix", report=report).strip() if report else ""


class Steps:
    """One example's assessment steps over its fitted transcript: each step's request (the self-training report
    appended, checked against the context), its answer (asked, or discussed under MADP), and what the step
    leaves on the assessments it concerns (feedback used, the discussion, the first unparsed step)."""

    def __init__(self, example: MeetingErrorExample, llm: Calls, config: MesaConfig, reports: dict[str, str],
                 transcript: str):
        self.example, self.llm, self.config, self.reports = example, llm, config, reports
        self.transcript = transcript

    def report_for(self, report_code: str | None, outs: list[TypeAssessment]) -> str:
        """The self-training report a step carries: its type's, or (multi-aspect) every selected type's."""
        if report_code is None:
            return "\n".join(f"{a.code}: {self.reports[a.code]}" for a in outs if a.code in self.reports)
        return self.reports.get(report_code, "")

    async def request(self, template: str, fields: dict[str, str], step: int, tag: str, appendix: str) -> ChatRequest:
        cfg = self.config
        msgs = messages_for(template, {**fields, "summary": self.example.summary, "transcript": self.transcript},
                            appendix)
        room = cfg.max_new_tokens + (madp.room(cfg.max_new_tokens, cfg.challengers) if cfg.madp else 0)
        if not await self.llm.fits(msgs, room):  # the budget left room: only a bug gets here
            raise PromptTooLongError(f"{tag}/step{step}", await self.llm.prompt_tokens(msgs), room,
                                     self.llm.context_length)
        return ChatRequest(messages=msgs, max_new_tokens=cfg.max_new_tokens, temperature=cfg.temperature,
                           seed=cfg.seed, tag=f"{tag}/step{step}")

    async def answer(self, req: ChatRequest, parse) -> tuple[Parsed, list | None]:
        """The parsed answer, and MADP's discussion log (None without MADP)."""
        cfg = self.config
        if cfg.madp:
            return await madp.discuss(self.llm, req, parse, challengers=cfg.challengers, prompts=cfg.madp_prompts,
                                      perspectives=list(cfg.perspectives or madp.PERSPECTIVES),
                                      models=list(cfg.challenger_models or []))
        return await self.llm.chat_parsed(req, parse), None

    async def ask(self, template: str, fields: dict[str, str], parse, step: int, outs: list[TypeAssessment],
                  report_code: str | None) -> tuple[Parsed, ChatRequest]:
        appendix = feedback_appendix(self.report_for(report_code, outs))
        req = await self.request(template, fields, step, f"{self.example.id}/{report_code or 'multi'}", appendix)
        res, log = await self.answer(req, parse)
        for a in outs:
            a.feedback_used = a.feedback_used or bool(appendix)
            if log:
                a.discussion[f"step{step}"] = log
            if not res.ok:
                a.unparsed_step = a.unparsed_step or step
        return res, req

    def readable(self, res: Parsed):
        """A step's value; an unreadable step 1-2 counts as "nothing found" under the option-score fallback (the
        later steps still run), else None (the assessment stops unparsed)."""
        if res.ok:
            return res.value
        return [] if self.config.fallback == "option_scores" else None

    async def fallback_score(self, req, prefix: str = "") -> tuple[float, float, str]:
        """The likeliest rating 0-5 and confidence 0-10 after the JSON keys (engine option scoring)."""
        rating = await self.llm.score_fallback(req.messages, [str(v) for v in range(6)], prefix=prefix + '{"rating": ',
                                               tag=req.tag + "-rating")
        conf = await self.llm.score_fallback(req.messages, [str(v) for v in range(11)],
                                             prefix=f'{prefix}{{"rating": {rating.best()}, "confidence": ',
                                             tag=req.tag + "-confidence")
        return float(rating.best()), float(conf.best()), ""


def unparsed(outs: list[TypeAssessment]) -> list[TypeAssessment]:
    """No score: no detection either (the types are unscored, not "no error")."""
    for a in outs:
        a.score_source = "unparsed"
    return outs


def record_score(a: TypeAssessment, scored: tuple[float, float | None, str], config: MesaConfig) -> None:
    """A type's final step: rating, confidence, reasoning; detected where the rating (one step) or a rated
    instance (three steps) says there is an error."""
    a.rating, a.confidence, a.reasoning = scored
    a.score_source = a.score_source or "parsed"
    a.detected = a.rating > 0 if config.steps == 1 else any(x["error_exists"] for x in a.rated)


async def find_and_rate(steps: Steps, templates: tuple[str, str], base: dict[str, str], outs: list[TypeAssessment],
                        report_code: str | None) -> tuple[list[dict], list[dict]] | None:
    """Steps 1 and 2: the instances found, and each rated (step 2 runs only when step 1 found some); None when a
    step is unreadable and there is no fallback."""
    res, _ = await steps.ask(templates[0], base, parse_instances, 1, outs, report_code)
    found = steps.readable(res)
    if found is None:
        return None
    rated: list[dict] = []
    if found:
        res, _ = await steps.ask(templates[1], {**base, "instances": json.dumps(found, ensure_ascii=False)},
                                 parse_rated, 2, outs, report_code)
        rated = steps.readable(res)
        if rated is None:
            return None
    return found, rated


async def assess_type(example: MeetingErrorExample, t: ErrorType, llm: Calls, config: MesaConfig,
                      reports: dict[str, str] | None = None, transcript: str | None = None) -> TypeAssessment:
    """Single-aspect assessment of one error type (Figures 3-5, or the single step)."""
    out = TypeAssessment(code=t.code, steps=config.steps)
    steps = Steps(example, llm, config, reports or {}, example.transcript if transcript is None else transcript)
    base = {"name": t.name, "criteria": t.definition}
    if config.steps == 1:
        res, req = await steps.ask("mesa/table1_single_step", base, parse_score, 1, [out], t.code)
    else:
        templates = STEP_TEMPLATES[config.prompts]
        both = await find_and_rate(steps, (templates[0], templates[1]), base, [out], t.code)
        if both is None:
            return unparsed([out])[0]
        out.instances, out.rated = both
        # step 3 reads the whole step-2 answer, the instances judged "no error" included (the paper and the code)
        res, req = await steps.ask(templates[2], {**base, "instances": json.dumps(out.rated, ensure_ascii=False)},
                                   parse_score, 3, [out], t.code)
    if res.ok:
        record_score(out, res.value, config)
    elif config.fallback == "option_scores":
        out.score_source = "option_scores"
        record_score(out, await steps.fallback_score(req), config)
    else:
        unparsed([out])
    return out


async def assess_multi(example: MeetingErrorExample, selected: list[ErrorType], llm: Calls, config: MesaConfig,
                       reports: dict[str, str] | None = None, transcript: str | None = None) -> list[TypeAssessment]:
    """Multi-aspect assessment (Section 2.2): every selected type in one prompt per step: the authors' all-at-once
    baseline for one step (``s22_multi_single_step``), sumjudge's adaptation of Figures 3-5 for three."""
    outs = [TypeAssessment(code=t.code, steps=config.steps) for t in selected]
    by_code = {a.code: a for a in outs}
    steps = Steps(example, llm, config, reports or {}, example.transcript if transcript is None else transcript)
    codes = [t.code for t in selected]
    base = criteria_fields(selected, config)

    def own(items: list[dict], code: str) -> list[dict]:
        return [x for x in items if str(x.get("error_type", "")).strip().upper() == code.upper()]

    if config.steps == 3:
        both = await find_and_rate(steps, (MULTI_TEMPLATES[0], MULTI_TEMPLATES[1]), base, outs, None)
        if both is None:
            return unparsed(outs)
        found, rated = both
        for a in outs:
            a.instances, a.rated = own(found, a.code), own(rated, a.code)
        res, req = await steps.ask(MULTI_TEMPLATES[2], {**base, "codes": ", ".join(codes),
                                   "instances": json.dumps(rated, ensure_ascii=False)}, parse_multi_score(codes), 3,
                                   outs, None)
    else:  # the authors' all-at-once baseline answers by criterion name
        names = {t.name: t.code for t in selected}
        res, req = await steps.ask("mesa/s22_multi_single_step", base, parse_multi_score(list(names)), 1, outs, None)
        if res.ok:
            res.value = {names[k]: v for k, v in res.value.items()}
    if res.ok:
        scores = res.value
    elif config.fallback == "option_scores":
        keys = codes if config.steps == 3 else [t.name for t in selected]
        scores = {c: await steps.fallback_score(req, prefix=f'{{"{k}": ') for c, k in zip(codes, keys)}
        for a in outs:
            a.score_source = "option_scores"
    else:
        return unparsed(outs)
    for c, scored in scores.items():
        record_score(by_code[c], scored, config)
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


async def mesa(example: MeetingErrorExample, llm: Calls, config: MesaConfig) -> Judgement:
    selected = config.selected()
    fb = feedback_reports(config)
    if example.meeting in set(fb.get("train_meetings", [])):
        raise ConfigError(f"example {example.id} is from a meeting the self-training feedback was learned on; "
                          "evaluate on the test split (--split test)")
    reports = {str(k): str(v) for k, v in fb.get("reports", {}).items()}
    transcript, fit = await fit_transcript(example, llm, config, reports)
    if config.aspect_mode == "multi":
        found = await assess_multi(example, selected, llm, config, reports, transcript)
    else:
        found = list(await asyncio.gather(*(assess_type(example, t, llm, config, reports, transcript)
                                            for t in selected)))
    impact, quality = overall(found, error_types(config.criteria))
    scores = {a.code: a.rating for a in found}
    ok = all(v is not None for v in scores.values())
    return Judgement(example_id=example.id, score=quality, scores=scores, parsed=ok,
                     label_source="parsed" if ok else "unparsed",
                     details={"impact": impact, "quality": quality, "variant": config.variant, **fit,
                              "feedback_iteration": fb.get("iteration", 0) if fb else 0,
                              "types": {a.code: asdict(a) for a in found}})


async def preflight(examples: list[MeetingErrorExample], llm: Calls, config: MesaConfig) -> None:
    """Under ``truncate=error``, refuse the run before any call when the model's context cannot hold every
    transcript with this configuration's prompts and answers (MESA used GPT-4o, 128k tokens; meeting
    transcripts average about 9,000 words)."""
    if config.truncate != "error" or not llm.context_length or not llm.counts_tokens:
        return
    fb = feedback_reports(config)
    reports = {str(k): str(v) for k, v in fb.get("reports", {}).items()}
    over = []
    for ex in examples:
        if await whole_transcript_fits(ex, llm, config, reports):
            continue
        parts = await prompt_overhead(ex, llm, config, reports)
        need = parts[0] + await llm.count_tokens(ex.transcript) + parts[1]
        limit = llm.context_length if config.transcript_tokens is None else min(
            llm.context_length, parts[0] + config.transcript_tokens + parts[1])
        if need > limit:
            over.append((need, ex.id))
    if over:
        need, worst = max(over)
        raise ConfigError(
            f"{len(over)} of {len(examples)} transcripts do not fit {llm.info.model} (context {llm.context_length} "
            f"tokens) with {config.variant} and {config.max_new_tokens} answer tokens under truncate=error; the "
            f"longest ({worst}) needs {need}. MESA used GPT-4o (128k tokens): run it on a long-context model "
            "(the profile's paper_engines.mesa: model, base_url; e.g. a 128k model served by vLLM), or cut the transcripts "
            "with truncate=truncate (the words kept are recorded)")


def step_role(tag: str) -> str | None:
    """The step a parse event belongs to (``.../step2``), for the parse-rate report."""
    m = re.search(r"/(step\d)(?:$|[#/-])", tag)
    return m.group(1) if m else None


register(MethodSpec(name="mesa", paper="mesa", kind="meeting-errors", config_cls=MesaConfig, judge=mesa,
                    roles=step_role,
                    description="MESA: per-error-type identify / rate / score, weighted impact and quality",
                    preflight=preflight))
