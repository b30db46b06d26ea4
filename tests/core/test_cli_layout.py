"""The command line's shape: one module per subcommand (``cli/<name>_command.py``, its ``COMMAND`` a ``Subcommand``),
the papers' commands from the registry, the parser built from ``cli.main.subcommands()`` in that order, and no
function in ``cli/`` of more than 60 lines."""

from __future__ import annotations

import argparse
import ast
import importlib
from functools import partial
from pathlib import Path

import sumjudge.cli
from sumjudge.cli.main import build_parser, subcommands
from sumjudge.cli.subcommand import Subcommand

CLI = Path(sumjudge.cli.__file__).parent


def _choices(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices


def test_each_subcommand_module_holds_one_subcommand_named_as_its_file():
    modules = sorted(CLI.glob("*_command.py"))
    assert len(modules) >= 8
    listed = {c.name for c in subcommands()}
    for f in modules:
        command = importlib.import_module(f"sumjudge.cli.{f.stem}").COMMAND
        assert isinstance(command, Subcommand)
        assert command.name == f.stem.removesuffix("_command").replace("_", "-")
        assert command.name in listed


def test_the_parser_is_the_list_of_subcommands_each_dispatching_to_its_run():
    from sumjudge.run.commands import COMMANDS

    commands = subcommands()
    names = [c.name for c in commands]
    assert list(_choices(build_parser())) == names
    assert len(set(names)) == len(names) and set(COMMANDS.all()) <= set(names)
    def handler(fn):  # a paper command's run is main bound to its command (a new partial on each build)
        return (fn.func, fn.args) if isinstance(fn, partial) else fn

    for command, (name, sp) in zip(commands, _choices(build_parser()).items()):
        assert handler(sp.get_default("fn")) == handler(command.run), name


def test_no_function_of_the_command_line_is_long():
    long = [f"{f.name}:{n.name} ({n.end_lineno - n.lineno + 1} lines)" for f in sorted(CLI.glob("*.py"))
            for n in ast.walk(ast.parse(f.read_text(encoding="utf-8")))
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.end_lineno - n.lineno + 1 > 60]
    assert long == []
