"""Judges: the registry, the shared judge (G-Eval) and
what every judge builds on. Importing this package registers the shared judges; every paper's judges are
registered on the first lookup (``methods``, ``get_method``: ``base.PLUGIN_PACKAGES``)."""

from .base import METHODS, Judgement, MethodSpec, get_method, make_config, methods
from . import geval  # noqa: F401,E402  (importing registers the shared judges)

__all__ = ["METHODS", "Judgement", "MethodSpec", "get_method", "make_config", "methods"]
