"""FacTax (Xu et al.): taxonomy-grounded zero-shot, windows, error types, supervised distillation."""

from sumjudge.papers.factax import baselines, protocol  # noqa: F401  (importing registers the judges)
from sumjudge.papers.factax.sft import inference  # noqa: F401
