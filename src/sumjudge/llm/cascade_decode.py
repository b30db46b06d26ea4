"""The ``cascade`` decode lever: each prefix group's shared columns read once a step, in two kernel launches a layer.

The ``shared_prefix`` lever (``flex_decode``) reads a group's prefix once too, but as two flex-attention calls (the
prefix with every member's queries, then every row's other columns) joined by a dozen float32 elementwise operations,
each its own kernel: measured on an H100 (docs/benchmark.md) its step took longer than the ``flex`` lever's, though it
read under a third of the keys and values. Here the same plan (``flex_decode.plan_sharing``; the same step inputs,
``SharedPrefixInputs``) runs as two Triton kernels a layer (``cascade_kernels``): one program per (row, key/value
head, split) reads the row's group's prefix if it leads the group, then its own other columns; a second joins each
row's parts by their log-sum-exps (split-KV decoding, what FlashInfer calls cascade attention). No keys or values are
copied, and no dense mask is built: the step's mask is read where a row's columns are read.

Triton comes with a CUDA build of torch. On a CPU the kernels run under Triton's interpreter (``TRITON_INTERPRET=1``
set before Triton is first imported, and Triton installed: ``make test-kernels``), which is how their numbers are
checked without a GPU; it is far too slow to decode with otherwise, so the lever refuses a CPU without it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from sumjudge.errors import ConfigError

# How the kernels are launched (read at each call: ``bench --attention`` times others, ``CASCADE_SWEEP``). Compiled
# for an H100 and an A100 by Triton 3.7.1 (``tests_live/kernels/test_cascade_compiles.py``), 32 columns a read with
# 8 warps spill no register at the 8B bench's shape in bf16 nor at Qwen2.5-0.5B's in fp32, where 64 columns with 4
# warps did.
SPLITS = 4  # parts each of a row's two spans is split into (programs a row and key/value head: the GPU kept busy)
BLOCK_N = 32  # columns a program reads at a time
NUM_WARPS = 8  # warps a program


@dataclass
class CascadeBlocks:
    """A step's inputs for the ``cascade`` lever: ``reads`` (rows, width) the step's mask (True where a row reads),
    ``first`` (rows,) each row's first column read, and the sharing plan's per-row tensors (``SharedPrefixInputs``:
    ``start``/``end`` its group's prefix columns, ``leads``, ``members``)."""

    reads: Any
    first: Any
    start: Any
    end: Any
    leads: Any
    members: Any


def cascade_blocks(mask, shared) -> CascadeBlocks:
    """The step's ``CascadeBlocks`` from its mask (rows, 1, 1, width; bool) and its filled ``SharedPrefixInputs``
    (tensor operations only: a captured step recomputes them at each replay)."""
    reads = mask[:, 0, 0, :]
    return CascadeBlocks(reads=reads, first=reads.int().argmax(-1), start=shared.start, end=shared.end,
                         leads=shared.leads, members=shared.members)


def interpreted() -> bool:
    return os.environ.get("TRITON_INTERPRET", "").strip() in ("1", "true", "True")


def check_available(device) -> None:
    """ConfigError unless the lever can run on ``device``: Triton importable, and a CUDA device or Triton's
    interpreter."""
    on_cuda = getattr(device, "type", str(device).split(":")[0]) == "cuda"
    try:
        import triton  # noqa: F401
    except ImportError as e:
        raise ConfigError("the cascade decode lever needs Triton (it comes with a CUDA build of torch; on a CPU, "
                          "`make test-kernels` installs it to check the kernels)") from e
    if not on_cuda and not interpreted():
        raise ConfigError(f"the cascade decode lever runs its kernels on a CUDA device, not on {device} (on a CPU "
                          "only under Triton's interpreter, TRITON_INTERPRET=1, to check them)")


def _pow2(n: int, least: int = 16) -> int:
    return max(least, 1 << max(0, n - 1).bit_length())


def partials_constants(heads: int, kv_heads: int, dim: int, members: int) -> dict:
    """``cascade_partials``' compile-time constants for a model's attention shape and a step's largest group."""
    groups = heads // kv_heads
    return dict(G=groups, M=members, D=dim, SPLITS=SPLITS, BLOCK_Q=_pow2(members * groups), BLOCK_G=_pow2(groups),
                BLOCK_N=BLOCK_N, BLOCK_D=_pow2(dim), UPCAST=interpreted())


def merge_constants(dim: int) -> dict:
    """``cascade_merge``'s compile-time constants."""
    return dict(PARTS=2 * SPLITS, BLOCK_P=_pow2(2 * SPLITS, 2), D=dim, BLOCK_D=_pow2(dim))


def cascade_decode_attention(query, key, value, blocks: CascadeBlocks, scaling):
    """A decode step's attention (``query`` (rows, heads, 1, dim), ``key``/``value`` (rows, kv_heads, width, dim), the
    query heads that share a key/value head next to each other) on ``blocks``: (rows, 1, heads, dim) in the query's
    dtype."""
    import torch

    from sumjudge.llm.cascade_kernels import cascade_merge, cascade_partials

    rows, heads, _, dim = query.shape
    kv_heads, width = key.shape[1], key.shape[2]
    q = query.reshape(rows, heads, dim)
    if q.stride(-1) != 1:
        q = q.contiguous()
    if key.stride(-1) != 1 or value.stride(-1) != 1 or key.stride(2) != value.stride(2):  # one offset a column
        key, value = key.contiguous(), value.contiguous()
    reads = blocks.reads.view(torch.uint8)
    parts_o = torch.empty((rows, heads, 2 * SPLITS, dim), dtype=torch.float32, device=query.device)
    parts_l = torch.empty((rows, heads, 2 * SPLITS), dtype=torch.float32, device=query.device)
    scale = float(scaling) if scaling is not None else dim ** -0.5
    cascade_partials[(rows, kv_heads, SPLITS)](
        q, key, value, reads, blocks.first, blocks.start, blocks.end, blocks.leads, blocks.members, parts_o, parts_l,
        q.stride(0), q.stride(1), key.stride(0), key.stride(1), key.stride(2), value.stride(0), value.stride(1),
        reads.stride(0), width, scale, num_warps=NUM_WARPS,
        **partials_constants(heads, kv_heads, dim, blocks.members.shape[1]))
    out = torch.empty((rows, 1, heads, dim), dtype=query.dtype, device=query.device)
    cascade_merge[(rows, heads)](parts_o, parts_l, out, heads, **merge_constants(dim))
    return out
