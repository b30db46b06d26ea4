"""Persistent response cache: one SQLite file in WAL mode, safe with several writer processes."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from sumjudge.errors import ConfigError
from sumjudge.paths import cache_path

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
_COLUMNS = {"revision": "TEXT NOT NULL DEFAULT ''", "server": "TEXT NOT NULL DEFAULT ''"}  # added later
_ROW = ("key", "kind", "backend", "model", "request", "response", "created", "revision", "server")


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
            have = {r[1] for r in self._conn.execute("PRAGMA table_info(responses)")}
            for col, decl in _COLUMNS.items():
                if col not in have:
                    self._conn.execute(f"ALTER TABLE responses ADD COLUMN {col} {decl}")
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

    def put_many(self, items: list[tuple]) -> None:
        """items: (key, kind, backend, model, request_json, response_json[, revision, server]). One transaction."""
        rows = [
            (k, kind, b, m, json.dumps(req, ensure_ascii=False), json.dumps(resp, ensure_ascii=False), time.time(),
             *(list(rest) + ["", ""])[:2])
            for (k, kind, b, m, req, resp, *rest) in (tuple(i) for i in items)
        ]
        self._write("REPLACE", rows)

    def put_new(self, items: list[tuple]) -> int:
        """``put_many``'s items, each written only where its key is not here yet (what is here stays). Returns how
        many were written."""
        rows = [
            (k, kind, b, m, json.dumps(req, ensure_ascii=False), json.dumps(resp, ensure_ascii=False), time.time(),
             *(list(rest) + ["", ""])[:2])
            for (k, kind, b, m, req, resp, *rest) in (tuple(i) for i in items)
        ]
        return self._write("IGNORE", rows)

    def _write(self, conflict: str, rows: list[tuple]) -> int:
        """Write whole rows (``_ROW`` order) in one transaction, ``INSERT OR <conflict>``; the number written."""
        for attempt in range(20):
            try:
                with self._lock:
                    self._conn.execute("BEGIN IMMEDIATE")
                    before = self._conn.total_changes
                    self._conn.executemany(f"INSERT OR {conflict} INTO responses ({', '.join(_ROW)}) "
                                           f"VALUES ({','.join('?' * len(_ROW))})", rows)
                    written = self._conn.total_changes - before
                    self._conn.execute("COMMIT")
                return written
            except sqlite3.OperationalError as e:  # database is locked beyond busy_timeout
                with self._lock:
                    if self._conn.in_transaction:
                        self._conn.execute("ROLLBACK")
                if "locked" not in str(e) or attempt == 19:
                    raise
                time.sleep(0.05 * (attempt + 1))
        raise AssertionError("unreachable: the last attempt returns or raises")

    def stats(self) -> dict[str, Any]:
        with self._lock:
            total = self._conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
            per = self._conn.execute(
                "SELECT kind, backend, model, revision, server, COUNT(*) FROM responses "
                "GROUP BY kind, backend, model, revision, server ORDER BY 6 DESC").fetchall()
        size = sum(p.stat().st_size for p in self.path.parent.glob(self.path.name + "*") if p.exists())
        return {
            "path": str(self.path),
            "entries": total,
            "bytes": size,
            "by_model": [{"kind": k, "backend": b, "model": m, "revision": r, "server": sv, "entries": n}
                         for k, b, m, r, sv, n in per],
            "session_hits": self.hits,
            "session_misses": self.misses,
        }

    @staticmethod
    def _scope(backend: str | None, model: str | None, revision: str | None, server: str | None) -> tuple[str, list]:
        conds, args = [], []
        for col, v in (("backend", backend), ("model", model), ("revision", revision), ("server", server)):
            if v is not None:
                conds.append(f"{col} = ?")
                args.append(v)
        return (" WHERE " + " AND ".join(conds)) if conds else "", args

    def count(self, backend: str | None = None, model: str | None = None, revision: str | None = None,
              server: str | None = None) -> int:
        where, args = self._scope(backend, model, revision, server)
        with self._lock:
            return self._conn.execute(f"SELECT COUNT(*) FROM responses{where}", args).fetchone()[0]

    def export(self, dest: str | Path, *, backend: str | None = None, model: str | None = None,
               revision: str | None = None, server: str | None = None) -> int:
        """Copy the entries of one scope (every given field must match; none given: everything) into a new cache file
        ``dest``, e.g. to hand a class the answers of its runs; the number copied. An existing ``dest`` is refused
        (nothing is overwritten)."""

        dest = Path(dest)
        if dest.exists():
            raise ConfigError(f"cache export: {dest} exists; name a new file")
        where, args = self._scope(backend, model, revision, server)
        with self._lock:
            rows = self._conn.execute(f"SELECT {', '.join(_ROW)} FROM responses{where}", args).fetchall()
        out = ResponseCache(dest)
        try:
            return out._write("ABORT", rows)
        finally:
            out.close()

    def merge(self, src: str | Path) -> dict[str, int]:
        """Add another cache file's entries to this one (a class's cache handed out): an entry whose key is here
        already stays as it is (same key, same request). Returns how many were read, added and already here."""

        src = Path(src)
        if not src.is_file():
            raise ConfigError(f"cache import: {src} is not a file")
        with open(src, "rb") as f:
            if f.read(16) != b"SQLite format 3\x00":
                raise ConfigError(f"cache import: {src} is not a sumjudge cache (not an SQLite file)")
        other = sqlite3.connect(f"file:{src}?mode=ro", uri=True)
        try:
            have = {r[1] for r in other.execute("PRAGMA table_info(responses)")}
            if not {"key", "kind", "backend", "model", "request", "response"} <= have:
                raise ConfigError(f"cache import: {src} holds no sumjudge responses table")
            cols = [c if c in have else ("0" if c == "created" else "''") for c in _ROW]
            rows = other.execute(f"SELECT {', '.join(cols)} FROM responses").fetchall()
        except sqlite3.DatabaseError as e:  # a truncated or damaged copy: SQLite's header, then nothing readable
            raise ConfigError(f"cache import: {src} cannot be read ({e}: a truncated or damaged copy?); nothing "
                              "was imported") from None
        finally:
            other.close()
        added = self._write("IGNORE", rows)
        return {"read": len(rows), "added": added, "already_here": len(rows) - added}

    def clear(self, model: str | None = None, *, backend: str | None = None, revision: str | None = None,
              server: str | None = None, compact: bool = True) -> int:
        """Delete the entries of one scope (every given field must match; none given: everything), then
        compact the file (checkpoint the WAL, VACUUM) so that the disk space comes back."""
        where, args = self._scope(backend, model, revision, server)
        with self._lock:
            n = self._conn.execute(f"DELETE FROM responses{where}", args).rowcount
            if compact:
                self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                self._conn.execute("VACUUM")
                self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return n

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
