"""The ``cascade`` lever in the decoder (``BatchDecoder.use_fixed_steps(cascade=True)``) on the tiny random model in
float32, in the scenario the ``shared_prefix`` lever is checked in (``tests/core/llm/test_decode_graphs.py``:
``shared_groups_own_steps_then_lever``), alone and with the ``fused`` lever: greedy answers equal the decoder's own
steps'. On a CPU the steps run eagerly under Triton's interpreter; captured as CUDA graphs on a GPU: ``tests/gpu``."""

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


def test_cascade_and_fused_steps_together_answer_as_the_decoders_own_steps(backend, monkeypatch):
    """The bench's ``cascade_fused``: the cascade kernels for attention and the norms, MLPs and rotary embedding
    compiled (through ``counting_compile``'s backend) in the same steps; the answers are the decoder's own steps'."""
    monkeypatch.setattr(decode_graphs, "COLUMN_BUCKET", 16)
    here = scenarios()
    graphs = here.counting_compile(monkeypatch)
    want, got, seen = here.shared_groups_own_steps_then_lever(backend, monkeypatch, "cascade_decode_attention",
                                                              cascade=True, fused=True)
    assert got == want
    assert seen and all(isinstance(b, cascade_decode.CascadeBlocks) for b in seen)
    assert sorted(graphs) == ["LlamaMLP.forward", "LlamaRMSNorm.forward", "apply_rotary_pos_emb"]
    assert backend.decoder.fixed_steps.stats["fused_pieces"]["mlps"] == 2
