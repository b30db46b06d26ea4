"""The class server's answer cache: an OpenAI-compatible front for one server, which a class reaches instead of it.

Thirty students running the lab send the same requests. A server with parallel slots decodes each copy in another
batch, and its answers then depend on the batch (llama.cpp: measured in tests_live/llamacpp/test_class_server.py),
so two students would see two answers to one prompt, and the server would decode thirty copies. This front answers
a completion request it has answered before from its cache (SQLite beside the model), and an identical request
already in flight from that one answer: every student gets the answer the first one got, and the server decodes
each prompt once. Only what determines the answer keys the cache (the request body less ``stream`` and ``user``);
a sampled request without a ``seed`` is passed on, never cached (each its own sample). A server fault (any status
other than 200) is passed back as it came and never cached.

Every request must carry the class key (``Authorization: Bearer <key>``), checked here; the front passes the key
on to the server behind it (which listens on the loopback only). The key is never written: not in the cache
(bodies only), not in a log line.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import sqlite3
import threading
from pathlib import Path

CACHED_PATHS = ("/v1/chat/completions", "/v1/completions")
UNKEYED = ("stream", "stream_options", "user")  # fields that do not change the answer


def request_key(path: str, body: dict) -> str | None:
    """The cache key of a completion request, or None where it must not be cached (sampled without a seed)."""
    if body.get("stream") or (float(body.get("temperature", 1.0)) > 0 and body.get("seed") is None):
        return None
    kept = {k: v for k, v in body.items() if k not in UNKEYED}
    blob = json.dumps({"path": path, **kept}, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class AnswerStore:
    """key -> (status, body bytes) in SQLite; readers and one writer thread-safe."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, body BLOB NOT NULL)")

    def get(self, key: str) -> bytes | None:
        with self._lock:
            row = self._db.execute("SELECT body FROM answers WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def put(self, key: str, body: bytes) -> None:
        with self._lock:
            self._db.execute("INSERT OR IGNORE INTO answers (key, body) VALUES (?, ?)", (key, body))

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM answers").fetchone()[0]


class ClassCache:
    """The front's routes: completions through the cache, everything else passed on."""

    def __init__(self, upstream: str, key: str, store: AnswerStore):
        self.upstream = upstream.rstrip("/")  # the server's root, e.g. http://127.0.0.1:8081
        self.key = key
        self.store = store
        self.inflight: dict[str, asyncio.Future] = {}
        self.counts = {"requests": 0, "from_cache": 0, "joined": 0, "passed_on": 0, "refused": 0}
        self._session = None

    def app(self):
        from aiohttp import web

        app = web.Application(client_max_size=1 << 28)
        app.router.add_route("GET", "/class-cache", self.stats)
        app.router.add_route("*", "/{tail:.*}", self.handle)
        app.on_cleanup.append(self._close)
        return app

    async def _close(self, app) -> None:
        if self._session is not None:
            await self._session.close()

    def _authorised(self, request) -> bool:
        given = request.headers.get("Authorization", "")
        return hmac.compare_digest(given.encode(), f"Bearer {self.key}".encode())

    async def stats(self, request):
        from aiohttp import web

        if not self._authorised(request):
            return web.json_response({"error": "a class key is needed"}, status=401)
        return web.json_response({**self.counts, "answers_kept": len(self.store)})

    async def _forward(self, method: str, path: str, query: str, body: bytes, headers: dict) -> tuple[int, bytes, str]:
        import aiohttp

        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None))
        url = self.upstream + path + (f"?{query}" if query else "")
        async with self._session.request(method, url, data=body or None, headers=headers) as r:
            return r.status, await r.read(), r.headers.get("Content-Type", "application/json")

    async def handle(self, request):
        from aiohttp import web

        path = "/" + request.match_info["tail"]
        if path != "/health" and not self._authorised(request):
            self.counts["refused"] += 1
            return web.json_response({"error": {"message": "Invalid API Key", "type": "authentication_error"}},
                                     status=401)
        raw = await request.read()
        headers = {"Authorization": f"Bearer {self.key}", "Content-Type": request.headers.get("Content-Type",
                                                                                              "application/json")}
        key = None
        if request.method == "POST" and path in CACHED_PATHS:
            self.counts["requests"] += 1
            try:
                key = request_key(path, json.loads(raw or b"{}"))
            except (ValueError, TypeError):
                key = None  # the server says what is wrong with it
        if key is None:
            self.counts["passed_on"] += path in CACHED_PATHS
            status, body, ctype = await self._forward(request.method, path, request.query_string, raw, headers)
            return web.Response(status=status, body=body, content_type=ctype.split(";")[0])
        kept = self.store.get(key)
        if kept is not None:
            self.counts["from_cache"] += 1
            return web.Response(status=200, body=kept, content_type="application/json")
        if key in self.inflight:
            self.counts["joined"] += 1
            status, body = await asyncio.shield(self.inflight[key])
            return web.Response(status=status, body=body, content_type="application/json")
        fut = self.inflight[key] = asyncio.get_running_loop().create_future()
        try:
            status, body, _ = await self._forward("POST", path, request.query_string, raw, headers)
            if status == 200:
                self.store.put(key, body)
            fut.set_result((status, body))
        except Exception as e:  # noqa: BLE001 - the waiting copies get the same failure
            fut.set_exception(e)
            raise
        finally:
            self.inflight.pop(key, None)
        return web.Response(status=status, body=body, content_type="application/json")


def serve(upstream: str, key: str, store_path: Path, host: str, port: int) -> None:
    """Run the front until stopped."""
    from aiohttp import web

    front = ClassCache(upstream, key, AnswerStore(store_path))
    web.run_app(front.app(), host=host, port=port, print=None, access_log=None)
