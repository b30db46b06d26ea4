"""MESA's steps, data flow and overall score, pinned down with the *scripted* backend (a rule-driven test double,
not a model)."""

import json

import pytest

from sumjudge.data.records import MeetingErrorExample
from sumjudge.judges.settings import make_config
from sumjudge.llm import ConfigError, NullCache, run_sync
from sumjudge.llm.engine import LLM
from sumjudge.llm.scripted import ScriptedBackend
from sumjudge.papers.mesa.protocol import TypeAssessment, error_types, overall
from sumjudge.run.methods import get_method

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
    red = error_types()["RED"]
    assert red.name == "repetition"  # the authors' criteria file name, shown beside the definition
    assert all(f"*** repetition: {red.definition} ***" in s for s in (s1, s2, s3))
    assert EX.transcript in s1 and EX.summary in s1
    assert json.dumps(FOUND) in s2  # step 2 rates step 1's instances
    shown = json.loads(s3.split("severity scores (0 for no error to 10 meaning severe error): *** ")[1].split(" ***")[0])
    # step 3 reads the whole step-2 answer, the instance judged "no error" included (the paper and the code)
    assert [k["instance"] for k in shown] == ["They bought a blue chair.", "blue"]
    assert [k["error_exists"] for k in shown] == [True, False]
    t = j.details["types"]["RED"]
    assert (t["rating"], t["confidence"], t["detected"]) == (3.0, 8.0, True) and j.scores == {"RED": 3.0}
    assert t["rated"][1]["error_exists"] is False and t["rated"][0]["severity"] == 6.0


def test_a_severity_off_its_scale_stays_as_written_and_step_3_still_runs():
    # a small model puts the certainty's 0-100 scale on severity: error_exists is stated, so step 2 is read; the
    # severity is not turned into a number and reaches step 3 as the model wrote it
    rated = [{**RATED[0], "severity": 95}, {**RATED[1], "severity": "severe"}]
    j, be = run(three_step_backend(step2=json.dumps(rated)), types="RED")
    assert [r.tag.rsplit("/", 1)[-1] for r in be.requests] == ["step1", "step2", "step3"]
    t = j.details["types"]["RED"]
    assert [(x["severity"], x.get("severity_read")) for x in t["rated"]] == [(95, False), ("severe", False)]
    shown = be.requests[2].messages[-1]["content"]
    assert '"severity": 95' in shown and t["rating"] == 3.0


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


SINGLE = r"Rate the summary from 0 to 5 \(0=best, 5=worst\)"


def test_single_step_is_the_authors_baseline_and_detects_by_rating():
    be = ScriptedBackend().add(SINGLE, '```json\n{"reasoning": "x", "confidence": "7", "rating": "2"}\n```')
    j, be = run(be, steps=1, types="HAL")
    assert len(be.requests) == 1 and j.scores == {"HAL": 2.0} and j.details["types"]["HAL"]["detected"] is True
    system, user = be.requests[0].messages
    assert system["role"] == "system" and system["content"].startswith("You are an expert in evaluating meeting summaries")
    hal = error_types()["HAL"]
    assert f"Criterion: hallucination: {hal.definition}" in user["content"]
    assert user["content"].startswith(f"Transcript: <{EX.transcript}>\nSummary: <{EX.summary}>")


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
         TypeAssessment(code="HAL", steps=3, rating=None, confidence=None),  # unscored: left out
         TypeAssessment(code="IRR", steps=3, rating=5, confidence=None)]  # confidence off its scale: left out
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
    be = ScriptedBackend().add(SINGLE, '{"reasoning": "", "confidence": 5, "rating": 1}')
    j, be = run(be, steps=1, criteria=str(f))
    assert "Criterion: tone: The summary is rude." in be.requests[0].messages[-1]["content"] and set(j.scores) == {"TONE"}


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


def test_default_prompts_carry_the_authors_definition_of_every_type_with_its_name():
    """The authors' criteria (read from their files, never copied here): every type's step prompts show
    "*** <name>: <definition> ***"; criteria=table9 keeps the Table 9-based set."""
    types = error_types()
    assert [t.name for t in types.values()] == ["omission", "repetition", "incoherence", "coreference",
                                                "hallucination", "language", "structure", "irrelevance"]
    j, be = run(three_step_backend(), types="all")
    for t in types.values():
        prompts = [r.messages[-1]["content"] for r in be.requests if r.tag.startswith(f"m1/{t.code}/")]
        assert len(prompts) == 3 and all(f"*** {t.name}: {t.definition} ***" in p for p in prompts)
    table9 = error_types("table9")
    assert table9["RED"].definition != types["RED"].definition and table9["RED"].name == "redundancy"
    _, be9 = run(three_step_backend(), types="RED", criteria="table9")
    assert f"*** redundancy: {table9['RED'].definition} ***" in be9.requests[0].messages[-1]["content"]


def test_criteria_printed_prompts_with_table_9_as_printed():
    """The paper's reading of the criteria: Table 9's short definitions, word for word (the paper prompted with the
    full-length ones, published with the code, which is the default)."""
    printed = error_types("printed")
    assert printed["HAL"].definition == ("The model produces inconsistencies not aligned with the meeting content. "
                                         "Intrinsic: Misrepresents information from the transcript. Extrinsic: "
                                         "Introduces content not present in the transcript.")
    assert printed["RED"].name == "redundancy" and len(printed) == 8
    assert all(printed[c].definition != error_types()[c].definition for c in printed)
    _, be = run(three_step_backend(), types="HAL", criteria="printed")
    assert f"*** hallucination: {printed['HAL'].definition} ***" in be.requests[0].messages[-1]["content"]


def test_a_folder_of_criteria_in_the_authors_format_works(tmp_path):
    (tmp_path / "tone.json").write_text(json.dumps({"definition": "The summary is rude."}))
    (tmp_path / "hallucination.json").write_text(json.dumps({"definition": "Invented content."}))
    types = error_types(str(tmp_path))
    assert {c: (t.name, t.definition) for c, t in types.items()} == {"HAL": ("hallucination", "Invented content."),
                                                                      "TONE": ("tone", "The summary is rude.")}


def test_prompts_code_sends_the_authors_step_prompts_with_their_system_prompt():
    be = (ScriptedBackend().add("Step 1: Collect potential error instances", json.dumps(FOUND))
          .add("Step 2: Filter actual errors", json.dumps(RATED))
          .add("Step 3: Rate the summary considering", '{"reasoning": "r", "confidence": 6, "rating": 2}'))
    j, be = run(be, types="RED", prompts="code")
    s1, s2, s3 = be.requests
    assert all(r.messages[0]["content"].startswith("You are a Judge tasked to decide") for r in be.requests)
    assert EX.transcript not in s2.messages[-1]["content"]  # the code's step 2 sees only criteria and instances
    assert json.dumps(RATED) not in s3.messages[-1]["content"] and "Error instances: [" in s3.messages[-1]["content"]
    assert j.scores == {"RED": 2.0} and j.details["types"]["RED"]["detected"] is True


def test_a_detection_whose_score_is_unreadable_is_not_counted():
    be = three_step_backend(step3="I think it is bad.")
    j, _ = run(be, types="RED")
    t = j.details["types"]["RED"]
    assert t["rated"][0]["error_exists"] is True and t["detected"] is None and t["score_source"] == "unparsed"
