"""The one LLM object every method holds: cache lookup, batching dispatch, parse retries, accounting.

Methods are coroutines; they ``await llm.chat(req)`` wherever the paper's pseudo-code calls the
model. Every request that misses the cache joins a pending queue; a dispatcher task waits until
the event loop has let every runnable coroutine enqueue its requests, then hands the whole queue
to the backend in one call (the hf backend micro-batches it; the openai backend sends it
concurrently). So agents of a round, examples and sessions reach the backend together without any
method batching by hand.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Generic, TypeVar

from .cache import NullCache, ResponseCache
from .errors import SumjudgeError
from .loops import run_sync
from .parsing import ParseError
from .types import ChatRequest, ChatResponse, OptionRequest, OptionScores, cache_key

T = TypeVar("T")


@dataclass
class Parsed(Generic[T]):
    """Result of ``chat_parsed``: the value, or ``ok=False`` with the reason after all retries."""

    value: T | None
    ok: bool
    attempts: int
    response: ChatResponse
    error: str = ""
    responses: list[ChatResponse] = field(default_factory=list)


@dataclass
class Usage:
    calls: int = 0
    cache_hits: int = 0
    backend_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    option_calls: int = 0
    parse_calls: int = 0  # chat_parsed calls: answers the method needed to read
    parsed_first_try: int = 0
    parsed_after_retries: int = 0
    parse_failures: int = 0  # unreadable after every retry
    parse_retries: int = 0
    cut_answers: int = 0  # answers that stopped at max_new_tokens (finish_reason=length)
    fallbacks: int = 0  # option-scoring calls that stood in for an unreadable answer
    batches: int = 0
    errors: int = 0

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


class CallLog:
    """Appends one JSON line per call (request, response, tokens, latency, cache hit) to a transcript file."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = self.path.open("a", encoding="utf-8")
        self._lock = threading.Lock()

    def write(self, record: dict[str, Any]) -> None:
        with self._lock:
            self._fh.write(json.dumps(record, ensure_ascii=False) + "\n")
            self._fh.flush()

    def close(self) -> None:
        with self._lock:
            self._fh.close()


class LLM:
    """Batched, cached LLM interface over one backend (hf | openai | scripted)."""

    def __init__(self, backend, cache: ResponseCache | NullCache | None = None, log: CallLog | None = None,
                 parse_retries: int = 2, retry_temperature: float = 0.7, progress=None):
        self.backend = backend
        self.info = backend.info
        self.cache = cache if cache is not None else NullCache()
        self.log = log
        self.parse_retries = parse_retries
        self.retry_temperature = retry_temperature
        self.usage = Usage()
        self.progress = progress  # optional callable(n) called once per finished call
        self._pending: list[tuple[str, Any, str, asyncio.Future]] = []
        self._inflight_keys: dict[str, asyncio.Future] = {}
        self._dispatcher: asyncio.Task | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.companions: dict[str, LLM] = {}

    def companion(self, spec: str) -> "LLM":
        """Another model on this engine's cache and call log, built once per ``spec``
        ("backend:model[@base_url]", e.g. "openai:gpt-4o@https://api.openai.com/v1"): for methods that consult
        several models (a discussion among different models). Its calls are batched by its own backend."""
        if spec not in self.companions:
            from . import make_backend

            backend, _, rest = spec.partition(":")
            model, _, url = rest.partition("@")
            self.companions[spec] = LLM(make_backend(backend, model or None, base_url=url or None), cache=self.cache,
                                        parse_retries=self.parse_retries, retry_temperature=self.retry_temperature)
        c = self.companions[spec]
        c.log = self.log  # follow this engine's current run log
        return c

    # ---- public API -------------------------------------------------------------------------
    def scoped(self, name: str) -> "ScopedLLM":
        """A view that shares this engine (cache, batching) but also counts its own usage: one per example."""
        return ScopedLLM(self, name)

    async def chat(self, req: ChatRequest) -> ChatResponse:
        return await self._get("chat", req)

    async def chat_many(self, reqs: list[ChatRequest]) -> list[ChatResponse]:
        return list(await asyncio.gather(*(self.chat(r) for r in reqs)))

    async def sample(self, req: ChatRequest, n: int) -> list[ChatResponse]:
        """``n`` independent samples of one prompt (sample_index 0..n-1), batched together."""
        return await self.chat_many([replace(req, sample_index=req.sample_index + i) for i in range(n)])

    async def score_options(self, messages, options, prefix: str = "", tag: str = "") -> OptionScores:
        return await self._get("options", OptionRequest(messages=messages, options=tuple(options), prefix=prefix, tag=tag))

    async def score_fallback(self, messages, options, prefix: str = "", tag: str = "") -> OptionScores:
        """Option scoring that stands in for an answer the method could not read (``fallback=option_scores``):
        counted in ``usage.fallbacks`` so that every run reports how many of its values are not parsed text."""
        self._count(fallbacks=1)
        return await self.score_options(messages, options, prefix=prefix, tag=tag + "#fallback")

    def _count(self, **deltas: int) -> None:
        for k, v in deltas.items():
            setattr(self.usage, k, getattr(self.usage, k) + v)

    async def chat_parsed(self, req: ChatRequest, parse: Callable[[str], T], retries: int | None = None,
                          cut_parse: Callable[[str], T] | None = None,
                          reask: Callable[[ChatRequest, int], ChatRequest] | None = None) -> Parsed[T]:
        """Chat, parse; on ``ParseError`` retry (sampling with a derived seed), then report the failure.

        An answer cut at ``max_new_tokens`` (``finish_reason="length"``) is unreadable (it stopped before it
        was done: ``<label>1<`` is no statement) unless the method gives ``cut_parse``, a parser that reads only
        what a cut answer has completed (e.g. a closed ``<label>`` tag before the cut explanation); counted in
        ``usage.cut_answers``. A retry of a greedy request samples at ``retry_temperature`` with seed
        ``seed + 100000*attempt`` (repeating a greedy call would return the same text), unless the method
        builds its own retry with ``reask(request, attempt)`` (e.g. the same request at temperature 0 with a
        format reminder). Failures are counted in ``usage`` and returned with ``ok=False``: callers decide what
        an unparsed answer means and record it.
        """
        retries = self.parse_retries if retries is None else retries
        responses = []
        err = ""
        for attempt in range(retries + 1):
            r = req
            if attempt and reask is not None:
                r = reask(req, attempt)
            elif attempt:
                r = replace(req, temperature=req.temperature or self.retry_temperature,
                            seed=(req.seed or 0) + 100_000 * attempt, tag=f"{req.tag}#retry{attempt}")
            resp = await self.chat(r)
            responses.append(resp)
            cut = resp.finish_reason == "length"
            if cut:
                self._count(cut_answers=1)
            try:
                if cut and cut_parse is None:
                    raise ParseError(f"the answer was cut at max_new_tokens={r.max_new_tokens} (finish_reason=length)")
                value = (cut_parse if cut else parse)(resp.text)
            except ParseError as e:
                err = str(e)
                continue
            self._count(parse_calls=1, parse_retries=attempt, parsed_first_try=attempt == 0,
                        parsed_after_retries=attempt > 0)
            if self.log:
                self.log.write({"event": "parse", "tag": req.tag, "ok": True, "attempts": attempt + 1})
            return Parsed(value=value, ok=True, attempts=attempt + 1, response=resp, responses=responses)
        self._count(parse_calls=1, parse_retries=retries, parse_failures=1)
        if self.log:
            self.log.write({"event": "parse", "tag": req.tag, "ok": False, "error": err, "attempts": retries + 1})
        return Parsed(value=None, ok=False, attempts=retries + 1, response=responses[-1], error=err,
                      responses=responses)

    # ---- machinery --------------------------------------------------------------------------
    def _key(self, kind: str, req) -> str:
        return cache_key(kind, self.info, req.key_fields())

    async def _get(self, kind: str, req, scope: "ScopedLLM | None" = None):
        key = self._key(kind, req)
        usages = [self.usage] + ([scope.usage] if scope else [])
        for u in usages:
            u.calls += kind == "chat"
            u.option_calls += kind == "options"
        hit = self.cache.get(key)
        if hit is not None:
            for u in usages:
                u.cache_hits += 1
            resp = (ChatResponse if kind == "chat" else OptionScores).from_json(hit)
            resp.cache_hit = True
            self._record(kind, req, resp, key, scope)
            return resp
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # a new event loop (e.g. a second asyncio.run in a notebook)
            self._loop, self._pending, self._inflight_keys, self._dispatcher = loop, [], {}, None
        if key in self._inflight_keys:  # identical request already on its way: share its answer
            resp = replace(await asyncio.shield(self._inflight_keys[key]), cache_hit=True)
            for u in usages:
                u.cache_hits += 1
            self._record(kind, req, resp, key, scope)
            return resp
        fut = loop.create_future()
        self._inflight_keys[key] = fut
        self._pending.append((kind, req, key, fut, scope))
        if self._dispatcher is None or self._dispatcher.done():
            self._dispatcher = loop.create_task(self._dispatch())
        return await fut

    async def _settle(self) -> None:
        """Yield to the loop until no coroutine adds more requests (everything runnable has enqueued)."""
        n = -1
        while n != len(self._pending):
            n = len(self._pending)
            for _ in range(3):
                await asyncio.sleep(0)

    async def _dispatch(self) -> None:
        inflight: set[asyncio.Task] = set()
        limit = getattr(self.backend, "max_inflight", 1)
        while self._pending or inflight:
            await self._settle()
            if self._pending and len(inflight) < limit:
                batch, self._pending = self._pending, []
                inflight.add(asyncio.get_running_loop().create_task(self._run_batch(batch)))
                continue
            done, inflight = await asyncio.wait(inflight, return_when=asyncio.FIRST_COMPLETED)
            for t in done:
                t.result()

    async def _run_batch(self, batch) -> None:
        """Send one batch to the backend. Backends that report results as they finish (per micro-batch,
        per HTTP response) through ``on_results`` get each result cached and delivered at once, so a
        run killed during a long batch keeps everything already generated."""
        self.usage.batches += 1
        for kind in ("chat", "options"):
            items = [b for b in batch if b[0] == kind]
            if not items:
                continue
            delivered: set[int] = set()

            def deliver(results: list[tuple[int, Any]], items=items, delivered=delivered) -> None:
                fresh = [(i, r) for i, r in results if i not in delivered]
                delivered.update(i for i, _ in fresh)
                self._settle_results(kind, [(items[i], r) for i, r in fresh])

            call = self.backend.generate if kind == "chat" else self.backend.score
            reqs = [b[1] for b in items]
            try:
                if getattr(self.backend, "streams_results", False):
                    results = await call(reqs, on_results=deliver)
                else:
                    results = await call(reqs)
            except Exception as e:  # the whole call failed (server down, CUDA error): every waiter gets it
                results = [e] * len(items)
            deliver(list(enumerate(results)))

    def _settle_results(self, kind: str, pairs: list[tuple[tuple, Any]]) -> None:
        """Cache, log and hand out finished results (one SQLite transaction per call)."""
        to_store = []
        for (_, req, key, fut, scope), res in pairs:
            self._inflight_keys.pop(key, None)
            if isinstance(res, Exception):
                self.usage.errors += 1
                if not fut.done():
                    fut.set_exception(res)
                continue
            self.usage.backend_calls += 1
            if scope:
                scope.usage.backend_calls += 1
            to_store.append((key, kind, self.info.name, self.info.model, req.to_json(), res.to_json(),
                             self.info.revision, self.info.server))
            self._record(kind, req, res, key, scope)
            if not fut.done():
                fut.set_result(res)
        if to_store:
            self.cache.put_many(to_store)

    def _record(self, kind: str, req, resp, key: str, scope: "ScopedLLM | None" = None) -> None:
        if kind == "chat":
            for u in [self.usage] + ([scope.usage] if scope else []):
                u.prompt_tokens += resp.prompt_tokens
                u.completion_tokens += resp.completion_tokens
        if self.progress:
            self.progress(1)
        if self.log:
            self.log.write({"event": kind, "key": key, "scope": scope.name if scope else None, "tag": req.tag, "cache_hit": resp.cache_hit,
                            "request": req.to_json(), "response": resp.to_json(), "time": time.time()})

    def count_tokens(self, text: str) -> int | None:
        """Tokens of ``text`` under the backend's tokenizer, or None when the backend has none (a server
        without a tokenize route)."""
        fn = getattr(self.backend, "count_tokens", None)
        return fn(text) if fn else None

    def prompt_tokens(self, messages: list[dict[str, str]]) -> int | None:
        """Tokens the backend will feed for ``messages`` (chat template included), or None when unknown."""
        fn = getattr(self.backend, "encode", None)
        if fn is not None and getattr(self.backend, "tokenizes", True):
            return len(fn(messages))
        n = [self.count_tokens(m["content"]) for m in messages]
        return None if None in n else sum(n)

    @property
    def context_length(self) -> int | None:
        return getattr(self.backend, "context_length", None)

    def stats(self) -> dict[str, Any]:
        return {"backend": self.info.name, "model": self.info.model, "revision": self.info.revision,
                **self.usage.as_dict()}


class ScopedLLM(LLM):
    """Same engine, own ``usage`` (per-example calls, tokens, parse failures). Methods receive one of these."""

    def __init__(self, parent: LLM, name: str):  # noqa: D107 - deliberately not calling LLM.__init__
        self.parent = parent
        self.name = name
        self.info = parent.info
        self.backend = parent.backend
        self.parse_retries = parent.parse_retries
        self.retry_temperature = parent.retry_temperature
        self.log = parent.log
        self.usage = Usage()

    async def chat(self, req: ChatRequest) -> ChatResponse:
        return await self.parent._get("chat", req, self)

    async def score_options(self, messages, options, prefix: str = "", tag: str = "") -> OptionScores:
        req = OptionRequest(messages=messages, options=tuple(options), prefix=prefix, tag=tag)
        return await self.parent._get("options", req, self)

    def _count(self, **deltas: int) -> None:
        for usage in (self.usage, self.parent.usage):
            for k, v in deltas.items():
                setattr(usage, k, getattr(usage, k) + v)

    def scoped(self, name: str) -> "ScopedLLM":
        return ScopedLLM(self.parent, f"{self.name}/{name}")

    def companion(self, spec: str) -> "LLM":
        """The companion engine, scoped to this example and counting into this example's usage."""
        scoped = self.parent.companion(spec).scoped(self.name)
        scoped.usage = self.usage
        return scoped

    def count_tokens(self, text: str) -> int | None:
        return self.parent.count_tokens(text)

    def prompt_tokens(self, messages) -> int | None:
        return self.parent.prompt_tokens(messages)


__all__ = ["LLM", "CallLog", "Parsed", "Usage", "run_sync", "SumjudgeError"]
