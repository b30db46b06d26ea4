"""Decode-step attention for grouped-query models (Llama-3, Qwen2, ...) on the hf backend.

transformers' SDPA path copies every key/value head once per query head that shares it (``repeat_kv``)
whenever the batch has a padding mask, which a batched decoder always has: for a 14-head / 2-KV-head
model over 8 rows of 1,800 tokens that is about a gigabyte copied per generated token, more than the
model's own work on a CPU. For one query token the copy is not needed: the query heads that share a
key/value head are laid out as that head's queries, and one SDPA call over the unrepeated keys gives the
same numbers. Prompts (more than one query token) keep transformers' path.
"""

from __future__ import annotations

NAME = "sumjudge_gqa_sdpa"


def gqa_decode_sdpa(module, query, key, value, attention_mask, dropout: float = 0.0, scaling=None, is_causal=None,
                    **kwargs):
    """``query`` (batch, heads, q_len, dim), ``key``/``value`` (batch, kv_heads, kv_len, dim); returns
    (batch, q_len, heads, dim) and no weights, like transformers' ``sdpa_attention_forward``."""
    import torch
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    groups = getattr(module, "num_key_value_groups", 1)
    if groups == 1 or query.shape[2] != 1 or kwargs.get("output_attentions"):
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling,
                                      is_causal=is_causal, **kwargs)
    b, heads, _, dim = query.shape
    kv_heads = key.shape[1]
    # query head h reads key/value head h // groups (repeat_kv's order): the groups become query positions
    q = query.reshape(b, kv_heads, groups, dim)
    mask = attention_mask[:, :, :, : key.shape[-2]] if attention_mask is not None else None
    out = torch.nn.functional.scaled_dot_product_attention(q, key, value, attn_mask=mask, dropout_p=0.0,
                                                           scale=scaling)
    return out.reshape(b, heads, 1, dim).transpose(1, 2).contiguous(), None


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
