"""A paper's own ``sumjudge`` subcommands, as data: its name, help, the method whose run it makes, its own flags, the
procedure its run carries out and what it prints. The papers register theirs (``COMMANDS``); the command line builds
each one's parser and run (``cli.paper_commands``), so that no paper imports command-line code."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

from sumjudge.registry import Registry


@dataclass(frozen=True)
class PaperCommand:
    name: str
    help: str
    method: str  # the method whose run configuration (``--set`` included) the command's run takes
    procedure: Callable[[dict[str, Any]], Callable[..., Awaitable[dict]]]  # its options -> the run's body (r, llm)
    flags: tuple[tuple[str, dict[str, Any]], ...] = ()  # its own flags: (flag, argparse's keyword arguments)
    run_flags: dict[str, Any] = field(default_factory=dict)  # the shared run flags' defaults (dataset=, split=, ...)
    shows: tuple[str, ...] = ()  # the keys of the procedure's result printed when it ends

    def option_names(self) -> list[str]:
        """Each of its own flags' name in the parsed arguments (``--max-passes`` -> ``max_passes``)."""
        return [flag.lstrip("-").replace("-", "_") for flag, _ in self.flags]


COMMANDS: Registry[PaperCommand] = Registry("command")


def register_command(command: PaperCommand) -> PaperCommand:
    return COMMANDS.add(command.name, command)
