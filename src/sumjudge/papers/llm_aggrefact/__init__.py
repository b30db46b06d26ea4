"""LLM-AggreFact (Tang et al. 2024, MiniCheck), the public leaderboard of grounded fact-checking: its LLM prompt as
a judge, read two ways (``judge``), and the leaderboard's published balanced accuracy per model and dataset
(``published``), which the arena shows beside ours."""

from sumjudge.papers.llm_aggrefact import judge  # noqa: F401
