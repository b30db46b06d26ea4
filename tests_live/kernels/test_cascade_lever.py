"""The ``cascade`` lever in the decoder (``BatchDecoder.use_fixed_steps(cascade=True)``) on the tiny random model in
float32, in the scenario the ``shared_prefix`` lever is checked in (``tests/core/llm/test_decode_graphs.py``:
``shared_groups_own_steps_then_lever``), alone and with the ``fused`` and ``merged`` levers: greedy answers equal
the decoder's own steps'. On a CPU the steps run eagerly under Triton's interpreter; captured as CUDA graphs on a GPU:
``tests/gpu``."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from sumjudge.llm import cascade_decode, decode_graphs

pytestmark = pytest.mark.usefixtures("kernels_run")
SCENARIO = Path(__file__).resolve().parents[2] / "tests" / "core" / "llm" / "test_decode_graphs.py"


def scenarios():
    spec = importlib.util.spec_from_file_location("decode_graphs_scenarios", SCENARIO)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def backend(tmp_path_factory):
    from sumjudge.llm.hf import HFBackend
    from sumjudge.llm.models import build_tiny_model

    return HFBackend(str(build_tiny_model(tmp_path_factory.mktemp("models") / "tiny-llama3", seed=0)))


def test_cascade_steps_answer_as_the_decoders_own_steps(backend, monkeypatch):
    monkeypatch.setattr(decode_graphs, "COLUMN_BUCKET", 16)
    want, got, seen = scenarios().shared_groups_own_steps_then_lever(backend, monkeypatch, "cascade_decode_attention",
                                                                     cascade=True)
    assert got == want
    assert seen and all(isinstance(b, cascade_decode.CascadeBlocks) for b in seen)
    assert max(int((b.end > b.start).sum()) for b in seen) >= 6  # the groups' rows read their prefix once


@pytest.mark.parametrize("merged", [False, True], ids=["cascade_fused", "cascade_fused_merged"])
def test_cascade_and_fused_steps_together_answer_as_the_decoders_own_steps(backend, monkeypatch, merged):
    """The bench's ``cascade_fused`` and ``cascade_fused_merged``: the cascade kernels for attention, the norms,
    MLPs and rotary embedding compiled (through ``counting_compile``'s backend), and the products merged, in the same
    steps; the answers are the decoder's own steps'."""
    monkeypatch.setattr(decode_graphs, "COLUMN_BUCKET", 16)
    here = scenarios()
    graphs = here.counting_compile(monkeypatch)
    want, got, seen = here.shared_groups_own_steps_then_lever(backend, monkeypatch, "cascade_decode_attention",
                                                              cascade=True, fused=True, merged=merged)
    assert got == want
    assert seen and all(isinstance(b, cascade_decode.CascadeBlocks) for b in seen)
    mlp = "merged_mlp" if merged else "LlamaMLP.forward"
    assert sorted(graphs) == sorted([mlp, "LlamaRMSNorm.forward", "apply_rotary_pos_emb"])
    if merged:
        assert backend.decoder.fixed_steps.stats["merged_calls"]["kv_own"] == 0
