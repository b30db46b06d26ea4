"""One ``sumjudge`` subcommand (``Subcommand``): its name, its help line, the flags it adds to its parser and the
function that runs it on the parsed arguments (an exit status)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Subcommand:
    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]

    def add_to(self, subparsers) -> None:
        """Its parser among ``subparsers`` (``add_subparsers``' action), dispatching to ``run``."""
        p = subparsers.add_parser(self.name, help=self.help)
        self.add_arguments(p)
        p.set_defaults(fn=self.run)
