"""Lenient parsers for model outputs. Each raises ``ParseError`` (never guesses a label)."""

from __future__ import annotations

import ast
import json
import re
from typing import Any


class ParseError(ValueError):
    """The output does not contain the requested field in any accepted form."""


def xml_tag(text: str, tag: str, *, last: bool = True) -> str:
    """Content of ``<tag>...</tag>``; tolerates a missing closing tag at the end of the output.

    Models often repeat the tag name in their reasoning, so the last complete occurrence wins by default.
    """
    open_tag = rf"<\s*{re.escape(tag)}\s*>"
    # the content may not contain another opening tag: "<label> tags. <label>0</label>" yields "0"
    pat = re.compile(rf"{open_tag}((?:(?!{open_tag}).)*?)<\s*/\s*{re.escape(tag)}\s*>", re.S | re.I)
    found = pat.findall(text)
    if found:
        return (found[-1] if last else found[0]).strip()
    open_ = re.search(rf"<\s*{re.escape(tag)}\s*>(.*)\Z", text, re.S | re.I)
    if open_ and open_.group(1).strip():
        return open_.group(1).strip()
    raise ParseError(f"no <{tag}> field in output")


def binary_label(text: str, tag: str = "label") -> int:
    """A 0/1 label inside ``<label>``: accepts '1', ' 0 ', '1 (consistent)'; rejects anything ambiguous."""
    body = xml_tag(text, tag)
    digits = re.findall(r"(?<![\d.])[01](?![\d.])", body)
    if len(set(digits)) == 1:
        return int(digits[0])
    low = body.lower()
    words = {1: ("inconsistent", "unfaithful"), 0: ("consistent", "faithful")}
    if any(w in low for w in words[1]):
        return 0
    if any(w in low for w in words[0]):
        return 1
    raise ParseError(f"<{tag}> holds {body[:40]!r}, not 0 or 1")


def _strip_fences(text: str) -> str:
    m = re.search(r"```(?:json|JSON)?\s*(.*?)```", text, re.S)
    return m.group(1) if m else text


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


def lenient_json(text: str) -> Any:
    """The first JSON object/array in ``text``: code fences, single quotes, trailing commas, prose around it."""
    body = _strip_fences(text)
    for m in re.finditer(r"[\[{]", body):
        chunk = _balanced(body, m.start())
        if chunk is None:
            continue
        for candidate in (chunk, re.sub(r",\s*([}\]])", r"\1", chunk)):
            try:
                return json.loads(candidate)
            except json.JSONDecodeError:
                pass
            try:
                py = re.sub(r"\btrue\b", "True", re.sub(r"\bfalse\b", "False", re.sub(r"\bnull\b", "None", candidate)))
                return ast.literal_eval(py)
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                pass
    raise ParseError("no parseable JSON object in output")


def markdown_field(text: str, name: str) -> str:
    """Value of a ``- Name: value`` line (also ``**Name:**``, ``Name -``); the value may continue onto following lines."""
    pat = re.compile(rf"^[ \t]*(?:[-*][ \t]*)?(?:\*\*)?{re.escape(name)}(?:\*\*)?[ \t]*[:\-][ \t]*(?:\*\*)?[ \t]*(.*)$",
                     re.M | re.I)
    m = pat.search(text)
    if not m:
        raise ParseError(f"no '- {name}:' field in output")
    lines = [m.group(1)]
    for line in text[m.end():].splitlines()[1:]:
        if re.match(r"^[ \t]*(?:[-*][ \t]*)?(?:\*\*)?[A-Z][\w ]{0,30}(?:\*\*)?[ \t]*:", line) or not line.strip():
            break
        lines.append(line.strip())
    value = " ".join(x.strip() for x in lines).strip()
    if not value:
        raise ParseError(f"'- {name}:' is empty")
    return value


def first_number(text: str, lo: float, hi: float) -> float:
    """First number in ``text`` inside [lo, hi] (scores such as '4', 'Score: 3.5/5')."""
    for m in re.finditer(r"-?\d+(?:\.\d+)?", text):
        v = float(m.group(0))
        if lo <= v <= hi:
            return v
    raise ParseError(f"no number in [{lo}, {hi}] in output")


_NUM = r"(\d+(?:\.\d+)?)"
_NOT_RANGE = r"(?!\s*(?:-|–|to)\s*\d)(?!\d)"


def scale_score(text: str, lo: float, hi: float, aspect: str | None = None) -> float:
    """The score a free-text answer settles on, inside the scale [lo, hi].

    Accepted forms, the *last* one in the text wins (answers revise themselves: "the score of 1 seems
    justified ... a score of 2 is more appropriate" -> 2): ``Score: 4``, ``score of 4``, ``score is 4``,
    ``4/5``, ``4 out of 5``, ``- Coherence: 4`` (``aspect``), and an answer that is only a number (G-Eval
    form filling). A scale being restated ("a score of 1 to 5") is not a score. Values outside the
    scale are ignored; nothing found raises ``ParseError``.
    """
    patterns = [rf"\bscores?\b[^\S\n]*(?:\*\*)?[^\S\n]*(?:of|:|is|=|would be|should be|to|as)?[^\S\n]*(?:\*\*)?[^\S\n]*{_NUM}{_NOT_RANGE}",
                rf"(?<![\d.]){_NUM}\s*(?:/|out of)\s*\d+(?:\.\d+)?"]
    if aspect:
        patterns.append(rf"\b{re.escape(aspect)}\b[^\S\n]*(?:\(\s*\d\s*-\s*\d\s*\))?[^\S\n]*(?:\*\*)?[^\S\n]*[:=][^\S\n]*(?:\*\*)?[^\S\n]*{_NUM}{_NOT_RANGE}")
    found: list[tuple[int, float]] = []
    for pat in patterns:
        for m in re.finditer(pat, text, re.I):
            v = float(m.group(1))
            if lo <= v <= hi:
                found.append((m.start(1), v))
    if found:
        return max(found)[1]
    bare = re.fullmatch(rf"\s*(?:\*\*)?\s*{_NUM}\s*(?:\*\*)?\s*\.?\s*", text)
    if bare and lo <= float(bare.group(1)) <= hi:
        return float(bare.group(1))
    lead = re.match(rf"\s*{_NUM}(?![\d.])", text)  # G-Eval form filling: the answer starts with the score
    if lead and lo <= float(lead.group(1)) <= hi:
        return float(lead.group(1))
    raise ParseError(f"no score in [{lo:g}, {hi:g}] in output")
