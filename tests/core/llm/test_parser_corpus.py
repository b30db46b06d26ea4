"""The adversarial answer corpus (``src/sumjudge/llm/parser_corpus/``): every parser family reads a value
only where the text states it. A case fails when the parser returns a value other than the expected one
(silently wrong) or refuses a stated value; the summary test reports both counts per family."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

import sumjudge.llm.parsing as parsing
from sumjudge.papers.factax.protocol import parse_factax
from sumjudge.papers.factax.sft.inference import parse_binary
from sumjudge.papers.mesa.feedback import parse_quality, parse_report
from sumjudge.papers.mesa.protocol import parse_instances, parse_rated, parse_score

CORPUS = Path(parsing.__file__).parent / "parser_corpus"
UNREADABLE = "unreadable"


def _parse(family: str, case: dict):
    p = case.get("parser", family)
    text = case["text"]
    if p == "binary_label":
        return parsing.binary_label(text)
    if p == "scale_score":
        lo, hi = case["scale"]
        return parsing.scale_score(text, lo, hi, case.get("aspect"))
    if p == "star_rating":
        return parsing.star_rating(text)
    if p == "instances":
        return parse_instances(text)
    if p == "rated":
        return [x["error_exists"] for x in parse_rated(text)]
    if p == "score":
        return list(parse_score(text)[:2])
    if p == "quality":
        return parse_quality(text)[0]
    if p == "report":
        return parse_report(text)
    if p == "factax":
        return parse_factax(text)[0]
    if p == "binary":
        return parse_binary(text)
    if p == "yes_no":
        return parsing.yes_no(text)
    raise AssertionError(f"unknown parser {p!r}")


def _cases():
    out = []
    for f in sorted(CORPUS.glob("*.yaml")):
        doc = yaml.safe_load(f.read_text(encoding="utf-8"))
        for i, case in enumerate(doc["cases"]):
            out.append(pytest.param(doc.get("parser", ""), case, id=f"{f.stem}-{i}"))
    return out


def _outcome(family: str, case: dict):
    try:
        return _parse(family, case)
    except parsing.ParseError:
        return UNREADABLE


@pytest.mark.parametrize("family, case", _cases())
def test_corpus_case(family, case):
    assert case.get("why", "").strip(), "every expected value is justified"
    assert _outcome(family, case) == case["expect"], case["why"]


def test_corpus_size_and_no_silently_wrong_value():
    cases = [(p.values[0], p.values[1]) for p in _cases()]
    assert len(cases) >= 250
    wrong = [c["text"] for fam, c in cases
             if (got := _outcome(fam, c)) != UNREADABLE and got != c["expect"]]
    assert wrong == [], f"{len(wrong)} answers read as a value their text does not state"
    families = {c.get("parser", fam) for fam, c in cases}
    assert {"binary_label", "scale_score", "star_rating", "instances", "rated", "score", "quality", "report", "factax",
            "binary"} <= families
