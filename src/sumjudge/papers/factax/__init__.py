"""FacTax (Xu et al.): taxonomy-grounded zero-shot, windows, error types, supervised distillation."""

from . import baselines, protocol  # noqa: F401  (importing registers the judges)
from .sft import inference  # noqa: F401
