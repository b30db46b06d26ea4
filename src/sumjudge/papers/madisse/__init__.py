"""MADISSE (Koupaee et al.): stance-initialised debate, adjudicators, ambiguity, guideline learning."""

from . import ambiguity, baselines, protocol  # noqa: F401  (importing registers the judges)
