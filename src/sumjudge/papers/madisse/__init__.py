"""MADISSE (Koupaee et al.): stance-initialised debate, adjudicators, ambiguity, guideline learning."""

from . import ambiguity, baselines, protocol, taxonomy  # noqa: F401  (importing registers the judges, the taxonomy)
