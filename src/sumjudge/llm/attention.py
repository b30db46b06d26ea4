"""Decode-step attention for grouped-query models (Llama-3, Qwen2, ...) on the hf backend.

transformers' SDPA path copies every key/value head once per query head that shares it (``repeat_kv``)
whenever the batch has a padding mask, which a batched decoder always has: for a 14-head / 2-KV-head
model over 8 rows of 1,800 tokens that is about a gigabyte copied per generated token, more than the
model's own work on a CPU. For one query token the copy is not needed: the query heads that share a
key/value head are laid out as that head's queries, and one SDPA call over the unrepeated keys gives the
same numbers. Prompts (more than one query token) keep transformers' path.

A batched decoder's rows are left-padded to the widest row's cache: a row of 1,000 tokens beside one of
5,000 is read over 5,000 columns, 4,000 of them masked, and on a CPU a decode step's attention costs what
the columns it reads cost. When the padding is large, each row is read over its own columns only (one SDPA
call per row, its keys a view of the batch's: no copy; the mask passed only for a row with masked columns
inside its span, such as the gap between a shared prefix and a suffix). Measured on a 2-core CPU with
Qwen2.5-0.5B's attention shape (24 layers): 4 rows of 5,000 cached tokens and 16 of 2,000, 334 ms a step
padded, 211 ms row by row; 20 rows of 3,000, 197 ms padded, 227 ms row by row. So a step goes row by row
only when the columns it saves outweigh a call's cost (``ROW_CALL_COLUMNS``), and only on a CPU (on a GPU
a call per row costs a kernel launch each, and its kernels are not bound by the padded reads the same way).

On a CUDA GPU the engine's forward passes leave out PyTorch's cuDNN attention backend (``attention_backends``):
it builds an execution plan for each new shape, and a decoder's cache is one column wider every step. Measured
on an H200 with Llama-3-8B-shaped bf16 weights (64 rows of about 900 tokens, 2 batches of 32): 1.4 ms of CPU
per attention call in cuDNN, 32 calls a step, against 0.9 s of GPU work in 3.6 s of decoding; the flash and
memory-efficient kernels take the same masks and are launched like any other kernel.

A decode step may instead run on ``flex_attention`` (``flex_decode``: the decoder's ``flex`` and ``shared_prefix``
levers, off by default), given the step's block masks as ``decode_blocks``, or on the ``cascade`` lever's Triton
kernels (``cascade_decode``), given its ``CascadeBlocks``.
"""

from __future__ import annotations

import contextlib

from sumjudge.llm.cascade_decode import CascadeBlocks, cascade_decode_attention
from sumjudge.llm.flex_decode import flex_decode_attention

NAME = "sumjudge_gqa_sdpa"
ROW_CALL_COLUMNS = 512  # what one more SDPA call costs, in cached columns read (measured on a CPU: 350-450)


def gqa_decode_sdpa(module, query, key, value, attention_mask, dropout: float = 0.0, scaling=None, is_causal=None,
                    decode_blocks=None, **kwargs):
    """``query`` (batch, heads, q_len, dim), ``key``/``value`` (batch, kv_heads, kv_len, dim); returns
    (batch, q_len, heads, dim) and no weights, like transformers' ``sdpa_attention_forward``. ``decode_blocks`` (a
    decode step's block masks, passed down from the model's call): the step runs on ``flex_attention``
    (``flex_decode``), or on the ``cascade`` lever's kernels for ``CascadeBlocks``."""
    import torch
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    groups = getattr(module, "num_key_value_groups", 1)
    if isinstance(decode_blocks, CascadeBlocks) and query.shape[2] == 1 and not kwargs.get("output_attentions"):
        return cascade_decode_attention(query, key, value, decode_blocks, scaling), None
    if decode_blocks is not None and query.shape[2] == 1 and not kwargs.get("output_attentions"):
        return flex_decode_attention(query, key, value, decode_blocks, scaling, groups > 1), None
    if groups == 1 or query.shape[2] != 1 or kwargs.get("output_attentions"):
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling,
                                      is_causal=is_causal, **kwargs)
    b, heads, _, dim = query.shape
    kv_heads = key.shape[1]
    # query head h reads key/value head h // groups (repeat_kv's order): the groups become query positions
    q = query.reshape(b, kv_heads, groups, dim)
    mask = attention_mask[:, :, :, : key.shape[-2]] if attention_mask is not None else None
    on_cpu_rows = mask is not None and mask.shape[0] == b and query.device.type == "cpu"
    spans = row_spans(mask) if on_cpu_rows else None
    if spans is None:
        out = torch.nn.functional.scaled_dot_product_attention(q, key, value, attn_mask=mask, dropout_p=0.0,
                                                               scale=scaling)
    else:
        assert mask is not None  # spans are read from the mask
        out = torch.cat([
            torch.nn.functional.scaled_dot_product_attention(
                q[i:i + 1], key[i:i + 1, :, left:], value[i:i + 1, :, left:],
                attn_mask=mask[i:i + 1, :, :, left:] if gaps else None, dropout_p=0.0, scale=scaling)
            for i, (left, gaps) in enumerate(spans)])
    return out.reshape(b, heads, 1, dim).transpose(1, 2).contiguous(), None


def attention_backends(device):
    """The context a forward pass of the engine runs in: on a CUDA device, SDPA without the cuDNN backend (flash,
    memory-efficient, math: PyTorch picks among them as usual); elsewhere nothing changes."""

    if getattr(device, "type", str(device).split(":")[0]) != "cuda":
        return contextlib.nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel

    return sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH])


def row_spans(mask) -> list[tuple[int, bool]] | None:
    """For a decode step's mask (batch, 1, 1, columns; True or 0.0 where a row reads): each row's first column
    read and whether it has masked columns after it; None when reading every row over the padded width costs
    less than a call per row (``ROW_CALL_COLUMNS``)."""
    import torch

    reads = mask[:, 0, 0, :]
    if reads.dtype != torch.bool:  # an additive mask: 0 where a row reads, a large negative number where not
        reads = reads == 0
    rows, width = reads.shape
    lefts = reads.int().argmax(-1)
    read = reads.sum(-1)
    lefts_list, read_list = lefts.tolist(), read.tolist()
    if sum(width - left for left in lefts_list) + ROW_CALL_COLUMNS * rows >= rows * width:
        return None
    return [(left, width - left != n) for left, n in zip(lefts_list, read_list)]


def use_gqa_decode_attention(model) -> bool:
    """Switch a model on transformers' SDPA attention to ``gqa_decode_sdpa`` (same masks); True if switched."""
    from transformers import AttentionInterface
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, AttentionMaskInterface, sdpa_mask

    cfg = model.config
    if getattr(cfg, "_attn_implementation", None) != "sdpa" or not hasattr(model, "set_attn_implementation"):
        return False
    AttentionInterface.register(NAME, gqa_decode_sdpa)
    if NAME not in ALL_MASK_ATTENTION_FUNCTIONS:
        AttentionMaskInterface.register(NAME, sdpa_mask)
    model.set_attn_implementation(NAME)
    return True
