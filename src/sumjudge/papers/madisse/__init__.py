"""MADISSE (Koupaee et al.): stance-initialised debate, adjudicators, ambiguity, guideline learning."""

from sumjudge.papers.madisse import ambiguity, baselines, protocol  # noqa: F401  (importing registers the judges)
