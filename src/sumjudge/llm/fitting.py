"""One way to make a prompt fit the model's context: the largest part of something (document words, rounds of
a debate, exchanges of a chat) whose prompt, plus the room its answer needs, the model can take.

Every method that cuts a document, drops old rounds or shortens a transcript asks ``fit_to_context`` (or, for a
count that is not a prompt, ``largest_fitting``); the search is a bisection, so a long document costs a few
dozen tokenizations, and a server's tokenizer is asked off the event loop (``LLM.count_tokens``). A prompt far
from the limit is not counted at all (``certainly_fits``: a bound from its bytes).
"""

from __future__ import annotations

from typing import Awaitable, Callable, Protocol

Messages = list[dict[str, str]]


class Counts(Protocol):
    """What fitting needs of the engine's calls (``engine.Calls`` is one): its context and a token count."""

    @property
    def context_length(self) -> int | None: ...

    @property
    def counts_tokens(self) -> bool: ...

    async def fits(self, messages: Messages, reserve: int) -> bool: ...


async def largest_fitting(fits: Callable[[int], Awaitable[bool]], size: int) -> int | None:
    """The largest ``k`` in ``0..size`` with ``await fits(k)``, for a ``fits`` that holds for every ``k`` below
    one that holds (more of a text never takes fewer tokens); ``None`` when not even ``fits(0)`` holds."""
    if await fits(size):
        return size
    if size == 0 or not await fits(0):
        return None
    lo, hi = 0, size  # fits(lo) holds, fits(hi) does not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if await fits(mid) else (lo, mid)
    return lo


async def fit_to_context(llm: Counts, build: Callable[[int], Messages], size: int, reserve: int) -> int | None:
    """The largest ``k`` in ``0..size`` whose prompt ``build(k)`` leaves ``reserve`` tokens of the context free:
    ``size`` when everything fits or nothing can be counted (no context length or no tokenizer: the backend
    reports an overflow), ``None`` when not even ``build(0)`` fits."""
    if llm.context_length is None or not llm.counts_tokens:
        return size

    async def fits(k: int) -> bool:
        return await llm.fits(build(k), reserve)

    return await largest_fitting(fits, size)


async def longest_prefix(text: str, limit: int, count: Callable[[str], Awaitable[int]]) -> tuple[str, int]:
    """The longest start of ``text`` in whole words with at most ``limit`` tokens under ``count``, and its number
    of words (0 when not one word fits)."""
    words = text.split()

    async def fits(k: int) -> bool:
        return await count(" ".join(words[:k])) <= limit

    k = await largest_fitting(fits, len(words)) or 0
    return " ".join(words[:k]), k


# What joins a message's content to its chat template (a leading space, a dummy prefix) may cost a token or two more
# than the content's own bytes show; this many are allowed per message.
SLACK_TOKENS_PER_MESSAGE = 8


async def certainly_fits(messages: Messages, reserve: int, context: int,
                         prompt_tokens: Callable[[Messages], Awaitable[int | None]]) -> bool:
    """Whether ``messages`` plus ``reserve`` answer tokens fit ``context`` by a bound, without counting them: the
    chat template's own tokens (the same roles with empty contents, counted once per role sequence) plus one token
    per byte of every content (a token of a byte-level BPE or SentencePiece vocabulary covers at least one byte)
    plus ``SLACK_TOKENS_PER_MESSAGE``. False means "count it": the bound says nothing about prompts near the limit.
    English text takes about four bytes a token, so a prompt under a quarter of the room is never counted."""
    room = context - reserve - SLACK_TOKENS_PER_MESSAGE * len(messages)
    content = sum(len(m["content"].encode("utf-8", "surrogatepass")) for m in messages)
    if content >= room:
        return False
    template = await prompt_tokens([{"role": m["role"], "content": ""} for m in messages])
    return template is not None and template + content <= room
