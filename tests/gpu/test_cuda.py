"""On a CUDA GPU only (skipped where torch sees none; `make gpu-check` runs them on a GPU machine): the engine,
option scoring and ``device_map="auto"`` on the GPU give what they give on the CPU.

The tiny random Llama-3 model in fp32 on both devices: its logits are peaked (``build_tiny_model``), so greedy
answers are the same text on both and option log-probabilities differ only by the devices' rounding."""

from __future__ import annotations

import asyncio
from argparse import Namespace

import pytest
import torch

from sumjudge.llm import LLM, OptionRequest
from sumjudge.llm.hf import HFBackend
from sumjudge.perf import bench

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")]


@pytest.fixture(scope="module")
def cpu_backend(tiny_model_dir):
    return HFBackend(str(tiny_model_dir), device="cpu", dtype="float32")


@pytest.fixture(scope="module")
def gpu_backend(tiny_model_dir):
    return HFBackend(str(tiny_model_dir), device="cuda", dtype="float32")


def _requests(tokenizer, max_new_tokens: int = 16):
    return bench.build_requests(bench.tokenizer_cut(tokenizer), 2, 200, max_new_tokens)


def test_device_map_auto_loads_and_generates_on_the_gpu(tiny_model_dir, cpu_backend):
    be = HFBackend(str(tiny_model_dir), device_map="auto", dtype="float32")
    assert be.device.type == "cuda" and be.info.extra["device_map"] == "auto"
    assert {p.device.type for p in be.model.parameters()} == {"cuda"}
    reqs = _requests(be.tokenizer)
    got = asyncio.run(LLM(be).chat_many(reqs))
    want = asyncio.run(LLM(cpu_backend).chat_many(reqs))
    assert all(r.completion_tokens > 0 for r in got)
    assert [r.text for r in got] == [r.text for r in want]


def test_option_scores_on_the_gpu_equal_the_cpu_in_fp32(cpu_backend, gpu_backend):
    reqs = [OptionRequest(messages=r.messages, options=bench.GEVAL_OPTIONS, tag=r.tag)
            for r in _requests(cpu_backend.tokenizer)]
    reqs += [OptionRequest(messages=r.messages, options=("Yes", "No"), prefix="Answer: ", tag=r.tag + "/yn")
             for r in _requests(cpu_backend.tokenizer)]
    cpu, gpu = cpu_backend.score_sync(reqs), gpu_backend.score_sync(reqs)
    assert not any(isinstance(s, Exception) for s in cpu + gpu)
    for c, g in zip(cpu, gpu):
        assert c.best() == g.best()
        assert max(abs(c.logprobs[o] - g.logprobs[o]) for o in c.logprobs) < 1e-3
    assert max(abs(c.expectation() - g.expectation()) for c, g in zip(cpu, gpu) if "5" in c.probs) < 1e-3


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_engine_on_the_gpu_answers_as_one_generate_per_request(tiny_model_dir, monkeypatch, dtype):
    monkeypatch.setenv("SUMJUDGE_MODELS", str(tiny_model_dir.parent))
    r = bench.run(Namespace(shape="tiny", device="cuda", dtype=dtype, docs=4, doc_tokens=300, max_new_tokens=24,
                            token_budget=65536, repeats=1, tie_ulps=2.0, batched_generate=True, option_sets=8))
    assert r["device"].startswith("cuda") and r["requests"] == 16
    assert r["engine_rerun_consistent"] and bench.passed(r)
    if dtype == "float32":
        assert r["identical_outputs"] and r["batched_generate_identical_to_sequential"] == 16
    assert r["option_sets"] == 8 and r["option_sets_per_s"] > 0


def _graph_rows(be):
    from sumjudge.llm.decode import DecodeRow

    texts = ("Short prompt.", "A longer prompt about the minutes of a council meeting, and who voted for what.",
             "Another prompt about a vote.", "Was the budget approved?", "Who chaired the meeting on Tuesday?")
    ids = [be.encode([{"role": "user", "content": t}]) for t in texts]
    return [DecodeRow(ids=i, max_new_tokens=n, temperature=t, seed=7, sample_index=j)
            for j, (i, n, t) in enumerate(zip(ids, (150, 5, 9, 12, 3), (0.0, 0.0, 0.8, 0.0, 0.0)))]


def _decode_with_admissions(dec, rows):
    dec.forget_prefixes()
    live = dec.start()
    dec.admit(live, rows[:3], [0, 1, 2])
    out, steps = {}, 0
    while live.rows or steps <= 2:
        if steps == 2:
            dec.admit(live, rows[3:], [3, 4])
        for tag, res in dec.step(live):
            out[tag] = res.tokens
        steps += 1
    return out


def test_decode_steps_replayed_as_cuda_graphs_answer_as_eager_steps_in_fp32(gpu_backend):
    """Rows of different lengths leaving early, rows admitted while others decode, a sampled row: the decoder's own
    eager steps and its steps replayed as CUDA graphs give the same tokens, and graphs were captured and replayed."""
    dec = gpu_backend.decoder
    rows = _graph_rows(gpu_backend)
    decode = lambda: _decode_with_admissions(dec, rows)  # noqa: E731
    graphs = dec.fixed_steps
    assert graphs is not None and graphs.capture
    try:
        dec.fixed_steps = None
        want = decode()
        dec.fixed_steps = graphs
        got = decode()
    finally:
        dec.fixed_steps = graphs
    assert "capture_error" not in graphs.stats, graphs.stats
    assert graphs.stats["graphs_captured"] >= 2 and graphs.stats["graph_replays"] > 100
    assert got == want and len(want[0]) == 150


@pytest.mark.parametrize("lever", [{"flex": True}, {"shared_prefix": True}, {"cascade": True}, {"fused": True},
                                   {"cascade": True, "fused": True}, {"merged": True},
                                   {"cascade": True, "fused": True, "merged": True}, {"compiled": True},
                                   {"flex": True, "compiled": True}],
                         ids=["flex", "shared_prefix", "cascade", "fused", "cascade_fused", "merged",
                              "cascade_fused_merged", "compiled", "flex_compiled"])
def test_each_decode_lever_replayed_as_cuda_graphs_answers_as_eager_steps_in_fp32(gpu_backend, lever):
    """The benchmark's levers (flex attention on a block mask, a shared prefix read once on flex attention or in the
    cascade kernels, the norms, MLPs and rotary embedding compiled, both of those, the products merged, all three,
    the step compiled, flex compiled), captured as
    CUDA graphs:
    the same tokens as the decoder's own eager steps, graphs captured and replayed, no capture error."""
    dec = gpu_backend.decoder
    rows = _graph_rows(gpu_backend)
    graphs = dec.fixed_steps
    try:
        dec.fixed_steps = None
        want = _decode_with_admissions(dec, rows)
        assert dec.use_fixed_steps(capture=True, **lever)
        got = _decode_with_admissions(dec, rows)
        stats = dec.fixed_steps.stats
    finally:
        dec.fixed_steps = graphs
    assert "capture_error" not in stats, stats
    assert stats["graphs_captured"] >= 2 and stats["graph_replays"] > 100
    assert got == want and len(want[0]) == 150
    if lever.get("merged"):  # every product merged, none computed apart
        assert stats["merged_parts"]["mlps_left"] == 0 and stats["merged_parts"]["mlps"] > 0
        assert stats["merged_calls"]["qkv"] > 0 and stats["merged_calls"]["kv_own"] == 0
        # the engine's own steps, whose graphs were captured before the merge moved the weights, are captured again
        assert graphs is not None and _decode_with_admissions(dec, rows) == want


def test_shared_prefix_and_flex_levers_answer_as_the_engine_on_the_gpu_in_fp32(tiny_model_dir, monkeypatch):
    """4 documents x 4 agents sharing each document's prefix: the ``shared_prefix`` lever (compiled flex attention
    with log-sum-exps, in CUDA graphs), the ``cascade`` lever (its Triton kernels, in CUDA graphs) and ``flex`` give
    the engine's answers, and the keys/values a step shrink."""
    monkeypatch.setenv("SUMJUDGE_MODELS", str(tiny_model_dir.parent))
    r = bench.run(Namespace(shape="tiny", device="cuda", dtype="float32", docs=4, doc_tokens=300, max_new_tokens=24,
                            token_budget=65536, repeats=1, tie_ulps=2.0, levers="flex,shared_prefix,cascade"))
    assert bench.passed(r) and r["identical_outputs"]
    for name in ("flex", "shared_prefix", "cascade"):
        assert r.get(f"lever_{name}_error") is None, r.get(f"lever_{name}_error")
        assert r[f"lever_{name}_capture_error"] is None and r[f"lever_{name}_graphs_captured"] >= 1
        assert r[f"lever_{name}_identical_to_engine"] == 16, name
    assert r["kv_gb_per_step_shared_prefix"] < r["kv_gb_per_step"] / 2
