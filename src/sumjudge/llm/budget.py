"""A cost guard: at most ``max_calls`` backend calls and ``max_tokens`` tokens (prompt + completion) in one process.

The engine asks the budget before it sends a request to the backend (cache hits are free and never counted). A
request is sent only when it fits what is left: one call, and its prompt tokens (counted with the model's
tokenizer where the backend has one) plus its answer cap (``max_new_tokens``; 1 for option scoring) in tokens.
When an answer comes back, its reserved tokens are replaced by the tokens it used. The first request that does not
fit ends the budget: it and every later one fail with ``BudgetExhausted``, the calls already answered stay cached,
and the same command with a larger budget (or none) resumes from them. The command line exits with
``EXIT_BUDGET`` (6).

Without a tokenizer (an OpenAI-compatible server without ``/tokenize``) a prompt's tokens are known only from the
answer, so ``max_tokens`` can be passed by the prompts of the calls in flight when it is reached.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sumjudge.llm.errors import ConfigError, SumjudgeError


class BudgetExhausted(SumjudgeError):
    """A request that the run's budget (``--max-calls`` / ``--max-tokens``) has no room for."""


@dataclass
class Budget:
    max_calls: int | None = None
    max_tokens: int | None = None
    calls: int = 0  # backend calls sent
    tokens: int = 0  # tokens of the answered calls, plus the reserve of those in flight
    exhausted: str = ""  # why the budget ended ("" while it has room)
    _reserved: dict[str, int] = field(default_factory=dict)  # cache key -> tokens reserved for the call in flight

    def __post_init__(self) -> None:
        for name in ("max_calls", "max_tokens"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise ConfigError(f"--{name.replace('_', '-')} must be a whole number of at least 1, got {value!r}")

    @property
    def limited(self) -> bool:
        return self.max_calls is not None or self.max_tokens is not None

    def admit(self, key: str, tokens: int) -> bool:
        """Take one call and ``tokens`` from the budget for the request ``key``; False (and the budget ends) when
        either does not fit."""
        if self.exhausted:
            return False
        if self.max_calls is not None and self.calls + 1 > self.max_calls:
            self.exhausted = f"{self.calls} backend calls made, --max-calls {self.max_calls}"
        elif self.max_tokens is not None and self.tokens + tokens > self.max_tokens:
            self.exhausted = (f"{self.tokens} tokens used or reserved, the next call needs up to {tokens}, "
                              f"--max-tokens {self.max_tokens}")
        if self.exhausted:
            return False
        self.calls += 1
        self.tokens += tokens
        self._reserved[key] = self._reserved.get(key, 0) + tokens
        return True

    def settle(self, key: str, used: int | None) -> None:
        """The call ``key`` came back having used ``used`` tokens (None: unknown, the reserve stays spent)."""
        reserved = self._reserved.pop(key, 0)
        if used is not None:
            self.tokens += used - reserved

    def error(self) -> BudgetExhausted:
        return BudgetExhausted(f"budget reached ({self.exhausted}); every answered call is cached: run the same "
                               "command again with a larger budget, or none, to resume")

    def as_dict(self) -> dict[str, int | str | None]:
        return {"max_calls": self.max_calls, "max_tokens": self.max_tokens, "calls": self.calls,
                "tokens": self.tokens, "exhausted": self.exhausted}
