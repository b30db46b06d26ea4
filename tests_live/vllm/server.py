"""How the live tests and ``make bench-vllm`` start vLLM's CPU build: on a tiny random Llama-3 with 32-dimensional
heads (vLLM's CPU attention takes no smaller head size), on the loopback, with the recipe of docs/serving.md's "vLLM
on a CPU": eager mode starts fastest; chunked prefill off, since seeded sampling with it crashes the CPU server; a
1 GiB KV cache; fp32 so that its option scores can be compared with the hf backend's to a tight tolerance."""

from __future__ import annotations

import os
from pathlib import Path

SERVED_NAME = "tiny-llama3-hd32"
MAX_MODEL_LEN = 4096
START_TIMEOUT_S = 600


def tiny_model(folder: Path) -> Path:
    from sumjudge.llm.models import TINY_SHAPE_HEAD32, build_tiny_model

    return build_tiny_model(folder, seed=0, shape=TINY_SHAPE_HEAD32)


def vllm_command(python: str, model_dir: Path, port: int) -> list[str]:
    return [python, "-m", "vllm.entrypoints.openai.api_server", "--model", str(model_dir), "--served-model-name",
            SERVED_NAME, "--host", "127.0.0.1", "--port", str(port), "--enable-prefix-caching",
            "--max-model-len", str(MAX_MODEL_LEN), "--enforce-eager", "--no-enable-chunked-prefill",
            "--dtype", "float32"]


def vllm_environment() -> dict[str, str]:
    return {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1", "HF_HUB_OFFLINE": "1"}
