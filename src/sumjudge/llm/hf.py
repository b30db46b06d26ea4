"""Local Hugging Face transformers backend.

Whatever requests are pending when the engine dispatches arrive here together. They are sorted
by prompt length and cut into micro-batches under a token budget (batch rows x (longest prompt +
new tokens)), left-padded, and decoded by ``decode.BatchDecoder`` one micro-batch at a time
(shared prompt prefixes run once, finished rows leave the batch at once).

Sampled rows draw with one ``torch.Generator`` per request, seeded from (seed, sample_index): a
sampled output does not depend on which other requests shared its batch, so it is reproducible and
cacheable. Greedy rows take the arg-max.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .attention import NAME, use_gqa_decode_attention
from .backend import Capabilities
from .decode import PREFILL_BUDGET, BatchDecoder, DecodeResult, DecodeRow
from .errors import PromptTooLongError
from .models import LLAMA3_EOS_TOKENS, resolve_model, split_revision, template_text
from .types import BackendInfo, ChatRequest, ChatResponse, OptionRequest, OptionScores, normalise_logprobs


@dataclass
class _Row:
    index: int  # position in the caller's list
    ids: list[int]
    req: ChatRequest


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
    or on a CPU that computes it natively (about twice float32's speed there), float32 on other CPUs."""
    from .errors import ConfigError

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
    GPUs. ``token_budget`` bounds a micro-batch's rows x padded length (the key/value cache it decodes with);
    ``prefill_budget`` the tokens of one prefill forward pass (``decode.PREFILL_BUDGET``).
    """

    name = "hf"

    def __init__(self, model: str, *, device: str | None = None, dtype: str | None = None,
                 device_map: str | None = None, token_budget: int = 32768, max_batch: int = 64,
                 prefill_budget: int = PREFILL_BUDGET,
                 revision: str | None = None, trust_remote_code: bool = False, context_length: int | None = None):
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
            loaded.to(device)
        # local folders are named by their folder name (the revision fingerprint tells builds apart)
        name = Path(path).name if Path(path).is_dir() else str(model)
        # the commit actually loaded (a branch or tag asked for resolves to one), else the local fingerprint
        rev = getattr(loaded.config, "_commit_hash", None) or revision or self._local_revision(path)
        self._setup(loaded, tokenizer, name=name, revision=rev, dtype=dtype, device_map=device_map,
                    token_budget=token_budget, max_batch=max_batch, context_length=context_length,
                    prefill_budget=prefill_budget)
        if revision and revision != rev:  # e.g. a branch or tag: the commit it resolved to is the revision
            self.info.extra["revision_requested"] = revision

    @classmethod
    def from_loaded(cls, model, tokenizer, *, name: str, revision: str = "", token_budget: int = 32768,
                    max_batch: int = 64, context_length: int | None = None,
                    prefill_budget: int = PREFILL_BUDGET) -> "HFBackend":
        """Wrap a model already in memory (benchmarks with random weights, notebooks experimenting)."""
        import torch

        self = cls.__new__(cls)
        self._torch = torch
        self._setup(model, tokenizer, name=name, revision=revision or "in-memory", dtype=str(model.dtype).split(".")[-1],
                    device_map=None, token_budget=token_budget, max_batch=max_batch, context_length=context_length,
                    prefill_budget=prefill_budget)
        return self

    def _setup(self, model, tokenizer, *, name, revision, dtype, device_map, token_budget, max_batch, context_length,
               prefill_budget=PREFILL_BUDGET):
        self.model = model.eval()
        attention = NAME if use_gqa_decode_attention(self.model) else getattr(model.config, "_attn_implementation", "")
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
                                       "attention": attention})
        self._lock = threading.Lock()
        self.decoder = BatchDecoder(self.model, tok, self.eos_ids, tok.pad_token_id, self.device,
                                    prefill_budget=prefill_budget)
        self.generate_calls = 0  # decoded micro-batches (benchmarks, tests)

    @staticmethod
    def _local_revision(path: str) -> str:
        """For local directories, a fingerprint of the weights so a rebuilt model never reuses cached outputs."""
        import os

        h = hashlib.sha256()
        for root, _, names in sorted(os.walk(path)):
            for n in sorted(names):
                if n.endswith((".safetensors", ".bin", "config.json")):
                    st = os.stat(os.path.join(root, n))
                    h.update(f"{n}:{st.st_size}:{int(st.st_mtime)}".encode())
        return "local-" + h.hexdigest()[:16] if os.path.isdir(path) else ""

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
        return dict(self.decoder.stats)

    def server_counters(self) -> None:
        return None

    # ---- async entry points (the engine calls these) ------------------------------------------
    @property
    def capabilities(self) -> Capabilities:
        """Exact option scoring and a local tokenizer; one model, so batches run one after another (new requests
        queue meanwhile) and each finished micro-batch is reported through ``on_results``."""
        return Capabilities(option_scoring="exact", tokenizer="local", context_length=self.context_length,
                            max_inflight=1, streams_results=True)

    async def generate(self, reqs: list[ChatRequest], on_results=None) -> list[ChatResponse | Exception]:
        loop = asyncio.get_running_loop()
        report = (lambda items: loop.call_soon_threadsafe(on_results, items)) if on_results else None
        return await asyncio.to_thread(self.generate_sync, reqs, report)

    async def score(self, reqs: list[OptionRequest], on_results=None) -> list[OptionScores | Exception]:
        return await asyncio.to_thread(self.score_sync, reqs)

    # ---- generation -----------------------------------------------------------------------------
    def micro_batches(self, rows: list[_Row], new_tokens) -> list[list[_Row]]:
        rows = sorted(rows, key=lambda r: len(r.ids))
        batches: list[list[_Row]] = []
        cur: list[_Row] = []
        for r in rows:
            cand = cur + [r]
            longest = max(len(x.ids) for x in cand) + max(new_tokens(x) for x in cand)
            if cur and (len(cand) * longest > self.token_budget or len(cand) > self.max_batch):
                batches.append(cur)
                cand = [r]
            cur = cand
        if cur:
            batches.append(cur)
        return batches

    def generate_sync(self, reqs: list[ChatRequest], report=None) -> list[ChatResponse | Exception]:
        """Generate for all requests, micro-batch by micro-batch; ``report([(index, response), ...])`` is
        called after each micro-batch (and once for prompts that are too long)."""
        out: list[ChatResponse | Exception | None] = [None] * len(reqs)
        rows = []
        for i, r in enumerate(reqs):
            ids = self.encode(r.messages)
            if len(ids) + r.max_new_tokens > self.context_length:
                out[i] = PromptTooLongError(r.tag, len(ids), r.max_new_tokens, self.context_length)
            else:
                rows.append(_Row(i, ids, r))
        if report and len(rows) < len(reqs):
            report([(i, o) for i, o in enumerate(out) if o is not None])
        with self._lock:
            for batch in self.micro_batches(rows, lambda x: x.req.max_new_tokens):
                t0 = time.perf_counter()
                texts = self._generate_batch(batch)
                dt = time.perf_counter() - t0
                for row, (text, finish, n_new) in zip(batch, texts):
                    out[row.index] = ChatResponse(text=text, finish_reason=finish, prompt_tokens=len(row.ids),
                                                  completion_tokens=n_new, latency_s=dt, backend="hf",
                                                  model=self.info.model)
                if report:
                    report([(row.index, out[row.index]) for row in batch])
        return out  # type: ignore[return-value]

    def _decode_rows(self, batch: list[_Row]) -> list[DecodeResult]:
        rows = [DecodeRow(ids=r.ids, max_new_tokens=r.req.max_new_tokens, temperature=r.req.temperature,
                          top_p=r.req.top_p, seed=r.req.seed, sample_index=r.req.sample_index, stop=r.req.stop)
                for r in batch]
        self.generate_calls += 1
        return self.decoder.decode(rows)

    def token_ids(self, reqs: list[ChatRequest]) -> list[list[int]]:
        """The generated token ids of ``reqs``, micro-batched exactly as ``generate_sync`` batches the
        same list (the benchmark's output check needs tokens, not text)."""
        out: list[list[int]] = [[] for _ in reqs]
        rows = [_Row(i, self.encode(r.messages), r) for i, r in enumerate(reqs)]
        with self._lock:
            for batch in self.micro_batches(rows, lambda x: x.req.max_new_tokens):
                for row, d in zip(batch, self._decode_rows(batch)):
                    out[row.index] = d.tokens
        return out

    def _generate_batch(self, batch: list[_Row]) -> list[tuple[str, str, int]]:
        decoded = self._decode_rows(batch)
        results = []
        for r, d in zip(batch, decoded):
            text = self.tokenizer.decode(d.tokens, skip_special_tokens=True)
            finish = d.finish_reason
            if r.req.stop:
                hits = [text.find(s) for s in r.req.stop if s and s in text]
                if hits:
                    text, finish = text[: min(hits)], "stop"
            results.append((text, finish, len(d.tokens)))
        return results

    # ---- option scoring -------------------------------------------------------------------------
    def score_sync(self, reqs: list[OptionRequest]) -> list[OptionScores | Exception]:
        """log p(option | prompt, prefix), summed over the option's tokens, renormalised over options.

        Options whose token sequences differ only in their last token share one forward pass (one row: the
        common context; the last position's logits score every such option). Single-token options such as
        labels "0"/"1" or scores "1".."5" thus cost one pass over the prompt, not one per option."""
        torch = self._torch
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
                if len(ids) > self.context_length:
                    out[i] = PromptTooLongError(r.tag, len(ids), 0, self.context_length)
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
        for i, r in enumerate(reqs):
            if out[i] is None:
                raw = {o: logp[(i, k)] for k, o in enumerate(r.options)}
                out[i] = OptionScores(probs=normalise_logprobs(raw), logprobs=raw, method="sequence_logprob",
                                      backend="hf", model=self.info.model, latency_s=dt,
                                      coverage=min(1.0, sum(math.exp(v) for v in raw.values())))
        return out  # type: ignore[return-value]
