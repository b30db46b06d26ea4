"""One folder per paper: its protocols, prompts, tables, printed values (``results.yaml``) and the notes on
what the paper leaves open (its ``README.md``). A paper imports the core and the shared judges, never
another paper; it names another paper's methods, templates or aspects only as ``USES`` declares. Importing this
package registers every paper's judges."""

from sumjudge.papers import debate, factax, llm_aggrefact, madisse, mesa  # noqa: F401
from sumjudge.papers.madisse import cli as madisse_cli  # noqa: F401 (registers its command)
from sumjudge.papers.mesa import cli as mesa_cli  # noqa: F401 (registers its command)

PAPERS = ("madisse", "debate", "mesa", "factax")
# public leaderboards whose judge the arena runs beside the papers' (their prompt, their published numbers)
LEADERBOARDS = ("llm_aggrefact",)

# What a paper uses of another paper's, always by name (a paper imports no other paper): paper -> the other paper ->
# the names it uses, each a method as registered, a prompt template ("paper/stem") or a rated aspect
# ("dataset/aspect") whose template the other paper registers. tests/core/test_layout.py scans each paper's code for
# the others' names and fails on a use not declared here (and on a declaration no code makes).
USES: dict[str, dict[str, tuple[str, ...]]] = {
    # Table 2's baselines: MADISSE's zero-shot and chain-of-thought prompts (on request), and G-Eval's SummEval
    # consistency prompt as DEBATE registers it (the ``g-eval-consistency`` method)
    "factax": {"madisse": ("zero-shot", "cot"), "debate": ("summeval/consistency",)},
}

