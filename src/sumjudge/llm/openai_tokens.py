"""The openai backend's token counting: the server's ``/tokenize`` (vLLM's, or llama.cpp's after its
``/apply-template``) or a local tokenizer, prompts counted with the chat template, ids kept for recent prompts and
counts for longer, counting on the event loop without blocking it."""

from __future__ import annotations

import asyncio
from array import array
from collections import OrderedDict
from typing import Any

from sumjudge.llm.errors import BackendRequestError, ConfigError
from sumjudge.llm.loops import SingleFlight
from sumjudge.llm.openai_http import OpenAIHTTP
from sumjudge.llm.types import prompt_digest

# Token ids kept for recent prompts (counts are kept apart): a few long meetings' prompts, not thousands
TOKEN_CACHE_IDS = 1_000_000


class OpenAITokens(OpenAIHTTP):
    """Token counting with the server's tokenizer or a local one."""

    server_tokenizes: bool
    dialect: str  # what the server's own routes speak: openai (none), vllm or llama.cpp
    context_length: int | None  # prompt + answer tokens: the least of what was asked and what the server says
    _local_tokenizer: Any  # the model's own tokenizer (``tokenizer=``), for servers without /tokenize; or None
    _token_cache: OrderedDict[str, array[int]]  # prompt digest -> its ids
    _cached_ids: int  # ids held by _token_cache
    _counts: dict[str, int]  # prompt digest -> tokens
    _counting: SingleFlight  # one count in flight per prompt

    @property
    def tokenizes(self) -> bool:
        return self.server_tokenizes or self._local_tokenizer is not None

    def _server_tokenize(self, payload: dict, retries: int | None = None) -> list[int]:
        """The server's ``POST /tokenize`` (vLLM: ``prompt`` or ``messages``; llama.cpp: ``content``)."""
        return self._read_tokens(self._post("/tokenize", {"model": self.model, **payload}, retries), payload)

    def _read_tokens(self, body: Any, payload: dict) -> list[int]:
        """The token ids of a ``/tokenize`` answer. An answer with no tokens for a non-empty text is refused, never
        read as zero tokens (llama.cpp answers ``[]`` to a field it does not read)."""
        try:
            tokens = [int(t if not isinstance(t, dict) else t["id"]) for t in body["tokens"]]
        except (ValueError, KeyError, TypeError):
            tokens = None
        if tokens or not any(payload.get(k) for k in ("prompt", "messages", "content")):
            return tokens or []
        # e.g. a server whose /tokenize reads another field: asking again changes nothing
        raise BackendRequestError(f"{self.where}/tokenize gave no tokens for a non-empty text: {str(body)[:200]}")

    def _cached_tokens(self, key: dict, compute) -> list[int]:
        """Token ids, kept for the most recent prompts up to ``TOKEN_CACHE_IDS`` ids in all (option scoring reads
        one prompt's ids several times); their counts are kept apart (``_counts``), for longer."""

        k = prompt_digest(key)
        hit = self._token_cache.get(k)
        if hit is None:
            hit = array("q", compute())  # 8 bytes an id, not a list of int objects
            self._token_cache[k] = hit
            self._cached_ids += len(hit)
            while self._cached_ids > TOKEN_CACHE_IDS and len(self._token_cache) > 1:
                self._cached_ids -= len(self._token_cache.popitem(last=False)[1])
        else:
            self._token_cache.move_to_end(k)
        self._remember(k, len(hit))
        return list(hit)

    def _remember(self, key: str, n: int) -> None:
        if len(self._counts) > 65536:
            self._counts.clear()
        self._counts[key] = n

    async def _acount(self, key: dict, payload: dict, sync) -> int:
        """Tokens of a prompt (``key``) on the event loop: vLLM's ``/tokenize`` asked with the async client; other
        tokenizers (a local one, llama.cpp's template-then-tokenize) through ``sync`` in a worker thread."""
        k = prompt_digest(key)
        n = self._counts.get(k)
        if n is not None:
            return n

        async def count() -> int:
            if self.server_tokenizes and self.dialect == "vllm":
                n = len(self._read_tokens(await self._apost("/tokenize", {"model": self.model, **payload}), payload))
                self._remember(k, n)
                return n
            return len(await asyncio.to_thread(sync))

        return await self._counting.run(k, count)  # asked by many requests at once: one /tokenize

    async def aprompt_tokens(self, messages: list[dict[str, str]]) -> int:
        """``prompt_tokens`` without blocking the event loop (``Capabilities.async_tokenizer``)."""
        return await self._acount({"m": messages}, {"messages": messages, "add_generation_prompt": True},
                                  lambda: self.encode(messages))

    async def acount_tokens(self, text: str) -> int:
        """``count_tokens`` without blocking the event loop."""
        return await self._acount({"t": text}, {"prompt": text, "add_special_tokens": False},
                                  lambda: self._tokens_of_text(text))

    def encode(self, messages: list[dict[str, str]]) -> list[int]:
        """The prompt's token ids as the server feeds them: chat template applied, generation prompt added."""
        if not self.tokenizes:
            raise ConfigError(f"{self.where} does not tokenize (no /tokenize); give --tokenizer (the model's own)")

        def compute():
            if self.server_tokenizes and self.dialect == "llama.cpp":  # the server's template, then its tokenizer
                text = self._apply_template(messages)
                return self._server_tokenize({"content": text, "add_special": False, "parse_special": True})
            if self.server_tokenizes:
                return self._server_tokenize({"messages": messages, "add_generation_prompt": True})
            tok = self._local_tokenizer
            text = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
            return tok(text, add_special_tokens=False).input_ids

        return self._cached_tokens({"m": messages}, compute)

    def _tokens_of_text(self, text: str) -> list[int]:
        def compute():
            if self.server_tokenizes and self.dialect == "llama.cpp":
                return self._server_tokenize({"content": text, "add_special": False, "parse_special": False})
            if self.server_tokenizes:
                return self._server_tokenize({"prompt": text, "add_special_tokens": False})
            return self._local_tokenizer(text, add_special_tokens=False).input_ids

        return self._cached_tokens({"t": text}, compute)

    def _apply_template(self, messages: list[dict[str, str]]) -> str:
        """llama.cpp's ``POST /apply-template``: the prompt text its chat template makes of ``messages``."""
        body = self._post("/apply-template", {"messages": messages})
        text = body.get("prompt") if isinstance(body, dict) else None
        if not isinstance(text, str) or not text:
            raise BackendRequestError(f"{self.where}/apply-template gave no prompt: {str(body)[:200]}")
        return text

    def count_tokens(self, text: str) -> int:
        k = prompt_digest({"t": text})
        return self._counts[k] if k in self._counts else len(self._tokens_of_text(text))

    def prompt_tokens(self, messages: list[dict[str, str]]) -> int:
        k = prompt_digest({"m": messages})
        return self._counts[k] if k in self._counts else len(self.encode(messages))
