"""The openai backend's HTTP calls: one ``RetryPolicy`` for every call, the async clients of each event loop and
the semaphore bounding the requests in flight, the retry loop of model calls (``_call``) and of the server's own
routes (``_get_json``, ``_post``, ``_apost``), and the fan-out of a batch with each request's session key
(``_each``)."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import random
import time
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any

from sumjudge.llm.errors import BackendRequestError, BackendUnavailableError
from sumjudge.llm.loops import on_loop_close

if TYPE_CHECKING:
    import httpx

RETRYABLE_STATUS = {408, 409, 429, 500, 502, 503, 504}
# Behind a router: the example a request belongs to, sent as the session key routers hash to keep a session on one
# replica (vLLM's router, --policy consistent_hash: X-Session-ID; SGLang's: x-smg-routing-key)
SESSION_HEADERS = ("X-Session-ID", "x-smg-routing-key")
_SESSION: contextvars.ContextVar[str | None] = contextvars.ContextVar("sumjudge_openai_session", default=None)


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



class OpenAIHTTP:
    """The HTTP calls of the backend; the state they use is set by ``OpenAIBackend``."""

    model: str
    base_url: str
    where: str  # the server in every message: never the credentials a URL may carry
    root: str  # the server's root, for its own routes (``server_root``)
    timeout: float
    retry: RetryPolicy
    connect_retries: int
    concurrency: int  # requests in flight (a router's replicas raise it)
    retries: int  # accounting: retried HTTP calls
    connected: bool  # set by the first answer; before it, connection errors fail fast
    _openai: Any  # the SDK's module
    _key: str
    _client_args: dict[str, Any]  # how the SDK's client of each loop is made
    _http: httpx.Client  # the synchronous client, for discovery and the server's own routes off the event loop
    _client_obj: Any  # the SDK's async client of the running loop
    _ahttp: Any  # the async client of the running loop, for the server's own routes (``async_http_client``)
    _sem: asyncio.Semaphore | None
    _sem_loop: asyncio.AbstractEventLoop | None

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

    def _semaphore(self) -> asyncio.Semaphore:
        self._bind_loop()
        assert self._sem is not None  # made for the running loop
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
