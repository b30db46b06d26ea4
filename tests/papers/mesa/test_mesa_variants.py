"""MESA's variants with the *scripted* backend (a rule-driven test double, not a model): multi-aspect
prompts, the MADP message flow (MADP-S and MADP-M), self-training feedback and its train/test separation,
the G-Eval-4 baseline; and the Likert metrics (Tables 4-5) on a synthetic annotation file."""

import json

import pytest
from scipy import stats
from test_mesa_protocol import EX, FOUND, RATED, STEP1, STEP2, STEP3, three_step_backend

from sumjudge.data import registry
from sumjudge.data.records import MeetingErrorExample
from sumjudge.data.sources import DataFormatError
from sumjudge.judges.settings import make_config
from sumjudge.llm import ConfigError, NullCache, run_sync
from sumjudge.llm.engine import LLM
from sumjudge.llm.scripted import ScriptedBackend
from sumjudge.papers.mesa.feedback import DIFFERENCES, difference, save, self_train
from sumjudge.papers.mesa.madp import PERSPECTIVES
from sumjudge.papers.mesa.metrics import meeting_error_metrics
from sumjudge.papers.mesa.protocol import error_types
from sumjudge.run.methods import get_method

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
    # one step: the authors' all-at-once baseline, answering by criterion name
    both = ScriptedBackend().add("Please return a JSON object mapping each criterion name",
                                 json.dumps({"repetition": json.loads(SCORE), "hallucination": json.loads(SCORE)}))
    j = judge(both, types="RED,HAL", aspect_mode="multi", steps=1)
    system, user = both.requests[0].messages
    assert system["content"].startswith("You are an expert in meeting summarization quality assessment")
    assert f"repetition: {error_types()['RED'].definition}" in user["content"] and j.scores == {"RED": 3.0, "HAL": 3.0}
    missing = ScriptedBackend().add("Please return a JSON object mapping", json.dumps({"repetition": json.loads(SCORE)}))
    j = judge(missing, types="RED,HAL", aspect_mode="multi", steps=1)  # HAL missing: unparsed, never guessed
    assert j.scores == {"RED": None, "HAL": None} and not j.parsed


CODE_CHALLENGE = "You are given a headstart"
CODE_SYNTH = "Produce a final, consolidated version of the draft"


def step_answer(text: str) -> str:
    return (SCORE if "Step 3" in text or "Rate the summary" in text else
            json.dumps(FOUND[:1]) if "Step 1" in text else json.dumps(RATED[:1]))


def madp_backend(model="scripted"):
    return (ScriptedBackend(model=model)
            .add(CHALLENGE, lambda r: f"refined by {model}: " + r.messages[-1]["content"].split("perspective: ")[1][:12])
            .add(SYNTH, lambda r: step_answer(r.messages[-1]["content"]))
            .add(CODE_CHALLENGE, f"improve it, by {model}")
            .add(CODE_SYNTH, lambda r: step_answer(r.messages[-1]["content"]))
            .add(STEP1, "draft one").add(STEP2, "draft two").add(STEP3, "draft three")
            .add(r"Rate the summary from 0 to 5 \(0=best", "draft single"))


def test_madp_message_flow_draft_challengers_consolidation_as_the_authors_panel():
    be = madp_backend()
    llm = LLM(be, cache=NullCache())
    j = judge(be, llm=llm, types="RED", madp=True)
    # draft, the three challengers, consolidation, for each step. The authors' panel gives its agents one prompt
    # and runs at temperature 0 (model_handler.py), so the three challengers are one identical request: the
    # engine sends it once and hands its answer to all three (in-flight de-duplication)
    assert be.batches == [1, 1, 1] * 3 and llm.usage.calls == 5 * 3 and llm.usage.cache_hits == 2 * 3
    roles = [r.tag.rsplit("/", 1)[-1] for r in be.requests[:3]]
    assert roles == ["madp-draft", "madp-challenger1", "madp-synthesis"]
    draft = be.requests[0].messages[-1]["content"]
    c1 = be.requests[1]
    assert draft.startswith("Step 1")
    assert c1.messages[0]["content"].startswith("Following you will work on this task: *You are a Judge")
    assert c1.messages[-1]["content"] == (
        f"This is your task: ***{draft}***. You are given a headstart: *draft one*. Consider it but generate your own "
        "improved version. Challenge the headstart draft if necessary. First write out what you think should be "
        "improved, then provide a new draft.")
    synth = be.requests[2]
    assert synth.messages[0]["content"].endswith("Now consolidate the feedback from the other agents and produce a final draft.")
    assert json.dumps(["improve it, by scripted"] * 3) in synth.messages[-1]["content"]
    t = j.details["types"]["RED"]
    assert t["instances"] == FOUND[:1]  # the consolidation, not the draft, is the step's answer
    assert j.scores == {"RED": 3.0} and set(t["discussion"]) == {"step1", "step2", "step3"}
    assert [d["role"] for d in t["discussion"]["step1"]] == ["moderator draft", "challenger 1", "challenger 2",
                                                            "challenger 3", "moderator synthesis"]
    assert j.details["variant"] == "MADP-S, three-step, single-aspect"


def test_madp_with_sumjudges_perspectives_on_request():
    be = madp_backend()
    j = judge(be, types="RED", madp=True, madp_prompts="sumjudge")
    assert be.batches == [1, 3, 1] * 3  # three perspectives: three different requests, sent together
    draft, c1, c2, c3, synth = (r.messages[-1]["content"] for r in be.requests[:5])
    assert all("draft one" in c and draft in c for c in (c1, c2, c3))
    assert [p in c for p, c in zip(PERSPECTIVES, (c1, c2, c3))] == [True] * 3  # one perspective each
    assert all(f"refined by scripted: {p[:12]}" in synth for p in PERSPECTIVES) and "draft one" in synth
    assert j.scores == {"RED": 3.0}


def test_madp_and_plain_variants_read_the_same_transcript_when_given_one_budget():
    """Under one ``transcript_tokens`` every variant of a comparison reads the same (cut) transcript; each
    variant's own budget would cut MADP's far shorter."""
    from sumjudge.papers.mesa.protocol import fit_transcript

    long_ex = MeetingErrorExample(id="long", dataset="x", transcript=" ".join(f"w{i}" for i in range(3000)),
                                  summary="Short summary.", labels={"RED": 1})
    be = madp_backend()
    be.context_length = 3000  # the scripted backend counts words as tokens
    llm = LLM(be, cache=NullCache())
    base = {"types": "RED", "truncate": "truncate", "max_new_tokens": 200}
    cfg = get_method("mesa").config_cls
    own = [run_sync(fit_transcript(long_ex, llm, make_config(cfg, c), {}))[0] for c in (base, {**base, "madp": True})]
    assert len(own[1].split()) < len(own[0].split()) < 3000  # each variant's own budget: different texts
    shared = min(len(t.split()) for t in own)
    texts = [run_sync(fit_transcript(long_ex, llm, make_config(cfg, {**c, "transcript_tokens": shared}), {}))
             for c in (base, {**base, "madp": True})]
    assert texts[0] == texts[1] and texts[0][1]["transcript_words_kept"] == shared
    j = judge(be, ex=long_ex, llm=llm, **base, madp=True, transcript_tokens=shared)
    sent = be.requests[0].messages[-1]["content"]
    assert texts[0][0] in sent and j.details["transcript_words_kept"] == shared and j.details["transcript_words"] == 3000


def test_madp_m_sends_challengers_to_the_other_models_in_turn():
    main = madp_backend()
    llm = LLM(main, cache=NullCache())
    others = {"scripted:a": madp_backend("a"), "scripted:b": madp_backend("b")}
    for spec, be in others.items():
        llm.companions[spec] = LLM(be, cache=NullCache())
    j = judge(main, llm=llm, types="RED", steps=1, madp=True, challenger_models=list(others))
    assert j.details["variant"] == "MADP-M, single-step, single-aspect"
    got = {spec: [r.tag.rsplit("/", 1)[-1] for r in be.requests] for spec, be in others.items()}
    # challengers 1 and 3 both go to model a with one prompt (temperature 0): a's backend answers once
    assert got == {"scripted:a": ["madp-challenger1"], "scripted:b": ["madp-challenger2"]}
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
    """The score difference is the authors' rule on the rating gap (no model asked); the LLM compares
    reasonings where the annotators wrote one, then writes each type's report; the reports steer iteration 2."""
    train = [MeetingErrorExample(id=f"t{i}", dataset="x", transcript=f"meeting {i}: we agreed on plan {i}.",
                                 summary=f"They agreed on plan {i}. Plan {i}.", labels={"RED": 1, "HAL": 0, "IRR": None},
                                 reasoning={"RED": "plan repeated"} if i == 0 else {})
             for i in range(2)]
    be = (ScriptedBackend().add("comparing a candidate reasoning to a human reasoning", "Close enough. Rating: 80")
          .add("Now provide meta-level feedback", lambda r: json.dumps(
              {"score_similarity": "REPORT for " + ("repetition" if "Presence Agrees" in r.messages[-1]["content"]
                                                    else "other"), "reasoning_quality": "cite the transcript"})))
    be.rules += three_step_backend().rules
    be.rules[0].match = lambda r: "comparing a candidate reasoning" in r.messages[0]["content"]
    llm = LLM(be, cache=NullCache())
    cfg = make_config(get_method("mesa").config_cls, {"types": "RED,HAL,IRR"})
    fb = run_sync(self_train(train, llm, cfg, iterations=2))
    assert fb["iteration"] == 2 and set(fb["reports"]) == {"RED", "HAL"}  # IRR: no human annotation
    assert fb["train_ids"] == ["t0", "t1"] and sorted(fb["train_meetings"]) == sorted(e.meeting for e in train)
    h1, _ = fb["history"]
    # RED: rating 3 vs an error of unknown impact -> presence agrees; HAL: rating 3 vs "no error" -> discrepancy
    assert h1["score_difference"]["Presence Agrees"] == 2 and h1["score_difference"]["Error Detection Discrepancy"] == 2
    assert h1["reasoning_compared"] == 1 and h1["mean_reasoning_quality"] == 80.0 and h1["no_human_annotation"] == ["IRR"]
    compared = [r for r in be.requests if r.tag.endswith("/reasoning")]
    assert len(compared) == 2 and "Human reasoning:\nplan repeated" in compared[0].messages[-1]["content"]  # t0 only
    second = [r.messages[-1]["content"] for r in be.requests if r.tag.startswith("t0/RED/step")][3:]
    assert len(second) == 3 and all("Score similarity: REPORT for repetition" in m for m in second)
    with pytest.raises(ConfigError):  # never assessed with the reports learned on it
        judge(three_step_backend(), ex=train[0], types="RED", feedback=fb)
    path = save(fb, tmp_path / "fb.json")
    j = judge(three_step_backend(), types="RED", feedback=str(path))  # EX is from another meeting
    assert j.details["feedback_iteration"] == 2
    assert run_sync(self_train(train, llm, cfg, iterations=0)) == {}


def test_difference_labels_follow_the_rating_gap():
    assert difference(3, 3, 1)[0] == "No Difference" and difference(2, 3, 1)[0] == "Minor Difference"
    assert difference(1, 3, 1)[0] == "Moderate Difference" and difference(5, 1, 1)[0] == "Major Difference"
    assert difference(0, 2, 1)[0] == "Error Detection Discrepancy" and difference(2, 0, 0)[0] == "Error Detection Discrepancy"
    assert difference(0, None, 0)[0] == "No Difference" and difference(4, None, 0)[0] == "Error Detection Discrepancy"
    assert difference(4, None, 1)[0] == "Presence Agrees" and difference(0, None, 1)[0] == "Error Detection Discrepancy"
    assert difference(2, None, None) is None
    assert set(DIFFERENCES) >= {difference(r, h, 1)[0] for r in range(6) for h in range(1, 6)}


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
    from sumjudge.judges.base import Judgement
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


def test_a_transcript_far_from_the_context_limit_is_read_whole_without_being_counted():
    """A long-context model holds a meeting many times over: only the prompts' templates are counted (once), never
    the transcript; near the limit it is counted and cut as before."""
    from sumjudge.papers.mesa.protocol import fit_transcript

    long_ex = MeetingErrorExample(id="long", dataset="x", transcript=" ".join(f"w{i}" for i in range(3000)),
                                  summary="Short summary.", labels={"RED": 1})
    be = madp_backend()
    asked = []
    prompt_tokens, count_tokens = be.prompt_tokens, be.count_tokens
    be.prompt_tokens = lambda m: asked.append([x["content"] for x in m]) or prompt_tokens(m)
    be.count_tokens = lambda t: asked.append([t]) or count_tokens(t)
    cfg = make_config(get_method("mesa").config_cls, {"types": "RED", "truncate": "truncate", "max_new_tokens": 200})
    be.context_length = 200_000
    text, info = run_sync(fit_transcript(long_ex, LLM(be, cache=NullCache()), cfg, {}))
    assert text == long_ex.transcript and info["transcript_words_kept"] == 3000
    assert asked and all(c == "" for m in asked for c in m)  # the templates' own tokens only
    asked.clear()
    be.context_length = 3000
    text, info = run_sync(fit_transcript(long_ex, LLM(be, cache=NullCache()), cfg, {}))
    assert info["transcript_words_kept"] < 3000 and [long_ex.transcript] in asked
