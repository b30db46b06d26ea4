"""The decoder's in-place key/value cache holds what transformers' concatenating cache holds, step for step."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from transformers.cache_utils import DynamicLayer  # noqa: E402

from sumjudge.llm import kv_cache  # noqa: E402
from sumjudge.llm.kv_cache import GrowingLayer  # noqa: E402


def _states(rows: int, cols: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(rows, 2, cols, 4, generator=g), torch.randn(rows, 2, cols, 4, generator=g)


def _same(a, b) -> None:
    assert a.keys.shape == b.keys.shape and torch.equal(a.keys, b.keys) and torch.equal(a.values, b.values)


@pytest.mark.parametrize("room", [1, 3, 128])
def test_updates_selects_and_dropped_columns_match_the_concatenating_layer(room):
    grow, plain = GrowingLayer(room), DynamicLayer()
    for layer in (grow, plain):
        layer.update(*_states(4, 7, 0))
    _same(grow, plain)
    for step in range(6):  # decode steps: one column each, past the room (a new buffer) for room < 6
        k, v = _states(4, 1, 10 + step)
        out_g, out_p = grow.update(k, v), plain.update(k, v)
        assert torch.equal(out_g[0], out_p[0]) and torch.equal(out_g[1], out_p[1])
    keep = torch.tensor([0, 2, 3])
    grow.batch_select_indices(keep)
    plain.batch_select_indices(keep)
    _same(grow, plain)
    grow.drop_front(2)
    plain.keys, plain.values = plain.keys[:, :, 2:], plain.values[:, :, 2:]
    _same(grow, plain)
    for step in range(5):
        k, v = _states(3, 1, 20 + step)
        grow.update(k, v)
        plain.update(k, v)
        _same(grow, plain)
    assert grow.get_seq_length() == plain.get_seq_length() == 7 + 6 - 2 + 5


def _widened(states, width: int):
    b, h, n, d = states.shape
    return torch.cat([states.new_zeros((b, h, width - n, d)), states], dim=2)


@pytest.mark.parametrize("room", [1, 128])
def test_rows_added_and_rows_leaving_by_swap_match_concatenation_and_indexing(room):
    """What the decoder does in place (new rows right-aligned into the buffer, wider or narrower than the held ones;
    finished rows replaced by the last rows) holds what concatenating and indexing transformers' layer holds."""
    grow, plain = GrowingLayer(room), DynamicLayer()
    for layer in (grow, plain):
        layer.update(*_states(3, 6, 0))
    for step, (rows, width) in enumerate([(2, 4), (3, 9), (1, 9), (6, 2)]):  # narrower, wider, as wide, many
        k, v = _states(rows, width, 30 + step)
        grow.add_rows(k, v)
        w = max(width, plain.keys.shape[2])
        plain.keys = torch.cat([_widened(plain.keys, w), _widened(k, w)])
        plain.values = torch.cat([_widened(plain.values, w), _widened(v, w)])
        _same(grow, plain)
        k, v = _states(plain.keys.shape[0], 1, 40 + step)
        grow.update(k, v)
        plain.update(k, v)
        _same(grow, plain)
        total = plain.keys.shape[0]
        order = kv_cache.swap_order([i for i in range(total) if i % 3 != 1], total)
        grow.batch_select_indices(torch.tensor(order))
        plain.batch_select_indices(torch.tensor(order))
        _same(grow, plain)
    grow.batch_select_indices(torch.tensor([1, 0]))  # any other order: gathered
    plain.batch_select_indices(torch.tensor([1, 0]))
    _same(grow, plain)
    for layer in (grow, plain):  # rows repeated beyond the buffer's rows
        layer.batch_repeat_interleave(8)
    _same(grow, plain)


def test_swap_order_moves_the_last_kept_rows_into_the_places_of_the_rows_that_left():
    assert kv_cache.swap_order([0, 2, 3, 5], 6) == [0, 5, 2, 3]
    assert kv_cache.swap_order([0, 1, 2], 5) == [0, 1, 2]
    assert kv_cache.swap_order([4], 5) == [4]


def test_a_decode_step_writes_in_place_until_the_room_is_used():
    layer = GrowingLayer(room=4)
    layer.update(*_states(2, 5, 0))
    buffer = layer._k
    for step in range(4):
        layer.update(*_states(2, 1, step))
        assert layer._k is buffer  # written into the room, nothing copied
    layer.update(*_states(2, 1, 9))
    assert layer._k is not buffer and layer.get_seq_length() == 10


def test_new_cache_uses_growing_layers_for_full_attention(tiny_model_dir):
    from transformers import AutoConfig

    cache = kv_cache.new_cache(AutoConfig.from_pretrained(tiny_model_dir))
    assert cache.layers and all(isinstance(layer, GrowingLayer) for layer in cache.layers)


def test_decoding_with_a_new_buffer_every_step_gives_the_same_answers(tiny_backend, monkeypatch):
    """Batched greedy decoding (rows of different lengths, rows leaving early) is unchanged when every step has to
    copy the cache into a new buffer (room 1) and when it never has to (room 512)."""
    from sumjudge.llm.decode import DecodeRow

    be = tiny_backend
    ids = [be.encode([{"role": "user", "content": t}]) for t in
           ("Short prompt.", "A longer prompt about the minutes of a council meeting, and who voted for what.",
            "Another prompt about a vote.")]
    rows = [DecodeRow(ids=i, max_new_tokens=n) for i, n in zip(ids, (14, 5, 9))]
    answers = []
    for room in (1, 512):
        monkeypatch.setattr(kv_cache, "ROOM", room)
        answers.append([r.tokens for r in be.decoder.decode(rows)])
    assert answers[0] == answers[1] and all(answers[0])
