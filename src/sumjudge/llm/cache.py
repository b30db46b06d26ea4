"""Persistent response cache: one SQLite file in WAL mode, safe with several writer processes."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from ..paths import cache_path

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    backend TEXT NOT NULL,
    model TEXT NOT NULL,
    request TEXT NOT NULL,
    response TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS responses_model ON responses(backend, model);
"""


class ResponseCache:
    """Key -> response JSON. Reads never block writers (WAL); writers wait on each other (busy timeout).

    A response is committed as soon as it exists, so a run killed at any point keeps every
    finished call.
    """

    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path else cache_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(str(self.path), timeout=60.0, check_same_thread=False, isolation_level=None)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute("PRAGMA busy_timeout=60000")
        with self._lock:
            self._conn.executescript(_SCHEMA)
        self.hits = 0
        self.misses = 0

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._conn.execute("SELECT response FROM responses WHERE key = ?", (key,)).fetchone()
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        return json.loads(row[0])

    def put_many(self, items: list[tuple[str, str, str, str, dict, dict]]) -> None:
        """items: (key, kind, backend, model, request_json, response_json). One transaction."""
        rows = [
            (k, kind, b, m, json.dumps(req, ensure_ascii=False), json.dumps(resp, ensure_ascii=False), time.time())
            for (k, kind, b, m, req, resp) in items
        ]
        for attempt in range(20):
            try:
                with self._lock:
                    self._conn.execute("BEGIN IMMEDIATE")
                    self._conn.executemany("INSERT OR REPLACE INTO responses VALUES (?,?,?,?,?,?,?)", rows)
                    self._conn.execute("COMMIT")
                return
            except sqlite3.OperationalError as e:  # database is locked beyond busy_timeout
                with self._lock:
                    if self._conn.in_transaction:
                        self._conn.execute("ROLLBACK")
                if "locked" not in str(e) or attempt == 19:
                    raise
                time.sleep(0.05 * (attempt + 1))

    def stats(self) -> dict[str, Any]:
        with self._lock:
            total = self._conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
            per = self._conn.execute(
                "SELECT kind, backend, model, COUNT(*) FROM responses GROUP BY kind, backend, model ORDER BY 4 DESC"
            ).fetchall()
        size = sum(p.stat().st_size for p in self.path.parent.glob(self.path.name + "*") if p.exists())
        return {
            "path": str(self.path),
            "entries": total,
            "bytes": size,
            "by_model": [{"kind": k, "backend": b, "model": m, "entries": n} for k, b, m, n in per],
            "session_hits": self.hits,
            "session_misses": self.misses,
        }

    def clear(self, model: str | None = None) -> int:
        with self._lock:
            if model is None:
                cur = self._conn.execute("DELETE FROM responses")
            else:
                cur = self._conn.execute("DELETE FROM responses WHERE model = ?", (model,))
        return cur.rowcount

    def close(self) -> None:
        with self._lock:
            self._conn.close()


class NullCache:
    """--no-cache: never hits, never stores."""

    path = None
    hits = 0
    misses = 0

    def get(self, key: str) -> None:
        self.misses += 1
        return None

    def put_many(self, items: list) -> None:
        return None

    def stats(self) -> dict[str, Any]:
        return {"path": None, "entries": 0, "session_hits": 0, "session_misses": self.misses}

    def close(self) -> None:
        return None
