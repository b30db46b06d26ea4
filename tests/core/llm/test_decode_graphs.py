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


def _mixed_rows(be) -> list[DecodeRow]:
    return [DecodeRow(ids=i, max_new_tokens=n, temperature=t, seed=7, sample_index=j)
            for j, (i, n, t) in enumerate(zip(_prompts(be), (40, 5, 9, 12, 3), (0.0, 0.0, 0.8, 0.0, 0.7)))]


def _own_steps_then_fixed(be, monkeypatch, **lever) -> tuple[dict, dict]:
    """The mixed rows (``_decode_with_admissions``: lengths, early leavers, sampled rows, admissions) decoded by the
    decoder's own steps, then at fixed shapes (eagerly) with ``lever``: (own answers, fixed-shape answers)."""
    rows = _mixed_rows(be)
    monkeypatch.setattr(be.decoder, "fixed_steps", None)
    be.decoder.forget_prefixes()
    want = _decode_with_admissions(be.decoder, rows, join_at=2)
    assert be.decoder.use_fixed_steps(capture=False, **lever)
    be.decoder.forget_prefixes()
    return want, _decode_with_admissions(be.decoder, rows, join_at=2)


@pytest.mark.parametrize("room", [1, 512])
def test_fixed_shape_steps_answer_as_the_decoders_own_steps(tiny_backend, monkeypatch, room):
    """Rows of different lengths leaving early, rows admitted while others decode, sampled rows, a long row across a
    column bucket; the buffer copied every step (room 1) or never (room 512)."""
    monkeypatch.setattr(kv_cache, "ROOM", room)
    monkeypatch.setattr(decode_graphs, "COLUMN_BUCKET", 16)
    want, got = _own_steps_then_fixed(tiny_backend, monkeypatch)
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
    from sumjudge.llm import flex_decode

    monkeypatch.setattr(flex_decode, "KV_BLOCK", block)
    monkeypatch.setattr(decode_graphs, "COLUMN_BUCKET", block)
    calls = []
    flex = flex_decode.flex_attention_fn
    monkeypatch.setattr(flex_decode, "flex_attention_fn", lambda device: calls.append(device) or flex(device))
    want, got = _own_steps_then_fixed(tiny_backend, monkeypatch, flex=True)
    assert got == want and all(want.values()) and len(want[0]) == 40
    layers = tiny_backend.model.config.num_hidden_layers
    assert len(calls) >= 39 * layers and len(calls) % layers == 0  # every layer of every step after the first


def test_a_decode_block_mask_skips_unread_blocks_and_reads_whole_ones_unmasked(monkeypatch):
    import torch

    from sumjudge.llm import flex_decode

    mask = torch.zeros((2, 1, 1, 8), dtype=torch.bool)
    mask[0, 0, 0, 2:8] = True  # row 0: block 0 (columns 0-3) in part, block 1 whole
    mask[1, 0, 0, 0:4] = True  # row 1: block 0 whole, block 1 not at all
    mask[1, 0, 0, 7] = True  # ... and column 7 of block 1
    monkeypatch.setattr(flex_decode, "KV_BLOCK", 4)
    bm = flex_decode.decode_blocks(mask)
    assert bm.kv_num_blocks.flatten().tolist() == [1, 1] and bm.full_kv_num_blocks.flatten().tolist() == [1, 1]
    assert bm.kv_indices[:, 0, 0, 0].tolist() == [0, 1] and bm.full_kv_indices[:, 0, 0, 0].tolist() == [1, 0]
    with pytest.raises(ValueError, match="multiple of 4"):
        flex_decode.decode_blocks(mask[:, :, :, :6])


def test_compiled_flex_attention_reads_the_blocks_its_tables_list_and_no_others():
    """The block tables are what a compiled kernel reads (PyTorch's reference applies the mask densely): a block the
    table leaves out changes the answer, the table as made gives the masked attention's."""
    import torch
    from torch.nn.attention.flex_attention import BlockMask

    from sumjudge.llm import flex_decode

    g = torch.Generator().manual_seed(0)
    q, k, v = torch.randn(2, 4, 1, 16, generator=g), torch.randn(2, 2, 256, 16, generator=g), torch.randn(2, 2, 256, 16, generator=g)
    mask = torch.zeros((2, 1, 1, 256), dtype=torch.bool)
    mask[0, 0, 0, 100:] = True
    mask[1, 0, 0, :] = True
    want = torch.nn.functional.scaled_dot_product_attention(q.reshape(2, 2, 2, 16), k, v, attn_mask=mask)
    compiled = torch.compile(torch.nn.attention.flex_attention.flex_attention, dynamic=False)
    bm = flex_decode.decode_blocks(mask)
    got = compiled(q, k, v, block_mask=bm, enable_gqa=True).reshape(2, 2, 2, 16)
    assert torch.allclose(got, want, atol=1e-5)
    no_partial = BlockMask.from_kv_blocks(bm.kv_num_blocks * 0, bm.kv_indices, bm.full_kv_num_blocks, bm.full_kv_indices,
                                          BLOCK_SIZE=128, mask_mod=bm.mask_mod, seq_lengths=(1, 256),
                                          compute_q_blocks=False)
    assert not torch.allclose(compiled(q, k, v, block_mask=no_partial, enable_gqa=True).reshape(2, 2, 2, 16), want,
                              atol=1e-3)


def test_rows_of_a_prefix_group_read_it_through_their_first_live_row():
    from sumjudge.llm.flex_decode import plan_sharing

    spans = [("a", 3, 40), (None, 0, 0), ("a", 3, 40), ("b", 10, 50), ("a", 3, 40), ("c", 5, 20)]
    plan = plan_sharing(spans)
    assert plan.leads == [True, True, False, True, False, True]
    assert plan.members == [[0, 2, 4], [1], [2], [3], [4], [5]]
    assert plan.place == [(0, 0), (1, 0), (0, 1), (3, 0), (0, 2), (5, 0)]
    # b and c have one live row each: they read their prefix as their own columns
    assert plan.start == [3, 0, 3, 0, 3, 0] and plan.end == [40, 0, 40, 0, 40, 0]
    assert plan.width() == 3 and plan.slot(4) == [0, 4, 1, 12, 2, 20]


def _shared_prompts(be, docs: int = 3, agents: int = 3):
    body = " ".join(f"Speaker {j % 3}: item {j} was discussed and the council voted." for j in range(40))
    return [be.encode([{"role": "user", "content": f"Document {d}. {body}\n\nYou are agent {a}."}])
            for d in range(docs) for a in range(agents)]


def shared_groups_own_steps_then_lever(be, monkeypatch, attention_fn: str, **lever) -> tuple[dict, dict, list]:
    """3 documents x 3 agents sharing each document's prefix, rows leaving early (a group's first row too: the next
    one reads the prefix for the group), 3 more rows admitted while the others decode: decoded greedily by the
    decoder's own steps, then at fixed shapes (eagerly) with ``lever``. Returns (own answers, the lever's, the
    attention inputs the lever's steps passed to ``attention.<attention_fn>``). Also run by ``make test-kernels``
    for the ``cascade`` lever (``tests_live/kernels``)."""
    from sumjudge.llm import attention

    lengths = (4, 30, 12, 25, 6, 18, 9, 30, 3)
    rows = [DecodeRow(ids=i, max_new_tokens=n) for i, n in zip(_shared_prompts(be), lengths)]

    def decode():
        be.decoder.forget_prefixes()
        live = be.decoder.start()
        be.decoder.admit(live, rows[:6], list(range(6)))
        assert sum(key is not None for key, _, _ in live.spans) == 6  # two groups of three
        out, steps = {}, 0
        while live.rows or steps <= 2:
            if steps == 2:
                be.decoder.admit(live, rows[6:], list(range(6, 9)))
            for tag, res in be.decoder.step(live):
                out[tag] = res.tokens
            steps += 1
        return out

    monkeypatch.setattr(be.decoder, "fixed_steps", None)
    want = decode()
    seen: list = []
    original = getattr(attention, attention_fn)
    monkeypatch.setattr(attention, attention_fn,
                        lambda q, k, v, blocks, *a: seen.append(blocks) or original(q, k, v, blocks, *a))
    assert be.decoder.use_fixed_steps(capture=False, **lever)
    got = decode()
    assert [len(want[t]) for t in range(9)] == list(lengths)
    return want, got, seen


@pytest.mark.parametrize("block", [16, 128])
def test_shared_prefix_steps_answer_as_the_decoders_own_steps(tiny_backend, monkeypatch, block):
    """The ``shared_prefix`` lever (``shared_groups_own_steps_then_lever``): each group's prefix read once a step,
    the rest row by row, joined by log-sum-exp. Greedy rows: the softmax summed in two parts moves fp32 logits by a
    few units in the last place (about 1e-5 at 18 here), which the tiny model's peaked logits never turn into another
    arg-max; a sampled draw could land on the other side of a boundary, so none is compared here."""
    from sumjudge.llm import flex_decode

    monkeypatch.setattr(flex_decode, "KV_BLOCK", block)
    monkeypatch.setattr(decode_graphs, "COLUMN_BUCKET", block)
    want, got, seen = shared_groups_own_steps_then_lever(tiny_backend, monkeypatch, "flex_decode_attention",
                                                         shared_prefix=True)
    assert got == want
    assert seen and all(isinstance(b, flex_decode.SharedPrefixBlocks) for b in seen)
    assert max(int(b.prefix.kv_num_blocks.sum() + b.prefix.full_kv_num_blocks.sum()) for b in seen) > 0


def test_compiling_flex_attention_for_a_gpu_lets_it_keep_a_kernel_per_step_shape(monkeypatch):
    """torch.compile keeps 8 versions of a function and then runs it uncompiled (unfused, and not capturable in a CUDA
    graph): the flex kernel is allowed one version per step shape, ``FLEX_SHAPES``. (Compiling needs no GPU.)"""
    import torch
    import torch._dynamo

    from sumjudge.llm import flex_decode

    config = torch._dynamo.config
    monkeypatch.setattr(config, "recompile_limit", 8)
    monkeypatch.setattr(config, "accumulated_recompile_limit", 256)
    monkeypatch.setattr(flex_decode, "_compiled", {})
    assert flex_decode.flex_attention_fn("cpu") is torch.nn.attention.flex_attention.flex_attention
    assert config.recompile_limit == 8
    fn = flex_decode.flex_attention_fn(torch.device("cuda", 0))
    assert fn is flex_decode.flex_attention_fn("cuda:0")  # compiled once per process
    assert config.recompile_limit == flex_decode.FLEX_SHAPES and config.accumulated_recompile_limit >= 4 * 256


def test_the_cascade_lever_is_refused_where_its_kernels_cannot_run(tiny_backend, monkeypatch):
    """The ``cascade`` lever's Triton kernels run on a CUDA device, or on a CPU under Triton's interpreter only
    (``make test-kernels``): elsewhere switching it on is refused by name and the decoder's steps stay as they were."""
    from sumjudge.errors import ConfigError

    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    before = tiny_backend.decoder.fixed_steps
    with pytest.raises(ConfigError, match="the cascade decode lever"):
        tiny_backend.decoder.use_fixed_steps(capture=False, cascade=True)
    assert tiny_backend.decoder.fixed_steps is before


def counting_compile(monkeypatch):
    """``torch.compile`` through a backend that runs each traced graph as it is (no number changes; the CPU's
    compiler does not take the engine's oneDNN linear layers), for the ``fused`` lever's pieces (``fused_parts``'
    compiled functions emptied first). Returns the graphs compiled, counted by the function compiled. Also used by
    ``make test-kernels`` (``tests_live/kernels``)."""
    from collections import Counter

    import torch

    from sumjudge.llm import fused_parts

    graphs: Counter = Counter()
    real = torch.compile

    def compile_counted(fn, **kw):
        def backend(gm, example_inputs):
            graphs[fn.__qualname__] += 1
            return gm.forward

        return real(fn, backend=backend, **kw)  # the lever's settings (fixed shapes) kept

    monkeypatch.setattr(fused_parts, "_compiled", {})
    monkeypatch.setattr(torch, "compile", compile_counted)
    return graphs


def test_fused_steps_answer_as_the_decoders_own_steps_with_one_compiled_function_a_piece(tiny_backend, monkeypatch):
    """The ``fused`` lever (``fused_parts``): the tiny Llama's 5 norms, 2 MLPs and rotary embedding each compiled
    (through a backend that runs each traced graph as it is, which changes no number: the CPU's compiler does not
    take the engine's oneDNN linear layers), each piece's function compiled once per step shape whichever layer
    calls it (the layer is an argument, not a new version), swapped in for the fixed-shape steps only and put back
    after; the answers are the decoder's own steps'."""
    from sumjudge.llm import fused_parts

    graphs = counting_compile(monkeypatch)
    model = tiny_backend.decoder.model
    assert fused_parts.counts(fused_parts.pieces(model)) == {"norms": 5, "mlps": 2, "rotary": 1, "rotary_attrs": 2}
    want, got = _own_steps_then_fixed(tiny_backend, monkeypatch, fused=True)
    assert got == want and all(want.values())
    assert tiny_backend.decoder.fixed_steps.stats["fused_pieces"] == fused_parts.counts(fused_parts.pieces(model))
    assert sorted(graphs) == ["LlamaMLP.forward", "LlamaRMSNorm.forward", "apply_rotary_pos_emb"]
    # one graph a step shape for each piece: 5 norms and 2 MLPs a step would compile 5 and 2 graphs a shape if each
    # layer's module were a version of its own
    assert len(set(graphs.values())) == 1 and graphs["LlamaRMSNorm.forward"] >= 2
    norm = next(m for m in model.modules() if type(m).__name__ == "LlamaRMSNorm")
    assert "forward" not in vars(norm)  # put back: the class's own forward again
    home = __import__(type(norm).__module__, fromlist=["apply_rotary_pos_emb"])
    assert home.apply_rotary_pos_emb not in fused_parts._compiled.values()


def _storage(tensor) -> int:
    return tensor.untyped_storage().data_ptr()


@pytest.fixture(scope="module")
def merged_backend(tmp_path_factory):
    """A tiny model of its own: the ``merged`` lever makes its projections' weights views of merged ones."""
    from sumjudge.llm.hf import HFBackend
    from sumjudge.llm.models import build_tiny_model

    return HFBackend(str(build_tiny_model(tmp_path_factory.mktemp("models") / "tiny-llama3", seed=0)))


def test_merged_steps_answer_as_the_decoders_own_steps_with_one_product_a_layer_for_qkv_and_gate_up(merged_backend,
                                                                                                  monkeypatch):
    """The ``merged`` lever (``merged_projections``): each layer's q/k/v weights and gate/up weights one tensor each,
    the projections' own weights views of it (no memory added); in the steps one product for q/k/v (the key and value
    projections handed their parts, never computing their own) and one for gate/up; the answers are the decoder's
    own steps'; the projections' forwards put back after (the oneDNN path ``cpu_linear`` gave them)."""
    be = merged_backend
    model = be.decoder.model
    q = next(m for m in model.modules() if hasattr(m, "q_proj")).q_proj
    before = vars(q).get("forward")
    want, got = _own_steps_then_fixed(be, monkeypatch, merged=True)
    assert got == want and all(want.values())
    found = be.decoder._merged
    assert be.decoder.fixed_steps.stats["merged_parts"] == {"attention": 2, "mlps": 2, "mlps_left": 0}
    calls = be.decoder.fixed_steps.stats["merged_calls"]
    assert calls is found.calls and calls["qkv"] > 0 and calls["mlp"] > 0 and calls["kv_own"] == 0
    for attn in found.attention:
        lins = (attn.module.q_proj, attn.module.k_proj, attn.module.v_proj)
        assert lins[0].weight.data_ptr() == attn.product.weight.data_ptr()
        assert all(_storage(lin.weight) == _storage(attn.product.weight) for lin in lins)
        assert not any("_sumjudge_pending" in vars(lin) for lin in lins)  # nothing handed on left behind
    for mlp in found.mlps:
        assert _storage(mlp.module.up_proj.weight) == _storage(mlp.product.weight) and "forward" not in vars(mlp.module)
    assert vars(q).get("forward") is before
    from sumjudge.llm.merged_projections import merge

    assert merge(model) is found  # once a model


def test_merged_and_fused_together_compile_the_merged_mlp_once_for_every_layer(merged_backend, monkeypatch):
    """``merged`` with ``fused``: the merged MLP forward is what is compiled (one function, every layer), the MLPs'
    own forwards are not; the answers are the decoder's own steps'."""
    graphs = counting_compile(monkeypatch)
    want, got = _own_steps_then_fixed(merged_backend, monkeypatch, merged=True, fused=True)
    assert got == want
    assert sorted(graphs) == ["LlamaRMSNorm.forward", "apply_rotary_pos_emb", "merged_mlp"]
    assert len(set(graphs.values())) == 1
    assert merged_backend.decoder.fixed_steps.stats["fused_pieces"]["mlps"] == 0
    with pytest.raises(Exception, match="does not combine with compiled"):
        merged_backend.decoder.use_fixed_steps(capture=False, merged=True, compiled=True)


def test_an_mlp_of_another_form_is_left_as_it_is_and_projections_called_out_of_order_compute_their_own():
    """``merge`` keeps only MLPs whose merged forward gives their own numbers on a probe (here gate and up swapped in
    the product), and a key projection called before the query's computes its own product."""
    import torch

    from sumjudge.llm.merged_projections import merge, merged_parts

    class SwappedMLP(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.gate_proj, self.up_proj, self.down_proj = (torch.nn.Linear(8, 16), torch.nn.Linear(8, 16),
                                                            torch.nn.Linear(16, 8))
            self.act_fn = torch.nn.SiLU()

        def forward(self, x):
            return self.down_proj(self.act_fn(self.up_proj(x)) * self.gate_proj(x))

    class Attention(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.q_proj, self.k_proj, self.v_proj = (torch.nn.Linear(8, 8), torch.nn.Linear(8, 4),
                                                     torch.nn.Linear(8, 4))

        def forward(self, x):
            k = self.k_proj(x)
            return torch.cat([self.q_proj(x), k, self.v_proj(x)], -1)

    torch.manual_seed(0)
    model = torch.nn.Sequential(SwappedMLP(), Attention())
    x = torch.randn(3, 8)
    with torch.inference_mode():
        own = model[1](x)
    found = merge(model)
    assert found.counts() == {"attention": 1, "mlps": 0, "mlps_left": 1}
    assert _storage(model[0].gate_proj.weight) != _storage(model[0].up_proj.weight)  # not merged: its own weights
    with torch.inference_mode(), merged_parts(found):
        got = model[1](x)
    assert torch.allclose(got, own, atol=1e-6)
    assert found.calls == {"qkv": 1, "kv_own": 1, "mlp": 0}  # k computed its own; v took its part


def test_steps_built_before_a_merge_moved_the_weights_are_built_again(tiny_backend, monkeypatch):
    """A CUDA graph reads the weights where they were when it was captured: once a merge has moved weights
    (``merged_projections.weights_moved``), the fixed-shape steps drop what they built and build it again."""
    from sumjudge.llm import merged_projections

    monkeypatch.setattr(decode_graphs, "COLUMN_BUCKET", 16)
    want, got = _own_steps_then_fixed(tiny_backend, monkeypatch)
    fixed = tiny_backend.decoder.fixed_steps
    assert got == want and fixed.buffers[0] == merged_projections.weights_moved()
    cleared: list = []
    clear = decode_graphs.FixedShapeSteps.clear
    monkeypatch.setattr(decode_graphs.FixedShapeSteps, "clear", lambda self: cleared.append(self) or clear(self))
    run = fixed.run

    def decode(move_at: int | None) -> int:
        """The rows decoded again, the weights moved before step ``move_at``: how many times the steps were
        dropped."""
        steps = [0]

        def counted_run(*a, **kw):
            steps[0] += 1
            if steps[0] == move_at:
                merged_projections._moves[0] += 1
            return run(*a, **kw)

        monkeypatch.setattr(fixed, "run", counted_run)
        del cleared[:]
        tiny_backend.decoder.forget_prefixes()
        assert _decode_with_admissions(tiny_backend.decoder, _mixed_rows(tiny_backend), join_at=2) == want
        return len(cleared)

    monkeypatch.setattr(merged_projections, "_moves", [0])
    assert decode(move_at=8) == decode(move_at=None) + 1  # between two steps whose buffers are the same
    assert fixed.buffers[0] == merged_projections.weights_moved() == 1
