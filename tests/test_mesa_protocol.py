"""MESA's steps, data flow and overall score, pinned down with the *scripted* backend (a rule-driven test double,
not a model)."""

import json

import pytest

from sumjudge.data.records import MeetingErrorExample
from sumjudge.llm import ConfigError, NullCache, run_sync
from sumjudge.llm.engine import LLM
from sumjudge.llm.scripted import ScriptedBackend
from sumjudge.methods import get_method, make_config
from sumjudge.methods.mesa import TypeAssessment, error_types, overall

EX = MeetingErrorExample(id="m1", dataset="meeting-errors", transcript="A: we decide to buy the red chair. B: agreed.",
                         summary="They bought a blue chair. They bought a blue chair.", labels={"RED": 1, "HAL": 1})
STEP1 = "Step 1 is to collect possible error instances"
STEP2 = "Step 2 is to rate the severity"
STEP3 = "Step 3 is to rate the summary"
FOUND = [{"instance": "They bought a blue chair.", "reasoning": "said twice", "certainty": "90"},
         {"instance": "blue", "reasoning": "maybe", "certainty": "20"}]
RATED = [{"instance": "They bought a blue chair.", "reasoning": "repeated", "severity": "6", "certainty": "80",
          "error_exists": True},
         {"instance": "blue", "reasoning": "not a repetition", "severity": "0", "certainty": "70",
          "error_exists": "false"}]


def run(backend, **cfg):
    llm = LLM(backend, cache=NullCache())
    spec = get_method("mesa")
    return run_sync(spec.judge(EX, llm, make_config(spec.config_cls, cfg))), backend


def three_step_backend(step1=json.dumps(FOUND), step2=json.dumps(RATED),
                       step3='{"reasoning": "one repeated sentence", "confidence": 8, "rating": 3}'):
    return ScriptedBackend().add(STEP1, step1).add(STEP2, step2).add(STEP3, step3)


def test_three_steps_feed_each_other_per_error_type():
    j, be = run(three_step_backend(), types="RED")
    steps = [r.tag.rsplit("/", 1)[-1] for r in be.requests]
    assert steps == ["step1", "step2", "step3"]
    s1, s2, s3 = (r.messages[-1]["content"] for r in be.requests)
    criteria = error_types()["RED"].definition
    assert all(criteria in s for s in (s1, s2, s3)) and EX.transcript in s1 and EX.summary in s1
    assert json.dumps(FOUND) in s2  # step 2 rates step 1's instances
    kept = json.loads(s3.split("severity scores (0 for no error to 10 meaning severe error): *** ")[1].split(" ***")[0])
    assert [k["instance"] for k in kept] == ["They bought a blue chair."]  # only instances step 2 kept
    t = j.details["types"]["RED"]
    assert (t["rating"], t["confidence"], t["detected"]) == (3.0, 8.0, True) and j.scores == {"RED": 3.0}
    assert t["rated"][1]["error_exists"] is False and t["rated"][0]["severity"] == 6.0


def test_types_run_independently_and_reach_the_backend_together():
    j, be = run(three_step_backend(), types="RED,HAL,OM")
    assert be.batches == [3, 3, 3]  # one batch per step, all three types together
    assert set(j.scores) == {"RED", "HAL", "OM"}
    assert all(sum(error_types()[c].definition in r.messages[-1]["content"] for c in ("RED", "HAL", "OM")) == 1
               for r in be.requests)  # single-aspect: one definition per prompt


def test_no_candidate_instance_skips_step_2_and_step_3_sees_an_empty_list():
    j, be = run(three_step_backend(step1="[]", step3='{"reasoning": "fine", "confidence": 9, "rating": 0}'), types="RED")
    assert [r.tag.rsplit("/", 1)[-1] for r in be.requests] == ["step1", "step3"]
    assert "*** [] ***" in be.requests[1].messages[-1]["content"]
    assert j.details["types"]["RED"]["detected"] is False and j.scores["RED"] == 0.0


def test_single_step_scores_directly_and_detects_by_rating():
    be = ScriptedBackend().add("Rate the summary regarding one error type", '```json\n{"reasoning": "x", "confidence": "7", "rating": "2"}\n```')
    j, be = run(be, steps=1, types="HAL")
    assert len(be.requests) == 1 and j.scores == {"HAL": 2.0} and j.details["types"]["HAL"]["detected"] is True


def test_malformed_json_is_retried_then_counted_never_scored():
    be = three_step_backend(step3="The rating is high.")
    llm = LLM(be, cache=NullCache(), parse_retries=1)
    spec = get_method("mesa")
    j = run_sync(spec.judge(EX, llm, make_config(spec.config_cls, {"types": "RED"})))
    assert j.scores == {"RED": None} and not j.parsed and j.details["types"]["RED"]["unparsed_step"] == 3
    assert llm.usage.parse_failures == 1 and llm.usage.parse_retries == 1
    assert j.details["impact"] is None and j.score is None  # no scored type: no overall score
    with pytest.raises(ConfigError):
        run(ScriptedBackend(), types="XYZ")
    with pytest.raises(ConfigError):
        run(ScriptedBackend(), steps=2)


def test_impact_and_quality_formula_on_hand_worked_numbers():
    types = error_types()
    a = [TypeAssessment(code="OM", steps=3, rating=4, confidence=10),  # i = 1.1, c = 1.0
         TypeAssessment(code="RED", steps=3, rating=1, confidence=5),  # i = 0.9, c = 0.5
         TypeAssessment(code="COR", steps=3, rating=2, confidence=8),  # i = 1.0, c = 0.8
         TypeAssessment(code="HAL", steps=3, rating=None, confidence=None)]  # unscored: left out
    impact, quality = overall(a, types)
    num = 4 * 1.1 + 1 * 0.45 + 2 * 0.8
    den = 1.1 + 0.45 + 0.8
    assert impact == pytest.approx(num / den) and quality == pytest.approx(1 + (5 - num / den) / 5 * 9)
    assert overall([TypeAssessment(code="OM", steps=3, rating=0, confidence=10)], types)[1] == pytest.approx(10)
    assert overall([TypeAssessment(code="OM", steps=3, rating=5, confidence=10)], types)[1] == pytest.approx(1)
    assert {c: t.importance for c, t in types.items()} == {"OM": 1.1, "RED": 0.9, "INC": 0.9, "COR": 1.0, "HAL": 1.1,
                                                            "LAN": 0.9, "STR": 1.0, "IRR": 1.1}


def test_own_error_type_guidelines_replace_the_packaged_ones(tmp_path):
    f = tmp_path / "mine.yaml"
    f.write_text("TONE:\n  name: tone\n  importance: 2\n  definition: The summary is rude.\n")
    be = ScriptedBackend().add("Rate the summary regarding one error type", '{"reasoning": "", "confidence": 5, "rating": 1}')
    j, be = run(be, steps=1, criteria=str(f))
    assert "The summary is rude." in be.requests[0].messages[-1]["content"] and set(j.scores) == {"TONE"}


def test_option_score_fallback_only_when_asked_and_recorded():
    def opts(r):  # rating options 0..5 favour 2, confidence options 0..10 favour 7
        best = "2" if len(r.options) == 6 else "7"
        return {o: (0.9 if o == best else 0.01) for o in r.options}

    garbage = ScriptedBackend(options=opts)
    garbage.add(STEP1, "no json").add(STEP3, "still none")
    j, be = run(garbage, types="RED", fallback="option_scores")
    t = j.details["types"]["RED"]
    steps = [r.tag.rsplit("/", 1)[-1].split("#")[0] for r in be.requests]
    assert "step2" not in steps and steps[-1] == "step3"  # unreadable step 1 -> no instances -> no step 2
    assert (t["rating"], t["confidence"], t["score_source"], t["unparsed_step"]) == (2.0, 7.0, "option_scores", 1)
    j, _ = run(ScriptedBackend().add(STEP1, "no json"), types="RED")
    assert j.scores == {"RED": None} and j.details["types"]["RED"]["score_source"] == "unparsed"
