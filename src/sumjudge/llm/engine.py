"""The one LLM object every method holds: cache lookup, batching dispatch, parse retries, accounting.

Methods are coroutines; they ``await llm.chat(req)`` wherever the paper's pseudo-code calls the
model. Every request that misses the cache joins a pending queue; a dispatcher task waits until
the event loop has let every runnable coroutine enqueue its requests, then hands the whole queue
to the backend in one call (the hf backend adds it to the batch it is decoding; the openai backend
sends it concurrently). So agents of a round, examples and sessions reach the backend together without any
method batching by hand. Requests that join the queue while batches are out (a step following an answer the
backend has already reported) go out as soon as they have settled, not when those batches return.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Generic, Sequence, TypeVar, cast

from sumjudge.llm.backend_protocol import AsyncTokenizer, Backend, Capabilities
from sumjudge.llm.backend_registry import make_backend
from sumjudge.llm.budget import Budget
from sumjudge.llm.cache import NullCache, ResponseCache
from sumjudge.llm.errors import SumjudgeError
from sumjudge.llm.fitting import certainly_fits
from sumjudge.llm.loops import SingleFlight, run_sync
from sumjudge.llm.parsing import ParseError
from sumjudge.llm.recording import ReplayMiss
from sumjudge.llm.types import ChatRequest, ChatResponse, OptionRequest, OptionScores, cache_key, prompt_digest

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
    option_prompt_tokens: int = 0  # prompts of option-scoring calls (they report no usage: counted by the tokenizer)
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


@dataclass
class RunContext:
    """What one run owns on a shared engine: its call log, its progress callback and its usage. Each call's
    events go to the log of the context it was made in, so runs sharing one engine (a notebook's runs, runs
    submitted together) keep their own logs and counts; nothing of the engine is swapped while they run."""

    log: CallLog | None = None
    progress: Callable[[int], None] | None = None
    usage: Usage = field(default_factory=Usage)
    budget_logged: bool = False  # its log already says that the budget ended


class Calls:
    """The model-calling interface every method receives: chat, samples, option scoring, parsed answers with
    retries, token counting and the context length. Implemented over one engine by ``LLM`` (the engine's own
    context) and ``Scope`` (a run's or an example's view of it)."""

    engine: "LLM"
    info: Any

    @property
    def context(self) -> RunContext:
        raise NotImplementedError

    @property
    def usages(self) -> tuple[Usage, ...]:
        """Every usage a call made here counts into (the engine's totals first)."""
        raise NotImplementedError

    @property
    def usage(self) -> Usage:
        return self.usages[-1]

    @property
    def log(self) -> CallLog | None:
        return self.context.log

    @property
    def scope_name(self) -> str | None:
        return None

    @property
    def parse_retries(self) -> int:
        return self.engine._parse_retries

    @property
    def retry_temperature(self) -> float:
        return self.engine._retry_temperature

    @property
    def capabilities(self) -> Capabilities:
        return self.engine.backend.capabilities

    @property
    def context_length(self) -> int | None:
        return self.capabilities.context_length

    def scoped(self, name: str) -> "Scope":
        """A view on the same engine (cache, batching, log) that also counts its own usage: one per example."""
        prefix = self.scope_name
        return Scope(self.engine, self.context, f"{prefix}/{name}" if prefix else name, self.usages + (Usage(),))

    def companion(self, spec: str) -> "Scope":
        """Another model on this engine's cache (see ``LLM.companion_engine``), logging into this context and
        counting into this view's usages beside its own engine's totals."""
        other = self.engine.companion_engine(spec)
        return Scope(other, self.context, self.scope_name, (other.usage,) + self.usages[1:])

    async def chat(self, req: ChatRequest) -> ChatResponse:
        return await self.engine._get("chat", req, self)

    async def chat_many(self, reqs: list[ChatRequest]) -> list[ChatResponse]:
        return list(await asyncio.gather(*(self.chat(r) for r in reqs)))

    async def sample(self, req: ChatRequest, n: int) -> list[ChatResponse]:
        """``n`` independent samples of one prompt (sample_index 0..n-1), batched together."""
        return await self.chat_many([replace(req, sample_index=req.sample_index + i) for i in range(n)])

    async def score_options(self, messages, options, prefix: str = "", tag: str = "") -> OptionScores:
        req = OptionRequest(messages=messages, options=tuple(options), prefix=prefix, tag=tag)
        res = await self.engine._get("options", req, self)
        n = await self.prompt_tokens(messages)  # cached count; None where the backend has no tokenizer
        if n:
            self._count(option_prompt_tokens=n)
        return res

    async def score_fallback(self, messages, options, prefix: str = "", tag: str = "") -> OptionScores:
        """Option scoring that stands in for an answer the method could not read (``fallback=option_scores``):
        counted in ``usage.fallbacks`` so that every run reports how many of its values are not parsed text."""
        self._count(fallbacks=1)
        return await self.score_options(messages, options, prefix=prefix, tag=tag + "#fallback")

    def _count(self, **deltas: int) -> None:
        for usage in self.usages:
            for k, v in deltas.items():
                setattr(usage, k, getattr(usage, k) + v)

    def write_event(self, record: dict[str, Any]) -> None:
        """An event of this run (a parse outcome, a failed example) in its call log, if it keeps one."""
        if self.context.log is not None:
            self.context.log.write(record)

    async def chat_parsed(self, req: ChatRequest, parse: Callable[[str], T], retries: int | None = None,
                          cut_parse: Callable[[str], T] | None = None,
                          reask: Callable[[ChatRequest, int, list[ChatResponse]], ChatRequest] | None = None
                          ) -> Parsed[T]:
        """Chat, parse; on ``ParseError`` retry (sampling with a derived seed), then report the failure.

        An answer cut at ``max_new_tokens`` (``finish_reason="length"``) is unreadable (it stopped before it
        was done: ``<label>1<`` is no statement) unless the method gives ``cut_parse``, a parser that reads only
        what a cut answer has completed (e.g. a closed ``<label>`` tag before the cut explanation); counted in
        ``usage.cut_answers``. A retry of a greedy request samples at ``retry_temperature`` with seed
        ``seed + 100000*attempt`` (repeating a greedy call would return the same text), unless the method
        builds its own retry with ``reask(request, attempt, answers so far)`` (e.g. the same request with a format
        reminder, or a follow-up turn after the first answer asking for the value it left out). Failures are counted in ``usage`` and returned with ``ok=False``: callers decide what
        an unparsed answer means and record it.
        """
        retries = self.parse_retries if retries is None else retries
        responses: list[ChatResponse] = []
        err = ""
        for attempt in range(retries + 1):
            r = req
            if attempt and reask is not None:
                r = reask(req, attempt, list(responses))
            elif attempt:
                r = replace(req, temperature=req.temperature or self.retry_temperature,
                            seed=(req.seed or 0) + 100_000 * attempt, tag=f"{req.tag}#retry{attempt}")
            resp = await self.chat(r)
            responses.append(resp)
            cut = resp.finish_reason == "length"
            if cut:
                self._count(cut_answers=1)
            try:
                if not cut:
                    value = parse(resp.text)
                elif cut_parse is None:
                    raise ParseError(f"the answer was cut at max_new_tokens={r.max_new_tokens} (finish_reason=length)")
                else:
                    value = cut_parse(resp.text)
            except ParseError as e:
                err = str(e)
                continue
            self._count(parse_calls=1, parse_retries=attempt, parsed_first_try=attempt == 0,
                        parsed_after_retries=attempt > 0)
            self.write_event({"event": "parse", "tag": req.tag, "ok": True, "attempts": attempt + 1})
            return Parsed(value=value, ok=True, attempts=attempt + 1, response=resp, responses=responses)
        self._count(parse_calls=1, parse_retries=retries, parse_failures=1)
        self.write_event({"event": "parse", "tag": req.tag, "ok": False, "error": err, "attempts": retries + 1})
        return Parsed(value=None, ok=False, attempts=retries + 1, response=responses[-1], error=err,
                      responses=responses)

    # ---- token counting ------------------------------------------------------------------------
    @property
    def counts_tokens(self) -> bool:
        """Whether prompts can be counted (the backend has a tokenizer, its own or the server's)."""
        return self.capabilities.tokenizer != "none"

    async def count_tokens(self, text: str) -> int | None:
        """Tokens of ``text`` under the backend's tokenizer, or None when it has none. A server's tokenizer is
        asked off the event loop, so other examples' requests go out while one waits; counts are cached."""
        return await self.engine._count_tokens(("t", text))

    async def prompt_tokens(self, messages: list[dict[str, str]]) -> int | None:
        """Tokens the backend will feed for ``messages`` (chat template included), or None when unknown."""
        return await self.engine._count_tokens(("m", tuple((m["role"], m["content"]) for m in messages)))

    async def fits(self, messages: list[dict[str, str]], reserve: int) -> bool:
        """Whether ``messages`` plus ``reserve`` answer tokens fit the context (True when either is unknown)."""
        ctx = self.context_length
        if ctx is None or not self.counts_tokens:
            return True
        if await certainly_fits(messages, reserve, ctx, self.prompt_tokens):  # far from the limit: not counted
            return True
        n = await self.prompt_tokens(messages)
        assert n is not None  # counts_tokens: the backend has a tokenizer
        return n + reserve <= ctx


class LLM(Calls):
    """Batched, cached LLM interface over one backend (hf | openai | scripted): the engine. Calls made on it
    directly belong to its own context (the ``log`` and ``progress`` given here); ``for_run`` gives a run its
    own context on the same engine."""

    def __init__(self, backend: Backend, cache: ResponseCache | NullCache | None = None, log: CallLog | None = None,
                 parse_retries: int = 2, retry_temperature: float = 0.7, progress=None):
        self.backend = backend
        self.info = backend.info
        self.cache = cache if cache is not None else NullCache()
        self._parse_retries = parse_retries
        self._retry_temperature = retry_temperature
        self.usage_total = Usage()
        self._own = RunContext(log=log, progress=progress, usage=self.usage_total)
        self._pending: list[tuple[str, Any, str, asyncio.Future, Calls]] = []
        self._inflight_keys: dict[str, asyncio.Future] = {}
        self._dispatcher: asyncio.Task | None = None
        self._arrival: asyncio.Future | None = None  # the dispatcher's wake-up when a request joins the queue
        self._loop: asyncio.AbstractEventLoop | None = None
        self._token_counts: dict[Any, int] = {}
        self._counting = SingleFlight()
        self.companions: dict[str, LLM] = {}
        self.budget: Budget | None = None  # a cost guard (--max-calls / --max-tokens): see ``budget``
        self.recorder = None  # a ``recording.Recorder`` keeping every answer and token count (``Recorder.register``)

    @property
    def engine(self) -> "LLM":  # type: ignore[override]
        return self

    @property
    def context(self) -> RunContext:
        return self._own

    @property
    def usages(self) -> tuple[Usage, ...]:
        return (self.usage_total,)

    @property
    def log(self) -> CallLog | None:
        return self._own.log

    @log.setter
    def log(self, value: CallLog | None) -> None:
        self._own.log = value

    @property
    def progress(self):
        return self._own.progress

    @progress.setter
    def progress(self, value) -> None:
        self._own.progress = value

    def for_run(self, context: RunContext) -> "Scope":
        """This engine as one run sees it: calls logged to ``context.log``, counted in ``context.usage`` (and in
        the engine's totals), progress reported to ``context.progress``."""
        return Scope(self, context, None, (self.usage_total, context.usage))

    def bypassing_cache(self) -> "LLM":
        """This engine's backend with no response cache (every call computed again: a repeatability check), its
        answers recorded with this engine's."""
        other = LLM(self.backend, cache=NullCache(), parse_retries=self._parse_retries,
                    retry_temperature=self._retry_temperature)
        other.recorder = self.recorder
        return other

    def companion_engine(self, spec: str) -> "LLM":
        """Another model on this engine's cache, built once per ``spec`` ("backend:model[@base_url]", e.g.
        "openai:gpt-4o@https://api.openai.com/v1"): for methods that consult several models (a discussion among
        different models). Its calls are batched by its own backend and logged in the caller's context."""
        if spec not in self.companions:
            backend, _, rest = spec.partition(":")
            model, _, url = rest.partition("@")
            self.companions[spec] = LLM(make_backend(backend, model or None, base_url=url or None), cache=self.cache,
                                        parse_retries=self._parse_retries, retry_temperature=self._retry_temperature)
            if self.recorder is not None:
                self.recorder.register(self.companions[spec], backend, model or None, url or None, {})
        return self.companions[spec]

    # ---- machinery --------------------------------------------------------------------------
    def _key(self, kind: str, req) -> str:
        return cache_key(kind, self.info, req.key_fields())

    async def _get(self, kind: str, req, via: Calls):
        key = self._key(kind, req)
        for u in via.usages:
            u.calls += kind == "chat"
            u.option_calls += kind == "options"
        hit = self.cache.get(key)
        if hit is not None:
            for u in via.usages:
                u.cache_hits += 1
            resp = (ChatResponse if kind == "chat" else OptionScores).from_json(hit)
            resp.cache_hit = True
            self._record(kind, req, resp, key, via)
            return resp
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # a new event loop (e.g. a second asyncio.run in a notebook)
            self._loop, self._pending, self._inflight_keys, self._dispatcher = loop, [], {}, None
            self._arrival = None
        if key in self._inflight_keys:  # identical request already on its way: share its answer
            resp = replace(await asyncio.shield(self._inflight_keys[key]), cache_hit=True)
            for u in via.usages:
                u.cache_hits += 1
            self._record(kind, req, resp, key, via)
            return resp
        fut = loop.create_future()
        self._inflight_keys[key] = fut
        self._pending.append((kind, req, key, fut, via))
        if self._arrival is not None and not self._arrival.done():
            self._arrival.set_result(None)
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
        """Hand the queue to the backend whenever it has requests and the backend takes another batch: at the
        start, and then as soon as a request arrives (a step that follows an answer streamed out of a batch still
        running goes out then, not when that whole batch has returned), or when a batch returns."""
        inflight: set[asyncio.Task] = set()
        limit = self.backend.capabilities.max_inflight
        loop = asyncio.get_running_loop()
        while self._pending or inflight:
            await self._settle()
            if self._pending and len(inflight) < limit:
                batch, self._pending = self._pending, []
                inflight.add(loop.create_task(self._run_batch(batch)))
                continue
            waits: set[asyncio.Future] = set(inflight)
            if len(inflight) < limit:  # room for another batch: a new request wakes the dispatcher too
                self._arrival = loop.create_future()
                waits.add(self._arrival)
            done, _ = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            self._arrival = None
            for t in inflight & done:
                inflight.discard(t)
                t.result()

    async def _run_batch(self, batch) -> None:
        """Send one batch to the backend. Backends that report results as they finish (per micro-batch,
        per HTTP response) through ``on_results`` get each result cached and delivered at once, so a
        run killed during a long batch keeps everything already generated."""
        for u in {id(u): u for b in batch for u in b[4].usages}.values():  # every run with a request in it
            u.batches += 1
        streams = self.backend.capabilities.streams_results
        for kind in ("chat", "options"):
            items = await self._within_budget(kind, [b for b in batch if b[0] == kind])
            if not items:
                continue
            delivered: set[int] = set()

            def deliver(results: list[tuple[int, Any]], items=items, delivered=delivered) -> None:
                fresh = [(i, r) for i, r in results if i not in delivered]
                delivered.update(i for i, _ in fresh)
                self._settle_results(kind, [(items[i], r) for i, r in fresh])

            call = self.backend.generate if kind == "chat" else self.backend.score
            by_session = {"sessions": [b[4].scope_name for b in items]} if self.backend.capabilities.routes_by_session \
                else {}  # each request's example, for a router that keeps an example on one replica
            results: Sequence[ChatResponse | OptionScores | Exception]
            try:
                results = await call([b[1] for b in items], on_results=deliver if streams else None, **by_session)
            except Exception as e:  # the whole call failed (server down, CUDA error): every waiter gets it
                results = [e] * len(items)
            deliver(list(enumerate(results)))

    async def _within_budget(self, kind: str, items: list[tuple]) -> list[tuple]:
        """The requests of ``items`` the budget has room for (all of them without a budget); each of the others
        fails with ``BudgetExhausted``, logged once in its run's call log."""
        b = self.budget
        if b is None or not b.limited:
            return items
        sent = []
        for item in items:
            _, req, key, fut, via = item
            tokens = 0
            if b.max_tokens is not None:
                tokens = (await self.prompt_tokens(req.messages) or 0) + (req.max_new_tokens if kind == "chat" else 1)
            if b.admit(key, tokens):
                sent.append(item)
                continue
            self._inflight_keys.pop(key, None)
            if not fut.done():
                fut.set_exception(b.error())
            if not via.context.budget_logged:
                via.write_event({"event": "budget_exhausted", **b.as_dict()})
                via.context.budget_logged = True
        return sent

    def _settle_results(self, kind: str, pairs: list[tuple[tuple, Any]]) -> None:
        """Cache, log and hand out finished results (one SQLite transaction per call)."""
        to_store = []
        for (_, req, key, fut, via), res in pairs:
            self._inflight_keys.pop(key, None)
            if self.budget is not None:
                self.budget.settle(key, 0 if isinstance(res, Exception) else
                                   res.prompt_tokens + res.completion_tokens if kind == "chat" else None)
            if isinstance(res, Exception):
                for u in via.usages:
                    u.errors += 1
                if isinstance(res, ReplayMiss):  # say which run and example asked
                    log = via.context.log
                    res = res.located(log.path.parent.name if log else None, via.scope_name)
                if not fut.done():
                    fut.set_exception(res)
                continue
            for u in via.usages:
                u.backend_calls += 1
            to_store.append((key, kind, self.info.name, self.info.model, req.to_json(), res.to_json(),
                             self.info.revision, self.info.server))
        if to_store:  # cached before anything else is done with them: a paid answer is never lost
            self.cache.put_many(to_store)
        stored = iter(to_store)
        for (_, req, key, fut, via), res in pairs:
            if isinstance(res, Exception):
                continue
            _, _, _, _, req_json, res_json, _, _ = next(stored)
            self._record(kind, req, res, key, via, req_json, res_json)
            if not fut.done():
                fut.set_result(res)

    def _record(self, kind: str, req, resp, key: str, via: Calls, req_json: dict | None = None,
                resp_json: dict | None = None) -> None:
        """Count, report and log one answered call (``req_json`` / ``resp_json``: their JSON when already made)."""
        if kind == "chat":
            for u in via.usages:
                u.prompt_tokens += resp.prompt_tokens
                u.completion_tokens += resp.completion_tokens
        ctx = via.context
        if ctx.progress:
            ctx.progress(1)
        if ctx.log is None and self.recorder is None:
            return
        req_json, resp_json = req_json or req.to_json(), resp_json or resp.to_json()
        if self.recorder is not None:
            self.recorder.answered(self, kind, key, req_json, resp_json, resp.cache_hit,
                                   ctx.log.path.parent.name if ctx.log else None, via.scope_name)
        if ctx.log:
            ctx.log.write({"event": kind, "key": key, "scope": via.scope_name, "tag": req.tag,
                           "cache_hit": resp.cache_hit, "request": req_json, "response": resp_json,
                           "time": time.time()})

    async def _count_tokens(self, what: tuple) -> int | None:
        """Tokens of a text (``("t", text)``) or of chat messages (``("m", ((role, content), ...))``), cached;
        a remote tokenizer is awaited (``Capabilities.async_tokenizer``) or called in a worker thread. The cache
        is keyed by a digest: it never holds the texts."""
        caps = self.backend.capabilities
        if caps.tokenizer == "none":
            return None
        digest = prompt_digest(what)
        hit = self._token_counts.get(digest)
        if hit is not None:
            return hit
        kind, value = what
        text: str = value if kind == "t" else ""
        messages = None if kind == "t" else [{"role": r, "content": c} for r, c in value]

        async def count() -> int:
            backend = self.backend
            if caps.async_tokenizer:  # the backend declares acount_tokens / aprompt_tokens
                tok = cast(AsyncTokenizer, backend)
                return await (tok.acount_tokens(text) if messages is None else tok.aprompt_tokens(messages))
            if caps.tokenizer == "remote":
                return await (asyncio.to_thread(backend.count_tokens, text) if messages is None
                              else asyncio.to_thread(backend.prompt_tokens, messages))
            return backend.count_tokens(text) if messages is None else backend.prompt_tokens(messages)

        n = await self._counting.run(digest, count)  # asked by many examples at once: counted once
        if self.recorder is not None:
            self.recorder.counted(self, digest, n)
        if len(self._token_counts) > 65536:
            self._token_counts.clear()
        self._token_counts[digest] = n
        return n

    def time_profile(self) -> dict[str, Any]:
        """Where this engine's time went: calls asked, answered by the backend, waves (backend calls) and rows per
        wave; for a local model, prefill and decode seconds, prompt tokens computed per prefill second (a shared
        prefix counts once), rows per decode step and the share of decode time
        spent with an under-filled batch (rows finished and nothing waiting took their places); and ``own_*``, this
        engine's own share: its rows' prompt tokens, prefill and decode seconds (split with the other rows of a
        shared engine's admissions and steps), answers and tokens decoded, option sets scored and their seconds."""
        u = self.usage_total
        out: dict[str, Any] = {"model": self.info.model, "calls": u.calls + u.option_calls, "cache_hits": u.cache_hits,
                               "backend_calls": u.backend_calls, "waves": u.batches,
                               "rows_per_wave": round(u.backend_calls / u.batches, 2) if u.batches else None}
        d = self.backend.decode_stats()
        if d:
            out.update(prefill_s=round(d["prefill_s"], 2),
                       prefill_tokens_per_s=round(d["prefill_tokens"] / d["prefill_s"], 1) if d["prefill_s"] else None,
                       decode_s=round(d["decode_s"], 2),
                       decode_tokens_per_s=round(d["decode_tokens"] / d["decode_s"], 1) if d["decode_s"] else None,
                       rows_per_decode_step=round(d["row_steps"] / d["decode_steps"], 2) if d["decode_steps"] else None,
                       underfilled_share=round(d["underfilled_s"] / d["decode_s"], 3) if d["decode_s"] else None)
            if "own_prefill_s" in d:  # this engine's own share (a shared engine's other clients' rows left out)
                out.update(own_prompt_tokens=int(d["own_prompt_tokens"]), own_prefill_s=round(d["own_prefill_s"], 2),
                           own_decode_s=round(d["own_decode_s"], 2), own_answers=int(d["own_answers"]),
                           own_decode_tokens=int(d["own_decode_tokens"]), own_option_sets=int(d["own_option_sets"]),
                           own_score_s=round(d["own_score_s"], 2))
        return out

    def stats(self) -> dict[str, Any]:
        return {"backend": self.info.name, "model": self.info.model, "revision": self.info.revision,
                **self.usage_total.as_dict()}


class Scope(Calls):
    """The engine as one run, or one example of a run, sees it: the same cache and batching; calls logged to
    its run's context and counted into its usages (the engine's totals, the run's, the example's)."""

    def __init__(self, engine: LLM, context: RunContext, name: str | None, usages: tuple[Usage, ...]):
        self.engine = engine
        self.info = engine.info
        self._context = context
        self._name = name
        self._usages = usages

    @property
    def context(self) -> RunContext:
        return self._context

    @property
    def usages(self) -> tuple[Usage, ...]:
        return self._usages

    @property
    def scope_name(self) -> str | None:
        return self._name

    @property
    def name(self) -> str | None:
        return self._name


__all__ = ["LLM", "Scope", "RunContext", "Calls", "CallLog", "Parsed", "Usage", "run_sync", "SumjudgeError"]
