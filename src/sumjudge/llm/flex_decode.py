"""Decode-step attention on ``flex_attention`` with block masks: the hf decoder's ``flex`` and ``shared_prefix``
levers (``BatchDecoder.use_fixed_steps``; off by default, timed by ``sumjudge bench --levers``).

``flex``: a step's mask (rows, 1, 1, width; True where a row reads) becomes a block mask of ``KV_BLOCK``-column
blocks (``decode_blocks``): a block no column of which a row reads is skipped, a block it reads whole is read without
the mask, and the query heads that share a key/value head are read together (``enable_gqa``).

``shared_prefix``: the rows of a prefix group (the agents of a debate over one document; ``decode.prefix_groups``)
hold copies of the same keys and values over their shared prefix, and with ``flex`` each row reads its own copy: 4
agents read a document 4 times a step. Here each group's prefix is read once, by its first live row (the leader),
with every member's query as a query position of the leader's row; every row then reads the rest of its columns
(its own suffix and answer so far) alone, and the two parts are joined by their log-sum-exps (what FlashInfer calls
cascade attention). Both parts are flex attention over the cache as it is: no keys or values are copied.

On a CUDA GPU ``flex_attention`` is compiled (Triton); elsewhere it runs as PyTorch's reference, which applies the
masks densely (the CPU tests' check of the masks; the block tables are checked by compiling on a CPU, which takes
no log-sum-exp). Every function here is tensor operations only, so a CUDA graph captured over a step recomputes the
block masks from the step's inputs at each replay.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sumjudge.llm.compile_versions import allow_versions

KV_BLOCK = 128  # columns of a flex-attention key/value block
# compiled flex-attention kernels a process may hold: one per step shape (rows, columns, largest group) and call
# (a whole decode step; a shared prefix's and the rest's), each compiled the first time it is met
FLEX_SHAPES = 256
_compiled: dict = {}  # the compiled ``flex_attention``, once per process (CUDA only)


def flex_attention_fn(device):
    """``flex_attention`` compiled (on a CUDA device; once per process), or PyTorch's reference elsewhere.

    Compiled at fixed shapes, one kernel per shape met. torch.compile keeps at most ``recompile_limit`` (8) versions
    of a function and then runs it uncompiled: the unfused reference, which also cannot be captured in a CUDA graph
    (measured on an H100 with the GPU tests' many shapes: the shared-prefix steps fell back to eager steps). So the
    limit is raised to ``FLEX_SHAPES`` for the process (``compile_versions``, a global setting) when the kernel is
    first compiled, and the queries are passed contiguous (a stride is part of a version's guard too)."""
    from torch.nn.attention.flex_attention import flex_attention

    if getattr(device, "type", str(device).split(":")[0]) != "cuda":
        return flex_attention
    if "fn" not in _compiled:
        import torch

        allow_versions(FLEX_SHAPES)
        _compiled["fn"] = torch.compile(flex_attention, dynamic=False)
    return _compiled["fn"]


def dense_mask_mod(reads):
    """flex attention's ``mask_mod`` over a dense (rows, width) bool: row ``b`` reads column ``kv``."""

    def mask_mod(b, h, q_idx, kv_idx):
        return reads[b, kv_idx]

    return mask_mod


def block_mask(reads, mask_mod, queries: int = 1):
    """The ``BlockMask`` of a dense (rows, width) bool ``reads`` (``width`` a multiple of ``KV_BLOCK``) for
    ``queries`` query positions a row: for each row the blocks it reads some columns of (``mask_mod`` applied there)
    and the blocks it reads whole (no mask), each listed first in column order; the rest are skipped."""
    import torch
    from torch.nn.attention.flex_attention import BlockMask

    rows, width = reads.shape
    if width % KV_BLOCK:
        raise ValueError(f"a decode mask of {width} columns: flex attention's blocks need a multiple of {KV_BLOCK}")
    blocks = reads.reshape(rows, width // KV_BLOCK, KV_BLOCK)
    full = blocks.all(-1)
    partial = blocks.any(-1) & ~full

    def table(chosen):
        count = chosen.sum(-1, dtype=torch.int32).reshape(rows, 1, 1)
        order = torch.argsort(chosen.int(), dim=-1, descending=True, stable=True).to(torch.int32)
        return count, order.reshape(rows, 1, 1, -1)

    kv_num, kv_idx = table(partial)
    full_num, full_idx = table(full)
    return BlockMask.from_kv_blocks(kv_num, kv_idx, full_num, full_idx, BLOCK_SIZE=KV_BLOCK, mask_mod=mask_mod,
                                    seq_lengths=(queries, width), compute_q_blocks=False)


def decode_blocks(mask, mask_mod=None):
    """The ``flex`` lever's block mask for a decode step's mask (rows, 1, 1, width; bool). ``mask_mod``: made once per
    mask buffer (``dense_mask_mod`` of ``mask[:, 0, 0, :]``) so that a compiled kernel sees the same function."""
    reads = mask[:, 0, 0, :]
    return block_mask(reads, mask_mod or dense_mask_mod(reads))


@dataclass
class SharedPrefixBlocks:
    """A step's blocks for the ``shared_prefix`` lever: ``prefix`` over the leaders' rows (``members`` query positions
    a row), ``rest`` over every row's own columns outside its group's prefix; ``members`` (rows, M): the rows whose
    queries a leader's row asks with (its own first; padded with itself); ``slot`` (rows,): where a row's prefix part
    is in the flattened (rows x M) prefix output."""

    prefix: Any
    rest: Any
    members: Any
    slot: Any


@dataclass
class SharedPrefixInputs:
    """A fixed-shape step's inputs for the ``shared_prefix`` lever (filled in place each step, so a captured graph
    reads them): per row its group's prefix columns ``[start, end)`` in the buffer (empty for a row that shares with
    none), whether it leads its group, its members and slot (``SharedPrefixBlocks``); the dense masks the block masks
    are made of, and their ``mask_mod``s (made once)."""

    start: Any
    end: Any
    leads: Any
    members: Any
    slot: Any
    columns: Any
    prefix_reads: Any
    rest_reads: Any
    prefix_mod: Any = None
    rest_mod: Any = None

    @classmethod
    def empty(cls, rows: int, members: int, width: int, device) -> "SharedPrefixInputs":
        import torch

        zeros = torch.zeros(rows, dtype=torch.long, device=device)
        reads = torch.zeros((rows, width), dtype=torch.bool, device=device)
        inputs = cls(start=zeros.clone(), end=zeros.clone(), leads=torch.zeros(rows, dtype=torch.bool, device=device),
                     members=torch.zeros((rows, members), dtype=torch.long, device=device), slot=zeros.clone(),
                     columns=torch.arange(width, device=device), prefix_reads=reads, rest_reads=reads.clone())
        inputs.prefix_mod = dense_mask_mod(inputs.prefix_reads)
        inputs.rest_mod = dense_mask_mod(inputs.rest_reads)
        return inputs

    def fill(self, plan: "SharePlan", offset: int) -> None:
        """Writes ``plan`` (columns counted from the used part's first, ``offset`` in the buffer) into the tensors: one
        copy to the device a step, split there."""
        import torch

        rows, m = self.members.shape
        own = range(len(plan.start), rows)  # padding rows: no span, their own members and slot
        spans = [(s + offset, e + offset) if e > s else (0, 0) for s, e in zip(plan.start, plan.end)]
        table = [[a, b, int(lead), k, *(row + [row[0]] * (m - len(row)))]
                 for (a, b), lead, k, row in zip(spans, plan.leads, plan.slot(m), plan.members)]
        table += [[0, 0, 1, r * m, *([r] * m)] for r in own]
        packed = torch.tensor(table, dtype=torch.long).to(self.start.device, non_blocking=True)
        self.start.copy_(packed[:, 0])
        self.end.copy_(packed[:, 1])
        self.leads.copy_(packed[:, 2].bool())
        self.slot.copy_(packed[:, 3])
        self.members.copy_(packed[:, 4:])

    def blocks(self, mask) -> SharedPrefixBlocks:
        """The step's block masks from its mask (rows, 1, 1, width) and the filled inputs (tensor operations)."""
        reads = mask[:, 0, 0, :]
        cols = self.columns[None, :]
        inside = (cols >= self.start[:, None]) & (cols < self.end[:, None])
        self.prefix_reads.copy_(reads & inside & self.leads[:, None])
        self.rest_reads.copy_(reads & ~inside)
        return SharedPrefixBlocks(prefix=block_mask(self.prefix_reads, self.prefix_mod, self.members.shape[1]),
                                  rest=block_mask(self.rest_reads, self.rest_mod), members=self.members,
                                  slot=self.slot)


@dataclass
class SharePlan:
    """Which live rows read a shared prefix once (``plan_sharing``): per row its group's prefix columns ``[start,
    end)`` (counted from the used part's first column; equal and empty for a row that shares with none), whether it
    leads its group, the leader's member rows (leader first; a row that does not lead lists itself) and its place
    among its leader's members."""

    start: list[int]
    end: list[int]
    leads: list[bool]
    members: list[list[int]]
    place: list[tuple[int, int]]  # (leader row, index among its members)

    def width(self) -> int:
        """Members of the largest group (at least 1)."""
        return max((len(m) for m in self.members), default=1)

    def slot(self, m: int) -> list[int]:
        return [leader * m + k for leader, k in self.place]


def plan_sharing(spans: list) -> SharePlan:
    """Groups the live rows by their prefix ``spans`` (per row ``(group key, start, end)``, key None for a row that
    shares with none; ``decode.LiveBatch.spans``): a group of two or more live rows reads its prefix once, through its
    first row."""
    first: dict = {}
    for r, (key, _, _) in enumerate(spans):
        if key is not None:
            first.setdefault(key, []).append(r)
    start, end, leads, members, place = [], [], [], [], []
    for r, (key, s, e) in enumerate(spans):
        group = first.get(key, [r]) if key is not None else [r]
        shared = len(group) > 1 and e > s
        start.append(s if shared else 0)
        end.append(e if shared else 0)
        leads.append(group[0] == r or not shared)
        members.append(group if shared and group[0] == r else [r])
        place.append((group[0], group.index(r)) if shared else (r, 0))
    return SharePlan(start, end, leads, members, place)


def flex_decode_attention(query, key, value, blocks, scaling, gqa: bool):
    """A decode step's attention (``query`` (rows, heads, 1, dim), ``key``/``value`` (rows, kv_heads, width, dim)) on
    ``blocks``: a ``BlockMask`` (``flex``) or ``SharedPrefixBlocks`` (``shared_prefix``). Returns (rows, 1, heads,
    dim)."""
    flex = flex_attention_fn(query.device)
    query = query.contiguous()
    if not isinstance(blocks, SharedPrefixBlocks):
        out = flex(query, key, value, block_mask=blocks, scale=scaling, enable_gqa=gqa)
        return out.transpose(1, 2).contiguous()
    import torch
    from torch.nn.attention.flex_attention import AuxRequest

    rows, heads, _, dim = query.shape
    m = blocks.members.shape[1]
    asked = query[:, :, 0][blocks.members.reshape(-1)].reshape(rows, m, heads, dim).transpose(1, 2)
    o1, aux1 = flex(asked.contiguous(), key, value, block_mask=blocks.prefix, scale=scaling, enable_gqa=gqa,
                    return_aux=AuxRequest(lse=True))
    l1 = aux1.lse
    o1 = o1.transpose(1, 2).reshape(rows * m, heads, dim)[blocks.slot]
    l1 = l1.transpose(1, 2).reshape(rows * m, heads)[blocks.slot]
    o2, aux2 = flex(query, key, value, block_mask=blocks.rest, scale=scaling, enable_gqa=gqa,
                    return_aux=AuxRequest(lse=True))
    o2, l2 = o2[:, :, 0], aux2.lse[:, :, 0]
    top = torch.maximum(l1, l2).float()
    w1 = torch.exp(l1.float() - top).nan_to_num(0.0)
    w2 = torch.exp(l2.float() - top).nan_to_num(0.0)
    out = (o1.float() * w1[..., None] + o2.float() * w2[..., None]) / (w1 + w2)[..., None]
    return out.to(query.dtype)[:, None]
