"""FacTax (Xu et al.): taxonomy-grounded zero-shot, windows, error types, supervised distillation."""

from . import baselines, protocol, types  # noqa: F401  (importing registers the judges, the error types)
from .sft import inference  # noqa: F401
