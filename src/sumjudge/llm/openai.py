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

import asyncio
import contextvars
import functools
import math
import os
import random
import re
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from .backend_protocol import Capabilities
from .errors import (
    BackendRequestError,
    BackendUnavailableError,
    ConfigError,
    OptionScoringError,
    PromptTooLongError,
)
from .fitting import certainly_fits
from .loops import SingleFlight, on_loop_close
from .types import (BackendInfo, ChatRequest, ChatResponse, OptionRequest, OptionScores, normalise_logprobs,
                    prompt_digest, server_identity)

RETRYABLE_STATUS = {408, 409, 429, 500, 502, 503, 504}
# Behind a router: the example a request belongs to, sent as the session key routers hash to keep a session on one
# replica (vLLM's router, --policy consistent_hash: X-Session-ID; SGLang's: x-smg-routing-key)
SESSION_HEADERS = ("X-Session-ID", "x-smg-routing-key")
_SESSION: contextvars.ContextVar[str | None] = contextvars.ContextVar("sumjudge_openai_session", default=None)
OPTION_SCORING = ("auto", "prompt_logprobs", "top_logprobs")
# Requests in flight per server (vLLM's default batch: --max-num-seqs 256); behind a router, per replica
CONCURRENCY_PER_SERVER = 256


# Token ids kept for recent prompts (counts are kept apart): a few long meetings' prompts, not thousands
TOKEN_CACHE_IDS = 1_000_000

# A short finish_reason=length from a server that states no context counts as a real cut once asked again this many
# times with the same seed and cut the same way each time (a fault's retry gives the fault-free answer)
CUT_CONFIRMATIONS = 2
# A prompt over this many characters (about a million tokens, more than any served context) is not sent to a
# server that does not state its context: a 10 MB document is a mistake, not a request.
MAX_PROMPT_CHARS_UNKNOWN_CONTEXT = 4_000_000

class MalformedAnswer(Exception):
    """A 200 answer that is not a usable completion (no choices, null content, a body that is not JSON): a
    fault of the server, retried like a 5xx and never cached or parsed."""


def retry_after(e: Exception) -> float | None:
    """Seconds a 429/503 answer asks us to wait (``Retry-After``: seconds or an HTTP date), if it says."""
    resp = getattr(e, "response", None)
    return asked_wait(resp.headers.get("retry-after") if resp is not None and hasattr(resp, "headers") else None)


def asked_wait(value: str | None) -> float | None:
    """A ``Retry-After`` header's value in seconds (it gives seconds or an HTTP date); None when absent."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        from email.utils import parsedate_to_datetime

        try:
            return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
        except (TypeError, ValueError):
            return None


def connection_lost(e: BaseException | None) -> str | None:
    """"connection refused", "connection reset" or "connection closed by the server" where ``e`` or what it was
    raised from is a refused or dropped connection, whatever the transport calls it (aiohttp's refused connection
    reaches the SDK as a timeout); None for anything else, a real timeout included."""
    seen: set[int] = set()
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, ConnectionRefusedError):
            return "connection refused"
        if isinstance(e, (ConnectionResetError, ConnectionAbortedError, BrokenPipeError)):
            return "connection reset"
        if type(e).__name__ in ("ServerDisconnectedError", "RemoteProtocolError"):  # aiohttp's, httpx's
            return "connection closed by the server"
        e = e.__cause__ or e.__context__
    return None


# Where a router names its replicas: vllm-router's GET /list_workers ({"urls": [...]}), SGLang's router's GET /workers
# ({"workers": [{"url": ...}, ...]})
REPLICA_ROUTES = ("/list_workers", "/workers")


def replicas_listed(body: Any) -> list[str]:
    """The replica URLs in a router's answer to one of ``REPLICA_ROUTES`` ([] for anything else)."""
    if not isinstance(body, dict):
        return []
    urls = body.get("urls") if "urls" in body else [w.get("url") for w in body.get("workers") or []
                                                       if isinstance(w, dict)]
    return urls if isinstance(urls, list) and urls and all(isinstance(u, str) for u in urls) else []


def served_models(base_url: str, api_key: str | None = None, timeout: float = 10.0) -> list[str]:
    """The models an OpenAI-compatible server lists (``GET /models``), asked with ``api_key`` (default
    ``OPENAI_API_KEY``). A server that cannot be reached, refuses the key or lists nothing is one ``ConfigError``
    naming the address (its credentials masked), never the key."""
    import httpx

    from ..errors import ConfigError
    from .types import server_identity

    key = api_key or os.environ.get("OPENAI_API_KEY") or "EMPTY"
    where = server_identity(base_url)
    try:
        r = httpx.get(base_url.rstrip("/") + "/models", headers={"Authorization": f"Bearer {key}"}, timeout=timeout)
    except httpx.HTTPError as e:
        raise ConfigError(f"server {where} cannot be reached ({type(e).__name__}): is the address right and the "
                          "server running?") from None
    if r.status_code in (401, 403):
        raise ConfigError(f"server {where} refused the key (HTTP {r.status_code}): export OPENAI_API_KEY=<the key "
                          "the server was started with>")
    try:
        ids = [str(m["id"]) for m in r.json()["data"]] if r.status_code == 200 else []
    except (ValueError, KeyError, TypeError):
        ids = []
    if not ids:
        raise ConfigError(f"server {where} lists no model (GET /models: HTTP {r.status_code}): is it an "
                          "OpenAI-compatible server (its address ends in /v1)?")
    return ids


def server_root(base_url: str) -> str:
    """The server's root for its non-OpenAI routes (vLLM's ``/tokenize``, ``/metrics``, ``/health``):
    the base URL without a trailing ``/v1``."""
    return re.sub(r"/v1/?$", "", base_url.rstrip("/"))


def prometheus_totals(text: str, names: tuple[str, ...]) -> dict[str, float]:
    """Sum of each named counter over its label sets in a Prometheus text page (``/metrics``)."""
    out = dict.fromkeys(names, 0.0)
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        m = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{[^}]*\})?\s+([-+0-9.eE]+|NaN|[+-]?Inf)\s*$", line)
        if m and m.group(1) in out:
            out[m.group(1)] += float(m.group(2))
    return out


# vLLM's prefix-cache counters (tokens queried / found in the cache), read before and after a run, under the
# names the run's metrics give them
PREFIX_CACHE_COUNTERS = {"vllm:prefix_cache_queries_total": "prefix_cache_queried_tokens",
                         "vllm:prefix_cache_hits_total": "prefix_cache_hit_tokens"}


@dataclass(frozen=True)
class RetryPolicy:
    """How every HTTP call of the backend is retried (model calls, ``/tokenize``, discovery): exponential backoff
    from ``backoff`` seconds up to ``max_backoff``, with jitter (half to all of it), never shorter than what
    ``Retry-After`` asks, at most ``max_retries`` times and ``max_retry_time`` seconds of waiting per call."""

    max_retries: int = 6
    backoff: float = 1.0
    max_backoff: float = 60.0
    max_retry_time: float = 900.0

    def delay(self, attempt: int, started: float, asked: float | None = None, retries: int | None = None
              ) -> float | None:
        """Seconds to wait before trying again after failed ``attempt`` (0-based) of a call begun at ``started``
        (``time.monotonic()``); None when the call should give up."""
        if attempt >= (self.max_retries if retries is None else retries):
            return None
        wait = max(min(self.max_backoff, self.backoff * 2 ** attempt) * (0.5 + random.random() / 2), asked or 0.0)
        return None if time.monotonic() - started + wait > self.max_retry_time else wait


# llama.cpp's server samples with top_k 40 and min_p 0.05 unless told otherwise (and older builds with a repeat
# penalty of 1.1); the papers' sampling is temperature and top-p alone, as the hf backend and vLLM do it
LLAMA_CPP_NEUTRAL_SAMPLING = {"top_k": 0, "min_p": 0.0, "repeat_penalty": 1.0}

# The most stop strings the OpenAI API takes; more are applied to the answer here.
SERVER_STOP_LIMIT = 4


@dataclass(frozen=True)
class AsyncHTTP:
    """How the async clients are made: the SDK's aiohttp transport where aiohttp is installed (httpcore's pool scans
    every connection on every request: with hundreds in flight, the client's CPU per call fell to about a third on
    aiohttp, measured with ``sumjudge scale``), else httpx's. ``errors``: what a dropped or timed-out request raises."""

    client: Any
    limits: Any
    errors: tuple[type[BaseException], ...]


@functools.cache
def async_http_client() -> AsyncHTTP:
    import httpx

    try:
        import aiohttp  # noqa: F401 (the SDK's transport needs it)
        import httpx2
        from openai import DefaultAioHttpClient
    except ImportError:
        return AsyncHTTP(client=httpx.AsyncClient, limits=httpx.Limits, errors=(httpx.HTTPError,))
    return AsyncHTTP(client=DefaultAioHttpClient, limits=httpx2.Limits, errors=(httpx.HTTPError, httpx2.HTTPError))


def apply_stops(text: str, stops: tuple[str, ...]) -> str | None:
    """``text`` up to the first of ``stops`` it contains (what a server applying them would have returned), or
    None when it contains none."""
    cuts = [i for i in (text.find(s) for s in stops if s) if i >= 0]
    return text[:min(cuts)] if cuts else None


class OpenAIBackend:
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
        self.replicas: list[str] = []  # behind a router: its replicas' URLs (its /list_workers)
        self.serving_notes: list[str] = []  # what the endpoint does not offer that a server would (said once)
        self._listed: list[str] = []  # the models GET /models listed
        self._router_notes: list[str] = []  # what a router did not pass on that its replicas said
        self.retry = RetryPolicy(max_retries=max_retries, backoff=backoff, max_backoff=max_backoff,
                                 max_retry_time=max_retry_time)
        self.top_logprobs = top_logprobs
        self.min_coverage = min_coverage
        self.timeout = timeout
        self.extra_body = dict(extra_body or {})  # server extensions sent with every chat request (bench: ignore_eos)
        self._sem: asyncio.Semaphore | None = None
        self._sem_loop = None
        server = server_identity(self.base_url)
        self.where = server  # in every message: never the credentials a URL may carry
        self.root = server_root(self.base_url)
        self._http = httpx.Client(timeout=min(timeout, 60.0), headers={"Authorization": f"Bearer {self._key}"})
        self.retries = 0  # accounting: retried HTTP calls
        self.connect_retries = connect_retries
        self.connected = False  # set by the first answer; before it, connection errors fail fast
        self.served: dict[str, Any] = {}  # what GET /models says of the model (id, root, max_model_len)
        self.server_tokenizes = False
        self.dialect = "openai"  # what the server's own routes speak: openai (none), vllm or llama.cpp
        self._local_tokenizer = None
        self._token_cache: OrderedDict[str, Any] = OrderedDict()  # prompt digest -> its ids (an array)
        self._cached_ids = 0  # ids held by _token_cache
        self._counts: dict[str, int] = {}  # prompt digest -> tokens
        self._ahttp = None  # the async client of the running loop, for the server's own routes
        self._counting = SingleFlight()
        self.server_metrics = False  # /metrics holds vLLM's counters
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
            from .models import tokenizer_named

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

    # ---- what the server says about itself ------------------------------------------------------
    def _get_json(self, url: str) -> tuple[int, Any]:
        """GET one of the server's descriptions (``/models``, ``/props``): a dropped connection or a 5xx/429 is
        retried under the backend's ``RetryPolicy`` (``connect_retries`` times: a server that is not there is said
        at once); the status and the JSON body (None when it is not JSON)."""
        import httpx

        started = time.monotonic()
        attempt = 0
        while True:
            try:
                r = self._http.get(url)
            except httpx.HTTPError as e:
                wait = self.retry.delay(attempt, started, retries=self.connect_retries)
                if wait is None:
                    raise BackendUnavailableError(f"{self.where} is not reachable ({type(e).__name__}: {e}); is the "
                                                  "server up and the --base-url right?") from None
            else:
                wait = (self.retry.delay(attempt, started, asked_wait(r.headers.get("retry-after")),
                                         retries=self.connect_retries) if r.status_code in RETRYABLE_STATUS else None)
                if wait is None:
                    try:
                        return r.status_code, r.json()
                    except ValueError:
                        return r.status_code, None
            self.retries += 1
            time.sleep(wait)
            attempt += 1

    def _discover(self) -> None:
        """Ask ``GET /models`` what the server serves: the model must be among them; its ``root`` and
        ``max_model_len`` (vLLM) join the cache key, so two servers, or one server restarted with another
        model or context under the same name, never share answers. Then see whether ``/tokenize`` works."""
        status, body = self._get_json(self.base_url.rstrip("/") + "/models")
        if status in (401, 403):
            raise BackendRequestError(f"{self.where} refused the credentials (HTTP {status}) when listing models")
        if status == 200 and isinstance(body, dict) and isinstance(body.get("data"), list):
            models = [m for m in body["data"] if isinstance(m, dict)]
            match = [m for m in models if m.get("id") == self.model]
            self._listed = [str(m.get("id")) for m in models]  # checked once replicas are known (_check_served)
            if match:
                self.served = dict(match[0])
        for dialect, probe in (("vllm", {"prompt": "a", "add_special_tokens": False}),
                               ("llama.cpp", {"content": "a", "add_special": False})):
            try:
                self._server_tokenize(probe, retries=self.connect_retries)
            except (BackendRequestError, BackendUnavailableError):
                continue
            self.server_tokenizes, self.dialect = True, dialect
            break
        status, props = self._get_json(self.root + "/props")  # llama.cpp: the context of one slot
        if status == 200 and isinstance(props, dict) and isinstance(props.get("default_generation_settings"), dict):
            self.dialect = "llama.cpp"
            n_ctx = props["default_generation_settings"].get("n_ctx") or props.get("n_ctx")
            if isinstance(n_ctx, int) and n_ctx > 0:
                self.served["n_ctx"] = n_ctx

    def _discover_replicas(self) -> None:
        """Behind a router (vLLM's ``vllm-router``: ``GET /list_workers`` names the replicas; SGLang's
        ``sglang-router``: ``GET /workers``), learn per replica what the router may not pass on: the served model and its context (each
        replica's ``GET /models``; the smallest context of them is the run's) and the prefix-cache counters (each
        replica's ``/metrics``, summed). Requests in flight default to ``CONCURRENCY_PER_SERVER`` per replica.
        A replica the client cannot reach leaves what it would have said unknown; never an error."""
        for route in REPLICA_ROUTES:
            status, body = self._get_json(self.root + route)
            urls = replicas_listed(body) if status == 200 else []
            if urls:
                break
        else:
            return
        self.replicas = [u.rstrip("/") for u in urls]
        if self._asked_concurrency is None:
            self.concurrency = CONCURRENCY_PER_SERVER * len(self.replicas)
        if self.served.get("root") and self.served.get("max_model_len"):
            return
        listed_elsewhere = bool(self._listed) and not self.served
        said = []
        for url in self.replicas:
            try:
                status, body = self._get_json(url + "/v1/models")
            except BackendUnavailableError:
                continue
            models = body.get("data") if status == 200 and isinstance(body, dict) else None
            match = [m for m in models or [] if isinstance(m, dict) and m.get("id") == self.model]
            if match:
                said.append(match[0])
        if said:
            if listed_elsewhere:
                self._router_notes.append(f"lists its own models ({', '.join(self._listed[:3])}): {self.model!r} "
                                          "was found on its replicas")
            contexts = [m["max_model_len"] for m in said if isinstance(m.get("max_model_len"), int)]
            self.served = {**said[0], **self.served}
            if contexts:
                self.served["max_model_len"] = min(contexts)

    def _check_served(self) -> None:
        """The model must be among those the server lists, or, behind a router that lists its own (SGLang's router
        lists "unknown"), among those its replicas list."""
        if self._listed and not self.served:
            raise ConfigError(f"{self.where} does not serve model {self.model!r}; it serves: "
                              f"{', '.join(self._listed[:10])}")

    def _say_what_is_missing(self) -> None:
        """Once, on stderr and in the run's record (``backend_info.extra.serving_notes``): what this endpoint does
        not offer that the run would use, and what the run does without it. Said behind a router, where a route
        the replicas serve may not be passed on; a plain server's own routes are described in docs/serving.md."""
        import sys

        notes = list(self._router_notes)
        if not self.served.get("max_model_len") and not self.served.get("n_ctx") and not self._asked["context_length"]:
            notes.append("states no context (max_model_len): documents are not cut to fit; give --context-length")
        if not self.tokenizes:
            notes.append("no /tokenize: prompts are not counted; give --tokenizer (the model's own) to count them")
        if not self.server_metrics:
            notes.append("no vLLM /metrics: the run records no prefix-cache counters")
        self.serving_notes = notes
        self.info.extra["replicas"] = list(self.replicas)
        self.info.extra["serving_notes"] = notes
        if self.replicas and notes:
            print(f"note: {self.where} routes to {len(self.replicas)} replicas and " + "; ".join(notes),
                  file=sys.stderr)

    def _probe_prompt_logprobs(self) -> bool:
        """Does the completions endpoint return ``prompt_logprobs`` for token-id prompts (vLLM does)?"""
        import httpx

        ids = self._tokens_of_text("a")
        body = {"model": self.model, "prompt": [ids or [0]], "max_tokens": 1, "temperature": 0.0, "prompt_logprobs": 0}
        try:
            r = self._http.post(self.base_url.rstrip("/") + "/completions", json=body)
            choice = (r.json().get("choices") or [{}])[0] if r.status_code == 200 else {}
        except (httpx.HTTPError, ValueError, AttributeError):
            return False
        return isinstance(choice, dict) and isinstance(choice.get("prompt_logprobs"), list)

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

    def server_counters(self) -> dict[str, float] | None:
        """The server's prefix-cache counters (vLLM ``/metrics``) under the run metrics' names, or None."""
        return self._read_counters() if self.server_metrics else None

    def _read_counters(self) -> dict[str, float] | None:
        """The prefix-cache counters of the server, or behind a router the sum over its replicas (a router passes
        ``/metrics`` to one replica, or answers with its own): None where any of them has none to give."""
        import httpx

        totals: dict[str, float] = {}
        for root in self.replicas or [self.root]:
            try:
                r = self._http.get(root + "/metrics")
            except httpx.HTTPError:
                return None
            if r.status_code != 200 or "vllm:" not in r.text:
                return None
            for counter, n in prometheus_totals(r.text, tuple(PREFIX_CACHE_COUNTERS)).items():
                totals[counter] = totals.get(counter, 0.0) + n
        return {name: totals[counter] for counter, name in PREFIX_CACHE_COUNTERS.items()}

    # ---- tokenization -----------------------------------------------------------------------------
    @property
    def tokenizes(self) -> bool:
        return self.server_tokenizes or self._local_tokenizer is not None

    def _post(self, route: str, payload: dict, retries: int | None = None) -> Any:
        """POST a JSON body to one of the server's own routes (``/tokenize``, ``/apply-template``; called off the
        event loop) and return the answer's JSON. Transient faults (connection, 408/409/429/5xx, a 200 that is not
        JSON) are retried under the backend's ``RetryPolicy``, as model calls are; a refusal raises
        BackendRequestError."""
        import httpx

        started, attempt = time.monotonic(), 0
        while True:
            try:
                body, problem, asked = self._route_answer(route, self._http.post(self.root + route, json=payload))
            except httpx.HTTPError as e:
                body, problem, asked = None, connection_lost(e) or f"{type(e).__name__}: {e}", None
            if problem is None:
                return body
            time.sleep(self._next_wait(route, problem, asked, attempt, started, retries))
            attempt += 1

    async def _apost(self, route: str, payload: dict, retries: int | None = None) -> Any:
        """``_post`` on the event loop (the async client of the running loop): the same retries and refusals."""
        self._bind_loop()
        started, attempt = time.monotonic(), 0
        while True:
            try:
                async with self._semaphore():  # a queue in our hands: httpcore's pool is slow with a long one
                    r = await self._ahttp.post(self.root + route, json=payload)
                body, problem, asked = self._route_answer(route, r)
            except async_http_client().errors as e:
                body, problem, asked = None, connection_lost(e) or f"{type(e).__name__}: {e}", None
            if problem is None:
                return body
            await asyncio.sleep(self._next_wait(route, problem, asked, attempt, started, retries))
            attempt += 1

    def _route_answer(self, route: str, r) -> tuple[Any, str | None, float | None]:
        """A route's answer: (its JSON, None, None); (None, the fault, the wait it asks) for a transient fault (408,
        409, 429, 5xx, a 200 that is not JSON); a refusal (another status) raises BackendRequestError."""
        if r.status_code == 200:
            try:
                return r.json(), None, None
            except ValueError:
                return None, f"an answer that is not JSON: {r.text[:200]}", None
        if r.status_code in RETRYABLE_STATUS:
            return None, f"HTTP {r.status_code}", asked_wait(r.headers.get("retry-after"))
        raise BackendRequestError(f"{self.where}: {route} refused (HTTP {r.status_code}): {r.text[:200]}")

    def _next_wait(self, route: str, problem: str, asked: float | None, attempt: int, started: float,
                   retries: int | None) -> float:
        """Seconds to wait before trying ``route`` again; BackendUnavailableError when the policy gives up."""
        wait = self.retry.delay(attempt, started, asked, retries=retries)
        if wait is None:
            raise BackendUnavailableError(f"{self.where}: {route} did not answer after {attempt + 1} attempts: "
                                          f"{problem}")
        self.retries += 1
        return wait

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
        from array import array

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

    # ---- requests -----------------------------------------------------------------------------------
    def _semaphore(self) -> asyncio.Semaphore:
        self._bind_loop()
        return self._sem

    @property
    def client(self):
        """The async client of the running event loop: its connections belong to that loop, and every
        ``run_sync`` (a notebook cell, a run) runs a loop of its own."""
        self._bind_loop()
        return self._client_obj

    def _bind_loop(self) -> None:
        loop = asyncio.get_running_loop()
        if self._sem_loop is not loop:
            self._sem, self._sem_loop = asyncio.Semaphore(self.concurrency), loop
            make = async_http_client()
            # as many connections as requests in flight, all kept alive (httpx's default keeps 20 and reconnects)
            limits = make.limits(max_connections=self.concurrency, max_keepalive_connections=self.concurrency)
            self._client_obj = self._openai.AsyncOpenAI(**self._client_args,
                                                        http_client=make.client(timeout=self.timeout, limits=limits))
            on_loop_close(self._client_obj.close)
            self._ahttp = make.client(timeout=min(self.timeout, 60.0), limits=limits,
                                      headers={"Authorization": f"Bearer {self._key}"})
            on_loop_close(self._ahttp.aclose)

    async def _call(self, create, check=None, **kwargs):
        """One request through ``create`` (chat or completions), retried on transport faults: timeouts, dropped
        connections, 408/409/429/5xx (waiting what ``Retry-After`` asks), and 200 answers that ``check`` finds
        malformed. A refusal (another 4xx) raises BackendRequestError at once; running out of attempts or of
        ``max_retry_time`` raises BackendUnavailableError. Nothing a server got wrong is returned as an answer."""
        oa = self._openai
        last: Exception | None = None
        start = time.monotonic()
        attempt = 0
        while True:
            wait = None
            session = _SESSION.get()
            if session:
                kwargs["extra_headers"] = dict.fromkeys(SESSION_HEADERS, session)
            try:
                async with self._semaphore():
                    resp = await create(model=self.model, **kwargs)
                self.connected = True
                if check is not None:
                    check(resp)
                return resp
            except MalformedAnswer as e:
                last = e
            except oa.APIConnectionError as e:  # a timeout (APITimeoutError), or a connection refused or dropped
                last = e
                timed_out = isinstance(e, oa.APITimeoutError) and connection_lost(e) is None
                if not timed_out and not self.connected and attempt >= self.connect_retries:
                    break  # never reached the server: a wrong URL or a server that is not up; say so now
            except (oa.RateLimitError, oa.InternalServerError) as e:
                last, wait = e, retry_after(e)
            except oa.APIStatusError as e:
                if e.status_code not in RETRYABLE_STATUS:  # 400 (e.g. prompt over the context), 401, 404 (model name)
                    raise BackendRequestError(f"{self.where} refused the request "
                                              f"(HTTP {e.status_code}): {e.message}") from e
                last, wait = e, retry_after(e)
            except (oa.APIResponseValidationError, ValueError) as e:  # a body that is not a completion's JSON
                last = MalformedAnswer(f"unreadable response body ({type(e).__name__}: {e})")
            delay = self.retry.delay(attempt, start, wait)
            if delay is None:
                break
            self.retries += 1
            await asyncio.sleep(delay)
            attempt += 1
        lost = connection_lost(last)
        if lost and self.connected:
            raise BackendUnavailableError(f"{self.where} went away: {lost} after it had answered (did the server stop "
                                          f"or crash?); {attempt + 1} attempts")
        if lost:
            raise BackendUnavailableError(f"{self.where} is not reachable ({lost}); is the server up and the "
                                          "--base-url right?")
        raise BackendUnavailableError(f"{self.where} did not answer after {attempt + 1} attempts: "
                                      f"{type(last).__name__}: {last}")

    @staticmethod
    def _check_chat(resp) -> None:
        choices = getattr(resp, "choices", None)
        if not choices:
            raise MalformedAnswer("the answer has no choices")
        msg = getattr(choices[0], "message", None)
        if msg is None or not isinstance(getattr(msg, "content", None), str):
            raise MalformedAnswer("the answer's message content is null")

    def _check_cut(self, resp, max_tokens: int, cuts: list | None = None) -> None:
        """``finish_reason=length`` means the answer reached ``max_tokens`` or the model's context. One that
        stopped short of both (per the server's own usage) was ended by the server: a fault, retried and never
        cached. Where the server does not say its context, a short length finish may be a real cut at the
        context or a fault: the same request (same seed) is asked again, and the cut is kept as an answer only
        when the server gives the same cut ``CUT_CONFIRMATIONS`` + 1 times in a row (a real cut is cut again; a
        fault's retry gives the fault-free answer, and the same fault that many times running is unlikely).
        ``cuts``: the short cuts this request got so far."""
        ch = resp.choices[0]
        usage = getattr(resp, "usage", None)
        done = getattr(usage, "completion_tokens", None)
        if ch.finish_reason != "length" or done is None or done >= max_tokens:
            return
        if not self.context_length:
            cut = (ch.message.content, done)
            before = (cuts or [])[-CUT_CONFIRMATIONS:]
            if len(before) == CUT_CONFIRMATIONS and all(c == cut for c in before):
                return  # the same cut again and again: a real cut at a context the server does not state
            if cuts is not None:
                cuts.append(cut)
            raise MalformedAnswer(f"the server ended the answer at {done} of {max_tokens} tokens with "
                                  "finish_reason=length and states no context: asked again, to tell a cut from a "
                                  "fault")
        prompt = getattr(usage, "prompt_tokens", None) or 0
        if prompt + done >= self.context_length:
            return  # the context is full: a real cut
        raise MalformedAnswer(f"the server ended the answer at {done} of {max_tokens} tokens with "
                              "finish_reason=length (neither max_tokens nor the context was reached)")

    def _check_answer(self, max_tokens: int):
        cuts: list = []  # this request's short cuts (a server that states no context)

        def check(resp) -> None:
            self._check_chat(resp)
            self._check_cut(resp, max_tokens, cuts)
        return check

    @staticmethod
    def _check_any(resp) -> None:
        if not getattr(resp, "choices", None):
            raise MalformedAnswer("the answer has no choices")

    def _check_fits(self, tag: str, prompt_tokens: int, max_new_tokens: int) -> None:
        if self.context_length and prompt_tokens + max_new_tokens > self.context_length:
            raise PromptTooLongError(tag, prompt_tokens, max_new_tokens, self.context_length)

    async def _one(self, r: ChatRequest) -> ChatResponse:
        t0 = time.perf_counter()
        if self.tokenizes and self.context_length:  # never let the server cut the answer short
            if not await certainly_fits(r.messages, r.max_new_tokens, self.context_length, self.aprompt_tokens):
                self._check_fits(r.tag, await self.aprompt_tokens(r.messages), r.max_new_tokens)
        elif not self.context_length:  # nothing to fit against: refuse what no served model reads
            chars = sum(len(m.get("content") or "") for m in r.messages)
            if chars > MAX_PROMPT_CHARS_UNKNOWN_CONTEXT:
                raise PromptTooLongError(r.tag, chars, r.max_new_tokens, MAX_PROMPT_CHARS_UNKNOWN_CONTEXT,
                                         unit="characters", note=f"{self.where} does not state its context; give it "
                                         "(context_length) so that documents are cut to fit")
        kw = dict(messages=r.messages, temperature=r.temperature, max_tokens=r.max_new_tokens, n=1)
        if not r.greedy:
            kw["top_p"] = r.top_p
            # one seed per (seed, sample) so samples differ and each one is reproducible where the server honours seeds
            kw["seed"] = ((r.seed or 0) * 1_000_003 + r.sample_index) % (2 ** 31)
        if r.stop:  # the API takes four; the others are applied to the answer below
            kw["stop"] = list(r.stop)[:SERVER_STOP_LIMIT]
        if self.extra_body:
            kw["extra_body"] = self.extra_body
        resp = await self._call(self._post_chat, check=self._check_answer(r.max_new_tokens), **kw)
        ch = resp.choices[0]
        usage = resp.usage
        text, finish = ch.message.content, ch.finish_reason or "stop"
        cut = apply_stops(text, r.stop[SERVER_STOP_LIMIT:])
        if cut is not None:  # completion_tokens stay the server's count (the tokens it generated)
            text, finish = cut, "stop"
        details = getattr(usage, "prompt_tokens_details", None)
        cached = getattr(details, "cached_tokens", None)
        replica = getattr(resp, "system_fingerprint", None)
        return ChatResponse(text=text, finish_reason=finish,
                            prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
                            completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
                            latency_s=time.perf_counter() - t0, backend="openai", model=self.model,
                            served_by=replica if isinstance(replica, str) and replica else None,
                            cached_tokens=cached if isinstance(cached, int) else None)

    async def _post_chat(self, **body):
        """``POST /chat/completions`` with ``body`` as given: the SDK's request path (its errors, which ``_call``
        retries) without its per-call transformation of the parameters, which at scale costs the client more time
        than the request itself. ``extra_body`` joins the body, as the SDK does it."""
        from openai.types.chat import ChatCompletion

        extra = body.pop("extra_body", None) or {}
        headers = body.pop("extra_headers", None)
        return await self.client.post("/chat/completions", body={**body, **extra}, cast_to=ChatCompletion,
                                      options={"headers": headers} if headers else {})

    async def generate(self, reqs: list[ChatRequest], on_results=None,
                       sessions: list[str | None] | None = None) -> list[ChatResponse | Exception]:
        return await self._each(self._one, reqs, on_results, sessions)

    @staticmethod
    async def _each(fn, reqs, on_results, sessions=None):
        async def one(i, r):
            if sessions:  # this request's task only (gather runs each in a task of its own context)
                _SESSION.set(sessions[i])
            try:
                res = await fn(r)
            except Exception as e:  # reported per request; the engine hands it to that request's caller
                res = e
            if on_results:
                on_results([(i, res)])
            return res

        return list(await asyncio.gather(*(one(i, r) for i, r in enumerate(reqs))))

    # ---- option scoring -----------------------------------------------------------------------------
    def option_sequences(self, r: OptionRequest) -> tuple[list[list[int]], int]:
        """Token ids of prompt + prefix + option for each option, and where the option tokens start; the
        boundary rule is the hf backend's (an option merged into the prefix by tokenization is tokenized
        on its own after the prefix)."""
        prompt = self.encode(r.messages)
        pre = self._tokens_of_text(r.prefix) if r.prefix else []
        seqs = []
        for opt in r.options:
            full = self._tokens_of_text(r.prefix + opt)
            if full[: len(pre)] != pre:
                full = pre + self._tokens_of_text(opt)
            seqs.append(prompt + full)
        return seqs, len(prompt) + len(pre)

    async def _score_exact(self, r: OptionRequest) -> OptionScores:
        """log p(option | prompt, prefix) summed over the option's tokens, from ``prompt_logprobs`` of the
        completions endpoint: one request per option set (one prompt per option; vLLM's prefix cache
        computes the shared prompt once)."""
        t0 = time.perf_counter()
        seqs, start = await asyncio.to_thread(self.option_sequences, r)
        for ids in seqs:
            self._check_fits(r.tag, len(ids), 1)
        resp = await self._call(self.client.completions.create, check=self._check_any, prompt=seqs, max_tokens=1,
                                temperature=0.0, extra_body={"prompt_logprobs": 0})
        raw: dict[str, float] = {}
        by_index = {getattr(c, "index", i): c for i, c in enumerate(resp.choices)}
        for k, (opt, ids) in enumerate(zip(r.options, seqs)):
            plp = getattr(by_index.get(k), "prompt_logprobs", None)
            if not isinstance(plp, list) or len(plp) != len(ids):
                raise OptionScoringError(f"{self.where} returned no prompt_logprobs for option {opt!r} of {r.tag!r}")
            total = 0.0
            for pos in range(start, len(ids)):
                entry = (plp[pos] or {}).get(str(ids[pos]))
                if not isinstance(entry, dict) or "logprob" not in entry:
                    raise OptionScoringError(f"{self.where} left out the logprob of token {ids[pos]} of option "
                                             f"{opt!r} of {r.tag!r}")
                total += float(entry["logprob"])
            raw[opt] = total
        return OptionScores(probs=normalise_logprobs(raw), logprobs=raw, method="prompt_logprobs", backend="openai",
                            model=self.model, latency_s=time.perf_counter() - t0,
                            coverage=min(1.0, sum(math.exp(v) for v in raw.values())))

    async def _score_top(self, r: OptionRequest) -> OptionScores:
        """First-token probabilities from ``top_logprobs`` (servers without ``prompt_logprobs``): an option's
        mass is the sum over returned tokens whose text (stripped) equals it. Options outside the top list get
        probability 0, so ``coverage`` (the options' mass) must reach ``min_coverage`` or the scoring fails."""
        t0 = time.perf_counter()
        messages = list(r.messages)
        extra = {}
        if r.prefix:  # continue a partial assistant turn (vLLM extension)
            messages = messages + [{"role": "assistant", "content": r.prefix}]
            extra = {"extra_body": {"continue_final_message": True, "add_generation_prompt": False}}
        resp = await self._call(self.client.chat.completions.create, check=self._check_any, messages=messages,
                                temperature=0.0, max_tokens=1, logprobs=True, top_logprobs=self.top_logprobs, **extra)
        content = resp.choices[0].logprobs.content if resp.choices[0].logprobs else None
        if not content:
            raise OptionScoringError(f"{self.where} returned no logprobs for {r.tag!r}")
        mass = {o: 0.0 for o in r.options}
        for t in content[0].top_logprobs:
            tok = t.token.strip()
            if tok in mass:
                mass[tok] += math.exp(t.logprob)
        cov = sum(mass.values())
        if cov < self.min_coverage or cov == 0:
            raise OptionScoringError(f"the options {r.options} hold {cov:.3g} of the probability among the top "
                                     f"{self.top_logprobs} tokens for {r.tag!r} (min_coverage {self.min_coverage}); "
                                     "renormalising that would not be a probability")
        raw = {o: (math.log(p) if p > 0 else None) for o, p in mass.items()}
        return OptionScores(probs={o: p / cov for o, p in mass.items()}, logprobs=raw, method="top_logprobs",
                            backend="openai", model=self.model, latency_s=time.perf_counter() - t0, coverage=cov)

    async def score(self, reqs: list[OptionRequest], on_results=None,
                    sessions: list[str | None] | None = None) -> list[OptionScores | Exception]:
        fn = self._score_exact if self.option_scoring == "prompt_logprobs" else self._score_top
        return await self._each(fn, reqs, on_results, sessions)
