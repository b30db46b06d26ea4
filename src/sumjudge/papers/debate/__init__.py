"""DEBATE (Kim et al.): Commander, Scorer and devil's-advocate Critic."""

from sumjudge.papers.debate import aspects, protocol  # noqa: F401  (importing registers the judges)
