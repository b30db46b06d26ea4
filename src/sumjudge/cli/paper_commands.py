"""Each paper's own subcommands (``run.commands.COMMANDS``, registered by the papers)."""

from __future__ import annotations

import json
from functools import partial

from sumjudge.cli.flags import add_run_flags, budget_of, check_engine_flags, run_config_of
from sumjudge.cli.subcommand import Subcommand
from sumjudge.run.commands import COMMANDS
from sumjudge.run.runs import Procedure, run


def subcommands() -> list[Subcommand]:
    """Each paper's own subcommands (``run.commands.COMMANDS``, registered by the papers): the shared run flags with
    the command's defaults, then its own flags."""

    return [Subcommand(command.name, command.help, partial(add_arguments, command), partial(main, command))
            for command in COMMANDS.all().values()]


def add_arguments(command, sp) -> None:
    add_run_flags(sp, **command.run_flags)
    for flag, options in command.flags:
        sp.add_argument(flag, **options)


def main(command, a) -> int:
    """A paper's command run as every method runs (``runs.run``: a run folder, its lock, the cache, the budget),
    its procedure given its own flags' values; prints what the command shows."""
    check_engine_flags(a)

    options = {name: getattr(a, name) for name in command.option_names()}
    m = run(run_config_of(a, command.method), a.out, no_cache=a.no_cache, cache=a.cache, budget=budget_of(a),
            procedure=Procedure(command.name, options, command.procedure(options)))
    print(json.dumps({k: m[k] for k in command.shows} | {"out": str(a.out), "backend_calls": m["engine"]["backend_calls"]}))
    return 0

