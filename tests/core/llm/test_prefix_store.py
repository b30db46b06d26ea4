"""Earlier prompts' keys/values reused by later prompts that start alike (hf decoder's prefix store)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from sumjudge.llm.decode import DecodeRow  # noqa: E402
from sumjudge.llm.hf import HFBackend  # noqa: E402
from sumjudge.llm.prefix_store import BLOCK, PrefixStore, block_names  # noqa: E402

DOC = " ".join(f"Councilmember {i % 7} moved item {i} and the motion carried {i % 3} to one." for i in range(40))


def _states(tokens: int, fill: float):
    return torch.full((2, 2, 1, tokens, 3), fill)  # layers, keys/values, kv heads, tokens, head dim


def test_a_block_is_named_by_itself_and_every_token_before_it():
    a = list(range(3 * BLOCK))
    b = a[:BLOCK] + [7] * BLOCK + a[2 * BLOCK:]  # differs in block 1 only
    na, nb = block_names(a), block_names(b)
    assert len(na) == 3 and na[0] == nb[0] and na[1] != nb[1] and na[2] != nb[2]
    assert block_names(a + [1] * (BLOCK - 1)) == na  # a partial block has no name
    assert block_names(a, 2) == na[:2]


def test_lookup_returns_the_longest_held_run_of_leading_blocks_within_the_limit():
    store = PrefixStore(1 << 30)
    ids = list(range(4 * BLOCK))
    names, held = store.missing(ids)
    assert held == 0
    store.add(names, 0, torch.arange(4 * BLOCK, dtype=torch.float32).expand(2, 2, 1, 3, -1).transpose(3, 4))
    assert store.missing(ids) == (names, 4)
    n, st = store.lookup(ids + [5, 6], limit=len(ids) + 1)
    assert n == 4 * BLOCK and st.shape == (2, 2, 1, 4 * BLOCK, 3)
    assert torch.equal(st[0, 0, 0, :, 0], torch.arange(4 * BLOCK, dtype=torch.float32))  # tokens in order
    assert store.lookup(ids, limit=len(ids) - 1)[0] == 3 * BLOCK  # at least one token left to compute
    other = ids[:BLOCK] + [9] * (3 * BLOCK)
    assert store.lookup(other, limit=len(other))[0] == BLOCK  # shares the first block only
    assert store.lookup([9] * (4 * BLOCK), limit=4 * BLOCK) == (0, None)


def test_least_recently_used_blocks_go_first_and_a_prefix_loses_its_tail_first():
    one = _states(BLOCK, 1.0)
    size = one.numel() * one.element_size()
    store = PrefixStore(3 * size)
    a = list(range(2 * BLOCK))
    b = [5000 + t for t in range(2 * BLOCK)]
    store.add(block_names(a), 0, _states(2 * BLOCK, 1.0))
    store.add(block_names(b), 0, _states(2 * BLOCK, 2.0))  # 4 blocks > 3: a's second block goes
    assert store.held <= 3 * size and len(store) == 3
    assert store.lookup(a, limit=len(a))[0] == BLOCK
    assert store.lookup(b, limit=len(b))[0] == 2 * BLOCK
    store.add(block_names(b), 2, _states(0, 0.0))  # nothing new: the store is unchanged
    assert len(store) == 3


@pytest.fixture(scope="module")
def backends(tiny_model_dir):
    return HFBackend(str(tiny_model_dir)), HFBackend(str(tiny_model_dir), prefix_store_mb=0)


def test_a_later_prompt_starts_from_the_stored_prefix_and_decodes_what_it_decodes_without(backends):
    with_store, without = backends
    assert with_store.decoder.store is not None and without.decoder.store is None
    first = with_store.encode([{"role": "user", "content": f"{DOC}\n\nAgent A: is the summary faithful?"}])
    later = [with_store.encode([{"role": "user", "content": f"{DOC}\n\nAgent {a}: argue the other side."}])
             for a in "BC"] + [first]  # a new round over the same document, and the first prompt asked again
    rows = [DecodeRow(ids=ids, max_new_tokens=12) for ids in later]
    with_store.decoder.decode([DecodeRow(ids=first, max_new_tokens=12)])
    before = with_store.decoder.stats["stored_prefix_tokens_reused"]
    computed = with_store.decoder.stats["prefill_tokens"]
    got = [r.tokens for r in with_store.decoder.decode(rows)]
    reused = with_store.decoder.stats["stored_prefix_tokens_reused"] - before
    shared = next(i for i, (x, y) in enumerate(zip(first, later[0])) if x != y)
    assert reused >= (shared // BLOCK) * BLOCK  # the document came from the store
    assert with_store.decoder.stats["prefill_tokens"] - computed < sum(map(len, later)) - reused + 1
    assert got == [r.tokens for r in without.decoder.decode(rows)]
    assert all(got)


def test_rows_with_stored_prefixes_of_different_lengths_decode_together(backends):
    with_store, without = backends
    prompts = [f"{DOC[:n]} Question {q}?" for n, q in ((900, 1), (400, 2), (1500, 3))]
    ids = [with_store.encode([{"role": "user", "content": p}]) for p in prompts]
    with_store.decoder.decode([DecodeRow(ids=i, max_new_tokens=4) for i in ids])  # store them
    again = [DecodeRow(ids=i + with_store.encode([{"role": "user", "content": "Once more."}])[1:], max_new_tokens=10)
             for i in ids] + [DecodeRow(ids=without.encode([{"role": "user", "content": "Unrelated."}]),
                                        max_new_tokens=10)]
    before = with_store.decoder.stats["stored_prefix_tokens_reused"]
    got = [r.tokens for r in with_store.decoder.decode(again)]
    assert with_store.decoder.stats["stored_prefix_tokens_reused"] > before
    assert got == [r.tokens for r in without.decoder.decode(again)]


def test_the_backend_reports_how_full_its_store_is_and_what_it_dropped(tiny_model_dir):
    backend = HFBackend(str(tiny_model_dir))
    ids = backend.encode([{"role": "user", "content": f"{DOC}\n\nIs the summary faithful?"}])
    backend.decoder.decode([DecodeRow(ids=ids, max_new_tokens=2)])
    stats = backend.decode_stats()
    assert stats["prefix_store_tokens_held"] == (len(ids) // BLOCK) * BLOCK > 0
    assert stats["prefix_store_tokens_evicted"] == 0
    backend.decoder.store.capacity = 1  # smaller than a block: the next prompt's blocks push every block out
    other = backend.encode([{"role": "user", "content": f"{DOC[::-1]}\n\nAnother question."}])
    backend.decoder.decode([DecodeRow(ids=other, max_new_tokens=2)])
    stats = backend.decode_stats()
    assert stats["prefix_store_tokens_held"] == 0 and stats["prefix_store_tokens_evicted"] >= (len(ids) // BLOCK) * BLOCK
    assert HFBackend(str(tiny_model_dir), prefix_store_mb=0).decode_stats().keys().isdisjoint(
        {"prefix_store_tokens_held", "prefix_store_tokens_evicted"})
