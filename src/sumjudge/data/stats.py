"""Dataset statistics (``sumjudge data stats NAME``): counts, label balance, lengths, categories."""

from __future__ import annotations

import statistics
from collections import Counter
from typing import Any

from . import registry
from .records import FaithExample


def _words(text: str) -> int:
    return len(text.split())


def faith_stats(examples: list[FaithExample]) -> dict[str, Any]:
    labels = Counter(ex.label for ex in examples)
    n = len(examples)
    out: dict[str, Any] = {
        "examples": n,
        "faithful": labels.get(1, 0),
        "unfaithful": labels.get(0, 0),
        "pct_unfaithful": round(100 * labels.get(0, 0) / n, 1) if n else None,
        "documents": len({ex.meta.get("doc_id", ex.document) for ex in examples}),
        "mean_document_words": round(statistics.mean(_words(ex.document) for ex in examples), 1) if n else None,
        "mean_summary_words": round(statistics.mean(_words(ex.summary) for ex in examples), 1) if n else None,
    }
    if any(ex.sentences for ex in examples):
        out["sentences"] = sum(len(ex.sentences) for ex in examples)
    types = Counter(t for ex in examples for t in ex.error_types)
    if types:
        out["error_types"] = dict(types.most_common())
    amb = [ex.ambiguity for ex in examples if ex.ambiguity is not None]
    if amb:
        pos = [a for a in amb if a.ambiguous]
        out["ambiguous"] = len(pos)
        cats = Counter(c for a in pos for c in a.categories)
        out["ambiguity_categories"] = dict(cats.most_common())
        out["ambiguity_category_pct"] = {c: round(100 * k / len(pos), 1) for c, k in cats.most_common()} if pos else {}
        out["ambiguity_subtypes"] = dict(Counter(t for a in pos for t in a.subtypes).most_common())
    return out


def dataset_stats(name: str, level: str | None = None) -> dict[str, Any]:
    spec = registry.get(name)
    examples = registry.load(name, level=level)
    if spec.kind == "faithfulness":
        body = faith_stats(examples)
    else:  # pragma: no cover - other kinds add their own
        body = {"examples": len(examples)}
    return {"dataset": name, "level": level or spec.levels[0], **body}
