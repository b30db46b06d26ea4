"""DEBATE (Kim et al.): Commander, Scorer and devil's-advocate Critic."""

from . import protocol  # noqa: F401  (importing registers the judges)
