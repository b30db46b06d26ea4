"""Decode steps at fixed shapes (``decode_graphs``): on a CPU they run eagerly, and must answer as the decoder's own
steps do: rows padded to a power of two, columns read up to a bucket, the new column written at a tensor's place.
(Their capture as CUDA graphs is checked on a GPU: ``tests/gpu``.)"""

from __future__ import annotations

import pytest

from sumjudge.llm import decode_graphs, kv_cache
from sumjudge.llm.decode import DecodeRow
from sumjudge.llm.decode_graphs import column_bucket, row_bucket


def test_rows_are_padded_to_a_power_of_two_and_columns_to_a_bucket():
    assert [row_bucket(n) for n in (1, 2, 3, 4, 5, 33, 64)] == [1, 2, 4, 4, 8, 64, 64]
    b = decode_graphs.COLUMN_BUCKET
    assert column_bucket(0) == b and column_bucket(b - 1) == b and column_bucket(b) == 2 * b


def _prompts(be):
    texts = ("Short prompt.", "A longer prompt about the minutes of a council meeting, and who voted for what.",
             "Another prompt about a vote.", "Was the budget approved?", "Who chaired the meeting on Tuesday?")
    return [be.encode([{"role": "user", "content": t}]) for t in texts]


def _decode_with_admissions(decoder, rows: list[DecodeRow], join_at: int) -> dict[int, list[int]]:
    """The first three rows decoded together; the others admitted after ``join_at`` steps (continuous batching)."""
    live = decoder.start()
    decoder.admit(live, rows[:3], [0, 1, 2])
    out, steps = {}, 0
    while live.rows or steps <= join_at:
        if steps == join_at:
            decoder.admit(live, rows[3:], list(range(3, len(rows))))
        for tag, res in decoder.step(live):
            out[tag] = res.tokens
        steps += 1
    return out


@pytest.mark.parametrize("room", [1, 512])
def test_fixed_shape_steps_answer_as_the_decoders_own_steps(tiny_backend, monkeypatch, room):
    """Rows of different lengths leaving early, rows admitted while others decode, sampled rows, a long row across a
    column bucket; the buffer copied every step (room 1) or never (room 512)."""
    be = tiny_backend
    monkeypatch.setattr(kv_cache, "ROOM", room)
    monkeypatch.setattr(decode_graphs, "COLUMN_BUCKET", 16)
    ids = _prompts(be)
    rows = [DecodeRow(ids=i, max_new_tokens=n, temperature=t, seed=7, sample_index=j)
            for j, (i, n, t) in enumerate(zip(ids, (40, 5, 9, 12, 3), (0.0, 0.0, 0.8, 0.0, 0.7)))]
    monkeypatch.setattr(be.decoder, "fixed_steps", None)
    be.decoder.forget_prefixes()
    want = _decode_with_admissions(be.decoder, rows, join_at=2)
    assert be.decoder.use_fixed_steps(capture=False)
    be.decoder.forget_prefixes()
    got = _decode_with_admissions(be.decoder, rows, join_at=2)
    assert got == want and all(want.values()) and len(want[0]) == 40


def test_buffers_copied_into_larger_ones_drop_the_steps_built_over_them(tiny_backend, monkeypatch):
    be = tiny_backend
    monkeypatch.setattr(kv_cache, "ROOM", 1)
    monkeypatch.setattr(decode_graphs, "COLUMN_BUCKET", 8)
    monkeypatch.setattr(be.decoder, "fixed_steps", None)
    assert be.decoder.use_fixed_steps(capture=False)
    fixed = be.decoder.fixed_steps
    seen = []
    run = fixed.run

    def watched(*args):
        out = run(*args)
        seen.append((fixed.buffers, dict(fixed.steps)))
        return out

    monkeypatch.setattr(fixed, "run", watched)
    be.decoder.decode([DecodeRow(ids=_prompts(be)[0], max_new_tokens=20)])
    assert len({b for b, _ in seen}) >= 2  # a bucket of 8 more columns than the buffer has
    assert all(len(steps) == 1 for _, steps in seen)  # one row, one bucket: only the current buffers' step kept


def test_a_mask_that_does_not_fit_the_cache_is_refused(tiny_backend, monkeypatch):
    import torch

    be = tiny_backend
    monkeypatch.setattr(be.decoder, "fixed_steps", None)
    assert be.decoder.use_fixed_steps(capture=False)
    live = be.decoder.start()
    be.decoder.admit(live, [DecodeRow(ids=_prompts(be)[0], max_new_tokens=4)], [0])
    wrong = torch.ones((1, live.width() + 3), dtype=torch.long)
    with pytest.raises(ValueError, match="decode mask"), torch.inference_mode():
        be.decoder.fixed_steps.run(live.cache, torch.tensor([[1]]), wrong, live.last_pos[:, None])


def test_graphs_are_asked_for_only_on_a_cuda_device(tiny_backend):
    assert tiny_backend.decoder.fixed_steps is None  # on the CPU the decoder's own steps run
    assert not tiny_backend.decoder.use_fixed_steps(capture=True)


@pytest.mark.parametrize("block", [16, 128])
def test_flex_attention_steps_answer_as_the_decoders_own_steps(tiny_backend, monkeypatch, block):
    """The ``flex`` lever: each step's attention on a block mask made from the step's mask (blocks no column of which
    a row reads skipped, blocks read whole read unmasked) answers as the decoder's own steps (fp32, the tiny model)."""
    from sumjudge.llm import attention

    be = tiny_backend
    monkeypatch.setattr(attention, "KV_BLOCK", block)
    monkeypatch.setattr(decode_graphs, "COLUMN_BUCKET", block)
    ids = _prompts(be)
    rows = [DecodeRow(ids=i, max_new_tokens=n, temperature=t, seed=7, sample_index=j)
            for j, (i, n, t) in enumerate(zip(ids, (40, 5, 9, 12, 3), (0.0, 0.0, 0.8, 0.0, 0.7)))]
    monkeypatch.setattr(be.decoder, "fixed_steps", None)
    be.decoder.forget_prefixes()
    want = _decode_with_admissions(be.decoder, rows, join_at=2)
    calls = []
    flex = attention.flex_attention_fn
    monkeypatch.setattr(attention, "flex_attention_fn", lambda device: calls.append(device) or flex(device))
    assert be.decoder.use_fixed_steps(capture=False, flex=True)
    be.decoder.forget_prefixes()
    got = _decode_with_admissions(be.decoder, rows, join_at=2)
    assert got == want and all(want.values()) and len(want[0]) == 40
    layers = be.model.config.num_hidden_layers
    assert len(calls) == layers * be.decoder.stats["decode_steps"] or len(calls) >= 39 * layers


def test_a_decode_block_mask_skips_unread_blocks_and_reads_whole_ones_unmasked():
    import torch

    from sumjudge.llm.attention import decode_blocks

    mask = torch.zeros((2, 1, 1, 8), dtype=torch.bool)
    mask[0, 0, 0, 2:8] = True  # row 0: block 0 (columns 0-3) in part, block 1 whole
    mask[1, 0, 0, 0:4] = True  # row 1: block 0 whole, block 1 not at all
    mask[1, 0, 0, 7] = True  # ... and column 7 of block 1
    from sumjudge.llm import attention

    old, attention.KV_BLOCK = attention.KV_BLOCK, 4
    try:
        bm = decode_blocks(mask)
    finally:
        attention.KV_BLOCK = old
    assert bm.kv_num_blocks.flatten().tolist() == [1, 1] and bm.full_kv_num_blocks.flatten().tolist() == [1, 1]
    assert bm.kv_indices[:, 0, 0, 0].tolist() == [0, 1] and bm.full_kv_indices[:, 0, 0, 0].tolist() == [1, 0]
    with pytest.raises(ValueError, match="multiple of 4"):
        attention.KV_BLOCK = 4
        try:
            decode_blocks(mask[:, :, :, :6])
        finally:
            attention.KV_BLOCK = old
