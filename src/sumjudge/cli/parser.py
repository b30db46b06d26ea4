"""The argument parser whose usage errors are one line (``OneLineParser``)."""

from __future__ import annotations

import argparse
import re

_ARGPARSE_MESSAGES = (  # argparse's wording -> one line that names the flag and what it accepts
    (re.compile(r"^argument (?:cmd|\{[^}]*\}): invalid choice: '(?P<v>[^']*)' \(choose from (?P<c>.*)\)$"),
     "unknown command '{v}' (commands: {c})"),
    (re.compile(r"^argument (?P<f>[^:]+): invalid int value: '(?P<v>[^']*)'$"), "{f} expects a whole number, not '{v}'"),
    (re.compile(r"^argument (?P<f>[^:]+): invalid float value: '(?P<v>[^']*)'$"), "{f} expects a number, not '{v}'"),
    (re.compile(r"^argument (?P<f>[^:]+): invalid choice: '(?P<v>[^']*)' \(choose from (?P<c>.*)\)$"),
     "{f} accepts {c}, not '{v}'"),
    (re.compile(r"^argument (?P<f>[^:]+): (?P<rest>.*)$"), "{f}: {rest}"),
)


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line: what is wrong, naming the flag and what it accepts,
    and where the usage is (``--help``), in place of argparse's usage block; exit status 2 as argparse's."""

    def error(self, message: str):
        for pattern, text in _ARGPARSE_MESSAGES:
            m = pattern.match(message)
            if m:
                message = text.format(**{k: v.replace("'", "") if k == "c" else v for k, v in m.groupdict().items()})
                break
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")
