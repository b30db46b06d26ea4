"""The errors every layer may raise and the command line reports as one line: the base class and a bad setting.
The engine's own errors (a prompt over the context, a server that cannot be reached, ...) are in ``llm.errors``;
a data file's in ``data.sources``. Any other exception reaching the command line is a bug in sumjudge: it is
shown with its traceback."""

from __future__ import annotations


class SumjudgeError(Exception):
    """Base class: the CLI prints these as one clear line and exits non-zero."""


class ConfigError(SumjudgeError, ValueError):
    """A setting, flag or key that cannot be used; the message names it and what it accepts (exit 2). A
    ValueError too, for code that checks a value and catches what it refuses."""


class UnknownName(ConfigError, KeyError):
    """A name that no registry holds (a dataset, ...): a ConfigError, and a KeyError for code that looks names
    up; its text is the message alone (a KeyError's would be quoted)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""
