"""The ``cascade`` lever's kernels (``llm.cascade_decode``) against attention computed densely: rows that share a
prefix read it through their group's leader, rows that share nothing, left padding, a gap inside a row's columns,
padding rows, widths that are not a multiple of a block, head sizes and query groups that are not powers of two."""

from __future__ import annotations

import pytest
import torch

from sumjudge.llm import cascade_decode
from sumjudge.llm.cascade_decode import CascadeBlocks, cascade_decode_attention, interpreted
from sumjudge.perf.attention_bench import dense as dense_attention  # each row over its own keys, in fp32

pytestmark = pytest.mark.usefixtures("kernels_run")
# compiled on a CUDA GPU, else on the CPU under Triton's interpreter
DEVICE = "cuda" if torch.cuda.is_available() and not interpreted() else "cpu"


def layout(width: int):
    """Per row: (first column read, end of its columns, its group's prefix (start, end) or None, columns it skips);
    rows 0, 2 and 3 share a prefix led by row 0 (row 0 longest), rows 4 and 6 another (led by 4); row 1 shares
    nothing and is left-padded; row 5 shares nothing and reads one column (a padding row); row 3 has a gap between
    its prefix and its own columns (a joined row's)."""
    return [(2, width - 3, (2, 41), ()), (17, width - 10, None, ()), (2, width - 1, (2, 41), ()),
            (2, width - 20, (2, 41), range(41, 45)), (0, 70, (0, 63), ()), (width - 1, width, None, ()),
            (0, width - 5, (0, 63), ())]


def case(heads: int, kv_heads: int, dim: int, width: int, dtype, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    rows = layout(width)
    n = len(rows)
    query = torch.randn(n, heads, 1, dim, generator=g).to(dtype)
    key = torch.randn(n, kv_heads, width, dim, generator=g).to(dtype)
    value = torch.randn(n, kv_heads, width, dim, generator=g).to(dtype)
    reads = torch.zeros(n, width, dtype=torch.bool)
    for r, (first, end, _, skip) in enumerate(rows):
        reads[r, first:end] = True
        reads[r, list(skip)] = False
    leaders = {}
    for r, (_, _, prefix, _) in enumerate(rows):
        if prefix is not None:
            leaders.setdefault(prefix, []).append(r)
    members_width = max(len(m) for m in leaders.values())
    start = torch.zeros(n, dtype=torch.long)
    end = torch.zeros(n, dtype=torch.long)
    leads = torch.ones(n, dtype=torch.bool)
    members = torch.arange(n).repeat_interleave(members_width).reshape(n, members_width)
    for (a, b), group in leaders.items():
        lead = group[0]
        for r in group:
            start[r], end[r] = a, b
            leads[r] = r == lead
            key[r, :, a:b] = key[lead, :, a:b]  # a group's rows hold copies of the same prefix
            value[r, :, a:b] = value[lead, :, a:b]
        members[lead] = torch.tensor(group + [lead] * (members_width - len(group)))
    blocks = CascadeBlocks(reads=reads, first=reads.int().argmax(-1), start=start, end=end, leads=leads,
                           members=members)
    moved = [t.to(DEVICE) for t in (query, key, value, reads)]
    return (*moved, CascadeBlocks(**{k: v.to(DEVICE) for k, v in vars(blocks).items()}))


@pytest.mark.parametrize("heads,kv_heads,dim", [(4, 2, 16), (8, 2, 128), (14, 2, 64), (6, 6, 32)],
                         ids=["tiny", "llama-groups-of-4", "qwen-groups-of-7", "no-groups"])
@pytest.mark.parametrize("width", [128, 203])
def test_cascade_attention_equals_dense_attention_in_fp32(heads, kv_heads, dim, width):
    query, key, value, reads, blocks = case(heads, kv_heads, dim, width, torch.float32)
    got = cascade_decode_attention(query, key, value, blocks, dim ** -0.5)
    want = dense_attention(query, key, value, reads, dim ** -0.5)
    assert got.shape == (query.shape[0], 1, heads, dim) and got.dtype == torch.float32
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_cascade_attention_in_bf16_is_dense_attention_to_bf16_precision():
    query, key, value, reads, blocks = case(8, 2, 128, 203, torch.bfloat16, seed=1)
    got = cascade_decode_attention(query, key, value, blocks, 128 ** -0.5)
    want = dense_attention(query, key, value, reads, 128 ** -0.5)
    assert got.dtype == torch.bfloat16
    torch.testing.assert_close(got.float(), want, rtol=2e-2, atol=2e-2)


def test_a_member_reads_the_prefix_through_its_leader_only():
    """The prefix is read from the leader's keys: a member's own copy, changed, moves nothing; the leader's does."""
    query, key, value, reads, blocks = case(4, 2, 16, 128, torch.float32)
    base = cascade_decode_attention(query, key, value, blocks, 0.25)
    changed = key.clone()
    changed[2, :, 2:41] += 1.0  # row 2, a member of row 0's group
    torch.testing.assert_close(cascade_decode_attention(query, changed, value, blocks, 0.25), base)
    changed = key.clone()
    changed[0, :, 2:41] += 1.0  # the leader's copy
    moved = cascade_decode_attention(query, changed, value, blocks, 0.25)
    assert not torch.allclose(moved[2], base[2]) and not torch.allclose(moved[3], base[3])
    torch.testing.assert_close(moved[1], base[1])  # a row that shares nothing


def test_a_window_of_a_wider_buffer_is_read_through_its_strides():
    """The decoder's layers pass the first ``width`` columns of a wider buffer (a view, not a copy)."""
    query, key, value, reads, blocks = case(8, 2, 128, 128, torch.float32)
    wide_k = torch.zeros(key.shape[0], key.shape[1], 256, key.shape[3], device=DEVICE)
    wide_v = torch.zeros_like(wide_k)
    wide_k[:, :, :128], wide_v[:, :, :128] = key, value
    got = cascade_decode_attention(query, wide_k[:, :, :128], wide_v[:, :, :128], blocks, 128 ** -0.5)
    torch.testing.assert_close(got, dense_attention(query, key, value, reads, 128 ** -0.5), rtol=1e-5, atol=1e-5)


def test_every_split_count_gives_the_same_numbers(monkeypatch):
    query, key, value, reads, blocks = case(4, 2, 16, 203, torch.float32)
    want = dense_attention(query, key, value, reads, 0.25)
    for splits in (1, 3, 8):
        monkeypatch.setattr(cascade_decode, "SPLITS", splits)
        torch.testing.assert_close(cascade_decode_attention(query, key, value, blocks, 0.25), want,
                                   rtol=1e-5, atol=1e-5)


def test_the_attention_bench_times_the_cascade_kernels_against_dense_attention(monkeypatch):
    """``bench --attention cascade`` runs the kernels on the decoder's own inputs for the workload's shape, and at
    each launch setting of its sweep (the module's settings put back after)."""
    from argparse import Namespace

    from sumjudge.perf import attention_bench

    monkeypatch.setattr(attention_bench, "CASCADE_SWEEP", ((16, 4, 2), (64, 8, 1)))
    before = attention_bench.launch_settings()
    r = attention_bench.run(Namespace(shape="tiny", device=DEVICE, dtype="float32", docs=2, doc_tokens=200,
                                      max_new_tokens=16, repeats=1, attention="cascade,flex"))
    assert "cascade_error" not in r and r["cascade_us"] > 0
    assert r["cascade_max_abs_diff_vs_dense_fp32"] < 1e-5 and attention_bench.agrees(r)
    assert r["cascade_launch"] == before == attention_bench.launch_settings()
    assert sorted(r["cascade_sweep_us"]) == ["BLOCK_N=16 NUM_WARPS=4 SPLITS=2", "BLOCK_N=64 NUM_WARPS=8 SPLITS=1"]
    assert all(isinstance(t, float) for t in r["cascade_sweep_us"].values())
    assert r["cascade_sweep_max_abs_diff_vs_dense_fp32"] < 1e-5
