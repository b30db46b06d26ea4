"""Sentences and summary windows for window-based inference (FacTax-WD, Section 4.2).

``sentences`` splits at sentence-final punctuation (. ! ? and closing quotes/brackets) followed by
whitespace, without splitting after common abbreviations, initials or decimal numbers; text without
sentence punctuation is one sentence. A dotted word ("p.m.", "U.S.") never ends a sentence. Loaders that
know the annotated sentence boundaries (DiaSumFact) pass them instead.

``windows`` groups whole sentences, in order, into windows of about ``window_words`` words: a sentence
joins the current window while the window stays within ``window_words`` words; otherwise it starts the
next one. A single sentence longer than ``window_words`` is its own window (never cut). ``window_words``
0 = one sentence per window; None = the whole summary as one window (plain FacTax).
"""

from __future__ import annotations

import re

ABBREVIATIONS = {"mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "vs", "etc", "e.g", "i.e", "u.s", "u.k", "no",
                 "inc", "ltd", "co", "corp", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct",
                 "nov", "dec", "fig", "approx", "dept", "gen", "gov", "sen", "rep", "lt", "col", "capt", "mt"}
_END = re.compile(r"[.!?]+[\"'”’)\]]*(?=\s+)")


def sentences(text: str) -> list[str]:
    text = text.strip()
    out, start = [], 0
    for m in _END.finditer(text):
        before = text[start:m.start()].split()
        word = before[-1].lower().rstrip(".") if before else ""
        if m.group().startswith(".") and len(m.group().rstrip("\"'”’)]")) == 1 and (
                word in ABBREVIATIONS or (len(word) == 1 and word.isalpha()) or "." in word):
            continue  # "Mr. Smith", "J. Doe", "e.g. this", "3 p.m. on"
        out.append(text[start:m.end()].strip())
        start = m.end()
    tail = text[start:].strip()
    if tail:
        out.append(tail)
    return [s for s in out if s]


def windows(sents: list[str], window_words: int | None) -> list[str]:
    """Windows of whole sentences (see the module docstring)."""
    sents = [s.strip() for s in sents if s.strip()]
    if not sents:
        return []
    if window_words is None:
        return [" ".join(sents)]
    out: list[list[str]] = []
    size = 0
    for s in sents:
        n = len(s.split())
        if out and window_words > 0 and size + n <= window_words:
            out[-1].append(s)
            size += n
        else:
            out.append([s])
            size = n
    return [" ".join(w) for w in out]
