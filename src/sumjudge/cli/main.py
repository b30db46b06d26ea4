"""``sumjudge run | arena | plan | scale | data | bench | tiny-model | cache``, and the papers' own commands."""

from __future__ import annotations

import argparse
import sys

from sumjudge.cli import (
    arena_command,
    bench_command,
    cache_command,
    data_command,
    paper_commands,
    plan_command,
    run_command,
    scale_command,
    tiny_model_command,
)
from sumjudge.cli.flags import EXIT_BACKEND, EXIT_BUDGET, EXIT_DATA, EXIT_INTERRUPTED, EXIT_RUN, EXIT_USAGE  # noqa: F401
from sumjudge.cli.parser import OneLineParser
from sumjudge.cli.subcommand import Subcommand
from sumjudge.data.sources import DataFormatError, DataMissingError
from sumjudge.errors import ConfigError, SumjudgeError
from sumjudge.llm.budget import BudgetExhausted
from sumjudge.llm.errors import BackendUnavailableError
from sumjudge.llm.extras import missing_extra


def subcommands() -> list[Subcommand]:
    """Every subcommand, in the order `sumjudge --help` lists them."""
    return [run_command.COMMAND,
            *paper_commands.subcommands(),  # each paper's own commands (guideline learning, self-training)
            arena_command.COMMAND, tiny_model_command.COMMAND, cache_command.COMMAND, data_command.COMMAND,
            plan_command.COMMAND, scale_command.COMMAND, bench_command.COMMAND]


def build_parser() -> argparse.ArgumentParser:
    """The ``sumjudge`` parser: this module's docstring its description, a subparser for each subcommand."""
    p = OneLineParser(prog="sumjudge", description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    for command in subcommands():
        command.add_to(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv``, run the subcommand and return its exit status; the project's errors become the exit codes
    that docs/command-line.md lists (``flags.EXIT_*``), with a one-line message."""

    args = build_parser().parse_args([str(a) for a in argv] if argv is not None else None)
    try:
        return args.fn(args)
    except KeyboardInterrupt:
        print("sumjudge: interrupted; every finished call is cached: run the same command again to resume",
              file=sys.stderr)
        return EXIT_INTERRUPTED
    except (DataMissingError, DataFormatError, FileNotFoundError) as e:
        print(f"sumjudge: data error: {e}", file=sys.stderr)
        return EXIT_DATA
    except ConfigError as e:  # only the project's own refusals: any other ValueError is a bug, with its traceback
        print(f"sumjudge: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except ModuleNotFoundError as e:  # a module of the hf extra that no guard asked for first (llm/extras.py)

        if (said := missing_extra(e, f"sumjudge {getattr(args, 'cmd', '')}".strip())) is None:
            raise
        print(f"sumjudge: error: {said}", file=sys.stderr)
        return EXIT_USAGE
    except BackendUnavailableError as e:
        print(f"sumjudge: backend error: {e}", file=sys.stderr)
        return EXIT_BACKEND
    except BudgetExhausted as e:
        print(f"sumjudge: {e}", file=sys.stderr)
        return EXIT_BUDGET
    except SumjudgeError as e:
        print(f"sumjudge: error: {e}", file=sys.stderr)
        return EXIT_RUN


if __name__ == "__main__":
    sys.exit(main())
