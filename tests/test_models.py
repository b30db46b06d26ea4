"""Offline models: the tiny random Llama-3 (CLI) and the Gemma-3-270M smoke model converted from its GGUF."""

import json

import pytest

from sumjudge import cli
from sumjudge.llm import ChatRequest, NullCache, run_sync
from sumjudge.llm.engine import LLM
from sumjudge.llm.models import resolve_model


def test_tiny_model_cli_builds_a_loadable_model_with_the_llama3_tokenizer(tmp_path, capsys):
    assert cli.main(["tiny-model", tmp_path / "m"]) == 0
    from transformers import AutoConfig, AutoTokenizer

    cfg = AutoConfig.from_pretrained(tmp_path / "m")
    tok = AutoTokenizer.from_pretrained(tmp_path / "m")
    assert cfg.model_type == "llama" and cfg.vocab_size == len(tok) >= 128256
    assert "<|start_header_id|>" in tok.chat_template
    assert json.loads((tmp_path / "m" / "sumjudge_model.json").read_text())["kind"] == "tiny-random-llama"


def test_resolve_model_names():
    assert resolve_model("meta-llama/Meta-Llama-3-8B-Instruct") == "meta-llama/Meta-Llama-3-8B-Instruct"
    with pytest.raises(FileNotFoundError, match="neither a local model directory"):
        resolve_model("./missing-model")


def test_smoke_model_converts_from_gguf_once_and_generates(tmp_path):
    """The real GGUF -> safetensors route (about a minute on CPU)."""
    from sumjudge.llm.hf import HFBackend
    from sumjudge.llm.models import prepare_smoke_model

    dest = prepare_smoke_model(tmp_path / "gemma-3-270m")
    assert (dest / "config.json").exists() and list(dest.glob("*.safetensors"))
    assert not (tmp_path / "gemma-3-270m.gguf-tmp").exists()
    assert json.loads((dest / "sumjudge_model.json").read_text())["base_model"] is True
    cfg = json.loads((dest / "config.json").read_text())
    assert "quantization_config" not in cfg
    be = HFBackend(str(dest))
    assert be.info.extra["chat_template"] == "plain"  # a base model: no chat template of its own
    text = "The council voted five to two on the budget amendment."
    ids = be.tokenizer(text, add_special_tokens=False).input_ids
    assert len(ids) == 11 and be.tokenizer.decode(ids) == text  # subword pieces, not characters
    assert be.encode([{"role": "user", "content": "Hi"}])[0] == be.tokenizer.bos_token_id
    out = run_sync(LLM(be, cache=NullCache()).chat(ChatRequest(
        messages=[{"role": "user", "content": "The capital of France is"}], max_new_tokens=8)))
    assert out.completion_tokens > 0 and out.text.strip()
    assert prepare_smoke_model(dest) == dest  # second call: already converted, nothing redone


def test_model_id_at_revision_is_split_and_local_paths_are_not(tmp_path):
    from sumjudge.llm.models import split_revision

    assert split_revision("meta-llama/Meta-Llama-3-8B-Instruct@5f0b02c") == ("meta-llama/Meta-Llama-3-8B-Instruct", "5f0b02c")
    assert split_revision("org/m") == ("org/m", None)
    weird = tmp_path / "my@model"
    weird.mkdir()
    assert split_revision(str(weird)) == (str(weird), None)  # an existing folder is a path, whatever its name
    with pytest.raises(ValueError, match="also given"):
        split_revision("org/m@a", "b")
