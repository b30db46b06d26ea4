"""What an OpenAI-compatible server says about itself: the models it serves (``GET /models``), whether and how it
tokenizes, its context, the replicas behind a router and their prefix-cache counters (``/metrics``), what the
endpoint does not offer."""

from __future__ import annotations

import os
import re
import sys
from typing import Any, TypedDict

from sumjudge.llm.errors import BackendRequestError, BackendUnavailableError, ConfigError
from sumjudge.llm.openai_tokens import OpenAITokens
from sumjudge.llm.types import BackendInfo, server_identity

# Requests in flight per server (vLLM's default batch: --max-num-seqs 256); behind a router, per replica
CONCURRENCY_PER_SERVER = 256


# Where a router names its replicas: vllm-router's GET /list_workers ({"urls": [...]}), SGLang's router's GET /workers
# ({"workers": [{"url": ...}, ...]})
REPLICA_ROUTES = ("/list_workers", "/workers")


def replicas_listed(body: Any) -> list[str]:
    """The replica URLs in a router's answer to one of ``REPLICA_ROUTES`` ([] for anything else)."""
    if not isinstance(body, dict):
        return []
    urls = body.get("urls") if "urls" in body else [w.get("url") for w in body.get("workers") or []
                                                       if isinstance(w, dict)]
    return urls if isinstance(urls, list) and urls and all(isinstance(u, str) for u in urls) else []


def served_models(base_url: str, api_key: str | None = None, timeout: float = 10.0) -> list[str]:
    """The models an OpenAI-compatible server lists (``GET /models``), asked with ``api_key`` (default
    ``OPENAI_API_KEY``). A server that cannot be reached, refuses the key or lists nothing is one ``ConfigError``
    naming the address (its credentials masked), never the key."""
    import httpx

    key = api_key or os.environ.get("OPENAI_API_KEY") or "EMPTY"
    where = server_identity(base_url)
    try:
        r = httpx.get(base_url.rstrip("/") + "/models", headers={"Authorization": f"Bearer {key}"}, timeout=timeout)
    except httpx.HTTPError as e:
        raise ConfigError(f"server {where} cannot be reached ({type(e).__name__}): is the address right and the "
                          "server running?") from None
    if r.status_code in (401, 403):
        raise ConfigError(f"server {where} refused the key (HTTP {r.status_code}): export OPENAI_API_KEY=<the key "
                          "the server was started with>")
    try:
        ids = [str(m["id"]) for m in r.json()["data"]] if r.status_code == 200 else []
    except (ValueError, KeyError, TypeError):
        ids = []
    if not ids:
        raise ConfigError(f"server {where} lists no model (GET /models: HTTP {r.status_code}): is it an "
                          "OpenAI-compatible server (its address ends in /v1)?")
    return ids


def server_root(base_url: str) -> str:
    """The server's root for its non-OpenAI routes (vLLM's ``/tokenize``, ``/metrics``, ``/health``):
    the base URL without a trailing ``/v1``."""
    return re.sub(r"/v1/?$", "", base_url.rstrip("/"))


def prometheus_totals(text: str, names: tuple[str, ...]) -> dict[str, float]:
    """Sum of each named counter over its label sets in a Prometheus text page (``/metrics``)."""
    out = dict.fromkeys(names, 0.0)
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        m = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{[^}]*\})?\s+([-+0-9.eE]+|NaN|[+-]?Inf)\s*$", line)
        if m and m.group(1) in out:
            out[m.group(1)] += float(m.group(2))
    return out


# vLLM's prefix-cache counters (tokens queried / found in the cache), read before and after a run, under the
# names the run's metrics give them
PREFIX_CACHE_COUNTERS = {"vllm:prefix_cache_queries_total": "prefix_cache_queried_tokens",
                         "vllm:prefix_cache_hits_total": "prefix_cache_hit_tokens"}



class AskedSettings(TypedDict):
    """What the user asked of the backend, set beside what the server says of itself."""

    context_length: int | None
    tokenizer: str | None
    option_scoring: str


class OpenAIDiscovery(OpenAITokens):
    """What the server says about itself, asked once by ``OpenAIBackend.connect``."""

    served: dict[str, Any]  # what GET /models says of the model (id, root, max_model_len)
    replicas: list[str]  # behind a router: its replicas' URLs (its /list_workers)
    serving_notes: list[str]  # what the endpoint does not offer that a server would (said once)
    server_metrics: bool  # /metrics holds vLLM's counters
    info: BackendInfo
    _listed: list[str]  # the models GET /models listed
    _router_notes: list[str]  # what a router did not pass on that its replicas said
    _asked: AskedSettings
    _asked_concurrency: int | None

    def _discover(self) -> None:
        """Ask ``GET /models`` what the server serves: the model must be among them; its ``root`` and
        ``max_model_len`` (vLLM) join the cache key, so two servers, or one server restarted with another
        model or context under the same name, never share answers. Then see whether ``/tokenize`` works."""
        status, body = self._get_json(self.base_url.rstrip("/") + "/models")
        if status in (401, 403):
            raise BackendRequestError(f"{self.where} refused the credentials (HTTP {status}) when listing models")
        if status == 200 and isinstance(body, dict) and isinstance(body.get("data"), list):
            models = [m for m in body["data"] if isinstance(m, dict)]
            match = [m for m in models if m.get("id") == self.model]
            self._listed = [str(m.get("id")) for m in models]  # checked once replicas are known (_check_served)
            if match:
                self.served = dict(match[0])
        for dialect, probe in (("vllm", {"prompt": "a", "add_special_tokens": False}),
                               ("llama.cpp", {"content": "a", "add_special": False})):
            try:
                self._server_tokenize(probe, retries=self.connect_retries)
            except (BackendRequestError, BackendUnavailableError):
                continue
            self.server_tokenizes, self.dialect = True, dialect
            break
        status, props = self._get_json(self.root + "/props")  # llama.cpp: the context of one slot
        if status == 200 and isinstance(props, dict) and isinstance(props.get("default_generation_settings"), dict):
            self.dialect = "llama.cpp"
            n_ctx = props["default_generation_settings"].get("n_ctx") or props.get("n_ctx")
            if isinstance(n_ctx, int) and n_ctx > 0:
                self.served["n_ctx"] = n_ctx

    def _discover_replicas(self) -> None:
        """Behind a router (vLLM's ``vllm-router``: ``GET /list_workers`` names the replicas; SGLang's
        ``sglang-router``: ``GET /workers``), learn per replica what the router may not pass on: the served model and its context (each
        replica's ``GET /models``; the smallest context of them is the run's) and the prefix-cache counters (each
        replica's ``/metrics``, summed). Requests in flight default to ``CONCURRENCY_PER_SERVER`` per replica.
        A replica the client cannot reach leaves what it would have said unknown; never an error."""
        for route in REPLICA_ROUTES:
            status, body = self._get_json(self.root + route)
            urls = replicas_listed(body) if status == 200 else []
            if urls:
                break
        else:
            return
        self.replicas = [u.rstrip("/") for u in urls]
        if self._asked_concurrency is None:
            self.concurrency = CONCURRENCY_PER_SERVER * len(self.replicas)
        if self.served.get("root") and self.served.get("max_model_len"):
            return
        listed_elsewhere = bool(self._listed) and not self.served
        said = []
        for url in self.replicas:
            try:
                status, body = self._get_json(url + "/v1/models")
            except BackendUnavailableError:
                continue
            models = body.get("data") if status == 200 and isinstance(body, dict) else None
            match = [m for m in models or [] if isinstance(m, dict) and m.get("id") == self.model]
            if match:
                said.append(match[0])
        if said:
            if listed_elsewhere:
                self._router_notes.append(f"lists its own models ({', '.join(self._listed[:3])}): {self.model!r} "
                                          "was found on its replicas")
            contexts = [m["max_model_len"] for m in said if isinstance(m.get("max_model_len"), int)]
            self.served = {**said[0], **self.served}
            if contexts:
                self.served["max_model_len"] = min(contexts)

    def _check_served(self) -> None:
        """The model must be among those the server lists, or, behind a router that lists its own (SGLang's router
        lists "unknown"), among those its replicas list."""
        if self._listed and not self.served:
            raise ConfigError(f"{self.where} does not serve model {self.model!r}; it serves: "
                              f"{', '.join(self._listed[:10])}")

    def _say_what_is_missing(self) -> None:
        """Once, on stderr and in the run's record (``backend_info.extra.serving_notes``): what this endpoint does
        not offer that the run would use, and what the run does without it. Said behind a router, where a route
        the replicas serve may not be passed on; a plain server's own routes are described in docs/serving.md."""

        notes = list(self._router_notes)
        if not self.served.get("max_model_len") and not self.served.get("n_ctx") and not self._asked["context_length"]:
            notes.append("states no context (max_model_len): documents are not cut to fit; give --context-length")
        if not self.tokenizes:
            notes.append("no /tokenize: prompts are not counted; give --tokenizer (the model's own) to count them")
        if not self.server_metrics:
            notes.append("no vLLM /metrics: the run records no prefix-cache counters")
        self.serving_notes = notes
        self.info.extra["replicas"] = list(self.replicas)
        self.info.extra["serving_notes"] = notes
        if self.replicas and notes:
            print(f"note: {self.where} routes to {len(self.replicas)} replicas and " + "; ".join(notes),
                  file=sys.stderr)

    def _probe_prompt_logprobs(self) -> bool:
        """Does the completions endpoint return ``prompt_logprobs`` for token-id prompts (vLLM does)?"""
        import httpx

        ids = self._tokens_of_text("a")
        body = {"model": self.model, "prompt": [ids or [0]], "max_tokens": 1, "temperature": 0.0, "prompt_logprobs": 0}
        try:
            r = self._http.post(self.base_url.rstrip("/") + "/completions", json=body)
            choice = (r.json().get("choices") or [{}])[0] if r.status_code == 200 else {}
        except (httpx.HTTPError, ValueError, AttributeError):
            return False
        return isinstance(choice, dict) and isinstance(choice.get("prompt_logprobs"), list)

    def server_counters(self) -> dict[str, float] | None:
        """The server's prefix-cache counters (vLLM ``/metrics``) under the run metrics' names, or None."""
        return self._read_counters() if self.server_metrics else None

    def _read_counters(self) -> dict[str, float] | None:
        """The prefix-cache counters of the server, or behind a router the sum over its replicas (a router passes
        ``/metrics`` to one replica, or answers with its own): None where any of them has none to give."""
        import httpx

        totals: dict[str, float] = {}
        for root in self.replicas or [self.root]:
            try:
                r = self._http.get(root + "/metrics")
            except httpx.HTTPError:
                return None
            if r.status_code != 200 or "vllm:" not in r.text:
                return None
            for counter, n in prometheus_totals(r.text, tuple(PREFIX_CACHE_COUNTERS)).items():
                totals[counter] = totals.get(counter, 0.0) + n
        return {name: totals[counter] for counter, name in PREFIX_CACHE_COUNTERS.items()}
