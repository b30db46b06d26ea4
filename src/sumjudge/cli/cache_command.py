"""``sumjudge cache``: the response cache (stats, clear, export, import)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from sumjudge.cli.subcommand import Subcommand
from sumjudge.errors import ConfigError
from sumjudge.llm.backend_registry import backend_names
from sumjudge.llm.cache import ResponseCache
from sumjudge.llm.types import server_identity
from sumjudge.paths import cache_path


def add_arguments(p) -> None:
    p.add_argument("action", choices=("stats", "clear", "export", "import"))
    p.add_argument("file", nargs="?", type=Path, help="export: the new cache file to write; import: the cache file "
                   "whose entries to add")
    p.add_argument("--cache", type=Path)
    p.add_argument("--backend", choices=backend_names(), help="clear / export: only this backend's entries")
    p.add_argument("--model", help="clear / export: only this model's entries (the name `cache stats` shows)")
    p.add_argument("--revision", help="clear / export: only this model revision's entries (as `cache stats` shows)")
    p.add_argument("--server", help="clear / export: only entries from this server (base URL)")
    p.add_argument("--yes", action="store_true", help="clear without asking")


def main(a) -> int:
    path = a.cache or cache_path()
    if a.action in ("export", "import") and a.file is None:
        raise ConfigError(f"sumjudge cache {a.action} FILE: name the cache file to {a.action}")
    if a.action == "import":  # a class's cache handed out: its entries join this machine's cache
        print(json.dumps({"path": str(path), **ResponseCache(path).merge(a.file)}))
        return 0
    if (a.file is not None) != (a.action == "export"):
        raise ConfigError(f"sumjudge cache {a.action} takes no FILE")
    if a.action == "export" and not path.exists():
        raise ConfigError(f"cache export: there is no cache at {path} (--cache names another)")
    if not path.exists():  # never create a cache just to look at it
        print(json.dumps({"path": str(path), "exists": False, "entries": 0} if a.action == "stats" else
                         {"path": str(path), "exists": False, "deleted": 0}))
        return 0
    c = ResponseCache(path)
    if a.action == "stats":
        print(json.dumps(c.stats(), indent=2))
        return 0
    scope = {"backend": a.backend, "model": a.model, "revision": a.revision,
             "server": server_identity(a.server) if a.server else None}
    if a.action == "export":
        n = c.export(a.file, **scope)
        print(json.dumps({"exported": n, "file": str(a.file), "scope": ", ".join(
            f"{k}={v}" for k, v in scope.items() if v is not None) or "every entry"}))
        return 0
    n = c.count(**scope)
    what = ", ".join(f"{k}={v}" for k, v in scope.items() if v is not None) or "every entry"
    if n and not a.yes:
        if not sys.stdin.isatty():
            raise ConfigError(f"cache clear would delete {n} entries ({what}) from {path}; add --yes to confirm")
        if input(f"Delete {n} cached responses ({what}) from {path}? [y/N] ").strip().lower() not in ("y", "yes"):
            print(json.dumps({"deleted": 0, "cancelled": True}))
            return 0
    deleted = c.clear(compact=True, **scope)
    print(json.dumps({"deleted": deleted, "scope": what, "bytes_after": c.stats()["bytes"]}))
    return 0


COMMAND = Subcommand("cache", help="response cache", add_arguments=add_arguments, run=main)
