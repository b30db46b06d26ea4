"""Prompt templates: the paper's text with slots; the document-first variant only moves the <doc> block."""

import pytest

from sumjudge.prompts import available, load, variant

MADISSE = [n for n in available() if n.startswith("madisse/table2") or n.startswith("madisse/table3")]


def test_every_paper_table_has_its_template():
    names = set(available())
    for t in ("table26_zero_shot", "table27_cot", "table28_evaluator_round1", "table29_evaluator",
              "table30_adjudicator", "table31_ambiguity_baseline", "table32_ambiguity_arguments"):
        assert f"madisse/{t}" in names
    assert all(load(n).meta.get("source", "").startswith("MADISSE") for n in MADISSE)


@pytest.mark.parametrize("name", MADISSE)
def test_document_first_keeps_every_line(name):
    paper, first = load(name), load(variant(name, True))
    assert sorted(paper.body.splitlines()) == sorted(first.body.splitlines())
    if "{{doc}}" in paper.body:
        assert first.body.startswith("<doc> {{doc}} </doc>")
    assert variant(name, False) == name


def test_zero_shot_renders_the_papers_wording():
    text = load("madisse/table26_zero_shot").render(doc="D", summary="S")
    assert text.startswith("You are given a document and a summary (summarizing only a part of the document).")
    assert "<doc> D </doc>\n\n<summary> S </summary>" in text
    assert text.endswith("add your explanations in <explanation></explanation> XML tags.")
    with pytest.raises(KeyError, match="needs summary"):
        load("madisse/table26_zero_shot").render(doc="D")


def test_guidelines_render_into_the_evaluator_prompt_as_in_the_paper():
    g = load("madisse/table28_guidelines").body
    text = load("madisse/table28_evaluator_round1").render(guidelines=g, doc="D", summary="S", chat_history="",
                                                           intervention="", learning="")
    assert "<guidelines>\n\n1. You should aim for accuracy" in text
    assert "13. If even a single part of the summary is factually inconsistent, then the whole summary is " \
           "factually inconsistent. </guidelines>" in text
    assert text.endswith("Before answering, please think about the question within <thinking></thinking> tags.")
