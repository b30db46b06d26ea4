"""Request/response records shared by the engine and every backend."""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any, Mapping
from urllib.parse import urlsplit

Message = dict[str, str]  # {"role": "system"|"user"|"assistant", "content": str}


def _check_messages(messages: list[Message]) -> list[Message]:
    if not messages:
        raise ValueError("a chat request needs at least one message")
    out = []
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or "role" not in m or "content" not in m:
            raise ValueError(f"message {i} must be a dict with 'role' and 'content', got {m!r}")
        if m["role"] not in ("system", "user", "assistant"):
            raise ValueError(f"message {i} has unknown role {m['role']!r}")
        out.append({"role": m["role"], "content": str(m["content"])})
    return out


@dataclass
class ChatRequest:
    """One chat completion to run.

    ``sample_index`` distinguishes independent samples of the same prompt (self-consistency,
    n samples); together with ``seed`` it makes sampled outputs reproducible and cacheable.
    ``tag`` is free text for the transcript (method/role/example); it is not part of the cache key.
    """

    messages: list[Message]
    temperature: float = 0.0
    top_p: float = 1.0
    max_new_tokens: int = 512
    seed: int | None = None
    stop: tuple[str, ...] = ()
    sample_index: int = 0
    tag: str = ""

    def __post_init__(self) -> None:
        self.messages = _check_messages(self.messages)
        self.stop = tuple(self.stop)
        if self.temperature < 0:
            raise ValueError("temperature must be >= 0")
        if not 0 < self.top_p <= 1:
            raise ValueError("top_p must be in (0, 1]")
        if self.max_new_tokens < 1:
            raise ValueError("max_new_tokens must be >= 1")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0

    def key_fields(self) -> dict[str, Any]:
        """The fields that determine the output (the cache key). Greedy decoding ignores the seed."""
        return {
            "messages": self.messages,
            "temperature": self.temperature,
            "top_p": self.top_p if not self.greedy else 1.0,
            "max_new_tokens": self.max_new_tokens,
            "seed": None if self.greedy else self.seed,
            "stop": list(self.stop),
            "sample_index": self.sample_index,
        }

    def to_json(self) -> dict[str, Any]:
        """Every field as JSON (the messages copied one level down: they are flat dicts of strings; ``asdict``'s
        deep copy costs more client time than the request at scale)."""
        return {"messages": [dict(m) for m in self.messages], "temperature": self.temperature, "top_p": self.top_p,
                "max_new_tokens": self.max_new_tokens, "seed": self.seed, "stop": list(self.stop),
                "sample_index": self.sample_index, "tag": self.tag}


SERVING_FIELDS = ("served_by", "cached_tokens")


@dataclass
class ChatResponse:
    text: str
    finish_reason: str  # "stop" (eos or stop string) | "length"
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    backend: str
    model: str
    cache_hit: bool = False
    # what a server says of where it answered, when it says it: the replica (``system_fingerprint``; a stand-in
    # behind a router names itself there) and the prompt tokens it found in its prefix cache (vLLM's
    # ``usage.prompt_tokens_details.cached_tokens``). Left out of the JSON when unsaid.
    served_by: str | None = None
    cached_tokens: int | None = None

    def to_json(self) -> dict[str, Any]:
        """Every field (a str, int, float or bool), the serving fields only when said."""
        return {f: v for f in self.__dataclass_fields__
                if (v := getattr(self, f)) is not None or f not in SERVING_FIELDS}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "ChatResponse":
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})


@dataclass
class OptionRequest:
    """Score a closed set of continuations after the assistant turn starts (e.g. "0"/"1", "1".."5")."""

    messages: list[Message]
    options: tuple[str, ...]
    prefix: str = ""  # text the assistant turn starts with before the option (e.g. "<label>")
    tag: str = ""

    def __post_init__(self) -> None:
        self.messages = _check_messages(self.messages)
        self.options = tuple(str(o) for o in self.options)
        if len(self.options) < 2 or len(set(self.options)) != len(self.options):
            raise ValueError(f"options must be at least two distinct strings, got {self.options!r}")

    def key_fields(self) -> dict[str, Any]:
        return {"messages": self.messages, "options": list(self.options), "prefix": self.prefix}

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["options"] = list(self.options)
        return d


@dataclass
class OptionScores:
    """Probability of each option, renormalised over the options; ``logprobs`` are the raw values."""

    probs: dict[str, float]
    logprobs: Mapping[str, float | None]  # None: an option with no log-probability (openai: outside top_logprobs)
    method: str  # "sequence_logprob" (hf) | "top_logprobs" (openai)
    backend: str
    model: str
    latency_s: float = 0.0
    cache_hit: bool = False
    coverage: float = 1.0  # mass of the options in the raw distribution (openai: within top_logprobs)

    def best(self) -> str:
        return max(self.probs, key=self.probs.__getitem__)

    def expectation(self) -> float:
        """Probability-weighted mean of numeric options (G-Eval score)."""
        return sum(float(o) * p for o, p in self.probs.items())

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "OptionScores":
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})


@dataclass
class BackendInfo:
    name: str
    model: str
    revision: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    server: str = ""  # openai: the normalised base URL, credentials removed ("" for local backends)
    server_in_key: bool = True  # False where the served model's identity (server_model) tells answers apart alone
    server_model: dict[str, Any] = field(default_factory=dict)  # openai: what GET /models says (id, root, max_model_len)
    option_scoring: str = ""  # openai: prompt_logprobs (exact) | top_logprobs (first token, top-k); hf: ""


def server_identity(base_url: str | None) -> str:
    """A server's identity for the cache and the run record: scheme, host, port and path, lower-cased host, no
    user:password, query or trailing slash (a key in the URL is never stored)."""

    if not base_url:
        return ""
    u = urlsplit(base_url.strip())
    host = (u.hostname or "").lower()
    port = f":{u.port}" if u.port else ""
    return f"{u.scheme.lower()}://{host}{port}{u.path.rstrip('/')}"


def cache_key(kind: str, info: BackendInfo, fields: dict[str, Any]) -> str:
    payload = {"kind": kind, "backend": info.name, "model": info.model, "revision": info.revision, **fields}
    if info.extra.get("dtype") and info.name == "hf":  # one model's weights in another dtype answer differently
        payload["dtype"] = info.extra["dtype"]
    if info.server and info.server_in_key:  # two servers never share answers (local backends keep their keys)
        payload["server"] = info.server
    if info.server_model:  # nor one server serving another model, or the same one with another context
        payload["server_model"] = info.server_model
    if kind == "options" and info.option_scoring:  # exact and top-k option scores are different numbers
        payload["option_scoring"] = info.option_scoring
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def normalise_logprobs(raw: Mapping[str, float | None]) -> dict[str, float]:
    """Softmax over the options that have a log-probability; options without one get 0."""
    known = {o: v for o, v in raw.items() if v is not None}
    if not known:
        raise ValueError("no option has a log-probability")
    m = max(known.values())
    z = sum(math.exp(v - m) for v in known.values())
    return {o: (math.exp(known[o] - m) / z if o in known else 0.0) for o in raw}


def prompt_digest(value: Any) -> str:
    """A short key for a prompt or a text (JSON-able: messages, a string, a tuple of them), for caches of token
    counts and ids: a prompt can be a whole meeting, so such caches keep this, never the text."""
    blob = json.dumps(value, sort_keys=True, ensure_ascii=False)
    return hashlib.blake2b(blob.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()

