"""``sumjudge tiny-model``: a tiny random Llama-architecture model."""

from __future__ import annotations

from pathlib import Path

from sumjudge.cli.subcommand import Subcommand
from sumjudge.llm.models import TINY_SHAPE, TINY_SHAPE_HEAD32, build_tiny_model


def add_arguments(p) -> None:
    p.add_argument("dir", type=Path)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--head-dim", type=int, choices=(16, 32), default=16,
                   help="attention head size: 16 (the default tiny model) or 32 (servable by vLLM on CPU)")


def main(a) -> int:
    print(build_tiny_model(a.dir, seed=a.seed, shape=TINY_SHAPE_HEAD32 if a.head_dim == 32 else TINY_SHAPE))
    return 0


COMMAND = Subcommand("tiny-model", help="build a tiny random Llama-architecture model with the Llama-3 tokenizer",
                     add_arguments=add_arguments, run=main)
