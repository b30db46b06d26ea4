"""Event loops and what lives on them. Every ``run_sync`` (a run, a notebook cell) runs its own event loop;
objects bound to a loop (an HTTP client's connections) register a closer here and are closed, on their own
loop, when ``run_sync`` finishes with it, instead of being collected later on a loop that is gone."""

from __future__ import annotations

import asyncio
import threading
import weakref
from typing import Any, Awaitable, Callable, Hashable

_CLOSERS: dict[asyncio.AbstractEventLoop, list[Callable[[], Awaitable[Any]]]] = {}


def on_loop_close(close: Callable[[], Awaitable[Any]]) -> None:
    """Await ``close()`` on the running loop when ``run_sync`` finishes its coroutine."""
    _CLOSERS.setdefault(asyncio.get_running_loop(), []).append(close)


async def _run_then_close(coro):
    try:
        return await coro
    finally:
        for close in _CLOSERS.pop(asyncio.get_running_loop(), []):
            try:
                await close()
            except Exception:  # closing is best effort; the result stands
                pass


def run_sync(coro):
    """Run a coroutine from synchronous code, also inside Jupyter (which already runs an event loop)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_run_then_close(coro))
    result: dict[str, Any] = {}

    def target():
        try:
            result["value"] = asyncio.run(_run_then_close(coro))
        except BaseException as e:  # re-raised in the caller's thread
            result["error"] = e

    t = threading.Thread(target=target)
    t.start()
    t.join()
    if "error" in result:
        raise result["error"]
    return result["value"]


class SingleFlight:
    """Concurrent awaits of one key share one computation: the first caller computes, the others await its result
    (or its error). Per event loop (a loop that is gone takes its pending keys with it); a finished value is not
    kept here: callers cache what they want to keep."""

    def __init__(self) -> None:
        self._pending: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    async def run(self, key: Hashable, compute: Callable[[], Awaitable[Any]]) -> Any:
        loop = asyncio.get_running_loop()
        pending = self._pending.setdefault(loop, {})
        fut = pending.get(key)
        if fut is not None:
            return await asyncio.shield(fut)
        fut = pending[key] = loop.create_future()
        try:
            value = await compute()
        except asyncio.CancelledError:
            fut.cancel()
            raise
        except BaseException as e:
            fut.set_exception(e)
            fut.exception()  # retrieved here: no "never retrieved" warning when nobody else waited
            raise
        else:
            fut.set_result(value)
            return value
        finally:
            pending.pop(key, None)
