"""Any OpenAI-compatible server through ``openai.AsyncOpenAI``: the OpenAI API, vLLM, TGI, Ollama.

The engine hands over every pending request at once; they go out concurrently (bounded by
``concurrency``) and the server batches them (vLLM: continuous batching and prefix caching, which
is why every prompt puts the document first). Rate limits, server errors, timeouts and dropped
connections are retried with exponential backoff and jitter; usage is read from the responses.
"""

from __future__ import annotations

import asyncio
import math
import os
import random
import time

from .errors import BackendRequestError, BackendUnavailableError, OptionScoringError
from .types import BackendInfo, ChatRequest, ChatResponse, OptionRequest, OptionScores, server_identity

RETRYABLE_STATUS = {408, 409, 429, 500, 502, 503, 504}


class MalformedAnswer(Exception):
    """A 200 answer that is not a usable completion (no choices, null content, a body that is not JSON): a
    fault of the server, retried like a 5xx and never cached or parsed."""


def retry_after(e: Exception) -> float | None:
    """Seconds a 429/503 answer asks us to wait (``Retry-After``: seconds or an HTTP date), if it says."""
    resp = getattr(e, "response", None)
    value = resp.headers.get("retry-after") if resp is not None and hasattr(resp, "headers") else None
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


class OpenAIBackend:
    name = "openai"
    max_inflight = 1_000_000  # dispatch every batch at once; the semaphore bounds requests on the wire

    def __init__(self, model: str, *, base_url: str | None = None, api_key: str | None = None,
                 concurrency: int = 32, max_retries: int = 6, timeout: float = 600.0, backoff: float = 1.0,
                 max_backoff: float = 60.0, top_logprobs: int = 20, connect_retries: int = 2,
                 max_retry_time: float = 900.0):
        import openai

        self._openai = openai
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL")
        key = api_key or os.environ.get("OPENAI_API_KEY") or "EMPTY"  # local servers take any key
        self.client = openai.AsyncOpenAI(base_url=self.base_url, api_key=key, max_retries=0, timeout=timeout)
        self.model = model
        self.concurrency = concurrency
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.max_retry_time = max_retry_time  # bound on the time one request spends waiting to be retried
        self.top_logprobs = top_logprobs
        self._sem: asyncio.Semaphore | None = None
        self._sem_loop = None
        server = server_identity(self.base_url or "https://api.openai.com/v1")
        self.where = server  # in every message: never the credentials a URL may carry
        self.info = BackendInfo(name="openai", model=model, revision="", extra={"base_url": server}, server=server)
        self.retries = 0  # accounting: retried HTTP calls
        self.connect_retries = connect_retries
        self.connected = False  # set by the first answer; before it, connection errors fail fast

    def _semaphore(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        if self._sem is None or self._sem_loop is not loop:
            self._sem, self._sem_loop = asyncio.Semaphore(self.concurrency), loop
        return self._sem

    async def _call(self, check=None, **kwargs):
        """One completion, retried on transport faults: timeouts, dropped connections, 408/409/429/5xx (waiting
        what ``Retry-After`` asks), and 200 answers that ``check`` finds malformed. A refusal (another 4xx)
        raises BackendRequestError at once; running out of attempts or of ``max_retry_time`` raises
        BackendUnavailableError. Nothing a server got wrong is returned as an answer."""
        oa = self._openai
        last: Exception | None = None
        start = time.monotonic()
        for attempt in range(self.max_retries + 1):
            wait = None
            try:
                async with self._semaphore():
                    resp = await self.client.chat.completions.create(model=self.model, **kwargs)
                self.connected = True
                if check is not None:
                    check(resp)
                return resp
            except MalformedAnswer as e:
                last = e
            except oa.APITimeoutError as e:
                last = e
            except oa.APIConnectionError as e:
                last = e
                if not self.connected and attempt >= self.connect_retries:
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
            if attempt < self.max_retries:
                delay = min(self.max_backoff, self.backoff * 2 ** attempt) * (0.5 + random.random() / 2)
                delay = max(delay, wait or 0.0)
                if time.monotonic() - start + delay > self.max_retry_time:
                    break
                self.retries += 1
                await asyncio.sleep(delay)
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

    @staticmethod
    def _check_any(resp) -> None:
        if not getattr(resp, "choices", None):
            raise MalformedAnswer("the answer has no choices")

    async def _one(self, r: ChatRequest) -> ChatResponse:
        t0 = time.perf_counter()
        kw = dict(messages=r.messages, temperature=r.temperature, max_tokens=r.max_new_tokens, n=1)
        if not r.greedy:
            kw["top_p"] = r.top_p
            # one seed per (seed, sample) so samples differ and each one is reproducible where the server honours seeds
            kw["seed"] = ((r.seed or 0) * 1_000_003 + r.sample_index) % (2 ** 31)
        if r.stop:
            kw["stop"] = list(r.stop)[:4]
        resp = await self._call(check=self._check_chat, **kw)
        ch = resp.choices[0]
        usage = resp.usage
        return ChatResponse(text=ch.message.content, finish_reason=ch.finish_reason or "stop",
                            prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
                            completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
                            latency_s=time.perf_counter() - t0, backend="openai", model=self.model)

    streams_results = True  # each response is reported as soon as it arrives

    async def generate(self, reqs: list[ChatRequest], on_results=None) -> list[ChatResponse | Exception]:
        return await self._each(self._one, reqs, on_results)

    @staticmethod
    async def _each(fn, reqs, on_results):
        async def one(i, r):
            try:
                res = await fn(r)
            except Exception as e:  # reported per request; the engine hands it to that request's caller
                res = e
            if on_results:
                on_results([(i, res)])
            return res

        return list(await asyncio.gather(*(one(i, r) for i, r in enumerate(reqs))))

    async def _score_one(self, r: OptionRequest) -> OptionScores:
        """First-token probabilities from ``top_logprobs``: an option's mass is the sum over returned
        tokens whose text (stripped) equals it. Options outside the top list get probability 0;
        ``coverage`` says how much of the distribution the options hold."""
        t0 = time.perf_counter()
        messages = list(r.messages)
        extra = {}
        if r.prefix:  # continue a partial assistant turn (vLLM extension)
            messages = messages + [{"role": "assistant", "content": r.prefix}]
            extra = {"extra_body": {"continue_final_message": True, "add_generation_prompt": False}}
        resp = await self._call(check=self._check_any, messages=messages, temperature=0.0, max_tokens=1,
                                logprobs=True, top_logprobs=self.top_logprobs, **extra)
        content = resp.choices[0].logprobs.content if resp.choices[0].logprobs else None
        if not content:
            raise OptionScoringError(f"{self.where} returned no logprobs for {r.tag!r}")
        mass = {o: 0.0 for o in r.options}
        for t in content[0].top_logprobs:
            tok = t.token.strip()
            if tok in mass:
                mass[tok] += math.exp(t.logprob)
        cov = sum(mass.values())
        if cov == 0:
            raise OptionScoringError(f"none of the options {r.options} is among the top {self.top_logprobs} "
                                          f"tokens for {r.tag!r}; use the sampling variant")
        raw = {o: (math.log(p) if p > 0 else None) for o, p in mass.items()}
        return OptionScores(probs={o: p / cov for o, p in mass.items()}, logprobs=raw, method="top_logprobs",
                            backend="openai", model=self.model, latency_s=time.perf_counter() - t0, coverage=cov)

    async def score(self, reqs: list[OptionRequest], on_results=None) -> list[OptionScores | Exception]:
        return await self._each(self._score_one, reqs, on_results)
