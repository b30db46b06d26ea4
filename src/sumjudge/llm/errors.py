"""Errors the engine and backends raise; each message names what went wrong and where. ``SumjudgeError`` and
``ConfigError`` are the project's (``sumjudge.errors``), named here too for the engine's users."""

from __future__ import annotations

from sumjudge.errors import ConfigError, SumjudgeError


class PromptTooLongError(SumjudgeError):
    def __init__(self, tag: str, prompt_tokens: int, max_new_tokens: int, context_length: int,
                 unit: str = "tokens", note: str = ""):
        self.tag, self.prompt_tokens, self.context_length = tag, prompt_tokens, context_length
        self._args = (tag, prompt_tokens, max_new_tokens, context_length, unit, note)
        if unit == "tokens":
            text = (f"prompt for {tag or 'a request'} has {prompt_tokens} tokens + {max_new_tokens} new tokens, over "
                    f"the model context of {context_length}; shorten the input or choose a truncation policy "
                    "(--set truncate=...)")
        else:
            text = f"prompt for {tag or 'a request'} has {prompt_tokens} {unit}, over {context_length}"
        super().__init__(text + (f"; {note}" if note else ""))

    def __reduce__(self):  # pickled as its constructor's arguments (the shared engine sends it to a client)
        return (type(self), self._args)


class BackendUnavailableError(SumjudgeError):
    pass


class BackendRequestError(SumjudgeError):
    """The server answered but refused the request (bad model name, prompt over its context, auth)."""


class OptionScoringError(SumjudgeError):
    """The backend cannot give probabilities for the requested options (no logprobs, options not in its top-k)."""


__all__ = ["SumjudgeError", "ConfigError", "PromptTooLongError", "BackendUnavailableError", "BackendRequestError",
           "OptionScoringError"]
