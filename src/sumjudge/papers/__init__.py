"""One folder per paper: its protocols, prompts, tables, printed values (``results.yaml``) and the notes on
what the paper leaves open (its ``README.md``). A paper imports the core and the shared judges, never
another paper. Importing this package registers every paper's judges."""

from . import debate, factax, madisse, mesa  # noqa: F401

PAPERS = ("madisse", "debate", "mesa", "factax")
