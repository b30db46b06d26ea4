"""Batched decoding for the hf backend: shared-prefix prefill, per-row sampling, finished-row eviction.

A batch of prompts is decoded as follows.

1. Prefix groups. Rows whose prompts start with the same long token prefix (the agents of a debate
   over one document, n samples of one prompt, the error types assessed over one transcript) form a
   group; the group's longest common prefix is run through the model once and its key/value cache
   is copied to every member (what vLLM calls prefix caching). A row with no partner is a group of
   one. Models with sliding-window layers never share (their masks assume contiguous tokens): each
   row is its own group.
   A group's prefix starts from the longest run of its leading blocks that an earlier admission computed
   (``prefix_store``: the next round of a debate, the next step of an assessment, a retry of the same prompt);
   only the rest of it is run through the model, on top of those blocks' keys and values.
2. Suffixes. Every row's remaining tokens are run on top of its group's cache, left-padded. Padding
   sits between prefix and suffix; the attention mask hides it and position ids are counted over
   real tokens only, so each row sees exactly its own prompt.
   Both prefill steps run in chunks of rows of at most ``prefill_budget`` tokens each (padded to one
   width, so the chunks' caches join into one batch): on a CPU a forward pass over a few thousand
   tokens runs about a quarter faster per token than one over tens of thousands (caches), while
   decoding wants every row of the batch in one step. What vLLM calls chunked prefill.
3. Decode. One token per step for all live rows: greedy rows take the arg-max; sampled rows draw
   with their own ``torch.Generator`` seeded from (seed, sample_index), so a sample never depends on
   its batch mates. A row that emits eos, reaches its own ``max_new_tokens`` or a stop string leaves
   the batch at once (its cache rows are dropped, and the cache's leading columns that no remaining
   row reads with them), so short answers never wait for long ones.
4. Admission. New rows may join a batch that is decoding (``admit`` between two ``step``s): they are
   prefilled as above and their cache is joined to the live one, the narrower of the two padded on the
   left, so freed places are filled at once instead of when the slowest row of a micro-batch ends (what
   vLLM calls continuous batching). Models with sliding-window layers join only an empty batch.

On one CUDA device the decode steps run at fixed shapes and are replayed as CUDA graphs (``decode_graphs``), so a
step is one launch instead of hundreds; ``decode_graphs=False`` runs them eagerly as above.

Under a running ``torch.profiler`` an admission is the range ``sumjudge.prefill`` and a step ``sumjudge.decode``
(``phase``): ``bench --profile`` sums each phase's kernels by kind.
"""

from __future__ import annotations

import functools
import hashlib
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sumjudge.errors import ConfigError
from sumjudge.llm.attention import attention_backends
from sumjudge.llm.cascade_decode import check_available as check_cascade
from sumjudge.llm.decode_graphs import FixedShapeSteps
from sumjudge.llm.fused_parts import compiled as fused_compiled
from sumjudge.llm.fused_parts import counts as fused_counts
from sumjudge.llm.fused_parts import fused_parts
from sumjudge.llm.fused_parts import pieces as fused_pieces
from sumjudge.llm.merged_projections import Merged, merge, merged_mlp, merged_parts
from sumjudge.llm.prefix_store import BLOCK, CAPACITY_MB, PrefixStore

if TYPE_CHECKING:
    from sumjudge.llm.decode_graphs import FixedShapeSteps

MIN_SHARED_PREFIX = 64  # tokens: below this, sharing saves less than the extra forward pass costs
PREFILL_BUDGET = 4096  # tokens per prefill forward pass (rows x padded width); see the module's docstring


PHASE = "sumjudge."  # the prefix of the profiler ranges ``phase`` opens


def phase(torch, name: str):
    """The profiler range ``sumjudge.NAME`` while ``torch.profiler`` runs (``bench --profile``); else nothing to
    do (no range is recorded, no time spent). An operator's range (``_RecordFunctionFast``), not a user's
    (``record_function``): the profiler ties a kernel to the innermost operator's range that launched it, and a
    replayed CUDA graph's kernels (or a Triton kernel launched from Python) have no operator of their own, so they
    are tied to the step's range; a user's range would leave them tied to nothing."""
    from contextlib import nullcontext

    from torch.autograd import profiler

    if not getattr(profiler, "_is_profiler_enabled", False):
        return nullcontext()
    fast = getattr(torch._C._profiler, "_RecordFunctionFast", None)
    return fast(PHASE + name) if fast is not None else torch.profiler.record_function(PHASE + name)


def derive_seed(seed: int | None, sample_index: int) -> int:
    h = hashlib.sha256(f"{seed}:{sample_index}".encode()).digest()
    return int.from_bytes(h[:8], "little") & 0x7FFF_FFFF_FFFF_FFFF


@dataclass
class DecodeRow:
    ids: list[int]
    max_new_tokens: int
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int | None = None
    sample_index: int = 0
    stop: tuple[str, ...] = ()


@dataclass
class DecodeResult:
    tokens: list[int]
    finish_reason: str  # "stop" | "length"
    stop_hit: bool = False


def shared_prefix(a: list[int], b: list[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def prefix_groups(rows: list[list[int]], share: bool) -> tuple[list[int], list[int]]:
    """Returns (group index per row, prefix length per group). Every prefix leaves >= 1 suffix token.

    Groups are runs of the rows sorted by tokens; a run's shared prefix is the smallest common prefix
    of neighbours inside it. The split into runs maximises the prefill tokens saved (dynamic
    programming over the sorted order), so ten prompts that share a 100-token instruction but come
    in pairs over five documents form five groups of two, not one group of ten.
    """
    n = len(rows)
    if not share or n < 2:
        return list(range(n)), [len(r) - 1 for r in rows]
    order = sorted(range(n), key=lambda i: rows[i])
    lcp = [0] + [min(shared_prefix(rows[order[j - 1]], rows[order[j]]), len(rows[order[j - 1]]) - 1,
                     len(rows[order[j]]) - 1) for j in range(1, n)]
    best = [0] * (n + 1)
    cut = [0] * (n + 1)
    for end in range(1, n + 1):
        best[end], cut[end] = best[end - 1], end - 1  # row end-1 alone
        shared = None
        for start in range(end - 2, -1, -1):  # run order[start:end], at least two rows
            shared = lcp[start + 1] if shared is None else min(shared, lcp[start + 1])
            if shared < MIN_SHARED_PREFIX:
                break
            gain = best[start] + (end - start - 1) * shared
            if gain > best[end]:
                best[end], cut[end] = gain, start
    runs = []
    end = n
    while end > 0:
        runs.append((cut[end], end))
        end = cut[end]
    group_of = [0] * n
    plen: list[int] = []
    for start, end in reversed(runs):
        members = order[start:end]
        p = min(lcp[start + 1:end]) if end - start > 1 else len(rows[members[0]]) - 1
        for i in members:
            group_of[i] = len(plen)
        plen.append(p)
    return group_of, plen


NUCLEUS_CANDIDATES = 1024  # top-p looks at this many of the most likely tokens first (all of them if needed)


def nucleus(probs, top_p: float, candidates: int = NUCLEUS_CANDIDATES):
    """(probabilities, token ids) of the top-p nucleus, most likely first: the smallest set of the most likely
    tokens whose mass reaches ``top_p`` (a token is kept while the mass before it is under ``top_p``).

    Exact and cheap: the nucleus lies inside the ``candidates`` most likely tokens whenever their mass reaches
    ``top_p`` (every later token has at least that much mass before it); only otherwise is the whole
    vocabulary sorted."""
    import torch

    k = min(candidates, probs.shape[-1])
    sp, si = torch.topk(probs, k)
    if k < probs.shape[-1] and float(sp.sum()) < top_p:
        sp, si = torch.sort(probs, descending=True)
    keep = torch.cumsum(sp, dim=-1) - sp < top_p
    return sp[keep], si[keep]


def draw(probs, top_p: float, generator):
    """One token id drawn from ``probs`` (a 1-D distribution), restricted to its top-p nucleus when
    ``top_p`` < 1: inverse-CDF sampling with one uniform number from ``generator``, so a row's draw depends on
    its own generator only (not on the rows it shares a batch with)."""
    import torch

    if top_p < 1.0:
        vals, ids = nucleus(probs, top_p)
    else:
        vals, ids = probs, None
    cdf = torch.cumsum(vals, dim=-1)
    u = torch.rand((), generator=generator, device=generator.device).to(cdf.device) * cdf[-1]
    j = min(int(torch.searchsorted(cdf, u.reshape(1), right=True)), cdf.shape[-1] - 1)
    return ids[j] if ids is not None else torch.tensor(j)


def has_sliding_layers(config) -> bool:
    cfg = config.get_text_config(decoder=True) if hasattr(config, "get_text_config") else config
    types = getattr(cfg, "layer_types", None)
    if types:
        return any(t in ("sliding_attention", "chunked_attention") for t in types)
    return bool(getattr(cfg, "sliding_window", None) or getattr(cfg, "attention_chunk_size", None))


@dataclass
class LiveBatch:
    """The rows being decoded together: their cache (left-padded, every row's last token in the last column), mask,
    last positions, the logits their next tokens are chosen from, the tokens so far and the caller's tag per row.
    ``peak``: the most rows it has held since it was last empty (fewer is an under-filled step)."""

    rows: list = field(default_factory=list)
    tags: list = field(default_factory=list)
    tokens: list = field(default_factory=list)
    gens: list = field(default_factory=list)
    # torch tensors and a transformers cache (torch is imported where the decoder runs); None while empty
    cache: Any = None
    mask: Any = None
    last_pos: Any = None
    logits: Any = None
    peak: int = 0
    # per row: (its prefix group's key, first column, end column) of the prefix it shares with its group (columns of
    # ``mask``; key None for a row that shares with none): what the ``shared_prefix`` lever reads once per group
    spans: list = field(default_factory=list)

    def clear(self) -> None:
        self.rows, self.tags, self.tokens, self.gens, self.spans = [], [], [], [], []
        self.cache = self.mask = self.last_pos = self.logits = None
        self.peak = 0

    def width(self) -> int:
        return 0 if self.mask is None else int(self.mask.shape[1])


def shift_spans(spans: list, columns: int) -> list:
    """Prefix spans (``LiveBatch.spans``) after their mask gained ``columns`` columns in front (lost, if negative)."""
    return [(key, a + columns, b + columns) if key is not None else (key, a, b) for key, a, b in spans]


class BatchDecoder:
    def __init__(self, model, tokenizer, eos_ids: list[int], pad_id: int, device,
                 prefill_budget: int = PREFILL_BUDGET, prefix_store_mb: int = CAPACITY_MB, decode_graphs: bool = True):
        import torch

        self.torch = torch
        self.model = model
        self.tok = tokenizer
        self.eos = set(eos_ids)
        self.pad = pad_id
        self.device = device
        # Sliding-window layers keep only their window in the cache and count positions themselves: their rows are
        # neither shared nor prefilled in chunks (one pass, as transformers runs them).
        self.share = not has_sliding_layers(model.config)
        self.joins = self.share  # rows may join a batch that is decoding (see the module's docstring)
        self.prefill_budget = prefill_budget
        # keys/values of earlier prompts' blocks (see prefix_store); on one device, for models that share prefixes
        one_device = len({p.device for p in model.parameters()}) == 1
        self.store = PrefixStore(prefix_store_mb << 20) if prefix_store_mb and self.share and one_device else None
        self.fixed_steps: FixedShapeSteps | None = None  # decode steps at fixed shapes (``decode_graphs``): on one CUDA device, as graphs
        self._compiled_model: Any = None  # torch.compile of the model, for the ``compiled`` lever (made when first used)
        self._fused: dict | None = None  # the model's pieces the ``fused`` lever compiles (``fused_parts.pieces``)
        self._merged: Merged | None = None  # the ``merged`` lever's products (``merged_projections.merge``)
        self._admissions = 0  # admissions so far: a prefix group's key is (admission, group)
        if decode_graphs:
            self.use_fixed_steps(capture=True)
        # prefill_s: prompts in, first token chosen; decode_s / decode_tokens: every later token (wall clock;
        # reading the first tokens to the host synchronises the device, so the split holds on a GPU too)
        self.stats = {"forward_calls": 0, "prefill_tokens": 0, "shared_prefix_tokens_saved": 0,
                      "stored_prefix_tokens_reused": 0,
                      "prefill_s": 0.0, "decode_s": 0.0, "decode_tokens": 0,
                      # decode steps, rows computed over them, and the time spent in steps with fewer live rows than
                      # the batch has held since it was last empty (rows finished and nothing queued took their place)
                      "decode_steps": 0, "row_steps": 0, "underfilled_s": 0.0}

    def use_fixed_steps(self, capture: bool, flex: bool = False, compiled: bool = False,
                        shared_prefix: bool = False, cascade: bool = False, fused: bool = False,
                        merged: bool = False) -> bool:
        """Decode steps at fixed shapes from now on (``decode_graphs.FixedShapeSteps``): captured as CUDA graphs
        (``capture``; on one CUDA device, for models whose cache grows in place), or eagerly (any device: the CPU
        tests' way of checking the fixed shapes). True if switched on. Six levers (off by default; the benchmark's
        ``--levers`` times each): ``flex``, the steps' attention on flex attention's block mask; ``shared_prefix``,
        each prefix group's shared columns read once a step (``flex_decode``; on flex attention too); ``cascade``,
        the same in Triton kernels of its own (``cascade_decode``; ConfigError where they cannot run);
        ``compiled``, the steps' forward pass through ``torch.compile`` (compiled at the first step of each shape);
        ``fused``, only the steps' norms, MLPs and rotary embedding compiled (``fused_parts``); ``merged``, each
        layer's query/key/value and gate/up products as one each (``merged_projections``; with ``fused``, the merged
        MLPs compiled)."""

        one_device = len({p.device for p in self.model.parameters()}) == 1
        on_cuda = getattr(self.device, "type", str(self.device).split(":")[0]) == "cuda"
        if not self.share or not one_device or (capture and not on_cuda):
            self.fixed_steps = None
            return False
        if cascade:
            check_cascade(self.device)
        if compiled and merged:
            raise ConfigError("the merged decode lever does not combine with compiled (the whole step compiled)")
        self._merged = merge(self.model) if merged else None
        self._fused = fused_pieces(self.model) if fused else None
        stats: dict = {}
        if self._merged is not None:
            stats["merged_parts"] = self._merged.counts()
            # merged products computed, key/value projections that computed their own (0: every one was merged),
            # merged MLPs run (``merged_parts``): this lever's counts from now on
            self._merged.calls = stats["merged_calls"] = {"qkv": 0, "kv_own": 0, "mlp": 0}
            if self._fused is not None:  # the merged MLPs run merged_mlp compiled, not their own forward
                kept = {id(m.module) for m in self._merged.mlps}
                self._fused["mlps"] = [m for m in self._fused["mlps"] if id(m) not in kept]
        if self._fused is not None:
            stats["fused_pieces"] = fused_counts(self._fused)
        forward = self._compiled_forward if compiled else (
            functools.partial(self._parts_forward, self._fused, self._merged) if fused or merged else self._forward)
        self.fixed_steps = FixedShapeSteps(forward, self.pad, self.device, capture=capture, flex=flex,
                                           shared_prefix=shared_prefix, cascade=cascade)
        self.fixed_steps.stats.update(stats)
        return True

    def forget_prefixes(self) -> None:
        """Empty the prefix store (where there is one): the next prompts are computed as the first were."""
        if self.store is not None:
            self.store.clear()

    def _left_pad(self, seqs: list[list[int]]):
        torch = self.torch
        width = max(len(s) for s in seqs)
        ids = torch.full((len(seqs), width), self.pad, dtype=torch.long)
        mask = torch.zeros((len(seqs), width), dtype=torch.long)
        for j, s in enumerate(seqs):
            if s:
                ids[j, width - len(s):] = torch.tensor(s)
                mask[j, width - len(s):] = 1
        return ids.to(self.device), mask.to(self.device)

    def _chunks(self, lengths: list[int]) -> list[tuple[int, int]]:
        """Consecutive row ranges whose rows x longest new tokens stay within ``prefill_budget`` (one range where
        chunking is off)."""
        if not self.share:
            return [(0, len(lengths))]
        chunks, a, longest = [], 0, 0
        for b, n in enumerate(lengths):
            longest = max(longest, n)
            if b > a and (b + 1 - a) * longest > self.prefill_budget:
                chunks.append((a, b))
                a, longest = b, n
        return chunks + [(a, len(lengths))]

    def _prefill(self, ids, mask, positions, prior=None, prior_rows=None):
        """Runs the left-padded ``ids`` (``mask``: the full attention mask, the prior's columns first) in chunks of
        rows on top of ``prior`` (a cache whose row ``prior_rows[j]`` precedes row j; None: nothing precedes).
        Returns the cache of every row (one batch, ``mask``'s width) and the last position's logits.

        A chunk runs without the padding columns all its rows share; they come back as zero keys/values (masked,
        never read) when the chunks' caches are joined."""
        from sumjudge.llm.kv_cache import new_cache

        torch = self.torch
        held = mask.shape[1] - ids.shape[1]  # the prior's columns
        new_mask = mask[:, held:]
        chunks = self._chunks(new_mask.sum(-1).tolist())
        if prior is not None and len(chunks) == 1 and prior_rows.tolist() == list(range(ids.shape[0])):
            return prior, self._forward(ids, mask, positions, prior)  # row j on prior row j: no copy
        keys: list[list] = []
        values: list[list] = []
        logits = []
        for a, b in chunks:
            pad = int(new_mask[a:b].any(0).int().argmax())  # padding columns every row of the chunk has
            cache = new_cache(self.model.config)
            if prior is not None:
                rows = prior_rows[a:b]
                for layer, kept in enumerate(prior.layers):
                    cache.update(kept.keys[rows], kept.values[rows], layer)
            chunk_mask = torch.cat([mask[a:b, :held], new_mask[a:b, pad:]], dim=1)
            logits.append(self._forward(ids[a:b, pad:], chunk_mask, positions[a:b, pad:], cache))
            for layer, c in enumerate(cache.layers):
                if layer == len(keys):
                    keys.append([])
                    values.append([])
                keys[layer].append(self._unpad(c.keys, held, pad))
                values[layer].append(self._unpad(c.values, held, pad))
        joined = new_cache(self.model.config)
        for layer in range(len(keys)):
            joined.update(torch.cat(keys[layer]), torch.cat(values[layer]), layer)
        return joined, torch.cat(logits)

    def _unpad(self, states, held: int, pad: int):
        """(batch, heads, held + new, dim) states with ``pad`` zero columns put back after the first ``held``."""
        if not pad:
            return states
        b, h, _, d = states.shape
        zeros = states.new_zeros((b, h, pad, d))
        return self.torch.cat([states[:, :, :held], zeros, states[:, :, held:]], dim=2)

    def _forward(self, ids, mask, positions, cache, model=None, **attention):
        """The model's last-position logits for ``ids``; ``attention``: keyword arguments its attention functions
        take (``decode_blocks``)."""
        self.stats["forward_calls"] += 1
        model = self.model if model is None else model
        with attention_backends(ids.device):
            out = model(input_ids=ids, attention_mask=mask, position_ids=positions, past_key_values=cache,
                        use_cache=True, logits_to_keep=1, **attention)
        return out.logits[:, -1, :]

    def _compiled_forward(self, ids, mask, positions, cache, **attention):
        """``_forward`` through ``torch.compile`` of the model (compiled once per decoder, then per new shape). The
        new column's place is passed as ``cache_position`` (a tensor of the fixed-shape step): else the model reads
        the cache's length as a number, and every step would be compiled anew."""
        if self._compiled_model is None:
            self._compiled_model = self.torch.compile(self.model, dynamic=False)
        at = cache.layers[0].window[0] if cache.layers and getattr(cache.layers[0], "window", None) else None
        extra = {"cache_position": at} if at is not None else {}
        return self._forward(ids, mask, positions, cache, model=self._compiled_model, **extra, **attention)

    def _parts_forward(self, fused: dict | None, merged: Merged | None, ids, mask, positions, cache, **attention):
        """``_forward`` with the model's norms, MLPs and rotary embedding compiled (``fused_parts``; the ``fused``
        lever) and its products merged (``merged_parts``; the ``merged`` lever), whichever was switched on with the
        steps that call it."""
        import contextlib

        with contextlib.ExitStack() as parts:
            if fused is not None:
                parts.enter_context(fused_parts(fused))
            if merged is not None:
                parts.enter_context(merged_parts(merged, fused_compiled(merged_mlp) if fused is not None else None))
            return self._forward(ids, mask, positions, cache, **attention)

    def start(self) -> "LiveBatch":
        """An empty batch of rows being decoded together (``admit`` rows into it, ``step`` it)."""
        return LiveBatch()

    def decode(self, rows: list[DecodeRow]) -> list[DecodeResult]:
        """Decodes ``rows`` together until every one has finished (one admission, then steps)."""
        live = self.start()
        self.admit(live, rows, list(range(len(rows))))
        results: list[DecodeResult | None] = [None] * len(rows)
        while live.rows:
            for tag, res in self.step(live):
                results[tag] = res
        return results  # type: ignore[return-value]

    def _prefill_rows(self, rows: list[DecodeRow]):
        """Steps 1 and 2 for ``rows``: (cache, attention mask, last position, logits of the first token)."""
        torch = self.torch
        n = len(rows)
        group_of, plen = prefix_groups([r.ids for r in rows], self.share)
        self.stats["shared_prefix_tokens_saved"] += sum(plen[g] for g in group_of) - sum(plen)
        # 1. group prefixes, once each
        first = [next(i for i in range(n) if group_of[i] == g) for g in range(len(plen))]
        heads = [rows[first[g]].ids[: plen[g]] for g in range(len(plen))]
        prior, p_mask = self._stored_prefixes(heads)
        held = [int(m) for m in p_mask.sum(-1).tolist()] if p_mask is not None else [0] * len(heads)
        p_ids, new_mask = self._left_pad([h[k:] for h, k in zip(heads, held)])
        self.stats["prefill_tokens"] += int(new_mask.sum())
        p_mask = new_mask if p_mask is None else torch.cat([p_mask, new_mask], dim=1)
        positions = (p_mask.cumsum(-1) - 1).clamp(min=0)[:, -p_ids.shape[1]:]
        prefixes, _ = self._prefill(p_ids, p_mask, positions, prior=prior,
                                    prior_rows=None if prior is None else torch.arange(len(heads)))
        # Cache rows are selected with CPU indices: with device_map="auto" the cache's layers sit on several
        # GPUs, and a CUDA index only indexes tensors on its own device (a CPU index indexes any).
        index = torch.tensor(group_of)
        mask = p_mask[index.to(self.device)]
        # 2. suffixes
        s_ids, s_mask = self._left_pad([r.ids[plen[group_of[i]]:] for i, r in enumerate(rows)])
        self.stats["prefill_tokens"] += int(s_mask.sum())
        mask = torch.cat([mask, s_mask], dim=1)
        positions = (mask.cumsum(-1) - 1).clamp(min=0)[:, -s_ids.shape[1]:]
        cache, logits = self._prefill(s_ids, mask, positions, prior=prefixes, prior_rows=index)
        self._store_prompts(rows, cache, mask)
        return cache, mask, positions[:, -1], logits, self._spans(group_of, p_mask)

    def _spans(self, group_of: list[int], p_mask) -> list[tuple[Any, int, int]]:
        """Each row's (group key, first, end column) of the prefix its group computed once (``LiveBatch.spans``): the
        columns of the group's prefix mask from its first read one; key None for a group of one."""
        self._admissions += 1
        sizes = Counter(group_of)
        firsts = p_mask.int().argmax(-1).tolist()
        width = int(p_mask.shape[1])
        return [((self._admissions, g), firsts[g], width) if sizes[g] > 1 else (None, 0, 0) for g in group_of]

    def _stored_prefixes(self, heads: list[list[int]]):
        """The store's keys/values for the leading blocks of each of ``heads`` (at least one token of each left to
        compute) as a cache of one row per head, left-padded, and its mask; (None, None) if none is held."""
        if self.store is None:
            return None, None
        from sumjudge.llm.kv_cache import new_cache

        torch = self.torch
        found = [self.store.lookup(h, max(0, len(h) - 1)) for h in heads]
        width = max(k for k, _ in found)
        if not width:
            return None, None
        self.stats["stored_prefix_tokens_reused"] += sum(k for k, _ in found)
        like = next(states for _, states in found if states is not None)
        layers, _, heads_kv, _, dim = like.shape
        states = like.new_zeros((layers, 2, len(heads), heads_kv, width, dim))
        mask = torch.zeros((len(heads), width), dtype=torch.long)
        for j, (k, st) in enumerate(found):
            if k:
                states[:, :, j, :, width - k:] = st
                mask[j, width - k:] = 1
        cache = new_cache(self.model.config)
        for layer in range(layers):
            cache.update(states[layer, 0], states[layer, 1], layer)
        return cache, mask.to(self.device)

    def _store_prompts(self, rows: list[DecodeRow], cache, mask) -> None:
        """Puts each row's prompt blocks that the store does not hold yet into it."""
        if self.store is None:
            return
        torch = self.torch
        for i, r in enumerate(rows):
            names, held = self.store.missing(r.ids)
            if held == len(names):
                continue
            cols = mask[i].nonzero().squeeze(-1)[held * BLOCK:len(names) * BLOCK].to(cache.layers[0].keys.device)
            states = torch.stack([torch.stack([layer.keys[i][:, cols], layer.values[i][:, cols]])
                                  for layer in cache.layers])
            self.store.add(names, held, states)

    def admit(self, live: "LiveBatch", rows: list[DecodeRow], tags: list) -> None:
        """Prefills ``rows`` (each tagged with the caller's ``tags[j]``) and adds them to ``live``: from the next
        ``step`` on they decode with the rows already there. The narrower of the two caches is padded on the left
        (masked columns), so every row's last token stays in the last column."""
        if not rows:
            return
        torch = self.torch
        t0 = time.perf_counter()
        with torch.inference_mode(), phase(torch, "prefill"):
            cache, mask, last_pos, logits, spans = self._prefill_rows(rows)
            if live.rows:
                width_a, width_b = live.mask.shape[1], mask.shape[1]
                cache, mask = self._join(live.cache, live.mask, cache, mask)
                last_pos = torch.cat([live.last_pos, last_pos])
                logits = torch.cat([live.logits, logits])
                spans = shift_spans(live.spans, mask.shape[1] - width_a) + shift_spans(spans, mask.shape[1] - width_b)
        live.cache, live.mask, live.last_pos, live.logits, live.spans = cache, mask, last_pos, logits, spans
        live.rows += rows
        live.tags += list(tags)
        live.tokens += [[] for _ in rows]
        live.gens += [None if r.temperature == 0 else self._generator(r) for r in rows]
        live.peak = max(live.peak, len(live.rows))
        self.stats["prefill_s"] += time.perf_counter() - t0

    def _join(self, cache_a, mask_a, cache_b, mask_b):
        """One cache (and mask) holding the rows of a and then of b, left-padded to the wider of the two: b's rows
        written into a's buffer where a grows in place (``kv_cache``), else a new cache."""
        from sumjudge.llm.kv_cache import grows_in_place, new_cache

        torch = self.torch
        width = max(mask_a.shape[1], mask_b.shape[1])
        masks = [torch.cat([m.new_zeros((m.shape[0], width - m.shape[1])), m], dim=1) for m in (mask_a, mask_b)]
        if grows_in_place(cache_a):
            for la, lb in zip(cache_a.layers, cache_b.layers):
                la.add_rows(lb.keys, lb.values)
            return cache_a, torch.cat(masks)
        joined = new_cache(self.model.config)
        for layer, (la, lb) in enumerate(zip(cache_a.layers, cache_b.layers)):
            keys = torch.cat([self._widen(la.keys, width), self._widen(lb.keys.to(la.keys.device), width)])
            values = torch.cat([self._widen(la.values, width), self._widen(lb.values.to(la.values.device), width)])
            joined.update(keys, values, layer)
        return joined, torch.cat(masks)

    def _widen(self, states, width: int):
        """(batch, heads, len, dim) states with zero columns in front up to ``width``."""
        b, h, n, d = states.shape
        return states if n == width else self.torch.cat([states.new_zeros((b, h, width - n, d)), states], dim=2)

    def step(self, live: "LiveBatch") -> list[tuple[Any, DecodeResult]]:
        """Step 3 once: chooses every live row's next token, returns the rows that finished with it (tag, result;
        they leave the batch at once) and runs the others one position on."""
        from sumjudge.llm.kv_cache import drop_front, swap_order

        torch = self.torch
        t0 = time.perf_counter()
        finished: list[tuple[object, DecodeResult]] = []
        with torch.inference_mode(), phase(torch, "decode"):
            nxt = self._choose(live.logits, live.rows, live.gens)
            chosen = nxt.tolist()  # one device-to-host copy per step, not one per row
            keep = []
            for b, t in enumerate(chosen):
                r, out = live.rows[b], live.tokens[b]
                if t in self.eos:
                    finished.append((live.tags[b], DecodeResult(out, "stop")))
                    continue
                out.append(t)
                if r.stop and self._hits_stop(out, r.stop):
                    finished.append((live.tags[b], DecodeResult(out, "stop", stop_hit=True)))
                elif len(out) >= r.max_new_tokens:
                    finished.append((live.tags[b], DecodeResult(out, "length")))
                else:
                    keep.append(b)
            self.stats["decode_tokens"] += sum(max(0, len(res.tokens) - 1) for _, res in finished)
            if not keep:
                live.clear()
            else:
                mask, last_pos = live.mask, live.last_pos
                if len(keep) != len(chosen):
                    # the rows that finished leave by swap: the last rows take their places (one row copied each)
                    keep = swap_order(keep, len(chosen))
                    sel = torch.tensor(keep)  # on the CPU, as above
                    live.cache.batch_select_indices(sel)
                    on_device = sel.to(self.device)
                    mask, last_pos, nxt = mask[on_device], last_pos[on_device], nxt[sel.to(nxt.device)]
                    for name in ("rows", "tags", "tokens", "gens", "spans"):
                        setattr(live, name, [getattr(live, name)[b] for b in keep])
                    lead = int(mask.any(0).int().argmax())  # columns no remaining row reads
                    if lead:
                        drop_front(live.cache, lead)
                        mask = mask[:, lead:]
                        live.spans = shift_spans(live.spans, -lead)
                mask = torch.cat([mask, torch.ones((len(keep), 1), dtype=mask.dtype, device=self.device)], dim=1)
                live.mask, live.last_pos = mask, last_pos + 1
                live.logits = self._decode_forward(nxt[:, None], mask, live.last_pos[:, None], live.cache, live.spans)
                self.stats["decode_steps"] += 1
                self.stats["row_steps"] += len(keep)
        dt = time.perf_counter() - t0
        self.stats["decode_s"] += dt
        if live.rows and len(live.rows) < live.peak:
            self.stats["underfilled_s"] += dt
        return finished

    def _decode_forward(self, ids, mask, positions, cache, spans=None):
        """A decode step's forward pass: at fixed shapes (``fixed_steps``) where the cache grows in place, else
        eagerly over the cache's used columns."""
        from sumjudge.llm.kv_cache import grows_in_place

        if self.fixed_steps is not None and grows_in_place(cache):
            return self.fixed_steps.run(cache, ids, mask, positions, spans)
        return self._forward(ids, mask, positions, cache)

    def _generator(self, r: DecodeRow):
        g = self.torch.Generator(device=self.device if str(self.device).startswith("cuda") else "cpu")
        g.manual_seed(derive_seed(r.seed, r.sample_index))
        return g

    def _choose(self, logits, rows: list[DecodeRow], gens):
        torch = self.torch
        nxt = logits.max(dim=-1).indices
        for b, (r, g) in enumerate(zip(rows, gens)):
            if g is None:
                continue
            probs = torch.softmax(logits[b].float() / r.temperature, dim=-1)
            nxt[b] = draw(probs, r.top_p, g).to(nxt.device)
        return nxt

    def _hits_stop(self, tokens: list[int], stops: tuple[str, ...]) -> bool:
        tail = self.tok.decode(tokens[-24:], skip_special_tokens=True)
        return any(s and s in tail for s in stops)
