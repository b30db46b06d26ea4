"""Parsers for model answers. A value is read only where the text states it; anything else raises
``ParseError`` (the engine retries, then counts the answer as unreadable). The regression corpus of
adversarial answers lives beside this module in ``parser_corpus/`` (one file per parser family).
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any


class ParseError(ValueError):
    """The output does not contain the requested field in any accepted form."""


def xml_tag(text: str, tag: str, *, last: bool = True, closed_only: bool = False) -> str:
    """Content of ``<tag>...</tag>``; tolerates a missing closing tag at the end of the output unless
    ``closed_only`` (an answer cut at its token limit, whose open tag stopped mid-way).

    Models often repeat the tag name in their reasoning, so the last complete occurrence wins by default.
    """
    open_tag = rf"<\s*{re.escape(tag)}\s*>"
    # the content may not contain another opening tag: "<label> tags. <label>0</label>" yields "0"
    pat = re.compile(rf"{open_tag}((?:(?!{open_tag}).)*?)<\s*/\s*{re.escape(tag)}\s*>", re.S | re.I)
    found = pat.findall(text)
    if found:
        return (found[-1] if last else found[0]).strip()
    if closed_only:
        raise ParseError(f"no closed <{tag}> field in output")
    open_ = re.search(rf"<\s*{re.escape(tag)}\s*>(.*)\Z", text, re.S | re.I)
    if open_ and open_.group(1).strip():
        return open_.group(1).strip()
    raise ParseError(f"no <{tag}> field in output")


def complete_lines(parse):
    """A parser for answers cut at their token limit: ``parse`` reads only the complete lines (the last line
    stopped mid-way: ``Score: 4`` there may have gone on ``.5``). Methods whose answer states its value on a
    line of its own pass this as the engine's ``cut_parse``."""

    def read(text: str):
        head, sep, _ = text.rpartition("\n")
        if not sep or not head.strip():
            raise ParseError("the answer was cut in its first line")
        return parse(head)

    return read


def tag_bodies(text: str, tag: str) -> list[tuple[str, bool]]:
    """Every ``<tag>`` opening in order, with its body and whether it was closed before the next opening."""
    open_re = re.compile(rf"<\s*{re.escape(tag)}\s*>", re.I)
    close_re = re.compile(rf"<\s*/\s*{re.escape(tag)}\s*>", re.I)
    out = []
    for m in open_re.finditer(text):
        rest = text[m.end():]
        nxt_open, nxt_close = open_re.search(rest), close_re.search(rest)
        if nxt_close and (not nxt_open or nxt_close.start() < nxt_open.start()):
            out.append((rest[:nxt_close.start()], True))
        else:
            out.append((rest[:nxt_open.start()] if nxt_open else rest, False))
    return out


_NEGATOR = re.compile(r"\b(?:not|no|never|neither|nor|without|hardly|cannot)\b|n[\'’]t\b", re.I)
_POSITIVE = {"consistent", "faithful", "factual", "supported", "correct", "accurate"}
_NEGATIVE = {"inconsistent", "unfaithful", "nonfactual", "non-factual", "unsupported", "incorrect", "inaccurate",
             "hallucinated", "hallucination", "error", "errors", "wrong", "contradicts", "contradiction"}
_HEDGES = {"partially", "partly", "mostly", "mainly", "largely", "somewhat", "except", "but", "although", "however",
           "unclear", "unsure", "maybe", "perhaps", "possibly", "ambiguous", "either"}


def binary_label(text: str, tag: str = "label", *, closed_only: bool = False) -> int:
    """The 0/1 label an answer states in ``<label>...</label>`` (1 faithful/consistent, 0 not).

    Read only when the text states it:

    - the last *closed* tag is the statement (answers restate the format before answering); an unclosed
      final tag counts only when it holds nothing but the digit (generation stopped before ``</label>``);
      a tag cut in the middle of prose is unreadable;
    - inside the tag: one digit 0/1 (``1``, ``1 (consistent)``, ``0.0``), or words of one polarity only
      (``consistent``, ``unfaithful``); both digits (the instruction echoed: ``1 (consistent) or 0
      (inconsistent)``), a digit contradicted by its words (``1 (inconsistent)``), any negation (``not
      consistent``), a hedge (``mostly consistent``) or another number (``-1``, ``0.5``, ``2``) is unreadable.

    ``closed_only`` (an answer cut at its token limit): only a closed tag is a statement; a final unclosed tag
    was cut where it stands (``<label>1`` may have gone on ``0``) and, like any tag opened after the last
    closed one, makes the answer unreadable.
    """
    bodies = tag_bodies(text, tag)
    if closed_only:
        if bodies and not bodies[-1][1]:
            raise ParseError(f"<{tag}> was cut before it closed: {bodies[-1][0].strip()[:40]!r}")
    elif bodies and not bodies[-1][1] and re.fullmatch(r"\s*[01]\s*", bodies[-1][0]):
        return int(bodies[-1][0].strip())
    closed = [b for b, c in bodies if c]
    if not closed:
        if bodies:
            raise ParseError(f"<{tag}> is never closed (cut answer?): {bodies[-1][0].strip()[:40]!r}")
        raise ParseError(f"no <{tag}> field in output")
    return _label_value(closed[-1], tag)


def _label_value(body: str, tag: str) -> int:
    shown = body.strip()[:40]
    if re.search(r"(?<![\d.])[-+−]\s*[01]\b|(?<![\d.])(?:[2-9]|[01]\d)(?![\d])|\d\.(?!0+\b)\d", body):
        raise ParseError(f"<{tag}> holds a number other than 0 or 1: {shown!r}")
    digits = {int(m.group(1)) for m in re.finditer(r"(?<![\d.])([01])(?:\.0+)?(?![\d.])", body)}
    words = set(re.findall(r"[a-z]+(?:-[a-z]+)*", body.lower()))
    if _NEGATOR.search(body):
        raise ParseError(f"<{tag}> holds a negation, not a label: {shown!r}")
    if words & _HEDGES:
        raise ParseError(f"<{tag}> hedges: {shown!r}")
    polarity = {1 for w in words if w in _POSITIVE} | {0 for w in words if w in _NEGATIVE}
    if len(digits) > 1 or len(polarity) > 1:
        raise ParseError(f"<{tag}> names both labels (the instruction echoed?): {shown!r}")
    if digits:
        (d,) = digits
        if polarity and polarity != {d}:
            raise ParseError(f"<{tag}> digit and words disagree: {shown!r}")
        return d
    if polarity:
        return polarity.pop()
    raise ParseError(f"<{tag}> holds {shown!r}, not 0 or 1")


_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.S)


def _answer_fence(text: str) -> str:
    """The fenced block that holds the answer (the whole text where there is none): the last one stated to be
    the answer ("My answer: ```json ...```"), else the first not introduced as an example, else the first."""
    fences = list(_FENCE.finditer(text))
    if not fences:
        return text
    before = [text[max(0, f.start() - 120):f.start()] for f in fences]
    stated = [f for f, b in zip(fences, before) if _ANSWER_INTRO.search(b)]
    plain = [f for f, b in zip(fences, before) if not _EXAMPLE_INTRO.search(b)]
    return (stated[-1] if stated else plain[0] if plain else fences[0]).group(1)


def _balanced(text: str, start: int) -> str | None:
    open_ch = text[start]
    close_ch = "}" if open_ch == "{" else "]"
    depth, in_str, esc, quote = 0, False, False, ""
    for i in range(start, len(text)):
        c = text[i]
        if in_str:
            if esc:
                esc = False
            elif c == "\\":
                esc = True
            elif c == quote:
                in_str = False
            continue
        if c in "\"'":
            in_str, quote = True, c
        elif c == open_ch:
            depth += 1
        elif c == close_ch:
            depth -= 1
            if depth == 0:
                return text[start: i + 1]
    return None


_OPENING = re.compile(r"[\[{]")
# a quoted string (left as it is) or one of JSON's bare words (true, false, null)
_QUOTED_OR_WORD = re.compile(r"""("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')|\b(true|false|null)\b""", re.S)
_PY_WORDS = {"true": "True", "false": "False", "null": "None"}


def _python_literals(text: str) -> str:
    """JSON's bare ``true``/``false``/``null`` as Python's, for a Python-style answer (single quotes); the
    same words inside quoted strings are text and stay as they are."""
    return _QUOTED_OR_WORD.sub(lambda m: m.group(1) or _PY_WORDS[m.group(2)], text)


def lenient_json(text: str) -> Any:
    """The JSON value an answer consists of: the whole reply, a fenced block, or the first top-level JSON
    value standing on its own in prose (single quotes, Python literals and trailing commas forgiven). A value
    introduced as an example, a template or the format ("Use this format:", "For example:") gives way to a
    later one: quoting the format before answering is common; it is read only when no answer follows. A value
    stated to be the answer ("My answer:", "Final answer:") is the answer, wherever an other value stands; of
    fenced blocks, the one so stated, else the first that is not introduced as an example.

    Unreadable (``ParseError``) rather than guessed: a value that is cut (unbalanced brackets: nothing inside
    a truncated object is read), one glued to other symbols (``x([]*`` is not an empty list), and a value
    inside a bracketed chunk that does not parse (its inner lists are not answers of their own).
    """
    body = _answer_fence(text)
    pos = 0
    example: Any = _NO_VALUE
    first: Any = _NO_VALUE  # the first value not introduced as an example: the answer unless one is stated later
    stated: Any = _NO_VALUE
    while True:
        m = _OPENING.search(body, pos)
        if m is None:
            break
        start = m.start()
        chunk = _balanced(body, start)
        if chunk is None:
            if first is not _NO_VALUE:
                break  # a cut value after the answer: the answer stands
            raise ParseError("the JSON value is cut before its end (truncated answer?)")
        end = start + len(chunk)
        prev, nxt = body[start - 1: start], body[end: end + 1]
        standalone = (not prev or prev.isspace() or prev in ":=>`") and (not nxt or nxt.isspace() or nxt in ".,;!`")
        if standalone:
            value = _json_value(chunk)
            if value is not _NO_VALUE:
                before = body[max(0, start - 120):start]
                if _ANSWER_INTRO.search(before):
                    stated = value  # stated to be the answer: the last such statement counts
                elif not _EXAMPLE_INTRO.search(before):
                    if first is _NO_VALUE:
                        first = value
                elif example is _NO_VALUE:
                    example = value  # an example or template: the answer is a later value, if there is one
        pos = end  # never read a value nested inside a chunk that is not itself the answer
    for value in (stated, first, example):  # an example only where nothing else is: the answer after all
        if value is not _NO_VALUE:
            return value
    raise ParseError("no parseable JSON object in output")


_NO_VALUE = object()
# what states that the value after it is the answer ("My answer:", "Final answer:", "Here is my answer:", a line
# that opens with "Answer:"); "for your answer:" (a format being quoted) is not
_ANSWER_INTRO = re.compile(r"(?:\b(?:my|final|the)[ \t]+(?:final[ \t]+|own[ \t]+)?answer(?:[ \t]+is)?|^[ \t>*#]*answer)"
                           r"[ \t*]*[:=]?[ \t*]*(?:\n[ \t]*)?\Z", re.I | re.M)
# what introduces a quoted example or template rather than the answer ("Use this format:", "For example:")
_EXAMPLE_INTRO = re.compile(r"(?:\bfor\s+(?:example|instance)|\be\.g\.|\bexample(?:\s+\w+){0,2}|\btemplate|\bschema|"
                            r"\bformat|\blooks?\s+like|\bsuch\s+as|\blike\s+this)[^\n\w]*(?:\n[ \t]*)?$", re.I)


def _json_value(chunk: str) -> Any:
    """The value of one balanced chunk: JSON, JSON with trailing commas, or a Python-style literal."""
    for candidate in (chunk, re.sub(r",\s*([}\]])", r"\1", chunk)):
        try:
            return json.loads(candidate)
        except json.JSONDecodeError:
            pass
        try:
            return ast.literal_eval(_python_literals(candidate))
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            pass
    return _NO_VALUE


_WORD_NUMBERS = {"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
                 "nine": 9, "ten": 10}
_VAL = r"(?P<v>\d+(?:[.,]\d+)?|(?:zero|one|two|three|four|five|six|seven|eight|nine|ten)\b)"
_DEN = r"(?:\s*(?:/|out\s+of)\s*(?P<d>\d+(?:\.\d+)?))?"
_RANGE_AFTER = re.compile(r"\s*(?:-|–|—|to|or|and)\s*(?:\d|one|two|three|four|five|ten)\b", re.I)
_SCORE_NEGATORS = re.compile(r"\b(?:not|never|rather\s+than|instead\s+of|than)\b|n[\'’]t\b", re.I)
_REPORTED = re.compile(r"\b(?:suggest\w*|propos\w*|critic\W*s?|previous\w*|earlier|initial\w*|other|their|his|her)\b", re.I)
_DISMISSED_AFTER = re.compile(r"\s*(?:\)|\*\*)?\s*(?:would|might|could|may)\s+be\s+(?:too|a\s+bit|overly|quite|rather)?\s*"
                              r"(?:generous|harsh|high|low|lenient|strict|excessive)|\s*(?:is|seems|was)\s+(?:not|un)", re.I)
_DEFINES = re.compile(r"\s*(?:(?:means|is\s+for|indicates|represents|stands\s+for)\b|=)", re.I)
_STRONG = [r"(?:\b(?:final|overall|my)\s+)?\b(?:score|rating)\b[^\S\n]*(?:\*\*)?[^\S\n]*[:=][^\S\n]*(?:\*\*)?[^\S\n]*",
           r"(?m:^)[^\S\n]*[-*#>]*[^\S\n]*(?:\*\*)?(?:final\s+|overall\s+)?(?:score|rating)(?:\*\*)?[^\S\n]+"]
_WEAK = [r"\b(?:score|rating)s?\s+(?:of|is|would\s+be|should\s+be|will\s+be|to|as|at)\s+(?:an?\s+)?",
         r"\b(?:give|gave|giving|assign|assigned|assigning|award|awarded|rate|rated|score|scored|gets?|deserves?|"
         r"earns?)\s+"
         r"(?:(?:it|this|that|the|them)\s+(?:\w+\s+)?)?(?:an?\s+)?(?:(?:score|rating)\s+of\s+)?",
         r"(?<![\w.,])(?=\d+(?:\.\d+)?\s*(?:/|out\s+of)\s*\d)"]


# a mention whose clause gives the overall verdict ("but overall I would give it a 4") states the score as much
# as "Score: 4" does: it outranks an earlier rating of one part or aspect in the same answer
_OVERALL = re.compile(r"\b(?:overall|all\s+in\s+all|all\s+things\s+considered|altogether|in\s+total|"
                      r"on\s+balance)\b", re.I)


def _clause_before(text: str, start: int) -> str:
    return re.split(r"[.!?;,\n]|\bbut\b", text[:start])[-1]


def _statements(text: str, prefixes: list[str], strength: int, lo: float, hi: float, *, weak: bool) -> list[tuple]:
    out = []
    for prefix in prefixes:
        for m in re.finditer(prefix + _VAL + _DEN, text, re.I):
            if _RANGE_AFTER.match(text, m.end("v")) and not m.group("d"):
                continue  # "a score of 1 to 5", "Score: 3-4": a scale or a range, not a score
            clause = _clause_before(text, m.start())
            if _SCORE_NEGATORS.search(clause[-40:]):
                continue  # "I would not give a score of 5", "rather than 2"
            if weak and (_REPORTED.search(clause) or _DISMISSED_AFTER.match(text, m.end()) or _DEFINES.match(text, m.end())):
                continue  # someone else's score, one the answer dismisses, or the scale's gloss
            out.append((m.start("v"), strength, _statement_value(m.group("v"), m.group("d"), lo, hi)))
    return out


def _statement_value(v: str, den: str | None, lo: float, hi: float) -> float | str:
    """The value, or why the statement cannot be read (a string)."""
    if "," in v:
        return f"{v!r} uses a decimal comma"
    value = float(_WORD_NUMBERS.get(v.lower(), v)) if not v[0].isdigit() else float(v)
    if den is not None and float(den) != hi:
        return f"{v}/{den} is not on the {lo:g}-{hi:g} scale"
    if not lo <= value <= hi:
        return f"{value:g} is outside the {lo:g}-{hi:g} scale"
    return value


def scale_score(text: str, lo: float, hi: float, aspect: str | None = None) -> float:
    """The score an answer states, on the scale [lo, hi]; ``ParseError`` when it states none readably.

    - *Explicit statements* (``Score: 4``, ``Final score: 4/5``, ``**Rating**: 3``, ``- Coherence: 4`` for
      ``aspect``, a line ``Score 4``) win over *mentions* (``a score of 4``, ``I give it 4``, ``4 out of 5``);
      among the winning kind the last one counts (answers revise themselves).
    - Mentions that are negated (``would not give a 5``), reported (``the Critic's suggestion of a score
      of 2``) or dismissed (``a score of 3 would be generous``) are not statements; a scale or range
      (``a score of 1 to 5``, ``3-4``) is not a score.
    - An answer that is only a number, or starts with one (G-Eval's form filling), is a statement when
      nothing else is.
    - The chosen statement must be readable: on the scale, with a denominator equal to the scale's top
      (``5/10`` on 1-5 is unreadable), no decimal comma (``3,5``). It is never replaced by an earlier number.
    """
    found = _statements(text, _STRONG, 2, lo, hi, weak=False)
    if aspect:
        found += _statements(text, [rf"\b{re.escape(aspect)}\b[^\S\n]*(?:\(\s*\d+\s*[-–]\s*\d+\s*\))?[^\S\n]*(?:\*\*)?"
                                    rf"[^\S\n]*[:=][^\S\n]*(?:\*\*)?[^\S\n]*"], 2, lo, hi, weak=False)
    mentions = _statements(text, _WEAK, 1, lo, hi, weak=True)
    found += [(p, 2, v) for p, _, v in mentions if _OVERALL.search(_clause_before(text, p))]
    if not found:
        found = mentions
    if not found:
        m = re.match(rf"\s*(?:\*\*)?\s*{_VAL}{_DEN}\s*(?:\*\*)?\s*(?:$|[\n.)\-–:,]|\s+[-–])", text, re.I)
        if m and not _RANGE_AFTER.match(text, m.end("v")):
            found = [(m.start("v"), 0, _statement_value(m.group("v"), m.group("d"), lo, hi))]
    if not found:
        raise ParseError(f"no score in [{lo:g}, {hi:g}] in output")
    top = max(s for _, s, _ in found)
    value = max((p, v) for p, s, v in found if s == top)[1]
    if isinstance(value, str):
        raise ParseError(f"the stated score is unreadable: {value}")
    return value


# another quality than the one asked for (consistency): a star count given for it is not the answer
_OTHER_ASPECT = (r"(?:fluency|fluent|coherence|coherent|relevance|relevant|grammar|grammaticality|style|readability|"
                 r"informativeness|conciseness|concise|clarity|length|structure|completeness|coverage|writing)")
_FOR_ASPECT = re.compile(rf"[^\S\n]*(?:for|on|in)[^\S\n]+(?:the[^\S\n]+|its[^\S\n]+)?{_OTHER_ASPECT}\b", re.I)
_ASPECT_BEFORE = re.compile(rf"\b{_OTHER_ASPECT}\b[^\n]{{0,25}}$", re.I)
_OVERALL_STARS = re.compile(rf"\boverall\b[^\S\n]*(?:rating|score|stars?)?[^\S\n]*(?:is|:|=|of|,)?[^\S\n]*(?:\*\*)?{_VAL}{_DEN}"
                      r"(?![^\S\n]*(?:-|–|to|or)[^\S\n]*\d)", re.I)


def star_rating(text: str, lo: float = 1, hi: float = 5) -> float:
    """Stars an answer states (``4 stars``, ``4 out of 5 stars``, ``★★★★``, ``Stars: 4``); the last statement
    counts. A range (``3 or 4 stars``), a negated mention (``not 5 stars``) or an off-scale count is
    unreadable; without a stars statement, ``scale_score`` reads ``Stars: 4``/``4/5``/a bare number. A count
    given for another quality (``1 star for fluency``, ``Fluency: 1 star``) is not the answer: the overall one is
    (``but overall 4``), and with none the answer is unreadable."""
    found = []
    other = []  # counts given for another aspect
    for m in re.finditer(rf"(?<![\w.]){_VAL}{_DEN}[^\S\n]*(?:\*\*)?[^\S\n]*-?[^\S\n]*stars?\b", text, re.I):
        clause = _clause_before(text, m.start())
        if _SCORE_NEGATORS.search(clause[-40:]) or _DEFINES.match(text, m.end()):
            continue  # "not 5 stars"; "five stars means perfect consistency" (the scale, not a rating)
        if (_FOR_ASPECT.match(text, m.end()) or _ASPECT_BEFORE.search(clause)) and "overall" not in clause.lower():
            other.append(m.group(0).strip())
            continue
        ranged = re.search(r"(?:\d|one|two|three|four|five)\s*(?:-|–|to|or|and)\s*$", text[:m.start()], re.I)
        found.append((m.start(), f"a range of stars ({m.group(0).strip()!r})" if ranged
                      else _statement_value(m.group("v"), m.group("d"), lo, hi)))
    for m in re.finditer(r"★+", text):
        found.append((m.start(), _statement_value(str(len(m.group(0))), None, lo, hi)))
    if other:
        found += [(m.start(), _statement_value(m.group("v"), m.group("d"), lo, hi)) for m in _OVERALL_STARS.finditer(text)]
        if not found:
            raise ParseError(f"stars given for another aspect ({other[0]!r} ...), none overall")
    if not found:
        return scale_score(text, lo, hi, "stars")
    value = max(found)[1]
    if isinstance(value, str):
        raise ParseError(f"the stated stars are unreadable: {value}")
    return value


_YES_NO = r"(?P<a>yes|no)"
_ANSWER_STATEMENT = re.compile(r"\banswer\b(?:[ \t]*\((?:yes|no)[ \t]+or[ \t]+(?:yes|no)\))?[ \t]*(?:\*\*)?[ \t]*"
                               r"(?:is|would[ \t]+be|:)[ \t]*(?:\*\*|[\"'“‘])*[ \t]*" + _YES_NO + r"\b(?![ \t]+or\b)(?![^\S\n]*(?:\*\*|[\"'”’])*[^\S\n]*\?)", re.I)
_LEADING_YES_NO = re.compile(r"^[ \t>*#\"'“‘-]*" + _YES_NO + r"(?:\*\*|[\"'”’])*[ \t]*(?:[,.!:;]|$)", re.I | re.M)
_LAST_SENTENCE_YES_NO = re.compile(r"(?:^|[.!?\n])[ \t]*(?:so|thus|therefore|hence|in[ \t]+conclusion|in[ \t]+summary)?"
                                   r"[ \t,:]*(?:\*\*|[\"'“‘])*" + _YES_NO + r"(?:\*\*|[\"'”’])*[ \t]*[.!]?[ \t]*$", re.I)


def yes_no(text: str) -> int:
    """1 for yes, 0 for no, from an answer to "Answer (yes or no):" (Luo et al. 2023's prompts): the last
    "answer is / Answer: yes|no" statement, else the last line that opens with "Yes," / "No." (a word after
    it, as in "No information ...", is not an answer), else a last sentence that is only yes or no ("So,
    no."). "yes or no" echoed, a question ("the answer is yes?"), a negated answer ("the answer is not yes")
    or nothing of this is unreadable."""
    for m in reversed(list(_ANSWER_STATEMENT.finditer(text))):
        if re.search(r"\bnot[ \t]*$", text[:m.start("a")], re.I):
            raise ParseError(f"negated answer: {text[m.start():m.end()]!r}")
        return int(m.group("a").lower() == "yes")
    if re.search(r"\banswer\b[^\n]{0,20}\bnot[ \t]+(?:\*\*|[\"'“‘])*(?:yes|no)\b", text, re.I):
        raise ParseError("negated answer")
    leading = list(_LEADING_YES_NO.finditer(text))
    if leading:
        return int(leading[-1].group("a").lower() == "yes")
    last = _LAST_SENTENCE_YES_NO.search(text.rstrip())
    if last:
        return int(last.group("a").lower() == "yes")
    raise ParseError("no yes/no answer stated")


def json_number(value: Any, lo: float, hi: float, what: str) -> float:
    """A number inside a JSON answer: a JSON number, or a string that is only a number (optionally
    ``n/hi``) on the scale; ``"4/10"`` on 0-5, ``"high"`` or ``true`` are unreadable."""
    if isinstance(value, bool):
        raise ParseError(f"{what} {value!r} is not a number")
    if isinstance(value, (int, float)):
        v: float | str = float(value) if lo <= value <= hi else f"{value:g} is outside the {lo:g}-{hi:g} scale"
    else:
        m = re.fullmatch(rf"\s*{_VAL}{_DEN}\s*", str(value), re.I)
        if not m:
            raise ParseError(f"{what} {value!r} is not a number")
        v = _statement_value(m.group("v"), m.group("d"), lo, hi)
    if isinstance(v, str):
        raise ParseError(f"{what}: {v}")
    return v

