"""One way to make a prompt fit the model's context: the largest part of something (document words, rounds of
a debate, exchanges of a chat) whose prompt, plus the room its answer needs, the model can take.

Every method that cuts a document, drops old rounds or shortens a transcript asks ``fit_to_context`` (or, for a
count that is not a prompt, ``largest_fitting``); the search is a bisection, so a long document costs a few
dozen tokenizations, and a server's tokenizer is asked off the event loop (``LLM.count_tokens``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Awaitable, Callable

if TYPE_CHECKING:
    from .engine import Calls

Messages = list[dict[str, str]]


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


async def fit_to_context(llm: "Calls", build: Callable[[int], Messages], size: int, reserve: int) -> int | None:
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
