"""Methods: one module per paper plus baselines. Importing this package fills the registry."""

from . import baselines  # noqa: F401  (registers zero-shot)
from .base import METHODS, Judgement, MethodSpec, get_method, make_config

__all__ = ["METHODS", "Judgement", "MethodSpec", "get_method", "make_config"]
