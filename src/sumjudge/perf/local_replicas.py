"""Replicas behind a router, on this machine, without a model: ``Fleet`` starts ``replicas`` stand-in servers
(``standin_server``, each a process of its own named ``r0``, ``r1``, ...) and, for more than one or when asked, a real
router in front of them (vLLM's ``vllm-router``, or SGLang's ``sglang-router``, from PyPI: ``make router-env``
installs both outside the repository),
and says where to send requests. It is what ``make test-router`` and ``sumjudge scale --replicas`` run against.

The router is started as a user would start it in front of vLLM replicas, on 127.0.0.1 with its metrics on a port
of its own, ``--policy`` as given; it is ready when it names every replica (``listed_replicas``) and a chat request
through it is answered. A replica can be killed mid-run (``kill``) to see what the router and the client do.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from sumjudge.environment import read
from sumjudge.errors import ConfigError
from sumjudge.llm.openai import REPLICA_ROUTES, replicas_listed

# vLLM's router's policies (``vllm-router --policy``); cache_aware is its default. consistent_hash hashes a request's
# session key (the client sends its example's) to a replica; sticky_least_loaded sends a key it has not seen to the
# least-loaded replica, as the router counts load, and every later request with that key to the same one
POLICIES = ("cache_aware", "round_robin", "consistent_hash", "power_of_two", "random", "sticky_least_loaded")
CHOSEN_POLICY = "sticky_least_loaded"  # docs/serving.md's choice, measured by `make scale` (its routing table)
# cache_aware's settings compared beside them (docs/serving.md): a request whose text matches a replica's by more
# than the cache threshold goes there, else to the replica that holds the least; past the balance thresholds (load
# apart by more than abs and by more than rel times) to the least-loaded
CACHE_AWARE_SETTINGS = ("cache_aware --cache-threshold 0.5 --balance-abs-threshold 1000000 "
                        "--balance-rel-threshold 1000",)
# a routing: a policy, or a policy and its settings as given after ``--policy`` (what ``Fleet(policy=...)`` takes)
ROUTER_POLICIES = POLICIES + CACHE_AWARE_SETTINGS


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Fleet:
    """``replicas`` stand-ins answering in ``latency_s`` with ``slots`` each, behind ``router`` (the path of a
    ``vllm-router`` executable; None: the one replica is addressed directly) routing by ``policy`` (a policy, or a
    policy and the router's settings for it: ``ROUTER_POLICIES``)."""

    replicas: int = 2
    router: str | None = None
    policy: str = "cache_aware"
    latency_s: float = 0.0
    slots: int = 1024
    context_length: int = 131072
    router_args: tuple[str, ...] = ()
    python: str = sys.executable
    lifetime_s: float = 7200.0
    base_url: str = ""
    replica_urls: list[str] = field(default_factory=list)
    _procs: list[subprocess.Popen] = field(default_factory=list)
    _router: subprocess.Popen | None = None

    def __post_init__(self) -> None:
        if self.replicas < 1:
            raise ConfigError(f"replicas={self.replicas}: at least one")
        if self.replicas > 1 and not self.router:
            raise ConfigError("more than one replica needs a router (the path of vllm-router: make router-env)")
        if (self.policy.split() or [""])[0] not in POLICIES:
            raise ConfigError(f"policy={self.policy!r}: one of {', '.join(POLICIES)}, with its settings after it")

    def __enter__(self) -> "Fleet":
        try:
            for i in range(self.replicas):
                p = subprocess.Popen([self.python, "-m", "sumjudge.perf.standin_server", "--latency", str(self.latency_s),
                                      "--slots", str(self.slots), "--max-model-len", str(self.context_length),
                                      "--lifetime", str(self.lifetime_s), "--replica", f"r{i}"],
                                     stdout=subprocess.PIPE, text=True)
                self._procs.append(p)
                self.replica_urls.append(p.stdout.readline().strip().removesuffix("/v1"))
            if self.router:
                self._start_router()
            else:
                self.base_url = self.replica_urls[0] + "/v1"
        except BaseException:
            self.__exit__()
            raise
        return self

    def _start_router(self) -> None:
        import httpx

        port = free_port()
        launch = ["launch"] if os.path.basename(self.router).startswith("sglang") else []  # SGLang's router
        self._router = subprocess.Popen(
            [self.router, *launch, "--host", "127.0.0.1", "--port", str(port), "--prometheus-port", str(free_port()),
             "--worker-urls", *self.replica_urls, "--policy", *self.policy.split(), "--log-level", "error",
             *self.router_args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        root = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self._router.poll() is not None:
                raise RuntimeError(f"the router stopped at start (exit {self._router.returncode}): "
                                   f"{(self._router.stderr.read() or '')[-2000:]}")
            try:
                if len(listed_replicas(root)) == self.replicas:
                    r = httpx.post(root + "/v1/chat/completions", timeout=30,
                                   json={"model": "standin", "messages": [{"role": "user", "content": "ready?"}],
                                         "max_tokens": 1})
                    if r.status_code == 200:
                        break
            except (httpx.HTTPError, ValueError, AttributeError):
                pass
            time.sleep(0.25)
        else:
            raise RuntimeError(f"the router at {root} did not list {self.replicas} healthy replicas in 120 s")
        self.base_url = root + "/v1"
        self.reset_stats()

    def reset_stats(self) -> None:
        """Forget the start-up's requests: each replica's counts and prefix store restart (its ``/stats`` after)."""
        import httpx

        for url in self.replica_urls:
            httpx.post(url + "/stats/reset", timeout=30)

    def stats(self) -> list[dict[str, Any] | None]:
        """Each replica's ``/stats`` (None for one that no longer answers)."""
        import httpx

        out = []
        for url in self.replica_urls:
            try:
                out.append(httpx.get(url + "/stats", timeout=30).json())
            except httpx.HTTPError:
                out.append(None)
        return out

    def kill(self, i: int) -> None:
        """Replica ``i`` dies at once (SIGKILL: no answer for its requests in flight)."""
        self._procs[i].send_signal(signal.SIGKILL)
        self._procs[i].wait(30)

    def __exit__(self, *exc) -> None:
        for p in ([self._router] if self._router else []) + self._procs:
            if p.poll() is None:
                p.terminate()
        for p in ([self._router] if self._router else []) + self._procs:
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()


def listed_replicas(root: str) -> list[str]:
    """The replicas the router at ``root`` names (``llm.openai.REPLICA_ROUTES``, as the client asks them)."""
    import httpx


    for route in REPLICA_ROUTES:
        r = httpx.get(root + route, timeout=5)
        if r.status_code == 200 and (urls := replicas_listed(r.json())):
            return urls
    return []


def router_from_environment() -> str | None:
    """The router executable ``make router-env`` installed, where the Makefile says (``SUMJUDGE_ROUTER``)."""

    path = read("SUMJUDGE_ROUTER")
    return path if path and os.access(path, os.X_OK) else None
