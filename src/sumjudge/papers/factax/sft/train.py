"""FacTax's supervised paradigm, training side (Section 5.1, Appendix D): supervised fine-tuning of a causal
LM on prompt-completion pairs (``factax_pairs``), with the loss on the completion tokens only.

Configs: ``paper`` = Appendix D (full fine-tune, lr 1e-5, cosine schedule, warm-up 0.05, 8 epochs, batch 1 per
GPU on 8 A100s with flash attention: an effective batch of 8, which fewer devices reach by gradient
accumulation, ``effective_batch_size``), ``lora`` = a LoRA adapter (``peft``) that fits one GPU
(r 16, alpha 32, dropout 0.05 on the attention and MLP projections, lr 2e-4, same schedule). bf16 on GPU; on a
CPU that computes bfloat16 natively (AVX512-BF16, AMX) mixed precision (bf16 autocast over fp32 weights), else
fp32 (``training_precision``, part of the training key). Several GPUs: ``accelerate launch -m
sumjudge.papers.factax.sft.train ...`` (the Trainer runs under accelerate). A LoRA adapter is merged into the base weights when saved, so the result is an ordinary model
folder: evaluate it with the ``factax-sft`` method on the hf backend (``--model OUT``), through the engine.

Over-long prompts: the document is cut inside the template (``fit_pair``, the whole words that fit), so the
instruction, the summary and the assistant header always survive and the completion follows the prompt as
at inference.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from sumjudge.errors import ConfigError
from sumjudge.llm.engine import run_sync
from sumjudge.llm.extras import require
from sumjudge.llm.fitting import largest_fitting
from sumjudge.llm.hf import cpu_has_native_bf16
from sumjudge.llm.models import build_tiny_model, local_revision, resolve_model
from sumjudge.papers.factax.sft.pairs import Pair
from sumjudge.prompts import render


@dataclass
class SFTConfig:
    name: str = "paper"
    lora: bool = False
    learning_rate: float = 1e-5
    epochs: float = 8
    per_device_batch_size: int = 1
    effective_batch_size: int = 8  # Appendix D: 8 GPUs x 1; reached with gradient accumulation on fewer devices
    lr_scheduler: str = "cosine"
    warmup_ratio: float = 0.05
    max_length: int = 2048  # prompt + completion tokens; longer prompts are cut from the document's end
    lora_r: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.05
    max_steps: int = -1  # > 0 stops early (tests, quick checks)
    seed: int = 0


CONFIGS = {"paper": SFTConfig(),
           "lora": SFTConfig(name="lora", lora=True, learning_rate=2e-4)}


def warmup_fraction(cfg: SFTConfig) -> float:
    """The warm-up as a fraction of the training steps, as ``TrainingArguments`` takes it: ``warmup_steps`` below 1
    is a ratio (transformers 5 deprecated ``warmup_ratio`` and removed it in 5.2). A ratio outside [0, 1) would be
    read as a number of steps: refused."""
    if not 0 <= cfg.warmup_ratio < 1:
        raise ConfigError(f"SFT config {cfg.name!r}: warmup_ratio {cfg.warmup_ratio} is not a fraction in [0, 1)")
    return float(cfg.warmup_ratio)


def prompt_ids(tok, prompt: str) -> list[int]:
    """The prompt as a user turn in the tokenizer's chat template with the assistant header (as the engine
    feeds it at inference); a tokenizer without a chat template gets the bare prompt."""
    if getattr(tok, "chat_template", None):
        text = tok.apply_chat_template([{"role": "user", "content": prompt}], add_generation_prompt=True,
                                       tokenize=False)
        return tok(text, add_special_tokens=False)["input_ids"]
    return tok(prompt, add_special_tokens=True)["input_ids"]


def fit_pair(tok, pair: Pair, budget: int) -> tuple[list[int], int]:
    """(prompt token ids within ``budget``, document words cut): the longest start of the document, in whole
    words, whose rendered prompt fits. A pair without its template (an old jsonl) or whose prompt does not fit
    even with an empty document is an error, never a prompt cut at its end."""

    ids = prompt_ids(tok, pair.prompt)
    if len(ids) <= budget:
        return ids, 0
    if not pair.template:
        raise ConfigError(f"pair {pair.example_id}: its prompt ({len(ids)} tokens) exceeds {budget} and it has no "
                          "template to cut the document in; rebuild the pairs with factax_pairs")
    words = pair.document.split()

    def ids_for(k: int) -> list[int]:
        return prompt_ids(tok, render(pair.template, document=" ".join(words[:k]), summary=pair.summary))

    async def fits(k: int) -> bool:
        return len(ids_for(k)) <= budget

    kept = run_sync(largest_fitting(fits, len(words)))  # the search every method's prompts use
    if kept is None:
        raise ConfigError(f"pair {pair.example_id}: the instruction and summary alone exceed {budget} tokens; "
                          "raise max_length")
    return ids_for(kept), len(words) - kept


# How a pair's completion is written (part of the training key: a model trained on another format is not reused)
PAIR_FORMAT = "chat turn closed by the template; bare completion + eos without a template"


def completion_ids(tok, completion: str) -> list[int]:
    """The completion as the model is to write it after ``prompt_ids``. In a chat template: the assistant turn's
    text and what the template closes the turn with (Qwen's ``<|im_end|>``, Llama-3's ``<|eot_id|>``), so that the
    model learns to end its answer where inference stops; a base model's leading space (" Factually_Correct", the
    paper's completion format) is dropped there, as an assistant turn starts on its own line. Without a template
    (a base model): the bare completion, then the end-of-sequence token."""
    if getattr(tok, "chat_template", None):
        user = [{"role": "user", "content": "x"}]
        head = tok.apply_chat_template(user, add_generation_prompt=True, tokenize=False)
        whole = tok.apply_chat_template(user + [{"role": "assistant", "content": completion.strip()}], tokenize=False)
        if whole.startswith(head) and completion.strip() in whole[len(head):]:
            return tok(whole[len(head):].rstrip(), add_special_tokens=False)["input_ids"]
    eos = [tok.eos_token_id] if tok.eos_token_id is not None else []
    return tok(completion, add_special_tokens=False)["input_ids"] + eos


def tokenize_pair(tok, pair: Pair, max_length: int) -> dict[str, list[int]]:
    """input_ids = prompt + completion (``completion_ids``: closed as the model's turn ends); labels = -100 on the
    prompt (loss on the completion only); the document is cut inside the prompt when the whole exceeds
    ``max_length`` (``fit_pair``)."""
    completion = completion_ids(tok, pair.completion)
    prompt, _ = fit_pair(tok, pair, max_length - len(completion))
    ids = prompt + completion
    return {"input_ids": ids, "attention_mask": [1] * len(ids), "labels": [-100] * len(prompt) + completion}


def accumulation_steps(cfg: SFTConfig, world_size: int) -> int:
    """Gradient accumulation that brings ``per_device_batch_size`` x ``world_size`` devices to the effective
    batch (at least 1; an effective batch the devices cannot divide evenly is an error)."""

    per_step = cfg.per_device_batch_size * max(1, world_size)
    if cfg.effective_batch_size % per_step and cfg.effective_batch_size > per_step:
        raise ConfigError(f"effective_batch_size={cfg.effective_batch_size} is not a multiple of "
                          f"{cfg.per_device_batch_size} per device x {world_size} device(s)")
    return max(1, cfg.effective_batch_size // per_step)


def base_model_for(base_model: str, profile: str, out_dir: str | Path) -> tuple[str, bool]:
    """(the model to fine-tune, whether it is the tiny stand-in). Without ``base_model`` the ``paper``
    profile refuses (Appendix D fine-tunes Llama3-8B; a tiny random model would be no reproduction); other
    profiles build a tiny random model that shows the path. A name the engine knows (``smoke``, a local folder, a
    hub id) is resolved as the engine resolves it."""

    if base_model:
        return resolve_model(base_model), False
    if profile == "paper":
        raise ConfigError("the paper profile fine-tunes a real base model: set base_model (the paper's is "
                          "meta-llama/Meta-Llama-3-8B) with sft_config=paper; the tiny stand-in is for the "
                          "smoke and ci profiles")

    tiny = Path(out_dir) / "tiny-base"  # built once (seeded): its files, and so what was trained on it, stay
    return str(tiny if (tiny / "config.json").exists() else build_tiny_model(tiny, seed=0)), True


def collate(pad_id: int):
    import torch

    def fn(rows: list[dict[str, list[int]]]) -> dict[str, Any]:
        n = max(len(r["input_ids"]) for r in rows)

        def pad(xs: list[int], v: int) -> list[int]:
            return xs + [v] * (n - len(xs))

        return {"input_ids": torch.tensor([pad(r["input_ids"], pad_id) for r in rows]),
                "attention_mask": torch.tensor([pad(r["attention_mask"], 0) for r in rows]),
                "labels": torch.tensor([pad(r["labels"], -100) for r in rows])}
    return fn


def training_precision() -> str:
    """``bf16`` where the device computes bfloat16 natively (a GPU: bf16 weights; a CPU with AVX512-BF16 or AMX:
    bf16 autocast over fp32 weights, several times float32's speed there), else ``fp32`` (emulated bfloat16 would
    be slower than float32)."""
    import torch


    return "bf16" if torch.cuda.is_available() or cpu_has_native_bf16() else "fp32"


def training_key(model: str, pairs: list[Pair], cfg: SFTConfig, world_size: int, precision: str = "fp32") -> str:
    """What determines a fine-tuned model: the base (its name, and for a folder the fingerprint of its weight
    files' names, sizes and times, as the hf backend names a local model), every pair, the config after its
    overrides, the devices the effective batch is spread over, the precision it was trained in and how a pair is
    written (``PAIR_FORMAT``)."""


    base = {"model": str(model), "fingerprint": local_revision(str(model))}
    blob = json.dumps({"base": base, "pairs": [asdict(p) for p in pairs], "config": asdict(cfg),
                       "world_size": world_size, "precision": precision, "format": PAIR_FORMAT}, sort_keys=True)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def trained_before(out: Path, key: str) -> dict[str, Any] | None:
    """The record of ``out`` when the model there was trained from exactly ``key``'s inputs (and is whole)."""
    record = out / "sumjudge_sft.json"
    if not (record.exists() and (out / "config.json").exists()):
        return None
    try:
        info = json.loads(record.read_text(encoding="utf-8"))
    except ValueError:
        return None
    return info if info.get("key") == key else None


def train(model: str, pairs: list[Pair], out: str | Path, config: SFTConfig | str = "lora", retrain: bool = False,
          **overrides: Any) -> dict[str, Any]:
    """Fine-tune ``model`` (a folder or hub id) on ``pairs``; saves the model (LoRA merged) and tokenizer to
    ``out`` and returns {"losses": [...], "config": ...}. A model that ``out`` already holds from the same base,
    pairs and config is kept (``"reused": True``; its files untouched, so its answers stay cached) unless
    ``retrain``."""
    cfg = replace(CONFIGS[config] if isinstance(config, str) else config, **overrides)
    out = Path(out)
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    precision = training_precision()
    key = training_key(model, pairs, cfg, world_size, precision)
    before = None if retrain else trained_before(out, key)
    if before is not None:
        return {**before, "reused": True}
    return _train(model, pairs, out, cfg, world_size, key, precision)


def _train(model: str, pairs: list[Pair], out: Path, cfg: SFTConfig, world_size: int, key: str,
           precision: str) -> dict[str, Any]:
    require("FacTax's fine-tuning", ("torch", "transformers", "accelerate", "peft"))
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, Trainer, TrainingArguments

    tok = AutoTokenizer.from_pretrained(model)
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    gpu = torch.cuda.is_available()
    lm = AutoModelForCausalLM.from_pretrained(model, dtype=torch.bfloat16 if gpu else torch.float32)
    if cfg.lora:
        from peft import LoraConfig, get_peft_model

        lm = get_peft_model(lm, LoraConfig(r=cfg.lora_r, lora_alpha=cfg.lora_alpha, lora_dropout=cfg.lora_dropout,
                                           target_modules="all-linear", task_type="CAUSAL_LM"))
    data = [tokenize_pair(tok, p, cfg.max_length) for p in pairs]
    accumulate = accumulation_steps(cfg, world_size)
    args = TrainingArguments(output_dir=str(out / "checkpoints"), learning_rate=cfg.learning_rate,
                             num_train_epochs=cfg.epochs, max_steps=cfg.max_steps,
                             per_device_train_batch_size=cfg.per_device_batch_size,
                             gradient_accumulation_steps=accumulate, lr_scheduler_type=cfg.lr_scheduler,
                             warmup_steps=warmup_fraction(cfg), logging_steps=1, save_strategy="no", report_to=[],
                             bf16=precision == "bf16", use_cpu=not gpu, dataloader_pin_memory=gpu, seed=cfg.seed, remove_unused_columns=False, disable_tqdm=True)
    trainer = Trainer(model=lm, args=args, train_dataset=data, data_collator=collate(tok.pad_token_id))
    trainer.train()
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    final = lm.merge_and_unload() if cfg.lora else lm
    final.save_pretrained(out)
    tok.save_pretrained(out)
    info = {"losses": losses, "config": asdict(cfg), "pairs": len(pairs), "base_model": str(model),
            "gradient_accumulation_steps": accumulate, "precision": precision, "key": key}
    (out / "sumjudge_sft.json").write_text(json.dumps(info, indent=2))
    return {**info, "reused": False}


def main(argv: list[str] | None = None) -> int:
    """``python -m sumjudge.papers.factax.sft.train --model M --pairs pairs.jsonl --config lora --out DIR`` (also under
    ``accelerate launch``)."""

    p = argparse.ArgumentParser(prog="sumjudge.papers.factax.sft.train")
    p.add_argument("--model", required=True)
    p.add_argument("--pairs", required=True, type=Path, help="jsonl of prompt/completion pairs (factax_pairs)")
    p.add_argument("--config", default="lora", choices=sorted(CONFIGS))
    p.add_argument("--max-steps", type=int, default=-1)
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--retrain", action="store_true", help="train even when --out holds a model trained from the "
                   "same base, pairs and config")
    a = p.parse_args(argv)
    fields = set(Pair.__dataclass_fields__)
    pairs = [Pair(**{k: v for k, v in json.loads(line).items() if k in fields})
             for line in a.pairs.read_text(encoding="utf-8").splitlines() if line.strip()]
    info = train(a.model, pairs, a.out, a.config, retrain=a.retrain, max_steps=a.max_steps)
    print(json.dumps({"pairs": info["pairs"], "first_loss": info["losses"][0], "last_loss": info["losses"][-1],
                      "out": str(a.out)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
