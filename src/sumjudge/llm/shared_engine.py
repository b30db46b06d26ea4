"""One local model serving several processes: the hf engine behind a small HTTP server on the loopback.

``make reproduce`` runs its notebooks several at a time; each notebook is its own kernel (process). Each
would load the model and decode its own few rows: a debate waits for its round, a retry runs alone, and a
decode step on a CPU costs nearly as much for 2 rows as for 14. Served once, every notebook's requests join
one continuously decoded batch.

- ``serve(model, ...)`` loads an ``HFBackend`` and answers on ``/info``, ``/generate`` (a list of requests;
  each answer streamed back as one JSON line when its row finishes), ``/score``, ``/count``, ``/stats``.
  Requests that determine the same answer (the cache key's fields) and are in flight together are decoded
  once: two notebooks that ask the same call (notebook 11 reads notebook 10's runs) share it.
- ``SharedEngineBackend`` is the client, a ``Backend`` like any other. Its ``info`` is the server's: the
  same backend name, model, revision and dtype, so its answers take and make the same cache entries as a
  local hf backend on that model (they *are* that backend's answers). Each client keeps its own context
  length (a notebook's ``context_length``), checked by the server as the hf backend checks its own.
- ``make_backend("hf", ...)`` uses the server named by ``SUMJUDGE_SHARED_ENGINE`` when the server holds the
  model asked for, in the dtype and token budget asked for; otherwise the model is loaded in the process.

Errors (a prompt too long, a fault while decoding) travel back as the exception the hf backend returned for
that request; a server that cannot be reached is ``BackendUnavailableError``. The channel is the loopback
and both ends are this package: exceptions are pickled.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import ctypes
import json
import os
import pickle
import signal
import sys
import threading
import time
import weakref
from dataclasses import asdict, replace
from typing import Any

from sumjudge.environment import read
from sumjudge.llm.backend_protocol import SOURCE_COUNTERS, Capabilities
from sumjudge.llm.errors import BackendUnavailableError
from sumjudge.llm.hf import HFBackend
from sumjudge.llm.loops import on_loop_close
from sumjudge.llm.types import BackendInfo, ChatRequest, ChatResponse, OptionRequest, OptionScores, cache_key

ENV = "SUMJUDGE_SHARED_ENGINE"  # the base URL of a running shared engine (http://127.0.0.1:PORT)
MAX_INFLIGHT = 1 << 20


def _result(value: Any) -> dict[str, Any]:
    if isinstance(value, BaseException):
        return {"error": base64.b64encode(pickle.dumps(value)).decode("ascii"), "message": str(value)}
    return {"ok": value.to_json()}


def _value(d: dict[str, Any], cls) -> Any:
    if "ok" in d:
        return cls.from_json(d["ok"])
    try:
        return pickle.loads(base64.b64decode(d["error"]))
    except Exception:  # an exception that does not unpickle still reaches its caller, with its message
        return RuntimeError(d.get("message", "shared engine error"))


# ---- server --------------------------------------------------------------------------------------------------
class EngineServer:
    """The routes over one backend (an ``HFBackend``; any backend with the same methods serves in tests)."""

    def __init__(self, backend, requested: dict[str, Any]):
        self.backend = backend
        self.requested = requested  # what the server was started with (model, dtype, token_budget): clients match it
        self.inflight: dict[tuple[str, int], asyncio.Future] = {}
        self.coalesced = 0

    def app(self):
        from aiohttp import web

        app = web.Application(client_max_size=1 << 30)
        app.add_routes([web.get("/health", self.health), web.get("/info", self.info), web.post("/generate", self.generate),
                        web.post("/score", self.score), web.post("/count", self.count), web.get("/stats", self.stats)])
        return app

    async def health(self, request):
        from aiohttp import web

        return web.json_response({"ok": True})

    async def info(self, request):
        from aiohttp import web

        return web.json_response({"info": asdict(self.backend.info), "requested": self.requested,
                                  "context_length": self.backend.capabilities.context_length})

    async def stats(self, request):
        from aiohttp import web

        return web.json_response({"decode": self.backend.decode_stats(), "sources": self.backend.source_stats(),
                                  "coalesced": self.coalesced})

    async def count(self, request):
        from aiohttp import web

        body = await request.json()
        texts = [self.backend.count_tokens(t) for t in body.get("texts", [])]
        prompts = [self.backend.prompt_tokens(m) for m in body.get("prompts", [])]
        return web.json_response({"texts": texts, "prompts": prompts})

    def _futures(self, reqs: list[ChatRequest], limit: int | None, client: str = "") -> list[asyncio.Future]:
        """One future per request: an identical request already in flight (same key, same limit) is shared; the
        new ones go to the backend together (one job: a document's rows still join the batch whole), as the
        ``client``'s (clients take turns joining the batch: the hf backend's ``source``)."""
        loop = asyncio.get_running_loop()
        futs, new = [], []
        for r in reqs:
            key = (cache_key("chat", self.backend.info, r.key_fields()), limit or 0)
            fut = self.inflight.get(key)
            if fut is None:
                fut = self.inflight[key] = loop.create_future()
                def forget(_f: asyncio.Future, key: tuple[str, int] = key) -> None:
                    self.inflight.pop(key, None)

                fut.add_done_callback(forget)
                new.append((r, fut))
            else:
                self.coalesced += 1
            futs.append(fut)
        if new:
            def settle(items):
                for i, value in items:
                    if not new[i][1].done():
                        new[i][1].set_result(value)

            async def run():
                try:
                    out = await self.backend.generate([r for r, _ in new], on_results=settle, context_length=limit,
                                                      source=client)
                except Exception as e:  # noqa: BLE001 - the backend failed as a whole: every row gets the fault
                    out = [e] * len(new)
                settle(list(enumerate(out)))

            asyncio.ensure_future(run())
        return futs

    async def generate(self, request):
        from aiohttp import web

        body = await request.json()
        reqs = [ChatRequest(**{**d, "stop": tuple(d.get("stop", ()))}) for d in body["requests"]]
        futs = self._futures(reqs, body.get("context_length"), str(body.get("client", "")))
        resp = web.StreamResponse(headers={"Content-Type": "application/x-ndjson"})
        await resp.prepare(request)
        pending = {f: i for i, f in enumerate(futs)}
        while pending:
            done, _ = await asyncio.wait(list(pending), return_when=asyncio.FIRST_COMPLETED)
            lines = [json.dumps({"i": pending.pop(f), **_result(f.result())}) + "\n" for f in done]
            await resp.write("".join(lines).encode("utf-8"))
        await resp.write_eof()
        return resp

    async def score(self, request):
        from aiohttp import web

        body = await request.json()
        reqs = [OptionRequest(**{**d, "options": tuple(d["options"])}) for d in body["requests"]]
        try:
            out = await self.backend.score(reqs, context_length=body.get("context_length"),
                                           source=str(body.get("client", "")))
        except Exception as e:  # noqa: BLE001
            out = [e] * len(reqs)
        return web.json_response({"results": [_result(v) for v in out]})


def serve(model: str, *, host: str = "127.0.0.1", port: int = 0, ready_file: str | None = None, **options) -> None:
    """Load ``model`` on the hf backend (``options``: dtype, token_budget, ...) and serve it until killed; the
    base URL is printed (and written to ``ready_file``) once the model is loaded and the port is open."""
    from aiohttp import web


    backend = HFBackend(model, **options)
    server = EngineServer(backend, {"model": model, **{k: v for k, v in options.items() if k in MATCHED}})

    async def main():
        runner = web.AppRunner(server.app(), access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, host, port)
        await site.start()
        bound = runner.addresses[0][1]  # port 0: the one the system chose
        url = f"http://{host}:{bound}"
        print(f"shared engine: {backend.info.model} at {url}", flush=True)
        if ready_file:
            tmp = ready_file + ".tmp"
            with open(tmp, "w") as fh:
                fh.write(url)
            os.replace(tmp, ready_file)
        await asyncio.Event().wait()

    asyncio.run(main())


# ---- client --------------------------------------------------------------------------------------------------
MATCHED = ("dtype", "token_budget")  # hf options a client must ask for as the server was started with


def shared_engine_for(model: str, options: dict[str, Any]) -> "SharedEngineBackend | None":
    """The client of the shared engine named by ``SUMJUDGE_SHARED_ENGINE`` when it serves ``model`` with these
    options (``context_length`` is the client's own), else None (the caller loads the model itself)."""
    url = read(ENV)
    if not url or set(options) - set(MATCHED) - {"context_length"}:
        return None
    try:
        described = get_json(url, "/info")
    except BackendUnavailableError:
        return None
    requested = described["requested"]
    if requested.get("model") != model or any(options.get(k) != requested.get(k) for k in MATCHED):
        return None
    return SharedEngineBackend(url, context_length=options.get("context_length"), described=described)


def get_json(url: str, path: str) -> dict[str, Any]:
    import httpx

    try:
        r = httpx.get(url.rstrip("/") + path, timeout=30.0)
        r.raise_for_status()
        return r.json()
    except httpx.HTTPError as e:
        raise BackendUnavailableError(f"shared engine at {url}: {e}") from e


class SharedEngineBackend:
    """A ``Backend`` whose model runs in the shared engine's process (see the module docstring)."""

    name = "hf"

    def __init__(self, url: str, *, context_length: int | None = None, described: dict[str, Any] | None = None,
                 client: str | None = None):
        self.url = url.rstrip("/")
        described = described or get_json(self.url, "/info")
        server_ctx = described["context_length"]
        self.context_length = min(context_length or server_ctx, server_ctx)
        info = BackendInfo(**described["info"])
        self.info = replace(info, extra={**info.extra, "context_length": self.context_length,
                                         "shared_engine": self.url})
        # a notebook's process by default: the notebooks take turns joining the batch
        self.client = client or str(os.getpid())
        self._since = self._engine_stats() or {}  # decode_stats counts from here
        self._sessions: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # event loop -> its HTTP session

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(option_scoring="exact", tokenizer="remote", async_tokenizer=True,
                            context_length=self.context_length, max_inflight=MAX_INFLIGHT, streams_results=True)

    def _session(self):
        """The HTTP session of the running event loop (its connections kept alive: a run counts many prompts),
        closed with the loop (every ``run_sync`` runs one of its own)."""
        import aiohttp

        loop = asyncio.get_running_loop()
        session = self._sessions.get(loop)
        if session is None or session.closed:
            session = self._sessions[loop] = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=None, sock_connect=30))
            on_loop_close(session.close)
        return session

    async def _post(self, path: str, body: dict[str, Any]):
        import aiohttp

        try:
            async with self._session().post(self.url + path, json=body) as r:
                r.raise_for_status()
                return await r.json()
        except aiohttp.ClientError as e:
            raise BackendUnavailableError(f"shared engine at {self.url}: {e}") from e

    async def generate(self, reqs: list[ChatRequest], on_results=None) -> list[ChatResponse | Exception]:
        import aiohttp

        out: list[ChatResponse | Exception | None] = [None] * len(reqs)
        body = {"requests": [r.to_json() for r in reqs], "context_length": self.context_length,
                "client": self.client}
        try:
            async with self._session().post(self.url + "/generate", json=body) as r:
                r.raise_for_status()
                async for line in r.content:
                    if not line.strip():
                        continue
                    d = json.loads(line)
                    out[d["i"]] = value = _value(d, ChatResponse)
                    if on_results:
                        on_results([(d["i"], value)])
        except aiohttp.ClientError as e:
            raise BackendUnavailableError(f"shared engine at {self.url}: {e}") from e
        missing = [i for i, v in enumerate(out) if v is None]
        if missing:
            raise BackendUnavailableError(f"shared engine at {self.url} closed the answer stream with "
                                          f"{len(missing)} of {len(reqs)} requests unanswered")
        return out  # type: ignore[return-value]

    async def score(self, reqs: list[OptionRequest], on_results=None) -> list[OptionScores | Exception]:
        d = await self._post("/score", {"requests": [r.to_json() for r in reqs], "context_length": self.context_length,
                                        "client": self.client})
        return [_value(x, OptionScores) for x in d["results"]]

    async def acount_tokens(self, text: str) -> int:
        return (await self._post("/count", {"texts": [text]}))["texts"][0]

    async def aprompt_tokens(self, messages: list[dict[str, str]]) -> int:
        return (await self._post("/count", {"prompts": [messages]}))["prompts"][0]

    def count_tokens(self, text: str) -> int:
        import httpx

        return httpx.post(self.url + "/count", json={"texts": [text]}, timeout=60.0).json()["texts"][0]

    def prompt_tokens(self, messages: list[dict[str, str]]) -> int:
        import httpx

        return httpx.post(self.url + "/count", json={"prompts": [messages]}, timeout=60.0).json()["prompts"][0]

    def _engine_stats(self) -> dict[str, float] | None:
        """The engine's decoder counters, its ``own_*`` ones this client's source's (``HFBackend.source_stats``)."""
        try:
            got = get_json(self.url, "/stats")
        except BackendUnavailableError:
            return None
        mine = got.get("sources", {}).get(self.client, {})
        return {**got["decode"], **{f"own_{k}": mine.get(k, 0.0) for k in SOURCE_COUNTERS}}

    def decode_stats(self) -> dict[str, float] | None:
        """The shared engine's decoder since this client started: every client's rows in that time, and (``own_*``)
        this client's share of it (a step's seconds split equally among its rows, an admission's by prompt length)."""
        now = self._engine_stats()
        return None if now is None else {k: v - self._since.get(k, 0) for k, v in now.items()}

    def server_counters(self) -> None:
        return None


PARENT_POLL_S = 1.0


def exit_with_parent(parent_pid: int, poll_s: float = PARENT_POLL_S) -> None:
    """End this process when ``parent_pid`` (the recording that started it) ends, however it ends: a recording
    killed with SIGKILL cannot stop its engine, which would otherwise keep the model (and a GPU's memory). On Linux
    the kernel sends SIGTERM at the parent's death (``PR_SET_PDEATHSIG``); everywhere a daemon thread checks every
    ``poll_s`` seconds that the parent is still this process's parent."""

    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(poll_s)
        os._exit(0)  # the parent is gone (this process was handed to another): nobody is left to serve

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m sumjudge.llm.shared_engine", description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True)
    p.add_argument("--dtype", default=None)
    p.add_argument("--token-budget", type=int, default=None)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--ready-file", default=None, help="written with the base URL once the model is loaded")
    p.add_argument("--parent-pid", type=int, default=None,
                   help="exit when this process (the recording that started the engine) ends")
    a = p.parse_args(argv)
    if a.parent_pid is not None:
        exit_with_parent(a.parent_pid)
    options = {k: v for k, v in (("dtype", a.dtype), ("token_budget", a.token_budget)) if v is not None}
    serve(a.model, host=a.host, port=a.port, ready_file=a.ready_file, **options)


if __name__ == "__main__":
    main()
