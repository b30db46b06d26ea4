"""MESA adapted to binary faithfulness (``mesa-faithfulness``), pinned down with the *scripted* backend (a
rule-driven test double, not a model)."""

import json

from sumjudge.arena import Cell, printed_twin
from sumjudge.data.records import FaithExample
from sumjudge.judges.settings import make_config
from sumjudge.llm import NullCache, run_sync
from sumjudge.llm.engine import LLM
from sumjudge.llm.scripted import ScriptedBackend
from sumjudge.papers.mesa.protocol import error_types
from sumjudge.run.methods import get_method

DOC, SUMMARY = "A: the council voted five to two on Monday. B: the motion passed.", "The council voted on Tuesday."
EX = FaithExample(id="f1", dataset="tofueval-meetingbank", document=DOC, summary=SUMMARY, label=0)
STEP1, STEP2, STEP3 = ("Step 1 is to collect possible error instances", "Step 2 is to rate the severity",
                       "Step 3 is to rate the summary")
FOUND = json.dumps([{"instance": "on Tuesday", "reasoning": "the meeting says Monday", "certainty": "90"}])


def rated(exists: bool) -> str:
    return json.dumps([{"instance": "on Tuesday", "reasoning": "r", "severity": "5", "certainty": "80",
                        "error_exists": exists}])


def of(name: str, step: str):
    """A rule for one error type's step (its prompts show "*** <name>: <definition> ***")."""
    return lambda req: f"*** {name}:" in req.messages[-1]["content"] and step in req.messages[-1]["content"]


def judge(backend, parse_retries: int = 0, **cfg):
    spec = get_method("mesa-faithfulness")
    llm = LLM(backend, cache=NullCache(), parse_retries=parse_retries)
    return run_sync(spec.judge(EX, llm, make_config(spec.config_cls, cfg))), backend


def score(rating: int) -> str:
    return json.dumps({"reasoning": "x", "confidence": 8, "rating": rating})


def test_a_detected_type_makes_the_summary_unfaithful_and_both_types_reach_the_backend_together():
    be = (ScriptedBackend().add(of("hallucination", STEP1), FOUND).add(of("hallucination", STEP2), rated(True))
          .add(of("coreference", STEP1), "[]").add(STEP3, score(2)))
    j, be = judge(be)
    spec = get_method("mesa-faithfulness")
    assert spec.kind == "faithfulness" and not spec.scores
    assert (j.label, j.parsed, j.label_source) == (0, True, "parsed")
    assert j.details["types"]["HAL"]["detected"] is True and j.details["types"]["COR"]["detected"] is False
    assert be.batches == [2, 2, 1]  # both step 1s; HAL's step 2 with COR's step 3 (nothing to rate); HAL's step 3
    first = be.requests[0].messages[-1]["content"]
    assert DOC in first and SUMMARY in first  # the document is MESA's transcript
    assert j.scores == {"HAL": 2.0, "COR": 2.0} and j.score is not None  # MESA's quality (Eq. 2) kept


def test_faithful_only_when_every_type_is_scored_and_none_detected():
    j, _ = judge(ScriptedBackend().add(of("hallucination", STEP1), FOUND).add(STEP2, rated(False))
                 .add(STEP1, "[]").add(STEP3, score(0)))
    assert (j.label, j.parsed) == (1, True)  # step 2 kept no instance of either type
    # COR's step 3 unreadable, HAL not detected: no label (counted, never guessed)
    j, _ = judge(ScriptedBackend().add(STEP1, "[]").add(of("coreference", STEP3), "no idea").add(STEP3, score(0)))
    assert (j.label, j.parsed, j.label_source) == (None, False, "unparsed")
    # the same unreadable COR, but HAL detected: unfaithful whatever COR would have said
    j, _ = judge(ScriptedBackend().add(of("hallucination", STEP1), FOUND).add(STEP2, rated(True))
                 .add(STEP1, "[]").add(of("coreference", STEP3), "no idea").add(STEP3, score(3)))
    assert (j.label, j.parsed) == (0, True)


def test_as_printed_twin_prompts_with_table_9s_definitions():
    twin = printed_twin(Cell("mesa-faithfulness", "qags-xsum"))
    assert twin is not None and dict(twin[1].settings) == {"criteria": "printed"}
    _, be = judge(ScriptedBackend().add(STEP1, "[]").add(STEP3, score(0)), types="HAL", criteria="printed")
    assert f"*** hallucination: {error_types('printed')['HAL'].definition} ***" in be.requests[0].messages[-1]["content"]
    _, be = judge(ScriptedBackend().add(STEP1, "[]").add(STEP3, score(0)), types="HAL")
    assert f"*** hallucination: {error_types()['HAL'].definition} ***" in be.requests[0].messages[-1]["content"]


def test_the_arena_runs_mesa_beside_its_printed_twin_with_a_paired_test(tmp_path):
    """A backend that finds a hallucination whenever the prompt shows Table 9's definition and none under the
    authors' one: the as-printed twin calls every summary unfaithful, the default none, and fidelity.csv pairs them."""
    from sumjudge.arena import fidelity_cells, run_arena

    printed = error_types("printed")["HAL"].definition
    shows_printed = lambda req: printed in req.messages[-1]["content"]  # noqa: E731
    be = (ScriptedBackend().add(lambda r: shows_printed(r) and STEP1 in r.messages[-1]["content"], FOUND)
          .add(STEP2, rated(True)).add(STEP1, "[]").add(STEP3, score(1)))
    cells = fidelity_cells(["qags-xsum"], ["mesa-faithfulness"])
    res = run_arena(cells, tmp_path / "arena", backend="scripted", model="rules", limit=6, seed=0,
                    llm=LLM(be, cache=NullCache()), settings_for=lambda m: {"types": "HAL"}, progress=False)
    labels = {}
    for p in res["predictions"]:
        labels.setdefault(p["judge"], []).append(p["label"])
    assert labels == {"mesa-faithfulness": [1] * 6, "mesa-faithfulness[criteria=printed]": [0] * 6}
    (f,) = res["fidelity"]
    golds = [p["gold"] for p in res["predictions"] if p["judge"] == "mesa-faithfulness"]
    assert (f["as_run"], f["as_printed"]) == ("mesa-faithfulness", "mesa-faithfulness[criteria=printed]")
    assert (f["only_as_run_right"], f["only_as_printed_right"]) == (golds.count(1), golds.count(0))
    assert (f["bacc_as_run"], f["bacc_as_printed"]) == (50, 50)
