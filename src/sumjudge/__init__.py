"""sumjudge: LLM-based multi-agent summary evaluation on one batched, cached engine."""

__version__ = "0.1.0"
