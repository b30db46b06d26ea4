"""Recorded answers: every answer a notebook's tables used, kept so that the tables can be computed again without
the model (a replay).

``Recorder`` is given the engine's answered calls (``LLM._record``) and token counts (``LLM._count_tokens``): per
engine its identity (``BackendInfo``), what it can do (``Capabilities``) and how it was asked for (backend, model,
options); per call its cache key, request, answer(s), run and example. A key answered more than once by the
backend (a repeat that bypasses the cache) keeps every answer in order. ``Recording`` reads such a file back;
``ReplayBackend`` answers from it as the recorded engine did (same info, hence the same cache keys) and never
calls a model: a request that was not recorded raises ``ReplayMiss``, which says which notebook, run and example
asked, and what differs from the nearest recorded request (the prompt, a setting, or the model); given an engine to
ask (``replay.Ask``: the lab's replay), such a request, or token count, is asked of it instead.

A notebook step that is not a model call but whose result its tables use (fine-tuning a model: its losses) is
recorded by name with its JSON result (``Recorder.step``), and a replay takes the result instead of running it.

The file is JSON lines: one ``engine`` line per engine, then one ``answer`` line per key, one ``tokens`` line
per engine (digest -> count) and one ``step`` line per step, sorted so that the same answers give the same bytes. Compressed with xz (a
notebook's prompts repeat the same documents far apart, beyond gzip's window).
"""

from __future__ import annotations

import difflib
import json
import lzma
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sumjudge.llm.backend_protocol import Capabilities
from sumjudge.llm.errors import ConfigError, SumjudgeError
from sumjudge.llm.types import (
    BackendInfo,
    ChatRequest,
    ChatResponse,
    OptionRequest,
    OptionScores,
    cache_key,
    prompt_digest,
)

FORMAT = 1
RERECORD = "Re-record the notebook with a real run (`make reproduce NOTEBOOKS=...`), or mark its page stale"


class ReplayMiss(SumjudgeError):
    """A request the recording does not hold: a replay never calls a model, so the notebook stops here.
    ``located`` adds the run and example that asked (the engine knows them, the backend does not)."""

    def __init__(self, message: str, *, what: str = "", where: str = ""):
        super().__init__(message)
        self.what, self.where = what, where

    def located(self, run: str | None, scope: str | None) -> "ReplayMiss":
        if not self.what:
            return self
        return ReplayMiss(f"{self.where}, run {run or '?'}, example {scope or '?'}: {self.what}", what="",
                          where=self.where)


@dataclass
class EngineSpec:
    """How an engine was asked for (the profile's backend, model as named, base URL and engine options) and what
    it was (its ``BackendInfo`` and ``Capabilities``)."""

    backend: str
    model: str
    base_url: str | None
    options: dict[str, Any]
    info: dict[str, Any]
    capabilities: dict[str, Any]

    @property
    def label(self) -> str:
        return f"{self.backend}:{self.model}" + (f"@{self.base_url}" if self.base_url else "")


@dataclass
class RecordedAnswer:
    key: str
    kind: str  # chat | options
    engine: int  # index into the recording's engines
    request: dict[str, Any]
    responses: list[dict[str, Any]]
    run: str | None = None  # the run folder's name
    scope: str | None = None  # the example


@dataclass
class Recorder:
    """What one notebook's engines answered, in memory until ``write``."""

    engines: list[EngineSpec] = field(default_factory=list)
    answers: dict[str, RecordedAnswer] = field(default_factory=dict)
    tokens: dict[int, dict[str, int]] = field(default_factory=dict)
    steps: dict[str, Any] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _ids: dict[int, int] = field(default_factory=dict, repr=False)

    def register(self, llm, backend: str, model: str | None, base_url: str | None, options: dict[str, Any]) -> None:
        """Record ``llm``'s calls from now on, under the spec it was built from."""
        spec = EngineSpec(backend=backend, model=model or "", base_url=base_url or None,
                          options={k: v for k, v in sorted(options.items())}, info=asdict(llm.info),
                          capabilities=asdict(llm.backend.capabilities))
        with self._lock:
            self._ids[id(llm)] = len(self.engines)
            self.engines.append(spec)
        llm.recorder = self

    def engine_of(self, llm) -> int:
        i = self._ids.get(id(llm))
        if i is None:  # an engine built around another's backend (e.g. a cache-bypassing repeat): the same model
            i = next((j for j, e in enumerate(self.engines) if e.info == asdict(llm.info)), None)
            if i is None:
                raise ConfigError(f"an engine of model {llm.info.model!r} records into a recorder it was not "
                                  "registered with")
            self._ids[id(llm)] = i
        return i

    def answered(self, llm, kind: str, key: str, request: dict[str, Any], response: dict[str, Any],
                 cache_hit: bool, run: str | None, scope: str | None) -> None:
        """One answered call. A cached answer is recorded once; each answer the backend gave is kept in order."""
        response = {k: v for k, v in response.items() if k != "cache_hit"}
        with self._lock:
            eng = self.engine_of(llm)
            have = self.answers.get(key)
            if have is None:
                self.answers[key] = RecordedAnswer(key=key, kind=kind, engine=eng, request=dict(request),
                                                   responses=[response], run=run, scope=scope)
            elif not cache_hit:  # the backend asked again (a repeat that bypasses the cache): kept in order
                have.responses.append(response)

    def counted(self, llm, digest: str, n: int) -> None:
        with self._lock:
            self.tokens.setdefault(self.engine_of(llm), {})[digest] = n

    def step(self, name: str, value: Any) -> Any:
        """A step's result, as JSON gives it back (so a run and its replay see the same value)."""
        try:
            value = json.loads(json.dumps(value))
        except (TypeError, ValueError) as e:
            raise ConfigError(f"step {name!r}: its result cannot be recorded as JSON ({e})") from None
        with self._lock:
            self.steps[name] = value
        return value

    def lines(self) -> list[dict[str, Any]]:
        with self._lock:
            out: list[dict[str, Any]] = [{"type": "format", "version": FORMAT}]
            out += [{"type": "engine", "index": i, **asdict(e)} for i, e in enumerate(self.engines)]
            out += [{"type": "answer", **asdict(a)}
                    for a in sorted(self.answers.values(), key=lambda a: (a.engine, a.key))]
            out += [{"type": "tokens", "engine": e, "counts": dict(sorted(c.items()))}
                    for e, c in sorted(self.tokens.items())]
            out += [{"type": "step", "name": k, "value": v} for k, v in sorted(self.steps.items())]
        return out

    def write(self, path: str | Path) -> Path:
        """Plain JSON lines (``.jsonl``) or xz-compressed (``.xz``)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        text = "".join(json.dumps(x, ensure_ascii=False, sort_keys=True) + "\n" for x in self.lines())
        return _write_bytes(path, text.encode("utf-8"))

    def __len__(self) -> int:
        return len(self.answers) + len(self.steps)


class MemoryCache:
    """A replay's response cache: in memory, empty at the start (so an engine asks its recording once per key, as
    the recorded engine asked its cache), never written to disk."""

    path = None

    def __init__(self) -> None:
        self._d: dict[str, dict[str, Any]] = {}
        self.hits = self.misses = 0

    def get(self, key: str) -> dict[str, Any] | None:
        hit = self._d.get(key)
        self.hits += hit is not None
        self.misses += hit is None
        return hit

    def put_many(self, items: list) -> None:
        for key, _kind, _b, _m, _req, resp, *_ in items:
            self._d.setdefault(key, resp)

    def stats(self) -> dict[str, Any]:
        return {"path": None, "entries": len(self._d), "session_hits": self.hits, "session_misses": self.misses}

    def close(self) -> None:
        return None


def compress(src: str | Path, dest: str | Path) -> Path:
    """A plain recording as xz (what the results page keeps)."""
    return _write_bytes(Path(dest), Path(src).read_bytes())


def _write_bytes(path: Path, data: bytes) -> Path:
    """``data`` to ``path`` whole or not at all (a temporary file renamed), xz-compressed where it ends ``.xz``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(lzma.compress(data, preset=6) if path.suffix == ".xz" else data)
    tmp.replace(path)
    return path


@dataclass
class Recording:
    """A recording read back (``Recording.load``)."""

    path: Path
    engines: list[EngineSpec]
    answers: dict[str, RecordedAnswer]
    tokens: dict[int, dict[str, int]]
    notebook: str = ""
    steps: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def load(cls, path: str | Path, notebook: str = "", missing_ok: bool = False) -> "Recording":
        """``missing_ok``: no file is a recording of no engine (a notebook that called no model records nothing;
        one that does call a model then stops on its first request)."""
        path = Path(path)
        if not path.exists() and missing_ok:
            return cls(path=path, engines=[], answers={}, tokens={}, notebook=notebook)
        if not path.exists():
            raise ConfigError(f"no recorded answers at {path}: record them with a real run "
                              f"(`make reproduce NOTEBOOKS={notebook[:2] or '<notebook>'}`)")
        raw = lzma.decompress(path.read_bytes()).decode("utf-8") if path.suffix == ".xz" else path.read_text("utf-8")
        engines: list[EngineSpec] = []
        answers: dict[str, RecordedAnswer] = {}
        tokens: dict[int, dict[str, int]] = {}
        steps: dict[str, Any] = {}
        for lineno, line in enumerate(raw.splitlines(), 1):
            if not line.strip():
                continue
            try:
                d = json.loads(line)
                t = d.pop("type")
                if t == "format" and d.get("version") != FORMAT:
                    raise ConfigError(f"{path}: recording format {d.get('version')}, this code reads {FORMAT}")
                if t == "engine":
                    d.pop("index", None)
                    engines.append(EngineSpec(**d))
                elif t == "answer":
                    answers[d["key"]] = RecordedAnswer(**d)
                elif t == "tokens":
                    tokens[d["engine"]] = d["counts"]
                elif t == "step":
                    steps[d["name"]] = d["value"]
            except (KeyError, TypeError, ValueError) as e:
                raise ConfigError(f"{path} line {lineno}: not a recorded answer ({e})") from None
        return cls(path=path, engines=engines, answers=answers, tokens=tokens, notebook=notebook, steps=steps)

    def step(self, name: str) -> Any:
        """A recorded step's result; a ``ReplayMiss`` naming the step where it was not recorded."""
        if name not in self.steps:
            raise ReplayMiss(f"replay of notebook {self.notebook or self.path}: step {name!r} was not recorded "
                             f"(recorded: {', '.join(map(repr, sorted(self.steps))) or 'none'}). {RERECORD}")
        return self.steps[name]

    def engine_for(self, backend: str, model: str | None, base_url: str | None, options: dict[str, Any]) -> int:
        """The recorded engine asked for as now; a ``ReplayMiss`` naming what differs where none is."""
        label = f"{backend}:{model or ''}" + (f"@{base_url}" if base_url else "")
        same = [i for i, e in enumerate(self.engines) if (e.backend, e.model, e.base_url or None) ==
                (backend, model or "", base_url or None)]
        if not same:
            raise ReplayMiss(f"notebook {self.notebook or self.path}: no engine {label} was recorded "
                             f"(recorded: {', '.join(e.label for e in self.engines) or 'none'}): the model differs")
        opts = {k: v for k, v in sorted(options.items())}
        for i in same:
            if self.engines[i].options == opts:
                return i
        rec = self.engines[same[0]].options
        diff = [f"{k}: recorded {rec.get(k)!r}, now {opts.get(k)!r}" for k in sorted(set(rec) | set(opts))
                if rec.get(k) != opts.get(k)]
        raise ReplayMiss(f"notebook {self.notebook or self.path}: engine {label} was recorded with other settings "
                         f"({'; '.join(diff)})")

    def backend(self, engine: int, ask=None) -> "ReplayBackend":
        return ReplayBackend(self, engine, ask)

    def nearest(self, engine: int, kind: str, request: dict[str, Any], scope: str | None) -> RecordedAnswer | None:
        """The recorded request most like ``request``: same kind and tag first, then the same example."""
        tag = request.get("tag", "")
        pool = [a for a in self.answers.values() if a.kind == kind and a.engine == engine]
        if not pool:
            return None

        asked = _prompt_text(request)[:2000]

        def rank(a: RecordedAnswer) -> tuple:
            return (a.request.get("tag", "") == tag, a.scope == scope,
                    difflib.SequenceMatcher(None, _prompt_text(a.request)[:2000], asked).quick_ratio())

        return max(pool, key=rank)


def _prompt_text(request: dict[str, Any]) -> str:
    return "\n".join(f"[{m.get('role')}] {m.get('content')}" for m in request.get("messages", []))


def difference(recorded: dict[str, Any], asked: dict[str, Any]) -> str:
    """What differs between a recorded request and the one asked: the settings by name, the prompt by its first
    differing place."""
    out = []
    for k in sorted(set(recorded) | set(asked)):
        if k in ("messages", "tag"):
            continue
        if recorded.get(k) != asked.get(k):
            out.append(f"setting {k}: recorded {recorded.get(k)!r}, asked {asked.get(k)!r}")
    a, b = _prompt_text(recorded), _prompt_text(asked)
    if a != b:
        i = next((j for j, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        out.append(f"prompt differs at character {i}: recorded {a[max(0, i - 40):i + 60]!r}, "
                   f"asked {b[max(0, i - 40):i + 60]!r}")
    return "; ".join(out) or "the same request under another cache key (the engine's identity differs)"


class ReplayBackend:
    """The recorded engine, answering from its recording: the same ``info`` (so the same cache keys) and
    capabilities; token counts as recorded. Never loads weights or calls a model, unless given ``ask``
    (``replay.Ask``): then what the recording does not hold is asked of that engine, and only that."""

    name = "replay"

    def __init__(self, recording: Recording, engine: int, ask=None):
        self.recording = recording
        self.engine = engine
        self.ask = ask
        spec = recording.engines[engine]
        self.spec = spec
        self.info = BackendInfo(**spec.info)
        self._caps = Capabilities(**spec.capabilities)
        self._next: dict[str, int] = {}

    @property
    def capabilities(self) -> Capabilities:
        # one batch at a time and every result at once: the order answers are handed out in is the request order
        return Capabilities(option_scoring=self._caps.option_scoring, tokenizer="local" if self._caps.tokenizer
                            != "none" else "none", server_metrics=False, context_length=self._caps.context_length,
                            max_inflight=1, streams_results=False, async_tokenizer=False, replayed=True)

    def _answer(self, kind: str, req) -> dict[str, Any] | Exception:
        key = cache_key(kind, self.info, req.key_fields())
        rec = self.recording.answers.get(key)
        if rec is None:
            return self.miss(kind, req)
        i = self._next.get(key, 0)
        self._next[key] = i + 1
        return rec.responses[min(i, len(rec.responses) - 1)]

    def miss(self, kind: str, req) -> ReplayMiss:
        asked = req.to_json()
        near = self.recording.nearest(self.engine, kind, asked, None)
        what = difference(near.request, asked) if near else "nothing of this kind was recorded"
        where = f"replay of notebook {self.recording.notebook or self.recording.path}"
        what = (f"{kind} request {asked.get('tag') or ''!r} was not recorded ({self.recording.path.name}); nearest "
                f"recorded ({near.run if near else '-'} / {near.scope if near else '-'}): {what}. {RERECORD}")
        return ReplayMiss(f"{where}: {what}", what=what, where=where)

    async def _answers(self, kind: str, reqs: list, cls) -> list:
        out = [a if isinstance(a, Exception) else cls.from_json(a) for a in (self._answer(kind, r) for r in reqs)]
        missed = [i for i, a in enumerate(out) if isinstance(a, ReplayMiss)]
        if missed and self.ask is not None:  # the requests not recorded, and only those, asked of the engine
            asked = await self.ask.answer(kind, [reqs[i] for i in missed])
            for i, a in zip(missed, asked):
                out[i] = a
        return out

    async def generate(self, reqs: list[ChatRequest], on_results=None) -> list[ChatResponse | Exception]:
        return await self._answers("chat", reqs, ChatResponse)

    async def score(self, reqs: list[OptionRequest], on_results=None) -> list[OptionScores | Exception]:
        return await self._answers("options", reqs, OptionScores)

    def _count(self, what: tuple) -> int:
        n = self.recording.tokens.get(self.engine, {}).get(prompt_digest(what))
        if n is None and self.ask is not None:
            n = self.ask.count(what)
        if n is None:
            where = f"replay of notebook {self.recording.notebook or self.recording.path}"
            if what[0] == "m":  # a prompt being fitted: say how it differs from the nearest recorded one
                asked = {"messages": [{"role": r, "content": c} for r, c in what[1]]}
                near = self.recording.nearest(self.engine, "chat", asked, None)
                diff = difference({"messages": near.request["messages"]}, asked) if near else "no prompt was recorded"
                what_ = (f"the prompt being fitted was not recorded; nearest recorded ({near.run if near else '-'} / "
                         f"{near.scope if near else '-'}, {near.request.get('tag', '') if near else ''!r}): {diff}")
            else:
                what_ = f"the token count of the text {what[1][:80]!r}... was not recorded (an input differs)"
            raise ReplayMiss(f"{where}: {what_}", what=what_, where=where)
        return n

    def count_tokens(self, text: str) -> int:
        return self._count(("t", text))

    def prompt_tokens(self, messages: list[dict[str, str]]) -> int:
        return self._count(("m", tuple((m["role"], m["content"]) for m in messages)))

    def decode_stats(self) -> None:
        return None

    def server_counters(self) -> None:
        return None
