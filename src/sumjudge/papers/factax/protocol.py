"""FacTax (Section 4): taxonomy-grounded zero-shot detection of factual errors, on the whole summary
(``factax``) or window by window (``factax-wd``).

The prompt is the paper's Figure 3 (``factax/fig3_factax``): five error types plus Factually_Correct,
reasoning first, then ``- Label:`` with one or several labels. A statement is factually correct only when
its labels are Factually_Correct and no error type is given (a label line naming both counts as an error).
An answer without a readable label line is retried, then counted as unparsed (never turned into a label);
with ``fallback=option_scores`` (offline profiles) the likeliest label after "- Label: " is taken and
recorded as such.

FacTax-WD (``window_words``, default 30) splits the summary into windows of whole sentences
(``windows.py``); every window is judged against the document, independently (the windows of all
summaries reach the backend together). The summary is correct only if every window is; its error types are
the union of the windows'. If a window says "error" the summary is wrong whatever the others say; if none
does but one is unreadable, the summary has no label. ``window_words=0``: one sentence per window.

Long documents (more than ``align_over`` tokens) are aligned first (Appendix C, ``alignment.py``):
FacTax keeps the document sentences with the best ROUGE-1 + ROUGE-2 recall towards the summary up to
``align_tokens`` tokens; FacTax-WD keeps ``align_sentences`` (n = 5) sentences per window.

Score (for datasets whose labels are scores, e.g. GovReport, SQuALITY, evaluated by Pearson): the share of
the summary's windows judged factually correct (whole-summary FacTax: 1 or 0).
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from typing import Any, Callable

from sumjudge.data.error_taxonomy import ADDITION, CIRCUMSTANTIAL, COREFERENCE, ENTITY, PREDICATE
from sumjudge.data.records import FaithExample
from sumjudge.judges.base import Judgement, fit_prompt, request
from sumjudge.judges.settings import Generation
from sumjudge.llm.engine import Calls
from sumjudge.llm.parsing import ParseError, complete_lines
from sumjudge.papers.factax.alignment import align
from sumjudge.papers.factax.metrics import factax_metrics
from sumjudge.papers.factax.windows import sentences, windows
from sumjudge.run.methods import MethodSpec, register

TEMPLATE = "factax/fig3_factax"
CORRECT = "Factually_Correct"
LABELS = {"Predicate_Error": PREDICATE, "Entity_Error": ENTITY, "Circumstantial_Error": CIRCUMSTANTIAL,
          "Coreference_Error": COREFERENCE, "Addition_Error": ADDITION, CORRECT: CORRECT}
_FIELD = r"^[ \t>*#-]*(?:\d+[.)][ \t]*)?(?:\*\*)?"  # a Markdown field's start: "- ", "2. ", "**", "### "
_LABEL_NAME = r"(?:final[ \t]+|consistency[ \t]+)?labels?"
_LABEL_LINE = re.compile(_FIELD + _LABEL_NAME + r"(?:\(s\))?[ \t]*(?:\*\*)?[ \t]*[:\-][ \t]*(?:\*\*)?(.*)$", re.I | re.M)
_LIST_ITEM = re.compile(r"^[ \t]*(?:[-*+]|\d+[.)])[ \t]+(.*)$")
_LABEL = re.compile(r"(predicate|entity|circumstantial|coreference|addition)[ _-]*errors?|factually[ _-]*correct", re.I)
_NEGATED = re.compile(r"(?:\bnot|\bno|\bnor|\bneither|\bwithout|\bnever|n[\'’]t)[ \t]+(?:\w+[ \t]+){0,2}$", re.I)
# a negating prefix glued or hyphenated to a label name: "Non-Entity_Error", "not-Factually_Correct", "nonfactually"
NEGATING_PREFIX = re.compile(r"(?:\bnon|\bnot|\bno)[ \t]*[-_]?[ \t]*$", re.I)
_REASONING = re.compile(_FIELD + r"reasoning(?:\*\*)?[ \t]*:?[ \t]*(?:\*\*)?[ \t]*:?[ \t]*"
                        r"(.*?)(?=" + _FIELD + _LABEL_NAME + r"\b|\Z)", re.I | re.S | re.M)


def label_names(value: str) -> list[str]:
    """FacTax label names a label value states, in order; ``ParseError`` for a negated name ("not
    factually correct", "no Entity_Error") or the list of labels echoed as alternatives ("... or ...")."""
    found: list[str] = []
    for m in _LABEL.finditer(value):
        if _NEGATED.search(value[:m.start()]) or NEGATING_PREFIX.search(value[:m.start()]):
            raise ParseError(f"negated label in {value.strip()[:80]!r}")
        name = f"{m.group(1).capitalize()}_Error" if m.group(1) else CORRECT
        if name not in found:
            found.append(name)
    if len(found) > 1 and re.search(r"\bor\b|/", value):
        raise ParseError(f"labels offered as alternatives (the instruction echoed?): {value.strip()[:80]!r}")
    if len(found) == len(LABELS):
        raise ParseError("all six labels named: the instruction echoed, not an answer")
    return found


def parse_factax(text: str) -> tuple[list[str], str]:
    """(labels as in the prompt, e.g. ["Entity_Error", "Predicate_Error"], reasoning) from the last label
    line (``- Label:``, ``**Label:**``, ``Final Label:``, ``2. Label:``; an empty label line followed by a
    list reads the list). ``ParseError`` when it names none of the six labels, negates one, or offers them
    as alternatives."""
    lines = list(_LABEL_LINE.finditer(text))
    if not lines:
        raise ParseError("no '- Label:' line")
    last = lines[-1]
    value = last.group(1)
    if not value.strip(" *"):
        items = []
        for line in text[last.end():].splitlines()[1:]:  # the list under an empty label line
            item = _LIST_ITEM.match(line)
            if item:
                items.append(item.group(1))
            elif line.strip() or items:  # prose, or the blank line after the list
                break
        value = ", ".join(items)
    found = label_names(value)
    if not found:
        raise ParseError(f"no FacTax label in {value.strip()[:80]!r}")
    reasoning = _REASONING.search(text)
    return found, (reasoning.group(1).strip() if reasoning else "")


def is_correct(labels: list[str]) -> bool:
    return labels == [CORRECT]


@dataclass
class FacTaxConfig(Generation):  # greedy, 512 answer tokens (Generation's defaults)
    window_words: int | None = None  # None: the whole summary (FacTax) | N words per window (FacTax-WD) | 0: a sentence
    align_over: int = 1024  # documents longer than this (tokens) are aligned (Appendix C)
    align_tokens: int = 1024  # FacTax: aligned context budget
    align_sentences: int = 5  # FacTax-WD: sentences per window


@dataclass
class FacTaxWDConfig(FacTaxConfig):
    window_words: int | None = 30


def summary_sentences(example: FaithExample) -> list[str]:
    """Annotated sentence boundaries where the dataset has them, else ``windows.sentences``."""
    if example.level == "summary" and example.sentences and " ".join(example.sentences).split() == example.summary.split():
        return list(example.sentences)
    return sentences(example.summary)


async def token_counter(llm: Calls, texts: list[str]) -> Callable[[str], int]:
    """Tokens of each of ``texts`` under the model's tokenizer (words where it has none), counted at once."""
    counts = dict(zip(texts, await asyncio.gather(*(llm.count_tokens(t) for t in texts))))
    return lambda t: counts.get(t) or len(t.split())


async def judge_window(example: FaithExample, text: str, i: int, llm: Calls, config: FacTaxConfig,
                       windowed: bool, count: Callable[[str], int] | None) -> dict[str, Any]:
    """One window's verdict; ``count`` (a long document's token counter) asks for the document to be aligned."""
    doc, info = example.document, {}
    if count is not None:
        doc, info = align(doc, text, max_tokens=None if windowed else config.align_tokens,
                          n=config.align_sentences if windowed else None, count=count)
    tag = f"{example.id}/w{i}"
    prompt, fit = await fit_prompt(llm, TEMPLATE, {"document": doc, "statement": text}, max_new_tokens=config.max_new_tokens,
                             policy=config.truncate, tag=tag, shrink="document")
    req = request(prompt, max_new_tokens=config.max_new_tokens, temperature=config.temperature, seed=config.seed,
                  tag=f"{tag}/factax")
    res = await llm.chat_parsed(req, parse_factax, cut_parse=complete_lines(parse_factax))
    out: dict[str, Any] = {"window": text, "alignment": info, **fit, "raw": res.response.text}
    if res.ok:
        labels, why = res.value
        return {**out, "labels": labels, "reasoning": why, "correct": is_correct(labels), "source": "parsed"}
    if config.fallback == "option_scores":
        sc = await llm.score_fallback(req.messages, list(LABELS), prefix="- Reasoning: \n- Label: ", tag=req.tag)
        best = str(sc.best())
        return {**out, "labels": [best], "reasoning": "", "correct": best == CORRECT, "source": "option_scores"}
    return {**out, "labels": [], "reasoning": "", "correct": None, "source": "unparsed", "parse_error": res.error}


async def factax(example: FaithExample, llm: Calls, config: FacTaxConfig) -> Judgement:
    ww = config.window_words
    wins = windows(summary_sentences(example), ww) or [example.summary]
    count = await token_counter(llm, [example.document])  # once per summary
    long_document = count(example.document) > config.align_over
    if long_document:  # alignment weighs the document's sentences
        count = await token_counter(llm, [example.document, *sentences(example.document)])
    judged = await asyncio.gather(*(judge_window(example, w, i, llm, config, ww is not None,
                                                 count if long_document else None)
                                    for i, w in enumerate(wins)))
    verdicts = [w["correct"] for w in judged]
    label = 0 if False in verdicts else (None if None in verdicts else 1)
    types = sorted({LABELS[x] for w in judged for x in w["labels"] if x != CORRECT})
    readable = [v for v in verdicts if v is not None]
    sources = {w["source"] for w in judged}
    source = "unparsed" if label is None else ("option_scores" if "option_scores" in sources else "parsed")
    return Judgement(example_id=example.id, label=label, score=sum(readable) / len(readable) if readable else None,
                     explanation=" | ".join(w["reasoning"] for w in judged if w["reasoning"]),
                     parsed=label is not None, label_source=source,
                     details={"windows": list(judged), "n_windows": len(wins), "predicted_types": types})


register(MethodSpec(name="factax", paper="factax", kind="faithfulness", config_cls=FacTaxConfig, judge=factax,
                    metrics=factax_metrics,
                    description="FacTax: taxonomy-grounded zero-shot detection on the whole summary (Figure 3)"))
register(MethodSpec(name="factax-wd", paper="factax", kind="faithfulness", config_cls=FacTaxWDConfig, judge=factax,
                    metrics=factax_metrics,
                    description="FacTax-WD: FacTax window by window (about 30 words of whole sentences)"))
