"""ScriptedBackend: a deterministic test double for protocol tests. It is not a model.

Rules are tried in order; the first whose ``match`` accepts a request produces the reply. A
``match`` is a regular expression searched in the last user message (or a callable on the
request); a ``reply`` is a string or a callable ``(request) -> str``. A request no rule matches is
an error, so a protocol test cannot pass on an unplanned call.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from sumjudge.errors import SumjudgeError
from sumjudge.llm.backend_protocol import Capabilities
from sumjudge.llm.types import BackendInfo, ChatRequest, ChatResponse, OptionRequest, OptionScores


@dataclass
class Rule:
    match: str | Callable[[ChatRequest], bool]
    reply: str | Callable[[ChatRequest], str]
    finish: str = "stop"  # "length": the reply stands for an answer cut at max_new_tokens

    def accepts(self, req) -> bool:
        if callable(self.match):
            return bool(self.match(req))
        return re.search(self.match, req.messages[-1]["content"], re.S) is not None


class NoRuleMatches(SumjudgeError, LookupError):
    """A request the scripted backend has no answer for: a one-line error, never an answer."""


class ScriptedBackend:
    name = "scripted"

    def __init__(self, rules: list[Rule] | None = None, options: Callable[[OptionRequest], dict[str, float]] | None = None,
                 model: str = "scripted", context_length: int | None = None):
        self.rules = list(rules or [])
        self.context_length = context_length  # words, when a test needs prompts fitted
        self.options_fn = options
        self.info = BackendInfo(name="scripted", model=model)
        self.requests: list[ChatRequest] = []  # every request received, in arrival order
        self.batches: list[int] = []  # size of each generate() call

    def add(self, match, reply, finish: str = "stop") -> "ScriptedBackend":
        self.rules.append(Rule(match, reply, finish))
        return self

    @property
    def capabilities(self) -> Capabilities:
        """A word is a token; options are scored by the given function, if any."""
        return Capabilities(option_scoring="exact" if self.options_fn else "none", tokenizer="local",
                            context_length=self.context_length)

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def prompt_tokens(self, messages: list[dict[str, str]]) -> int:
        return sum(self.count_tokens(m["content"]) for m in messages)

    def decode_stats(self) -> None:
        return None

    def server_counters(self) -> None:
        return None

    async def generate(self, reqs: list[ChatRequest], on_results=None) -> list[ChatResponse | Exception]:
        self.batches.append(len(reqs))
        out: list[ChatResponse | Exception] = []
        for r in reqs:
            self.requests.append(r)
            rule = next((x for x in self.rules if x.accepts(r)), None)
            if rule is None:
                out.append(NoRuleMatches(f"scripted backend: no rule matches request {r.tag!r}: "
                                         f"{r.messages[-1]['content'][:120]!r} (it answers only the rules a test "
                                         "gives it; to judge with a model, use --backend hf or openai)"))
                continue
            text = rule.reply(r) if callable(rule.reply) else rule.reply
            out.append(ChatResponse(text=text, finish_reason=rule.finish, prompt_tokens=sum(len(m["content"].split()) for m in r.messages),
                                    completion_tokens=len(text.split()), latency_s=0.0, backend="scripted",
                                    model=self.info.model))
        return out

    async def score(self, reqs: list[OptionRequest], on_results=None) -> list[OptionScores | Exception]:
        out: list[OptionScores | Exception] = []
        for r in reqs:
            if self.options_fn is None:
                out.append(NoRuleMatches("scripted backend: no option-scoring function given"))
                continue
            got = self.options_fn(r)  # probabilities, or (probabilities, coverage)
            probs, coverage = got if isinstance(got, tuple) else (got, 1.0)
            out.append(OptionScores(probs=probs, logprobs={k: None for k in probs}, method="scripted",
                                    backend="scripted", model=self.info.model, coverage=coverage))
        return out
