"""The Triton kernels of the ``cascade`` decode lever (``cascade_decode``): imported only where that lever runs, since a
CPU build of torch has no Triton.

``cascade_partials`` runs one program per (row, key/value head, split). A row that leads a prefix group reads the
group's shared columns once, split ``SPLITS`` ways, with every member's queries of that head as one tile (members x
query heads of the group, padded to ``BLOCK_Q``); every row then reads the rest of its columns (before and after its
group's prefix, under its mask) with its own queries, split the same way. Each part writes its output normalised by
its own softmax sum, and its log-sum-exp; ``cascade_merge`` joins a row's ``2 x SPLITS`` parts by their log-sum-exps
(a part that read no column has -inf and weighs nothing). Scores and sums are float32; products of float32 inputs are
taken at full precision (``input_precision="ieee"``: no TF32), so a float32 model's answers are comparable with the
eager step's. ``UPCAST`` (Triton's interpreter only, which multiplies bfloat16 tiles wrongly: products off by up to 3e10 on
16 x 16 tiles of normal-range values, Triton 3.7.1) takes each product in float32 after rounding its operands as the GPU would.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _span(q, k_row, v_row, reads_row, base, gap_at, gap_len, v0, v1, stride_c, scale,
          BLOCK_Q: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr, D: tl.constexpr,
          UPCAST: tl.constexpr):
    """Online softmax of the query tile ``q`` (BLOCK_Q, BLOCK_D) over one row's columns numbered ``v0 .. v1`` in a
    list that starts at column ``base`` and skips ``gap_len`` columns at its ``gap_at``-th entry, each read only
    where the row's mask (``reads_row``) says so; ``k_row``/``v_row``: the row's key/value head's first column, keys
    and values laid out alike (one offset a column, ``stride_c``, 32-bit within a row): (unnormalised output,
    running max, running sum)."""
    d = tl.arange(0, BLOCK_D)
    in_dim = d < D
    m_i = tl.full([BLOCK_Q], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_Q], tl.float32)
    acc = tl.zeros([BLOCK_Q, BLOCK_D], tl.float32)
    for v in range(v0, v1, BLOCK_N):
        vs = v + tl.arange(0, BLOCK_N)
        inside = vs < v1
        cols = base + vs + tl.where(vs >= gap_at, gap_len, 0)
        keep = inside & (tl.load(reads_row + cols, mask=inside, other=0) != 0)
        kv_mask = inside[:, None] & in_dim[None, :]
        offsets = cols[:, None] * stride_c + d[None, :]
        k = tl.load(k_row + offsets, mask=kv_mask, other=0.0)
        if UPCAST:
            s = tl.dot(q.to(tl.float32), tl.trans(k.to(tl.float32)), input_precision="ieee") * scale
        else:
            s = tl.dot(q, tl.trans(k), input_precision="ieee") * scale
        s = tl.where(keep[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        p = tl.exp(s - m_safe[:, None])
        alpha = tl.exp(m_i - m_safe)
        l_i = l_i * alpha + tl.sum(p, 1)
        val = tl.load(v_row + offsets, mask=kv_mask, other=0.0)
        if UPCAST:
            pv = tl.dot(p.to(val.dtype).to(tl.float32), val.to(tl.float32), input_precision="ieee")
        else:
            pv = tl.dot(p.to(val.dtype), val, input_precision="ieee")
        acc = acc * alpha[:, None] + pv
        m_i = m_new
    return acc, m_i, l_i


@triton.jit
def _store_part(PartO, PartL, row, head, slot, acc, m_i, l_i, ok, heads, PARTS: tl.constexpr,
                BLOCK_D: tl.constexpr, D: tl.constexpr):
    """A part's output (``acc / l_i``, zeros where it read nothing) and log-sum-exp at ``(row, head, slot)`` for the
    tile's entries where ``ok``."""
    d = tl.arange(0, BLOCK_D)
    read = l_i > 0
    out = acc / tl.where(read, l_i, 1.0)[:, None]
    lse = tl.where(read, m_i + tl.log(tl.where(read, l_i, 1.0)), float("-inf"))
    at = (row * heads + head) * PARTS + slot
    tl.store(PartO + at[:, None] * D + d[None, :], out, mask=ok[:, None] & (d[None, :] < D))
    tl.store(PartL + at, lse, mask=ok)


@triton.jit
def cascade_partials(Q, K, V, Reads, First, Start, End, Leads, Members, PartO, PartL, stride_qr, stride_qh,
                     stride_kr, stride_kh, stride_kc, stride_vr, stride_vh, stride_rr, width, scale,
                     G: tl.constexpr, M: tl.constexpr, D: tl.constexpr, SPLITS: tl.constexpr,
                     BLOCK_Q: tl.constexpr, BLOCK_G: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
                     UPCAST: tl.constexpr):
    r = tl.program_id(0)
    h = tl.program_id(1)
    s = tl.program_id(2)
    heads = tl.num_programs(1) * G
    d = tl.arange(0, BLOCK_D)
    in_dim = d < D
    start = tl.load(Start + r).to(tl.int32)
    end = tl.load(End + r).to(tl.int32)
    first = tl.load(First + r).to(tl.int32)
    lead = tl.load(Leads + r) != 0
    shares = end > start
    # the row's key/value head and mask: 64-bit offsets once here, 32-bit within the row
    k_row = K + r.to(tl.int64) * stride_kr + h * stride_kh
    v_row = V + r.to(tl.int64) * stride_vr + h * stride_vh
    reads_row = Reads + r.to(tl.int64) * stride_rr

    # the group's shared prefix, once, by its leader, for every member (slots 0 .. SPLITS - 1)
    if shares:
        if lead:
            pi = tl.arange(0, BLOCK_Q)
            pk = pi // G
            pg = pi % G
            pok = pi < M * G
            member = tl.load(Members + r * M + pk, mask=pok, other=0).to(tl.int32)
            pok = pok & ((pk == 0) | (member != r))  # a list padded with its leader (itself)
            pq = tl.load(Q + member[:, None] * stride_qr + (h * G + pg)[:, None] * stride_qh + d[None, :],
                         mask=pok[:, None] & in_dim[None, :], other=0.0)
            pn = end - start
            pchunk = tl.cdiv(pn, SPLITS)
            pv0 = s * pchunk
            pacc, pm, pl = _span(pq, k_row, v_row, reads_row, start, pn, 0, pv0, tl.minimum(pv0 + pchunk, pn),
                                 stride_kc, scale, BLOCK_Q, BLOCK_N, BLOCK_D, D, UPCAST)
            _store_part(PartO, PartL, member, h * G + pg, s, pacc, pm, pl, pok, heads, 2 * SPLITS, BLOCK_D, D)
    else:
        eg = tl.arange(0, BLOCK_G)
        eok = eg < G
        eat = (r * heads + h * G + eg) * (2 * SPLITS) + s
        tl.store(PartL + eat, tl.full([BLOCK_G], float("-inf"), tl.float32), mask=eok)
        tl.store(PartO + eat[:, None] * D + d[None, :], tl.zeros([BLOCK_G, BLOCK_D], tl.float32),
                 mask=eok[:, None] & in_dim[None, :])

    # the row's other columns, its own queries (slots SPLITS .. 2 SPLITS - 1)
    g = tl.arange(0, BLOCK_G)
    ok = g < G
    q = tl.load(Q + r * stride_qr + (h * G + g)[:, None] * stride_qh + d[None, :], mask=ok[:, None] & in_dim[None, :],
                other=0.0)
    s0 = tl.where(shares, start, first)
    e0 = tl.where(shares, end, first)
    base = tl.minimum(first, s0)
    before = s0 - base
    n = before + (width - e0)
    chunk = tl.cdiv(n, SPLITS)
    v0 = s * chunk
    acc, m_i, l_i = _span(q, k_row, v_row, reads_row, base, before, e0 - s0, v0, tl.minimum(v0 + chunk, n),
                          stride_kc, scale, BLOCK_G, BLOCK_N, BLOCK_D, D, UPCAST)
    _store_part(PartO, PartL, r + 0 * g, h * G + g, SPLITS + s, acc, m_i, l_i, ok, heads, 2 * SPLITS, BLOCK_D, D)


@triton.jit
def cascade_merge(PartO, PartL, Out, heads, PARTS: tl.constexpr, BLOCK_P: tl.constexpr, D: tl.constexpr,
                  BLOCK_D: tl.constexpr):
    """One program per (row, query head): its parts joined by their log-sum-exps, written in ``Out``'s dtype
    (``Out`` (rows, 1, heads, D), contiguous)."""
    r = tl.program_id(0)
    hq = tl.program_id(1)
    p = tl.arange(0, BLOCK_P)
    d = tl.arange(0, BLOCK_D)
    at = (r * heads + hq) * PARTS + p
    lse = tl.load(PartL + at, mask=p < PARTS, other=float("-inf"))
    top = tl.max(lse, 0)
    w = tl.exp(lse - tl.where(top == float("-inf"), 0.0, top))
    o = tl.load(PartO + at[:, None] * D + d[None, :], mask=(p < PARTS)[:, None] & (d < D)[None, :], other=0.0)
    o = tl.where((w > 0)[:, None], o, 0.0)
    out = tl.sum(w[:, None] * o, 0) / tl.sum(w, 0)
    tl.store(Out + (r * heads + hq) * D + d, out.to(Out.dtype.element_ty), mask=d < D)
