"""One folder per paper: its protocols, prompts, tables, printed values (``results.yaml``) and the notes on
what the paper leaves open (its ``README.md``). A paper imports the core and the shared judges, never
another paper. Importing this package registers every paper's judges."""

from . import debate, factax, llm_aggrefact, madisse, mesa  # noqa: F401
from .madisse import cli as madisse_cli  # noqa: F401 (registers its command)
from .mesa import cli as mesa_cli  # noqa: F401 (registers its command)

PAPERS = ("madisse", "debate", "mesa", "factax")
# public leaderboards whose judge the arena runs beside the papers' (their prompt, their published numbers)
LEADERBOARDS = ("llm_aggrefact",)

