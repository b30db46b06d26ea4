"""Methods: one module per paper plus baselines. Importing this package fills the registry."""

from . import ambiguity, baselines, debate, factax, factax_baselines, factax_sft_inference, geval, madisse, mesa, mesa_geval  # noqa: F401  (importing registers the methods)
from .base import METHODS, Judgement, MethodSpec, get_method, make_config

__all__ = ["METHODS", "Judgement", "MethodSpec", "get_method", "make_config"]
