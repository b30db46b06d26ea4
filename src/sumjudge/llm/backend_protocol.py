"""What the engine may ask of a backend: the ``Backend`` protocol and the capabilities it declares.

The engine and the run code read ``backend.capabilities`` and call only the protocol's methods; they never
probe a backend's attributes. A new backend (a llama.cpp server, a batch API) states what it can do here,
and the engine adapts: how many batches it may have in flight, whether results arrive as they finish, how
options are scored, whether prompts can be counted (and whether counting is a local call or a request that
must not block the event loop), whether the server keeps counters worth reading around a run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Literal, Protocol, runtime_checkable

from sumjudge.llm.types import BackendInfo, ChatRequest, ChatResponse, OptionRequest, OptionScores

OptionScoring = Literal["exact", "top_logprobs", "none"]
Tokenizer = Literal["local", "remote", "none"]
OnResults = Callable[[list[tuple[int, object]]], None]


@dataclass(frozen=True)
class Capabilities:
    """What a backend can do. ``option_scoring``: ``exact`` (log p of every option's tokens), ``top_logprobs``
    (the first token's top list, with a coverage floor) or ``none``. ``tokenizer``: ``local`` (counting is a
    function call), ``remote`` (a request to the server: the engine runs it off the event loop) or ``none``
    (prompts cannot be counted; documents are not cut). ``server_metrics``: ``server_counters()`` reads the
    server's own counters. ``context_length``: prompt + answer tokens the model takes, None when unknown.
    ``max_inflight``: batches the engine may hand over before one returns. ``streams_results``: ``generate``
    and ``score`` report each result through ``on_results`` as soon as it is done. ``async_tokenizer``: the
    backend counts on the event loop (``acount_tokens`` / ``aprompt_tokens``, coroutines), so a remote tokenizer
    needs no worker thread. ``routes_by_session``: ``generate`` and ``score`` take ``sessions`` (each request's
    example), which a router in front of replicas uses to keep an example's calls on one replica. ``replayed``:
    the answers are read from a recording, not computed (the time a call takes measures the replay)."""

    option_scoring: OptionScoring = "none"
    tokenizer: Tokenizer = "none"
    server_metrics: bool = False
    context_length: int | None = None
    max_inflight: int = 1
    streams_results: bool = False
    async_tokenizer: bool = False
    routes_by_session: bool = False
    replayed: bool = False


# a source's (a shared engine's client's) share of a local decoder's work, in ``decode_stats`` as ``own_<name>``
SOURCE_COUNTERS = ("prompt_tokens", "prefill_s", "decode_s", "row_steps", "answers", "decode_tokens", "option_sets",
                   "score_s")


@runtime_checkable
class Backend(Protocol):
    """A model behind the engine. ``generate`` and ``score`` return one result per request, in order: a
    response, or the exception that request met (the engine hands it to that request's caller)."""

    name: str
    info: BackendInfo

    @property
    def capabilities(self) -> Capabilities: ...

    async def generate(self, reqs: list[ChatRequest], on_results: OnResults | None = None
                       ) -> list[ChatResponse | Exception]: ...

    async def score(self, reqs: list[OptionRequest], on_results: OnResults | None = None
                    ) -> list[OptionScores | Exception]: ...

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` alone; called only when ``capabilities.tokenizer`` is not ``none``."""

    def prompt_tokens(self, messages: list[dict[str, str]]) -> int:
        """Tokens fed for ``messages``, chat template included; called only when ``tokenizer`` is not ``none``."""

    def decode_stats(self) -> dict[str, float] | None:
        """What a local model's decoder measured so far (prefill and decode seconds, decode steps, rows per step,
        time with an under-filled batch; ``own_*``: the caller's share of it, ``SOURCE_COUNTERS``), or None (a
        server decodes out of sight)."""

    def server_counters(self) -> dict[str, float] | None:
        """The server's counters (e.g. prefix-cache tokens queried and found) under the project's names, or
        None; called only when ``capabilities.server_metrics``."""


@runtime_checkable
class AsyncTokenizer(Protocol):
    """What a backend that declares ``capabilities.async_tokenizer`` adds to ``Backend``: counting as coroutines,
    awaited on the event loop instead of run in a worker thread."""

    async def acount_tokens(self, text: str) -> int:
        """Tokens of ``text`` alone, counted without blocking the event loop."""

    async def aprompt_tokens(self, messages: list[dict[str, str]]) -> int:
        """Tokens fed for ``messages``, chat template included, counted without blocking the event loop."""
