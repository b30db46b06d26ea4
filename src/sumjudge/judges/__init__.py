"""Judges: the registry, the shared judges (zero-shot, chain of thought, self-consistency, G-Eval) and
what every judge builds on. Importing this package fills the registry with every paper's judges too."""

from .base import METHODS, Judgement, MethodSpec, get_method, make_config
from . import baselines, geval  # noqa: F401,E402  (importing registers the shared judges)
from .. import papers  # noqa: F401,E402  (importing registers every paper's judges)

__all__ = ["METHODS", "Judgement", "MethodSpec", "get_method", "make_config"]
