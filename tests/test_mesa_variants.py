"""MESA's variants with the *scripted* backend (a rule-driven test double, not a model): multi-aspect
prompts, the MADP message flow (MADP-S and MADP-M), self-training feedback and its train/test separation,
the G-Eval-4 baseline; and the Likert metrics (Tables 4-5) on a synthetic annotation file."""

import json

import pytest
from scipy import stats

from sumjudge.data import registry
from sumjudge.data.records import MeetingErrorExample
from sumjudge.data.sources import DataFormatError
from sumjudge.llm import ConfigError, NullCache, run_sync
from sumjudge.llm.engine import LLM
from sumjudge.llm.scripted import ScriptedBackend
from sumjudge.methods import get_method, make_config
from sumjudge.methods.mesa import error_types
from sumjudge.methods.mesa_feedback import DIFFERENCES, parse_judge, save, self_train
from sumjudge.methods.mesa_madp import PERSPECTIVES
from sumjudge.run_metrics import meeting_error_metrics

from test_mesa_protocol import EX, FOUND, RATED, STEP1, STEP2, STEP3, three_step_backend

CHALLENGE = "You are one of several reviewers"
SYNTH = "You are the moderator of an evaluation discussion"
SCORE = '{"reasoning": "r", "confidence": 8, "rating": 3}'


def judge(backend, ex=EX, method="mesa", llm=None, **cfg):
    llm = llm or LLM(backend, cache=NullCache())
    spec = get_method(method)
    return run_sync(spec.judge(ex, llm, make_config(spec.config_cls, cfg)))


def test_multi_aspect_puts_every_type_in_one_prompt_per_step():
    found = [{**FOUND[0], "error_type": "RED"}, {**FOUND[1], "error_type": "HAL"}]
    rated = [{**RATED[0], "error_type": "RED"}, {**RATED[1], "error_type": "HAL"}]
    be = (ScriptedBackend().add(STEP1, json.dumps(found)).add(STEP2, json.dumps(rated))
          .add(STEP3, json.dumps({"RED": {"reasoning": "twice", "confidence": 9, "rating": 4},
                                  "HAL": {"reasoning": "blue", "confidence": "6", "rating": "2"}})))
    j = judge(be, types="RED,HAL", aspect_mode="multi")
    assert be.batches == [1, 1, 1]  # one prompt per step for both types
    defs = [error_types()[c].definition for c in ("RED", "HAL")]
    assert all(all(d in r.messages[-1]["content"] for d in defs) for r in be.requests)
    assert j.scores == {"RED": 4.0, "HAL": 2.0}
    t = j.details["types"]
    assert t["RED"]["detected"] is True and t["HAL"]["detected"] is False  # HAL's only instance was rejected
    assert [x["instance"] for x in t["HAL"]["instances"]] == ["blue"]
    assert j.details["variant"] == "Single, three-step, multi-aspect"
    missing = ScriptedBackend().add("Rate the summary regarding several", json.dumps({"RED": json.loads(SCORE)}))
    j = judge(missing, types="RED,HAL", aspect_mode="multi", steps=1)  # HAL missing: unparsed, never guessed
    assert j.scores == {"RED": None, "HAL": None} and not j.parsed


def madp_backend(model="scripted"):
    return (ScriptedBackend(model=model)
            .add(CHALLENGE, lambda r: f"refined by {model}: " + r.messages[-1]["content"].split("perspective: ")[1][:12])
            .add(SYNTH, lambda r: SCORE if "Step 3" in r.messages[-1]["content"] or "Rate the summary" in r.messages[-1]["content"] else
                 json.dumps(FOUND[:1]) if "Step 1" in r.messages[-1]["content"] else json.dumps(RATED[:1]))
            .add(STEP1, "draft one").add(STEP2, "draft two").add(STEP3, "draft three")
            .add("Rate the summary regarding one", "draft single"))


def test_madp_message_flow_draft_challengers_synthesis_around_every_step():
    be = madp_backend()
    j = judge(be, types="RED", madp=True)
    assert be.batches == [1, 3, 1] * 3  # draft, three challengers together, synthesis; for each step
    roles = [r.tag.rsplit("/", 1)[-1] for r in be.requests[:5]]
    assert roles == ["madp-draft", "madp-challenger1", "madp-challenger2", "madp-challenger3", "madp-synthesis"]
    draft, c1, c2, c3, synth = (r.messages[-1]["content"] for r in be.requests[:5])
    assert draft.startswith("Step 1") and all("draft one" in c and draft in c for c in (c1, c2, c3))
    assert [p in c for p, c in zip(PERSPECTIVES, (c1, c2, c3))] == [True] * 3  # one perspective each
    assert all(f"refined by scripted: {p[:12]}" in synth for p in PERSPECTIVES) and "draft one" in synth
    t = j.details["types"]["RED"]
    assert t["instances"] == FOUND[:1]  # the synthesis, not the draft, is the step's answer
    assert j.scores == {"RED": 3.0} and set(t["discussion"]) == {"step1", "step2", "step3"}
    assert [d["role"] for d in t["discussion"]["step1"]] == ["moderator draft", "challenger 1", "challenger 2",
                                                            "challenger 3", "moderator synthesis"]
    assert j.details["variant"] == "MADP-S, three-step, single-aspect"


def test_madp_m_sends_challengers_to_the_other_models_in_turn():
    main = madp_backend()
    llm = LLM(main, cache=NullCache())
    others = {"scripted:a": madp_backend("a"), "scripted:b": madp_backend("b")}
    for spec, be in others.items():
        llm.companions[spec] = LLM(be, cache=NullCache())
    j = judge(main, llm=llm, types="RED", steps=1, madp=True, challenger_models=list(others))
    assert j.details["variant"] == "MADP-M, single-step, single-aspect"
    got = {spec: [r.tag.rsplit("/", 1)[-1] for r in be.requests] for spec, be in others.items()}
    assert got == {"scripted:a": ["madp-challenger1", "madp-challenger3"], "scripted:b": ["madp-challenger2"]}
    scope = llm.scoped("m1")
    run_sync(get_method("mesa").judge(EX, scope, make_config(get_method("mesa").config_cls, {
        "types": "RED", "steps": 1, "madp": True, "challenger_models": list(others)})))
    assert scope.usage.calls == 5  # draft, three challengers (two on companions), synthesis: one example's cost
    models = [d["model"] for d in j.details["types"]["RED"]["discussion"]["step1"]]
    assert models == ["scripted", "scripted:a", "scripted:b", "scripted:a", "scripted"]


def test_feedback_is_appended_to_every_step_and_train_meetings_are_refused():
    fb = {"iteration": 1, "reports": {"RED": "Count paraphrased repetitions too."},
          "train_meetings": ["some-other-meeting"]}
    be = three_step_backend()
    j = judge(be, types="RED,HAL", feedback=fb)
    red = [r.messages[-1]["content"] for r in be.requests if "/RED/" in r.tag]
    hal = [r.messages[-1]["content"] for r in be.requests if "/HAL/" in r.tag]
    assert len(red) == 3 and all(m.endswith("Count paraphrased repetitions too.") for m in red)
    assert not any("paraphrased" in m for m in hal)  # a report steers its own error type only
    assert j.details["types"]["RED"]["feedback_used"] and j.details["feedback_iteration"] == 1
    with pytest.raises(ConfigError, match="learned on"):
        judge(three_step_backend(), types="RED", feedback={**fb, "train_meetings": [EX.meeting]})


def test_self_training_learns_reports_then_steers_the_next_iteration(tmp_path):
    train = [MeetingErrorExample(id=f"t{i}", dataset="x", transcript=f"meeting {i}: we agreed on plan {i}.",
                                 summary=f"They agreed on plan {i}. Plan {i}.", labels={"RED": 1, "HAL": 0, "IRR": None},
                                 reasoning={"RED": "plan repeated"} if i == 0 else {})
             for i in range(2)]
    judge_reply = json.dumps({"completeness": 4, "overlap": 2, "logic": 5, "score_difference": "Minor_Difference",
                              "feedback": "look for repeated plans"})
    be = (three_step_backend().add("You are judging an automatic evaluator", judge_reply)
          .add("Detect the patterns", lambda r: "REPORT for " + ("repetition" if "redundan" in r.messages[-1]["content"].lower() else "other")))
    llm = LLM(be, cache=NullCache())
    cfg = make_config(get_method("mesa").config_cls, {"types": "RED,HAL,IRR"})
    fb = run_sync(self_train(train, llm, cfg, iterations=2))
    assert fb["iteration"] == 2 and set(fb["reports"]) == {"RED", "HAL"}  # IRR: no human annotation
    assert fb["train_ids"] == ["t0", "t1"] and sorted(fb["train_meetings"]) == sorted(e.meeting for e in train)
    h1, h2 = fb["history"]
    assert h1["judged"] == 4 and h1["score_difference"]["minor difference"] == 4 and h1["no_human_annotation"] == ["IRR"]
    judged = [r.messages[-1]["content"] for r in be.requests if "/judge" in r.tag]
    assert any("plan repeated" in m for m in judged) and any("unavailable (this dataset has no annotator reasoning)" in m for m in judged)
    second = [r.messages[-1]["content"] for r in be.requests if r.tag.startswith("t0/RED/step")][3:]
    assert len(second) == 3 and all(m.endswith("REPORT for repetition") for m in second)  # iteration 2 uses round 1
    with pytest.raises(ConfigError):  # never assessed with the reports learned on it
        judge(three_step_backend(), ex=train[0], types="RED", feedback=fb)
    path = save(fb, tmp_path / "fb.json")
    j = judge(three_step_backend(), types="RED", feedback=str(path))  # EX is from another meeting
    assert j.details["feedback_iteration"] == 2
    assert run_sync(self_train(train, llm, cfg, iterations=0)) == {}


def test_judge_labels_are_validated():
    ok = parse_judge('{"completeness": 3, "overlap": 3, "logic": 2, "score_difference": "critical disagreement"}')
    assert ok["score_difference"] == DIFFERENCES[-1]
    for bad in ('{"completeness": 3, "overlap": 3, "logic": 2, "score_difference": "huge"}',
                '{"completeness": 9, "overlap": 3, "logic": 2, "score_difference": "no difference"}', "none"):
        with pytest.raises(Exception):
            parse_judge(bad)


def test_meeting_splits_never_divide_a_meeting():
    train, test = registry.load("meeting-errors", split="train"), registry.load("meeting-errors", split="test")
    assert train and test and not {e.meeting for e in train} & {e.meeting for e in test}
    assert len(train) + len(test) == len(registry.load("meeting-errors", split="all"))
    by_meeting = {}
    for e in registry.load("meeting-errors"):
        by_meeting.setdefault(e.meeting, set()).add(e.meta["model"])
    assert max(len(v) for v in by_meeting.values()) > 1  # several summarisers per meeting: the split matters


def test_g_eval_4_scores_each_type_on_the_impact_scale():
    def opts(r):
        best = "1" if "Omission" in r.messages[-1]["content"] else "4"
        return {o: (0.8 if o == best else 0.04) for o in r.options}

    be = ScriptedBackend(options=opts)
    j = judge(be, method="mesa-g-eval", types="OM,HAL")
    assert j.scores["OM"] == pytest.approx(0.8 * 1 + 0.04 * (0 + 2 + 3 + 4 + 5))
    assert j.details["types"]["HAL"]["detected"] is True and j.details["types"]["HAL"]["source"] == "probs"


def likert_file(tmp_path, rows):
    p = tmp_path / "likert.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return p


def test_likert_metrics_on_a_synthetic_annotation_file(tmp_path):
    human = [0, 1, 3, 5, 2, 4]
    llm_rating = [0.0, 2.0, 2.0, 5.0, 1.0, 3.0]
    rows = [{"id": f"s{i}", "transcript": f"meeting {i}", "summary": f"summary {i}", "RED": h, "HAL": "no",
             "RED_reasoning": "why"} for i, h in enumerate(human)]
    exs = registry.load(f"meeting-file:{likert_file(tmp_path, rows)}")
    assert exs[1].labels["RED"] == 1 and exs[0].labels["RED"] == 0 and exs[0].likert == {"RED": 0.0}
    assert exs[0].reasoning == {"RED": "why"} and exs[0].labels["HAL"] == 0 and exs[0].labels["OM"] is None
    from sumjudge.methods.base import Judgement
    js = [Judgement(example_id=e.id, scores={"RED": s, "HAL": 0.0}) for e, s in zip(exs, llm_rating)]
    m = meeting_error_metrics(exs, js)["types"]
    lk = m["RED"]["likert"]
    quality = [5 - s for s in llm_rating]
    assert lk["spearman"]["r"] == pytest.approx(stats.spearmanr(human, quality)[0])
    assert lk["kendall"]["r"] == pytest.approx(stats.kendalltau(human, quality)[0]) and lk["kendall"]["r"] < 0
    assert lk["gap"] == pytest.approx(sum(llm_rating) / 6 - sum(human) / 6)
    assert m["HAL"]["likert"] == {"available": False, "reason": "no human Likert scores (the dataset has yes/no labels only)"}
    with pytest.raises(DataFormatError, match="RED"):
        registry.load(f"meeting-file:{likert_file(tmp_path, [{**rows[0], 'RED': 7}])}")
