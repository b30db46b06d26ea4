"""Keys and values of prompt prefixes the hf decoder has computed before, reused by later prompts.

The decoder shares a prefix among the rows it admits together (``decode.prefix_groups``). Later prompts
over the same document arrive in later admissions: the next round of a debate, the next step of a three-step
assessment, a retry of an unreadable answer, another notebook's judge over the same summary. The store keeps
the keys and values of every admitted prompt in blocks of ``BLOCK`` tokens, each named by a hash of its
tokens and of every token before it (so one name means one whole prefix, as in vLLM's prefix caching); a
new prompt starts from the longest run of its leading blocks found there, and only its remaining tokens
are run through the model. A key or value depends only on the tokens before it and its position, and a
reused block sits at the positions it was computed at, so a prompt sees the states it would compute (up to
the rounding of a batched pass, as in any batch).

Blocks are kept up to ``capacity_bytes`` and the least recently used go first. Replayed over the prompts of
one ``make reproduce`` of the smoke profile (2.19 million prompt tokens, in the order they were answered),
a store of 100,000 tokens (1.2 GB for Qwen2.5-0.5B) leaves 0.53 million to compute.
"""

from __future__ import annotations

import hashlib
from array import array
from collections import OrderedDict
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

BLOCK = 32  # tokens per stored block
CAPACITY_MB = 2048  # default size of the store (keys and values of every layer), in MiB


def block_names(ids: list[int], blocks: int | None = None) -> list[bytes]:
    """The name of each whole block of ``ids`` (at most ``blocks``): a hash of the block and every token before it."""
    n = len(ids) // BLOCK if blocks is None else min(blocks, len(ids) // BLOCK)
    names, prev = [], b""
    for b in range(n):
        prev = hashlib.blake2b(prev + array("q", ids[b * BLOCK:(b + 1) * BLOCK]).tobytes(), digest_size=16).digest()
        names.append(prev)
    return names


class PrefixStore:
    """Blocks of prompt keys/values, each one tensor of shape (layers, 2, kv_heads, BLOCK, head_dim)."""

    def __init__(self, capacity_bytes: int):
        self.capacity = capacity_bytes
        self.blocks: OrderedDict[bytes, torch.Tensor] = OrderedDict()
        self.held = 0
        self.stats = {"lookup_tokens": 0, "reused_tokens": 0, "stored_tokens": 0, "evicted_tokens": 0}

    def __len__(self) -> int:
        return len(self.blocks)

    def clear(self) -> None:
        """Forget every block (a benchmark pass that must compute every prompt)."""
        self.blocks.clear()
        self.held = 0

    def lookup(self, ids: list[int], limit: int):
        """(tokens, states): the longest run of ``ids``' leading blocks held, at most ``limit`` tokens, and their
        keys/values as one tensor (layers, 2, kv_heads, tokens, head_dim); (0, None) if none is held."""
        found, names = [], []
        for name in block_names(ids, limit // BLOCK):
            block = self.blocks.get(name)
            if block is None:
                break
            found.append(block)
            names.append(name)
        self._touch(names)
        self.stats["lookup_tokens"] += limit
        if not found:
            return 0, None
        import torch

        n = len(found) * BLOCK
        self.stats["reused_tokens"] += n
        return n, torch.cat(found, dim=3)

    def _touch(self, names: list[bytes]) -> None:
        """Marks ``names`` used now, the first block last: a prefix's first block is the last of it to go (a block
        is of use only while every block before it is held)."""
        for name in reversed(names):
            self.blocks.move_to_end(name)

    def missing(self, ids: list[int]) -> tuple[list[bytes], int]:
        """The names of ``ids``' whole blocks and how many of the leading ones are held already."""
        names = block_names(ids)
        held = 0
        while held < len(names) and names[held] in self.blocks:
            held += 1
        return names, held

    def add(self, names: list[bytes], held: int, states) -> None:
        """Stores a prompt's blocks: ``names`` all its blocks' names, ``states`` (layers, 2, kv_heads, tokens,
        head_dim) the keys/values of the blocks from ``held`` on (the ones before are held already)."""
        if not self.capacity:
            return
        for b, name in enumerate(names[held:]):
            if name in self.blocks:
                continue
            block = states[:, :, :, b * BLOCK:(b + 1) * BLOCK].clone()
            self.blocks[name] = block
            self.held += block.numel() * block.element_size()
            self.stats["stored_tokens"] += BLOCK
        self._touch(names)
        while self.held > self.capacity and self.blocks:
            _, block = self.blocks.popitem(last=False)
            self.held -= block.numel() * block.element_size()
            self.stats["evicted_tokens"] += BLOCK
