"""Long-document alignment (FacTax Appendix C): the document sentences most related to a summary (or a
summary window), as a shorter context.

Each document sentence is scored by ROUGE-1 recall + ROUGE-2 recall of the summary against it (how much
of the summary's unigrams and bigrams the sentence covers; Google's ``rouge-score``, stemming on). The
best-scoring sentences are taken either until a token budget is reached (FacTax: 1024 tokens; the sentence
that would overflow the budget is skipped and smaller ones are still tried) or up to ``n`` sentences
(FacTax-WD: n = 5 per window). The chosen sentences are joined in document order. Documents within the
budget are used as they are.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Callable

from sumjudge.papers.factax.windows import sentences


@lru_cache(maxsize=1)
def _scorer():
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(["rouge1", "rouge2"], use_stemmer=True)


def sentence_scores(doc_sents: list[str], summary: str) -> list[float]:
    sc = _scorer()
    out = []
    for s in doc_sents:
        r = sc.score(target=summary, prediction=s)
        out.append(r["rouge1"].recall + r["rouge2"].recall)
    return out


def align(document: str, summary: str, *, max_tokens: int | None = None, n: int | None = None,
          count: Callable[[str], int] | None = None) -> tuple[str, dict]:
    """(context, info): the aligned context for ``summary`` and what was done (kept / selected sentences)."""
    count = count or (lambda t: len(t.split()))
    if max_tokens is not None and n is None:
        total = count(document)
        if total <= max_tokens:
            return document, {"aligned": False, "doc_tokens": total}
    sents = sentences(document)
    scores = sentence_scores(sents, summary)
    order = sorted(range(len(sents)), key=lambda i: (-scores[i], i))
    chosen: list[int] = []
    used = 0
    for i in order:
        if n is not None and len(chosen) >= n:
            break
        cost = count(sents[i])
        if max_tokens is not None and used + cost > max_tokens:
            continue
        chosen.append(i)
        used += cost
    chosen.sort()
    return " ".join(sents[i] for i in chosen), {"aligned": True, "doc_sentences": len(sents),
                                                "selected": chosen, "context_tokens": used}
