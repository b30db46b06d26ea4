"""Every default MADISSE prompt against the wording the authors' code sends.

The authors' ``prompts.py`` and ``faithfulness_evaluation.py`` (github.com/amazon-science/madisse @ ddb8276)
are read in place from ``../shared/reference/madisse/`` (``SUMJUDGE_REFERENCE`` names another folder): their
prompt strings are taken from the syntax tree, nothing is imported or copied. Each default template is
rendered with marker values, the authors' string is filled with the same markers, and both are compared
after whitespace normalisation. No difference is allowed.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from conftest import REFERENCE, needs_reference

from sumjudge.prompts import AS_RUN, available, load, variant

REF = REFERENCE / "madisse"

DOC, SUMMARY, HISTORY, ARGS = "DOC-MARKER text", "SUMMARY-MARKER text", "Agent 1: HISTORY-MARKER", "Agent 2: ARGS-MARKER"
# (template as the default run renders it, the authors' function, the template's fields, the function's arguments)
CASES = [
    ("madisse/table26_zero_shot", "get_prompt_direct_eval_individual_sentences", {}, (DOC, SUMMARY)),
    ("madisse/table27_cot", "get_prompt_cot", {}, (DOC, SUMMARY)),
    ("madisse/table29_evaluator", "get_prompt_debate", {"chat_history": HISTORY, "intervention": "MEDIATOR"},
     (DOC, SUMMARY, HISTORY, "MEDIATOR")),
    ("madisse/table29_evaluator", "get_prompt_debate", {"chat_history": "", "intervention": ""}, (DOC, SUMMARY, "", "")),
    ("madisse/table30_adjudicator", "get_adjudicator_prompt", {"chat_history": HISTORY}, (DOC, SUMMARY, HISTORY)),
    ("madisse/table31_ambiguity_baseline", "get_prompt_ambiguity", {}, (DOC, SUMMARY)),
    ("madisse/table32_ambiguity_arguments", "get_prompt_ambiguity_w_args", {"arguments": ARGS}, (DOC, SUMMARY, ARGS)),
]

# the templates whose printed text (the paper's tables) differs from what the code sends
DIFFER = {"madisse/table26_zero_shot", "madisse/table27_cot", "madisse/table28_stances", "madisse/table29_evaluator",
          "madisse/table30_adjudicator", "madisse/table31_ambiguity_baseline", "madisse/table32_ambiguity_arguments"}


def normalise(text: str) -> str:
    return " ".join(text.split())


def reference_strings(path: Path) -> dict[str, str]:
    """function name -> its prompt string (the left side of ``'''...''' % (...)``)."""
    out = {}
    for fn in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(fn, ast.FunctionDef):
            for node in ast.walk(fn):
                if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and isinstance(node.left, ast.Constant):
                    out[fn.name] = node.left.value
    return out


def rendered(name: str, fields: dict) -> str:
    from sumjudge.papers.madisse.ambiguity import taxonomy_text
    from sumjudge.papers.madisse.protocol import MadisseConfig, guidelines_text

    t = load(variant(name, doc_first=False, prompts="code"))
    values = {"doc": DOC, "summary": SUMMARY, "guidelines": guidelines_text(MadisseConfig()), "taxonomy": taxonomy_text(),
              "learning": "", **fields}
    return t.render(**{k: v for k, v in values.items() if k in t.fields})


@needs_reference
@pytest.mark.parametrize("name,function,fields,args", CASES, ids=[f"{c[0]}:{c[1]}" for c in CASES])
def test_default_prompt_is_the_authors_wording(name, function, fields, args):
    ours = normalise(rendered(name, fields))
    theirs = normalise(reference_strings(REF / "prompts.py")[function] % args)
    assert ours == theirs


@needs_reference
def test_mediator_text_and_stances_are_the_codes():
    tree = ast.parse((REF / "faithfulness_evaluation.py").read_text(encoding="utf-8"))
    mediator = [n.value.value for n in ast.walk(tree) if isinstance(n, ast.Assign)
                and any(getattr(t, "id", None) == "mediator_feedback" for t in n.targets)
                and isinstance(n.value, ast.Constant) and n.value.value]
    assert mediator == [load("madisse/a12_intervention").body]  # its leading space included
    stances = next(n.value for n in ast.walk(tree) if isinstance(n, ast.Assign)
                   and any(getattr(t, "id", None) == "agents_responses" for t in n.targets)
                   and isinstance(n.value, ast.List))
    texts = [e.value for e in stances.elts]
    body = dict(line.split(": ", 1) for line in load("madisse/table28_stances_as_run").body.splitlines())
    assert texts == [body["faithful"], body["unfaithful"]] * 2


def test_printed_and_code_prompts_differ_exactly_in_the_listed_templates():
    as_run = {n[: -len(AS_RUN)] for n in available() if n.startswith("madisse/") and n.endswith(AS_RUN)}
    assert as_run == DIFFER
    for name in DIFFER:
        assert variant(name, False, "code") == name + AS_RUN and variant(name, False, "printed") == name
        assert normalise(load(name).body) != normalise(load(name + AS_RUN).body)
        assert "ddb82764caae5172f09058dcb281671789d63e29" in load(name + AS_RUN).meta["source"]
    assert variant("madisse/table28_guidelines", False, "code") == "madisse/table28_guidelines"  # the same in both
