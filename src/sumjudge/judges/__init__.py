"""Judges: the registry and what every judge builds on, and the pieces the papers' judges share (G-Eval's
aspect scoring, rated aspects, sentence windows). Every judge is registered by its paper, on the first lookup
(``methods``, ``get_method``: ``base.PLUGIN_PACKAGES``)."""

from .base import METHODS, Judgement, MethodSpec, get_method, make_config, methods

__all__ = ["METHODS", "Judgement", "MethodSpec", "get_method", "make_config", "methods"]
