"""Any OpenAI-compatible server through ``openai.AsyncOpenAI``: the OpenAI API, vLLM, TGI, Ollama.

The engine hands over every pending request at once; they go out concurrently (bounded by
``concurrency``) and the server batches them (vLLM: continuous batching and prefix caching, which
is why every prompt about one document shares its prefix). Rate limits, server errors, timeouts and
dropped connections are retried with exponential backoff and jitter; usage is read from the responses.

On construction the backend asks the server what it serves (``GET /models``: the model's ``id``,
``root`` and ``max_model_len`` on vLLM) and whether it tokenizes (vLLM's ``POST /tokenize``). With a
context length and a tokenizer it behaves as the hf backend does: prompts are counted with the
server's own tokenizer (chat template included), so ``truncate=error|truncate`` fits documents the
same way, and a request whose prompt + ``max_new_tokens`` exceeds the context is refused here,
naming the example, instead of being cut short by the server. Option scoring is exact where the
server returns ``prompt_logprobs`` (vLLM's completions endpoint): every option is scored as a
continuation of the chat-template tokens, exactly as the hf backend does, so hf and vLLM numbers
are comparable; servers without it fall back to the first token's ``top_logprobs``, whose coverage
is recorded and must reach ``min_coverage``.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from typing import Any

from sumjudge.llm.backend_protocol import Capabilities
from sumjudge.llm.errors import ConfigError
from sumjudge.llm.loops import SingleFlight
from sumjudge.llm.models import tokenizer_named
from sumjudge.llm.openai_chat import MAX_PROMPT_CHARS_UNKNOWN_CONTEXT
from sumjudge.llm.openai_http import RetryPolicy
from sumjudge.llm.openai_scoring import OPTION_SCORING, OpenAIScoring
from sumjudge.llm.openai_servers import (
    CONCURRENCY_PER_SERVER,
    REPLICA_ROUTES,
    OpenAIDiscovery,
    replicas_listed,
    served_models,
    server_root,
)
from sumjudge.llm.types import BackendInfo, server_identity

# what the rest of the package imports from here
__all__ = ["OpenAIBackend", "CONCURRENCY_PER_SERVER", "MAX_PROMPT_CHARS_UNKNOWN_CONTEXT", "REPLICA_ROUTES",
           "RetryPolicy", "replicas_listed", "served_models"]

# llama.cpp's server samples with top_k 40 and min_p 0.05 unless told otherwise (and older builds with a repeat
# penalty of 1.1); the papers' sampling is temperature and top-p alone, as the hf backend and vLLM do it
LLAMA_CPP_NEUTRAL_SAMPLING = {"top_k": 0, "min_p": 0.0, "repeat_penalty": 1.0}


class OpenAIBackend(OpenAIDiscovery, OpenAIScoring):
    """An OpenAI-compatible server. ``OpenAIBackend.connect(...)`` asks the server what it serves and can do
    (the model list, ``/tokenize``, ``prompt_logprobs``, ``/metrics``) and loads a local tokenizer when one is
    given; the constructor itself makes no request, so a backend built directly knows only what it is told."""

    name = "openai"

    def __init__(self, model: str, *, base_url: str | None = None, api_key: str | None = None,
                 concurrency: int | None = None, max_retries: int = 6, timeout: float = 600.0, backoff: float = 1.0,
                 max_backoff: float = 60.0, top_logprobs: int = 20, connect_retries: int = 2,
                 max_retry_time: float = 900.0, context_length: int | None = None, tokenizer: str | None = None,
                 option_scoring: str = "auto", min_coverage: float = 0.5,
                 extra_body: dict[str, Any] | None = None, server_name: str | None = None):
        import httpx
        import openai

        if option_scoring not in OPTION_SCORING:
            raise ConfigError(f"option_scoring={option_scoring!r}: choose one of {', '.join(OPTION_SCORING)}")
        self._openai = openai
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
        self._key = api_key or os.environ.get("OPENAI_API_KEY") or "EMPTY"  # local servers take any key
        self._client_args = dict(base_url=self.base_url, api_key=self._key, max_retries=0, timeout=timeout)
        self._client_obj = None
        self.model = model
        if concurrency is not None and concurrency < 1:
            raise ConfigError(f"concurrency={concurrency}: give at least 1 request in flight")
        self._asked_concurrency = concurrency
        self.concurrency = concurrency or CONCURRENCY_PER_SERVER  # a router's replicas raise it (connect)
        self.replicas = []
        self.serving_notes = []
        self._listed = []
        self._router_notes = []
        self.retry = RetryPolicy(max_retries=max_retries, backoff=backoff, max_backoff=max_backoff,
                                 max_retry_time=max_retry_time)
        self.top_logprobs = top_logprobs
        self.min_coverage = min_coverage
        self.timeout = timeout
        self.extra_body = dict(extra_body or {})
        self._sem = None
        self._sem_loop = None
        server = server_identity(self.base_url)
        self.where = server
        self.root = server_root(self.base_url)
        self._http = httpx.Client(timeout=min(timeout, 60.0), headers={"Authorization": f"Bearer {self._key}"})
        self.retries = 0
        self.connect_retries = connect_retries
        self.connected = False
        self.served = {}
        self.server_tokenizes = False
        self.dialect = "openai"
        self._local_tokenizer = None
        self._token_cache = OrderedDict()
        self._cached_ids = 0
        self._counts = {}
        self._ahttp = None
        self._counting = SingleFlight()
        self.server_metrics = False
        if server_name is not None and not server_name.strip():
            raise ConfigError("--server-name: give a non-empty name")
        self.server_name = server_name
        self._asked = {"context_length": context_length, "tokenizer": tokenizer, "option_scoring": option_scoring}
        self._configure(probe=False)

    @classmethod
    def connect(cls, model: str, **options: Any) -> "OpenAIBackend":
        """A backend that knows its server: ``GET /models`` (the model must be served; its ``root`` and
        ``max_model_len`` join the cache key), whether ``/tokenize`` works, whether the completions endpoint
        returns ``prompt_logprobs`` (exact option scoring), whether ``/metrics`` has vLLM's counters; and the
        local tokenizer named by ``tokenizer=``, for servers without ``/tokenize``."""
        be = cls(model, **options)
        be._discover()
        be._discover_replicas()
        be._check_served()
        be.server_metrics = be._read_counters() is not None
        if be._asked["tokenizer"]:  # the model's own tokenizer, for servers without /tokenize

            be._local_tokenizer = tokenizer_named(be._asked["tokenizer"])
        be._configure(probe=True)
        be._say_what_is_missing()
        return be

    def _configure(self, probe: bool) -> None:
        """The context, option scoring and cache identity from what the user asked and the server said."""
        asked = self._asked
        served_ctx = self.served.get("max_model_len") or self.served.get("n_ctx")
        limits = [x for x in (asked["context_length"], served_ctx) if x]
        self.context_length = min(limits) if limits else None
        exact = self.tokenizes and asked["option_scoring"] in ("auto", "prompt_logprobs")
        if probe and asked["option_scoring"] == "prompt_logprobs" and not self.tokenizes:
            raise ConfigError(f"option_scoring=prompt_logprobs needs token ids: {self.where} has no /tokenize "
                              "(vLLM and llama.cpp have one) and no --tokenizer was given")
        if exact and asked["option_scoring"] == "auto" and probe:
            exact = self._probe_prompt_logprobs()
        self.option_scoring = "prompt_logprobs" if exact else "top_logprobs"
        # The cache key names what answered: the served model where the server says which weights it loaded
        # (vLLM's ``root``, with the model's name and context), so that replicas of the same weights, a router in
        # front of them, or the same server on another port share answers; else the base URL (nothing else tells
        # two such servers apart). A name the user gives joins the key in place of the URL ("the same server as
        # before", or two servers of the same weights kept apart).
        key_server = f"name:{self.server_name.strip()}" if self.server_name else self.where
        in_key = bool(self.server_name) or not self.served.get("root")
        if self.dialect == "llama.cpp":  # sampling as the papers and the other backends do it, unless the user says
            self.extra_body = {**LLAMA_CPP_NEUTRAL_SAMPLING, **self.extra_body}
        self.info = BackendInfo(name="openai", model=self.model, revision="", server=key_server, server_in_key=in_key,
                                server_model={k: self.served[k] for k in ("id", "root", "max_model_len", "n_ctx")
                                              if self.served.get(k) is not None},
                                option_scoring=self.option_scoring,
                                extra={"base_url": self.where, "context_length": self.context_length,
                                       "tokenizer": "server" if self.server_tokenizes else (asked["tokenizer"] or None),
                                       "option_scoring": self.option_scoring, "server_dialect": self.dialect})

    @property
    def capabilities(self) -> Capabilities:
        """Every batch is dispatched at once (the semaphore bounds the requests on the wire) and each response is
        reported as it arrives; scoring, tokenizer and metrics are what discovery found."""
        return Capabilities(option_scoring="exact" if self.option_scoring == "prompt_logprobs" else "top_logprobs",
                            tokenizer="remote" if self.server_tokenizes else
                            ("local" if self._local_tokenizer is not None else "none"),
                            server_metrics=self.server_metrics, context_length=self.context_length,
                            max_inflight=1_000_000, streams_results=True, async_tokenizer=True,
                            routes_by_session=bool(self.replicas))

    def decode_stats(self) -> None:
        return None
