"""One folder per paper: its protocols, prompts, tables, printed values (``results.yaml``) and the notes on
what the paper leaves open (its ``README.md``). A paper imports the core and the shared judges, never
another paper. Importing this package registers every paper's judges."""

from . import debate, factax, llm_aggrefact, madisse, mesa  # noqa: F401
from .madisse import cli as madisse_cli
from .mesa import cli as mesa_cli

PAPERS = ("madisse", "debate", "mesa", "factax")
# public leaderboards whose judge the arena runs beside the papers' (their prompt, their published numbers)
LEADERBOARDS = ("llm_aggrefact",)


def add_paper_commands(sub) -> None:
    """Each paper's own ``sumjudge`` subcommands, added to the command line's subparsers."""
    madisse_cli.add_commands(sub)
    mesa_cli.add_commands(sub)
