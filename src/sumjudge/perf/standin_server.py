"""A stand-in OpenAI-compatible server for scale tests: it answers at once (or after a latency you set), in forms the
protocols' parsers read, so that the client's own cost (engine, cache, logs, HTTP) can be measured at the paper's
size on a laptop. It is not a model: its labels are a hash of the prompt.

Routes, as vLLM serves them: ``GET /v1/models`` (the model, ``max_model_len``), ``POST /v1/chat/completions``
(usage reported: prompt tokens = the prompt's words and punctuation marks, completion tokens likewise),
``POST /tokenize`` (``messages`` or ``prompt``: the same count, as token ids) and ``GET /stats`` (requests served and
the number in flight over time, prompt tokens and how many of them came from its prefix store; ``POST /stats/reset``
starts them and the store again), ``GET /metrics`` (vLLM's prefix-cache counters: the same prompt and cached tokens)
and ``GET /health``.
Answers: a prompt asking for ``<label>`` tags (the debates' agents and adjudicators,
zero-shot, chain-of-thought) gets an argument, an explanation and a 0/1 label; the steps that list, rate and score
error instances get their JSON; anything else a label.

Latency: ``latency_s`` per request, plus ``completion tokens / tokens_per_s``; at most ``slots`` requests are
served at once (the others wait, as a server's queue does). Bounded: it listens on 127.0.0.1 only, answers at most
``max_requests`` requests (then 503) and stops after ``lifetime_s`` seconds.

Replicas: several stand-ins behind a router are told apart by ``replica`` (``--replica NAME``), which each answer
carries as its ``system_fingerprint``. Each keeps a prefix store as vLLM's automatic prefix caching does: a prompt's
tokens in blocks of ``PREFIX_BLOCK`` tokens, each block known by the hash of everything up to its end; a prompt's
leading blocks already seen by this replica are its cached tokens, reported as vLLM reports them
(``usage.prompt_tokens_details.cached_tokens``). The store holds at most ``prefix_blocks`` blocks (the least recently
used go first), as a server's KV cache holds a bounded number.

``python -m sumjudge.perf.standin_server --latency 2 --slots 64`` serves until stopped and prints its base URL first.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import re
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from sumjudge.errors import ConfigError

TOKEN = re.compile(r"\w+|[^\w\s]")
PREFIX_BLOCK = 16  # tokens per block of the prefix store (vLLM's default block size)


def tokens(text: str) -> int:
    """The stand-in's token count: words and punctuation marks (close to a BPE tokenizer's count on English)."""
    return len(TOKEN.findall(text))


def _bit(text: str) -> int:
    return hashlib.blake2b(text.encode("utf-8", "replace"), digest_size=1).digest()[0] & 1


def answer(messages: list[dict[str, Any]]) -> str:
    """An answer the protocol's parser reads, chosen by what the last message asks for."""
    text = str(messages[-1].get("content", "")) if messages else ""
    bit = _bit(text)
    if "Step 1 is to collect possible error instances" in text:
        return json.dumps([{"instance": "stand-in", "reasoning": "stand-in", "certainty": "60"}] if bit else [])
    if "Step 2 is to rate the severity" in text:
        return json.dumps([{"instance": "stand-in", "reasoning": "stand-in", "severity": "4", "certainty": "60",
                            "error_exists": bool(bit)}])
    if "<label>" in text or '"rating"' not in text:
        return (f"<argument>Sentence by sentence, the summary {'is' if bit else 'is not'} supported.</argument>\n"
                f"<explanation>A stand-in answer.</explanation>\n<label>{bit}</label>")
    return json.dumps({"reasoning": "stand-in", "confidence": 7, "rating": 2 * bit})


def chat_text(messages: list[dict[str, Any]]) -> str:
    """The prompt as the stand-in's chat template renders it (what ``/tokenize`` counts and the prefix store sees)."""
    return "".join(f"<|{m.get('role')}|>{m.get('content', '')}" for m in messages) + "<|assistant|>"


class PrefixStore:
    """Which prompt prefixes one replica has seen, in whole blocks of ``PREFIX_BLOCK`` tokens, at most ``blocks`` of
    them (least recently used dropped first)."""

    def __init__(self, blocks: int):
        self.blocks = blocks
        self._seen: OrderedDict[int, None] = OrderedDict()

    def admit(self, toks: list[str]) -> int:
        """The prompt's tokens already held as a prefix (a multiple of the block size); the prompt's blocks are
        then held."""
        cached, prefix_seen, h = 0, True, 0
        for start in range(0, len(toks) - len(toks) % PREFIX_BLOCK, PREFIX_BLOCK):
            h = hash((h, tuple(toks[start:start + PREFIX_BLOCK])))
            if prefix_seen and h in self._seen:
                cached += PREFIX_BLOCK
                self._seen.move_to_end(h)
                continue
            prefix_seen = False
            self._seen[h] = None
            if len(self._seen) > self.blocks:
                self._seen.popitem(last=False)
        return cached


@dataclass
class Stats:
    started: float = field(default_factory=time.monotonic)
    requests: int = 0
    chat: int = 0
    tokenize: int = 0
    prompt_tokens: int = 0  # of chat requests
    cached_tokens: int = 0  # of those, found in the prefix store
    in_flight: int = 0
    max_in_flight: int = 0
    waiting: int = 0  # received, waiting for a slot
    max_waiting: int = 0
    timeline: list[tuple[float, int]] = field(default_factory=list)  # (seconds since start, chat requests in flight)

    def move(self, delta: int) -> None:
        self.in_flight += delta
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        self.timeline.append((round(time.monotonic() - self.started, 4), self.in_flight))

    def as_dict(self) -> dict[str, Any]:
        return {"requests": self.requests, "chat": self.chat, "tokenize": self.tokenize,
                "prompt_tokens": self.prompt_tokens, "cached_tokens": self.cached_tokens,
                "max_in_flight": self.max_in_flight, "max_waiting": self.max_waiting, "timeline": self.timeline}


class StandinServer:
    """The stand-in server on its own event loop in a background thread (``with StandinServer(...) as s:``), or in
    the calling loop (``await s.serve()``)."""

    def __init__(self, model: str = "standin", *, latency_s: float = 0.0, tokens_per_s: float | None = None,
                 slots: int = 1024, max_model_len: int = 131072, max_requests: int = 10_000_000,
                 lifetime_s: float = 24 * 3600.0, port: int = 0, tokenize: bool = True, replica: str = "standin",
                 prefix_blocks: int = 1_000_000):
        if latency_s < 0 or slots < 1 or (tokens_per_s is not None and tokens_per_s <= 0):
            raise ConfigError("latency_s >= 0, slots >= 1 and tokens_per_s > 0 (or None)")
        self.model, self.latency_s, self.tokens_per_s = model, latency_s, tokens_per_s
        self.slots, self.max_model_len, self.max_requests, self.lifetime_s = slots, max_model_len, max_requests, lifetime_s
        self.port = port
        self.tokenize = tokenize  # serve /tokenize (vLLM does; a server without it leaves prompts uncounted)
        self.replica = replica
        self.prefix = PrefixStore(prefix_blocks)
        self.stats = Stats()
        self._server: asyncio.base_events.Server | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # ---- HTTP ---------------------------------------------------------------------------------
    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, path = lines[0].split(" ")[:2]
                headers = {k.strip().lower(): v.strip() for k, _, v in (x.partition(":") for x in lines[1:] if x)}
                body = await reader.readexactly(int(headers.get("content-length", 0) or 0))
                status, payload = await self._route(method, path.split("?")[0], body)
                text = isinstance(payload, str)  # /metrics: Prometheus text
                data = payload.encode() if text else json.dumps(payload).encode()
                kind = b"text/plain; version=0.0.4" if text else b"application/json"
                writer.write(b"HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n"
                             % (status, b"OK" if status == 200 else b"ERR", kind, len(data)) + data)
                await writer.drain()
                if headers.get("connection", "").lower() == "close":
                    break
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError, ValueError):
            pass
        finally:
            writer.close()

    async def _route(self, method: str, path: str, body: bytes) -> tuple[int, dict | str]:
        st = self.stats
        st.requests += 1
        if st.requests > self.max_requests:
            return 503, {"error": {"message": f"the stand-in answers at most {self.max_requests} requests"}}
        if method == "GET" and path.rstrip("/").endswith("/models"):
            return 200, {"object": "list", "data": [{"id": self.model, "object": "model", "root": self.model,
                                                      "max_model_len": self.max_model_len}]}
        if method == "GET" and path == "/health":
            return 200, {}
        if method == "GET" and path == "/metrics":  # vLLM's prefix-cache counters, by its names
            return 200, (f'vllm:prefix_cache_queries_total{{model_name="{self.model}"}} {float(st.prompt_tokens)}\n'
                         f'vllm:prefix_cache_hits_total{{model_name="{self.model}"}} {float(st.cached_tokens)}\n')
        if method == "POST" and path == "/stats/reset":  # a fleet forgets its start-up's requests
            self.stats, self.prefix = Stats(), PrefixStore(self.prefix.blocks)
            return 200, {}
        if method == "GET" and path == "/stats":
            return 200, {"replica": self.replica, **st.as_dict()}
        try:
            req = json.loads(body or b"{}")
        except ValueError:
            return 400, {"error": {"message": "the body is not JSON"}}
        if method == "POST" and path == "/tokenize" and self.tokenize:
            st.tokenize += 1
            if "messages" in req:
                text = chat_text(req["messages"])
            else:
                text = str(req.get("prompt", ""))
            n = tokens(text)
            return 200, {"count": n, "max_model_len": self.max_model_len, "tokens": list(range(n))}
        if method == "POST" and path.endswith("/chat/completions"):
            return 200, await self._chat(req)
        return 404, {"error": {"message": f"no route {method} {path}"}}

    async def _chat(self, req: dict) -> dict:
        st = self.stats
        st.chat += 1
        messages = req.get("messages") or []
        text = answer(messages)
        prompt = sum(tokens(str(m.get("content", ""))) for m in messages)
        cached = min(prompt, self.prefix.admit(TOKEN.findall(chat_text(messages))))
        st.prompt_tokens += prompt
        st.cached_tokens += cached
        done = tokens(text)
        st.waiting += 1
        st.max_waiting = max(st.max_waiting, st.waiting)
        async with self._slots:
            st.waiting -= 1
            st.move(+1)
            wait = self.latency_s + (done / self.tokens_per_s if self.tokens_per_s else 0.0)
            if wait:
                await asyncio.sleep(wait)
            st.move(-1)
        n = int(req.get("n") or 1)
        return {"id": f"standin-{st.chat}", "object": "chat.completion", "created": int(time.time()), "model": self.model,
                "system_fingerprint": self.replica,
                "choices": [{"index": i, "message": {"role": "assistant", "content": text}, "finish_reason": "stop",
                             "logprobs": None} for i in range(n)],
                "usage": {"prompt_tokens": prompt, "completion_tokens": done * n, "total_tokens": prompt + done * n,
                          "prompt_tokens_details": {"cached_tokens": cached}}}

    # ---- lifetime -----------------------------------------------------------------------------
    async def serve(self, announce: bool = False) -> None:
        """Serve until ``lifetime_s`` has passed or ``stop()`` is called."""
        self._loop = asyncio.get_running_loop()
        self._slots = asyncio.Semaphore(self.slots)
        self._stopped = asyncio.Event()
        self._server = await asyncio.start_server(self._client, "127.0.0.1", self.port, limit=2 ** 24)
        self.port = self._server.sockets[0].getsockname()[1]
        if announce:
            print(self.base_url, flush=True)
        self._ready.set()
        try:
            await asyncio.wait_for(self._stopped.wait(), self.lifetime_s)
        except asyncio.TimeoutError:
            pass
        finally:
            self._server.close()

    def stop(self) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._stopped.set)

    def __enter__(self) -> "StandinServer":
        self._thread = threading.Thread(target=lambda: asyncio.run(self.serve()), daemon=True)
        self._thread.start()
        if not self._ready.wait(30):
            raise RuntimeError("the stand-in server did not start")
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
        if self._thread is not None:
            self._thread.join(10)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m sumjudge.perf.standin_server", description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="standin")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--latency", type=float, default=0.0, help="seconds per request")
    p.add_argument("--tokens-per-s", type=float, default=None, help="decode speed of one slot (none: instant)")
    p.add_argument("--slots", type=int, default=1024, help="requests served at once; others wait")
    p.add_argument("--max-model-len", type=int, default=131072)
    p.add_argument("--max-requests", type=int, default=10_000_000)
    p.add_argument("--lifetime", type=float, default=4 * 3600.0, help="seconds before it stops by itself")
    p.add_argument("--no-tokenize", action="store_true", help="no /tokenize route (prompts are not counted)")
    p.add_argument("--replica", default="standin", help="this replica's name (each answer's system_fingerprint)")
    p.add_argument("--prefix-blocks", type=int, default=1_000_000,
                   help=f"blocks of {PREFIX_BLOCK} tokens the prefix store holds")
    a = p.parse_args(argv)
    server = StandinServer(a.model, latency_s=a.latency, tokens_per_s=a.tokens_per_s, slots=a.slots,
                           max_model_len=a.max_model_len, max_requests=a.max_requests, lifetime_s=a.lifetime,
                           port=a.port, tokenize=not a.no_tokenize, replica=a.replica, prefix_blocks=a.prefix_blocks)
    asyncio.run(server.serve(announce=True))


if __name__ == "__main__":
    main()
