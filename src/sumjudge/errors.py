"""The errors every layer may raise and the command line reports as one line: the base class and a bad setting.
The engine's own errors (a prompt over the context, a server that cannot be reached, ...) are in ``llm.errors``;
a data file's in ``data.sources``."""

from __future__ import annotations


class SumjudgeError(Exception):
    """Base class: the CLI prints these as one clear line and exits non-zero."""


class ConfigError(SumjudgeError):
    """A setting, flag or key that cannot be used; the message names it and what it accepts."""
