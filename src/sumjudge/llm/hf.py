"""Local Hugging Face transformers backend.

Every ``generate`` call queues its requests for one decoding thread, which decodes a single batch
continuously (``decode.BatchDecoder``): between two steps it admits queued rows, first come first
served (several sources, e.g. a shared engine's notebooks, taking turns: the one served least first),
while the batch stays under a token budget (rows x (longest prompt + new tokens)) and
``max_batch`` rows; a row leaves as soon as it finishes and its answer goes to its caller at once. So
requests that arrive while others decode (the next round of one debate, another run's first round)
fill the places that finished rows leave, instead of waiting for a whole micro-batch to end. Shared
prompt prefixes run once among the rows admitted together.

Sampled rows draw with one ``torch.Generator`` per request, seeded from (seed, sample_index): a
sampled output does not depend on which other requests shared its batch, so it is reproducible and
cacheable. Greedy rows take the arg-max.
"""

from __future__ import annotations

import asyncio
import collections
import heapq
import itertools
import math
import threading
import time
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sumjudge.llm.attention import NAME, attention_backends, use_gqa_decode_attention
from sumjudge.llm.backend_protocol import SOURCE_COUNTERS, Capabilities
from sumjudge.llm.cpu_linear import use_onednn_linear
from sumjudge.llm.decode import MIN_SHARED_PREFIX, PREFILL_BUDGET, BatchDecoder, DecodeResult, DecodeRow, shared_prefix
from sumjudge.llm.errors import ConfigError, PromptTooLongError
from sumjudge.llm.extras import require
from sumjudge.llm.loops import on_loop_close
from sumjudge.llm.models import LLAMA3_EOS_TOKENS, local_revision, resolve_model, split_revision, template_text
from sumjudge.llm.prefix_store import BLOCK, CAPACITY_MB
from sumjudge.llm.types import BackendInfo, ChatRequest, ChatResponse, OptionRequest, OptionScores, normalise_logprobs


def _answer_tokens(row: "_Row") -> int:
    return row.req.max_new_tokens


MAX_INFLIGHT = 1 << 20  # generate calls only queue their rows: the engine need not wait for one to return


@dataclass
class _Row:
    index: int  # position in the caller's list
    ids: list[int]
    req: ChatRequest


@dataclass
class _Job:
    """One ``generate`` call: its answers (or errors) by position, the decoded tokens, and how to tell the caller."""

    out: list
    decoded: list
    report: Any
    finish: Any
    left: int = 0
    source: str = ""  # who asked (a shared engine's client): sources take turns joining the batch


@dataclass(eq=False)
class _Queued:
    """A row waiting for (or holding) a place in the decoding batch; the decoder's tag for it."""

    job: _Job
    row: _Row
    admitted: float = 0.0
    unit: int = 0  # rows of one job over one document share a unit: they join the batch together


DTYPES = ("float32", "bfloat16", "float16", "cpu-native")


def cpu_has_native_bf16() -> bool:
    """True where the CPU multiplies bfloat16 in hardware (x86 AVX512-BF16 or AMX; read from Linux's
    /proc/cpuinfo). Elsewhere bfloat16 runs emulated, slower than float32."""
    try:
        flags = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return False
    return any(f in flags.split() for f in ("avx512_bf16", "amx_bf16"))


def resolve_dtype(dtype: str | None, device: str) -> str:
    """The dtype a model loads in. None: bfloat16 on a GPU, float32 on a CPU. ``cpu-native``: bfloat16 on a GPU
    or on a CPU that computes it natively, float32 on other CPUs (which is faster on such a CPU depends on the CPU:
    docs/benchmark.md's CPU table times the smoke model both ways)."""

    if dtype not in (None, *DTYPES):
        raise ConfigError(f"unknown dtype {dtype!r}; choose one of {', '.join(DTYPES)}")
    on_gpu = not device.startswith("cpu")
    if dtype is None:
        return "bfloat16" if on_gpu else "float32"
    if dtype == "cpu-native":
        return "bfloat16" if on_gpu or cpu_has_native_bf16() else "float32"
    return dtype


class HFBackend:
    """transformers ``AutoModelForCausalLM`` + the tokenizer's chat template.

    bf16 on GPU, fp32 on CPU; ``device_map="auto"`` (accelerate) spreads a model over all visible
    GPUs. ``token_budget`` bounds the decoding batch's rows x padded length (the key/value cache it decodes with);
    ``prefill_budget`` the tokens of one prefill forward pass (``decode.PREFILL_BUDGET``); ``prefix_store_mb`` the
    memory (MiB, on the model's device) that keeps earlier prompts' keys/values for later prompts that start
    alike (``prefix_store``; 0: none). ``decode_graphs``: on one CUDA device, decode steps replayed as CUDA graphs
    (``decode_graphs`` module; False: run eagerly).
    """

    name = "hf"

    def __init__(self, model: str, *, device: str | None = None, dtype: str | None = None,
                 device_map: str | None = None, token_budget: int = 32768, max_batch: int = 64,
                 prefill_budget: int = PREFILL_BUDGET, prefix_store_mb: int = CAPACITY_MB,
                 revision: str | None = None, trust_remote_code: bool = False, context_length: int | None = None,
                 decode_graphs: bool = True):
        require("the hf backend (--backend hf)")
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        self._torch = torch
        model, revision = split_revision(model, revision)
        path = resolve_model(model)
        cuda = torch.cuda.is_available()
        if device is None:
            device = "cuda" if cuda else "cpu"
        dtype = resolve_dtype(dtype, device)
        if device_map is None and device == "cuda" and torch.cuda.device_count() > 1:
            device_map = "auto"
        kw: dict[str, Any] = dict(dtype=getattr(torch, dtype), revision=revision, trust_remote_code=trust_remote_code)
        if device_map:
            kw["device_map"] = device_map
        tokenizer = AutoTokenizer.from_pretrained(path, revision=revision, trust_remote_code=trust_remote_code)
        loaded = AutoModelForCausalLM.from_pretrained(path, **kw)
        if not device_map:
            loaded.to(device)  # type: ignore[arg-type]  # transformers' @wraps(Module.to) hides the bound self
        # local folders are named by their folder name (the revision fingerprint tells builds apart)
        name = Path(path).name if Path(path).is_dir() else str(model)
        # the commit actually loaded (a branch or tag asked for resolves to one), else the local fingerprint
        rev = getattr(loaded.config, "_commit_hash", None) or revision or local_revision(path)
        self._setup(loaded, tokenizer, name=name, revision=rev, dtype=dtype, device_map=device_map,
                    token_budget=token_budget, max_batch=max_batch, context_length=context_length,
                    prefill_budget=prefill_budget, prefix_store_mb=prefix_store_mb, decode_graphs=decode_graphs)
        if revision and revision != rev:  # e.g. a branch or tag: the commit it resolved to is the revision
            self.info.extra["revision_requested"] = revision

    @classmethod
    def from_loaded(cls, model, tokenizer, *, name: str, revision: str = "", token_budget: int = 32768,
                    max_batch: int = 64, context_length: int | None = None,
                    prefill_budget: int = PREFILL_BUDGET, prefix_store_mb: int = CAPACITY_MB) -> "HFBackend":
        """Wrap a model already in memory (benchmarks with random weights, notebooks experimenting)."""
        import torch

        self = cls.__new__(cls)
        self._torch = torch
        self._setup(model, tokenizer, name=name, revision=revision or "in-memory", dtype=str(model.dtype).split(".")[-1],
                    device_map=None, token_budget=token_budget, max_batch=max_batch, context_length=context_length,
                    prefill_budget=prefill_budget, prefix_store_mb=prefix_store_mb)
        return self

    def _setup(self, model, tokenizer, *, name, revision, dtype, device_map, token_budget, max_batch, context_length,
               prefill_budget=PREFILL_BUDGET, prefix_store_mb=CAPACITY_MB, decode_graphs=True):
        self.model = model.eval()
        attention = NAME if use_gqa_decode_attention(self.model) else getattr(model.config, "_attn_implementation", "")
        linear = "onednn-few-rows" if use_onednn_linear(self.model) else "torch"
        self.tokenizer = tokenizer
        self.device = next(model.parameters()).device
        tok = self.tokenizer
        if tok.pad_token_id is None:
            tok.pad_token = tok.eos_token
        if not getattr(tok, "chat_template", None):
            # Base models without a chat template get a plain "User:/Assistant:" layout (recorded in info).
            tok.chat_template = template_text("plain.jinja")
            self._template = "plain"
        else:
            self._template = "model"
        self.eos_ids = self._eos_ids()
        cfg = self.model.config
        text_cfg = getattr(cfg, "text_config", None) or cfg
        self.context_length = context_length or getattr(text_cfg, "max_position_embeddings", None) or 8192
        self.token_budget = token_budget
        self.max_batch = max_batch
        self.info = BackendInfo(name="hf", model=name, revision=revision or "",
                                extra={"dtype": dtype, "device": str(self.device), "device_map": device_map,
                                       "chat_template": self._template, "context_length": self.context_length,
                                       "attention": attention, "linear": linear})
        self._lock = threading.Lock()  # the model: one decoding step or one scoring pass at a time
        self._cv = threading.Condition()  # the queue of rows waiting to join the decoding batch
        self._queue: list[_Queued] = []
        self._units = itertools.count()
        self._served: dict[str, int] = {}  # rows admitted per source (``_fair_order``)
        self._by_source: dict[str, dict[str, float]] = {}  # each source's share of the work (``source_stats``)
        self._by_source_lock = threading.Lock()
        self._active: set[str] = set()  # the sources with rows queued or decoding at the last admission
        self._serving = False
        self._open_jobs: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # event loop -> its open calls
        self.decoder = BatchDecoder(self.model, tok, self.eos_ids, tok.pad_token_id, self.device,
                                    prefill_budget=prefill_budget, prefix_store_mb=prefix_store_mb,
                                    decode_graphs=decode_graphs)
        self.generate_calls = 0  # admissions of rows into the decoding batch (benchmarks, tests)

    def _eos_ids(self) -> list[int]:
        tok = self.tokenizer
        ids = set()
        gen_eos = getattr(self.model.generation_config, "eos_token_id", None)
        for e in (gen_eos if isinstance(gen_eos, list) else [gen_eos]):
            if e is not None:
                ids.add(int(e))
        if tok.eos_token_id is not None:
            ids.add(tok.eos_token_id)
        vocab = tok.get_vocab()
        for t in LLAMA3_EOS_TOKENS + ("<end_of_turn>",):
            if t in vocab:
                ids.add(vocab[t])
        return sorted(ids)

    # ---- tokenisation -------------------------------------------------------------------------
    def encode(self, messages: list[dict[str, str]]) -> list[int]:
        text = self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        return self.tokenizer(text, add_special_tokens=False).input_ids

    def count_tokens(self, text: str) -> int:
        return len(self.tokenizer(text, add_special_tokens=False).input_ids)

    def prompt_tokens(self, messages: list[dict[str, str]]) -> int:
        return len(self.encode(messages))

    def decode_stats(self) -> dict[str, float]:
        """The decoder's counters, the prefix store's tokens held and evicted, and ``own_*``: the shares of its work
        of every source together (in this process all of it is the caller's own; a shared engine's client reports its
        source's alone)."""
        own = {f"own_{k}": 0.0 for k in SOURCE_COUNTERS}
        for counters in self.source_stats().values():
            for k, v in counters.items():
                own[f"own_{k}"] += v
        # how full the prefix store is and what it had to drop (a store too small for the run shows here)
        store = self.decoder.store
        held = {} if store is None else {"prefix_store_tokens_held": len(store) * BLOCK,
                                         "prefix_store_tokens_evicted": store.stats["evicted_tokens"]}
        return {**self.decoder.stats, **held, **own}

    def source_stats(self) -> dict[str, dict[str, float]]:
        """Each source's share of the decoder's work (``SOURCE_COUNTERS``): the prompt tokens of its admitted rows
        and an admission's prefill seconds split among its rows by prompt length; decode seconds, a step's split
        equally among the rows it decoded, and those rows; its answers and their tokens."""
        with self._by_source_lock:
            return {source: dict(c) for source, c in self._by_source.items()}

    def _account(self, source: str, **deltas: float) -> None:
        with self._by_source_lock:
            counters = self._by_source.setdefault(source, dict.fromkeys(SOURCE_COUNTERS, 0.0))
            for k, v in deltas.items():
                counters[k] += v

    def server_counters(self) -> None:
        return None

    # ---- async entry points (the engine calls these) ------------------------------------------
    @property
    def capabilities(self) -> Capabilities:
        """Exact option scoring and a local tokenizer. Generation requests join one continuously decoded batch
        whenever they arrive (``max_inflight`` is not a limit), and each answer is reported through
        ``on_results`` as soon as its row finishes."""
        return Capabilities(option_scoring="exact", tokenizer="local", context_length=self.context_length,
                            max_inflight=MAX_INFLIGHT, streams_results=True)

    async def generate(self, reqs: list[ChatRequest], on_results=None, context_length: int | None = None,
                       source: str = "") -> list[ChatResponse | Exception]:
        """``context_length``: a tighter limit than the model's for these requests (a shared engine's client).
        ``source``: who asks (a shared engine's client); while several wait, the one served least goes first
        (``_fair_order``)."""
        loop = asyncio.get_running_loop()
        fut = loop.create_future()

        def settle(out):
            if not fut.done():
                fut.set_result(out)

        report = (lambda items: loop.call_soon_threadsafe(on_results, items)) if on_results else None
        open_jobs = self._open_jobs.get(loop)
        if open_jobs is None:  # when the loop's coroutine ends (even by an error), its rows still decoding finish
            open_jobs = self._open_jobs[loop] = set()  # first, so their answers reach the cache
            on_loop_close(lambda: asyncio.gather(*open_jobs, return_exceptions=True))
        open_jobs.add(fut)
        fut.add_done_callback(open_jobs.discard)
        await asyncio.to_thread(self._submit, reqs, report, lambda out: loop.call_soon_threadsafe(settle, out),
                                context_length, source)
        return await asyncio.shield(fut)  # a caller that gives up leaves the rows to finish (and be cached)

    async def score(self, reqs: list[OptionRequest], on_results=None, context_length: int | None = None,
                    source: str = "") -> list[OptionScores | Exception]:
        return await asyncio.to_thread(self.score_sync, reqs, context_length, source)

    # ---- generation -----------------------------------------------------------------------------
    def micro_batches(self, rows: list[_Row], new_tokens) -> list[list[_Row]]:
        """``rows`` sorted by length and cut into consecutive batches within the token budget (option scoring)."""
        rows = sorted(rows, key=lambda r: len(r.ids))
        batches: list[list[_Row]] = []
        while rows:
            n = self._room([], rows, new_tokens)
            batches.append(rows[:n])
            rows = rows[n:]
        return batches

    def generate_sync(self, reqs: list[ChatRequest], report=None) -> list[ChatResponse | Exception]:
        """Generate for all requests (they join the batch being decoded); ``report([(index, response), ...])`` is
        called as rows finish (and once for prompts that are too long)."""
        return self._wait(reqs, report).out

    def token_ids(self, reqs: list[ChatRequest]) -> list[list[int]]:
        """The generated token ids of ``reqs``, decoded as ``generate_sync`` decodes the same list (the
        benchmark's output check needs tokens, not text)."""
        job = self._wait(reqs, None)
        return [d.tokens if d is not None else [] for d in job.decoded]

    def _wait(self, reqs: list[ChatRequest], report) -> "_Job":
        done = threading.Event()
        job = self._submit(reqs, report, lambda out: done.set())
        done.wait()
        return job

    def _submit(self, reqs: list[ChatRequest], report, finish, context_length: int | None = None,
                source: str = "") -> "_Job":
        """Queues ``reqs`` for the decoding thread (started if none runs); ``finish(out)`` once all have answers."""
        job = _Job(out=[None] * len(reqs), decoded=[None] * len(reqs), report=report, finish=finish, source=source)
        limit = min(self.context_length, context_length or self.context_length)
        rows = []
        for i, r in enumerate(reqs):
            ids = self.encode(r.messages)
            if len(ids) + r.max_new_tokens > limit:
                job.out[i] = PromptTooLongError(r.tag, len(ids), r.max_new_tokens, limit)
            else:
                rows.append(_Row(i, ids, r))
        job.left = len(rows)
        if report and len(rows) < len(reqs):
            report([(i, o) for i, o in enumerate(job.out) if o is not None])
        if not rows:
            finish(job.out)
            return job
        queued: list[_Queued] = []
        for row in rows:  # a run of rows over one document (a debate's agents, a document's samples) is one unit
            new_unit = not queued or not self._same_document(queued[-1].row.ids, row.ids)
            queued.append(_Queued(job, row, unit=next(self._units) if new_unit else queued[-1].unit))
        with self._cv:
            self._queue.extend(queued)
            if not self._serving:
                self._serving = True
                threading.Thread(target=self._serve, name="sumjudge-hf-decoder", daemon=True).start()
        return job

    def _admissible(self, live) -> list["_Queued"]:
        """The queued rows (first come, first served) that join ``live`` now: as many as the token budget
        (rows x longest prompt + answer) and ``max_batch`` leave room for, at least one into an empty batch. A
        run of rows sharing a prompt prefix (a debate's agents over one document) joins whole, or waits until
        it can, so its prefix is still computed once."""
        if not self._queue or (live.rows and not self.decoder.joins) or self._full(live):
            return []
        queue = self._fair_order(live)
        take = queue[:self._room([q.row for q in live.tags], [q.row for q in queue], _answer_tokens)]
        if live.rows and 0 < len(take) < len(queue):
            # a run of rows sharing a prefix that the room cuts waits whole, unless no batch could hold it whole
            run = len(take)
            while run and self._same_document(queue[run - 1].row.ids, queue[run].row.ids):
                run -= 1
            end = run + 1
            while end < len(queue) and self._same_document(queue[end - 1].row.ids, queue[end].row.ids):
                end += 1
            whole = queue[run:end]
            if run or self._room([], [q.row for q in whole], _answer_tokens) == len(whole):
                take = take[:run]
        if queue is self._queue:
            del self._queue[:len(take)]
        else:
            taken = {id(q) for q in take}
            self._queue = [q for q in self._queue if id(q) not in taken]
        for q in take:
            self._served[q.job.source] = self._served.get(q.job.source, 0) + 1
        return take

    def _full(self, live) -> bool:
        """No row could join ``live``: it holds ``max_batch`` rows, or one more row even no longer than its longest
        prompt and answer would pass the token budget. Checked before ordering the queue (every decode step)."""
        if not live.rows:
            return False
        held = [q.row for q in live.tags]
        widest = max(len(r.ids) for r in held) + max(_answer_tokens(r) for r in held)
        return len(held) + 1 > self.max_batch or (len(held) + 1) * widest > self.token_budget

    def _fair_order(self, live) -> list["_Queued"]:
        """The queue in the order its rows may join ``live``: first come, first served within a source; among the
        sources waiting, the one served least (rows admitted so far) goes next, a unit (a job's rows over one
        document) at a time; on a tie the source with fewer rows waiting, then the smaller unit, then the earlier.
        A source that starts (or returns to) asking starts from the least served of those asking, so an idle spell
        earns it no priority. One source waiting: the queue as it is. A notebook with one row waiting (a debate's
        next turn, a multi-step judge's next step) then joins before another's hundreds queued ahead of it,
        instead of waiting for all of them."""
        sources = {q.job.source for q in self._queue}
        active = sources | {q.job.source for q in live.tags}
        returning = active - self._active
        if returning:
            staying = [self._served.get(src, 0) for src in active - returning]
            floor = min(staying) if staying else 0
            for src in returning:
                self._served[src] = max(self._served.get(src, 0), floor)
        self._active = active
        if len(sources) < 2:
            return self._queue
        units: dict[str, list[list[_Queued]]] = {}
        for q in self._queue:
            mine = units.setdefault(q.job.source, [])
            if mine and mine[-1][0].unit == q.unit:
                mine[-1].append(q)
            else:
                mine.append([q])
        position = {id(q): i for i, q in enumerate(self._queue)}

        backlog = {src: sum(len(u) for u in us) for src, us in units.items()}

        def entry(src: str, served: int, k: int) -> tuple:
            unit = units[src][k]
            return served, backlog[src], len(unit), position[id(unit[0])], src, k

        heap = [entry(src, self._served.get(src, 0), 0) for src in units]
        heapq.heapify(heap)
        order: list[_Queued] = []
        while heap:
            served, _, size, _, src, k = heapq.heappop(heap)
            order += units[src][k]
            if k + 1 < len(units[src]):
                heapq.heappush(heap, entry(src, served + size, k + 1))
        return order

    @staticmethod
    def _same_document(a: list[int], b: list[int]) -> bool:
        """Two prompts share most of their tokens as a prefix (a document read by several agents or samples), not
        merely an instruction."""
        shared = shared_prefix(a, b)
        return shared >= MIN_SHARED_PREFIX and 2 * shared >= min(len(a), len(b))

    def _room(self, held: list[_Row], queued: list[_Row], new_tokens) -> int:
        """How many of ``queued`` (in order) join the rows ``held`` within the token budget (rows x (longest prompt +
        most ``new_tokens``)) and ``max_batch``; at least one where nothing is held."""
        longest = max((len(r.ids) for r in held), default=0)
        most_new = max((new_tokens(r) for r in held), default=0)
        n = 0
        for r in queued:
            longest, most_new = max(longest, len(r.ids)), max(most_new, new_tokens(r))
            cand = longest + most_new
            rows = len(held) + n + 1
            if rows > 1 and (rows * cand > self.token_budget or rows > self.max_batch):
                break
            n += 1
        return n

    def _serve(self) -> None:
        """The decoding thread: admits queued rows between steps, delivers each row's answer as it finishes, and
        ends when nothing is queued or decoding. A model error fails the rows it met; the queue goes on."""
        live = self.decoder.start()
        try:
            self._serve_until_idle(live)
        except BaseException as e:  # a fault of the loop itself: nobody may wait on a thread that is gone
            with self._cv:
                left, self._queue, self._serving = list(live.tags) + self._queue, [], False
            live.clear()
            self._deliver([(q, e if isinstance(e, Exception) else RuntimeError(repr(e))) for q in left])
            raise

    def _serve_until_idle(self, live) -> None:
        while True:
            with self._cv:
                take = self._admissible(live)
                if not take and not live.rows:
                    self._serving = False
                    return
            stats = self.decoder.stats
            try:
                with self._lock:
                    if take:
                        self.generate_calls += 1
                        now = time.perf_counter()
                        for q in take:
                            q.admitted = now
                        before = stats["prefill_s"]
                        self.decoder.admit(live, [self._decode_row(q.row) for q in take], take)
                        self._account_prefill(take, stats["prefill_s"] - before)
                    stepped, before = collections.Counter(q.job.source for q in live.tags), stats["decode_s"]
                    done = self.decoder.step(live)
                    share = (stats["decode_s"] - before) / max(1, stepped.total())  # a step's seconds, per row
                    for source, rows in stepped.items():
                        self._account(source, decode_s=share * rows, row_steps=rows)
            except Exception as e:  # noqa: BLE001 - e.g. out of memory: every row in flight gets it
                failed = list(live.tags) + [q for q in take if q not in live.tags]
                live.clear()
                self._deliver([(q, e) for q in failed])
                continue
            self._deliver(done)

    def _account_prefill(self, admitted: list["_Queued"], seconds: float) -> None:
        """An admission's prefill seconds, split among its rows by prompt length."""
        total = sum(len(q.row.ids) for q in admitted) or 1
        for q in admitted:
            self._account(q.job.source, prompt_tokens=len(q.row.ids), prefill_s=seconds * len(q.row.ids) / total)

    def _decode_row(self, r: _Row) -> DecodeRow:
        return DecodeRow(ids=r.ids, max_new_tokens=r.req.max_new_tokens, temperature=r.req.temperature,
                         top_p=r.req.top_p, seed=r.req.seed, sample_index=r.req.sample_index, stop=r.req.stop)

    def _deliver(self, done: list) -> None:
        """Answers (or the exception met) of finished rows to their jobs; a job whose rows all have one ends."""
        now = time.perf_counter()
        by_job: dict[int, list] = {}
        for q, res in done:
            i = q.row.index
            if isinstance(res, Exception):
                q.job.out[i] = res
            else:
                q.job.decoded[i] = res
                self._account(q.job.source, answers=1, decode_tokens=len(res.tokens))
                try:
                    text, finish = self._text(q.row, res)
                except Exception as e:  # noqa: BLE001 - that row's error, not the decoding thread's end
                    q.job.out[i] = e
                else:
                    q.job.out[i] = ChatResponse(text=text, finish_reason=finish, prompt_tokens=len(q.row.ids),
                                                completion_tokens=len(res.tokens), latency_s=now - q.admitted,
                                                backend="hf", model=self.info.model)
            by_job.setdefault(id(q.job), [q.job]).append(i)
        for job, *indices in by_job.values():
            job.left -= len(indices)
            try:
                if job.report:
                    job.report([(i, job.out[i]) for i in indices])
                if job.left == 0:
                    job.finish(job.out)
            except RuntimeError:  # the caller's event loop has closed (an interrupted notebook cell)
                pass

    def _text(self, row: _Row, d: DecodeResult) -> tuple[str, str]:
        text = self.tokenizer.decode(d.tokens, skip_special_tokens=True)
        finish = d.finish_reason
        if row.req.stop:
            hits = [text.find(s) for s in row.req.stop if s and s in text]
            if hits:
                text, finish = text[: min(hits)], "stop"
        return text, finish

    # ---- option scoring -------------------------------------------------------------------------
    def score_sync(self, reqs: list[OptionRequest], context_length: int | None = None, source: str = ""
                   ) -> list[OptionScores | Exception]:
        """log p(option | prompt, prefix), summed over the option's tokens, renormalised over options.

        Options whose token sequences differ only in their last token share one forward pass (one row: the
        common context; the last position's logits score every such option). Single-token options such as
        labels "0"/"1" or scores "1".."5" thus cost one pass over the prompt, not one per option."""
        torch = self._torch
        limit = min(self.context_length, context_length or self.context_length)
        out: list[OptionScores | Exception | None] = [None] * len(reqs)
        rows: list[_Row] = []  # one row per (request, shared context); row.index points into `owners`
        owners: list[tuple[int, int, list[tuple[int, int]]]] = []  # (request, span start, [(option, last token)])
        for i, r in enumerate(reqs):
            prompt = self.encode(r.messages)
            pre = self.tokenizer(r.prefix, add_special_tokens=False).input_ids if r.prefix else []
            shared: dict[tuple[int, ...], list[tuple[int, int]]] = {}
            for k, opt in enumerate(r.options):
                full = self.tokenizer(r.prefix + opt, add_special_tokens=False).input_ids
                if full[: len(pre)] != pre:  # tokenisation merged across the prefix/option boundary
                    full = pre + self.tokenizer(opt, add_special_tokens=False).input_ids
                ids = prompt + full
                if len(ids) > limit:
                    out[i] = PromptTooLongError(r.tag, len(ids), 0, limit)
                    break
                shared.setdefault(tuple(ids[:-1]), []).append((k, ids[-1]))
            if out[i] is not None:
                continue
            for ctx, opts in shared.items():
                rows.append(_Row(len(owners), list(ctx), None))  # type: ignore[arg-type]
                owners.append((i, len(prompt) + len(pre), opts))
        logp: dict[tuple[int, int], float] = {}
        t0 = time.perf_counter()
        with self._lock, torch.inference_mode():
            for batch in self.micro_batches(rows, lambda x: 0):
                # Left padding ends every row at the same column, so only the last `keep` positions need
                # logits (a full-sequence logit tensor is rows x tokens x vocab: gigabytes for long
                # transcripts and 128k-262k vocabularies).
                ids, mask = self.decoder._left_pad([s.ids for s in batch])
                positions = (mask.cumsum(-1) - 1).clamp(min=0)
                keep = max(len(s.ids) - owners[s.index][1] for s in batch) + 1
                with attention_backends(ids.device):
                    logits = self.model(input_ids=ids, attention_mask=mask, position_ids=positions,
                                        logits_to_keep=keep).logits[:, -keep:]
                lp = torch.log_softmax(logits.float(), dim=-1)
                for j, s in enumerate(batch):
                    i, start, opts = owners[s.index]
                    m = len(s.ids)  # option tokens before the last one sit at row positions start .. m-1
                    inner = 0.0
                    if m > start:
                        tgt = ids[j, -(m - start):].to(lp.device)
                        inner = float(lp[j, keep - (m - start) - 1: keep - 1].gather(-1, tgt[:, None]).sum())
                    for k, last in opts:
                        logp[(i, k)] = inner + float(lp[j, keep - 1, last])
        dt = time.perf_counter() - t0
        self._account(source, option_sets=sum(o is None for o in out), score_s=dt)
        for i, r in enumerate(reqs):
            if out[i] is None:
                raw = {o: logp[(i, k)] for k, o in enumerate(r.options)}
                out[i] = OptionScores(probs=normalise_logprobs(raw), logprobs=raw, method="sequence_logprob",
                                      backend="hf", model=self.info.model, latency_s=dt,
                                      coverage=min(1.0, sum(math.exp(v) for v in raw.values())))
        return out  # type: ignore[return-value]
