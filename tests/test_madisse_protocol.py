"""MADISSE protocol, pinned down with the *scripted* backend (a rule-driven test double, not a model)."""

import re

import pytest

from sumjudge.data.records import FaithExample
from sumjudge.llm import ConfigError, NullCache, run_sync
from sumjudge.llm.engine import LLM
from sumjudge.llm.scripted import ScriptedBackend
from sumjudge.methods import make_config
from sumjudge.methods.baselines import SelfConsistencyConfig, majority, self_consistency
from sumjudge.methods.madisse import MadisseConfig, madisse, majority_with_rule

EX = FaithExample(id="ex1", dataset="t", document="The council voted 5 to 2.", summary="The council voted.", label=1)


def answer(label, why="because"):
    return f"<thinking>hm</thinking><label>{label}</label><explanation>{why}</explanation>"


def own_stance(req) -> str | None:
    m = re.search(r"You \(Agent \d\): The summary is (faithful|unfaithful)\.", req.messages[-1]["content"])
    return m.group(1) if m else None


def is_agent(req):
    return "evaluator agents assigned the same task" in req.messages[-1]["content"]


def is_adjudicator(req):
    return "make the final call" in req.messages[-1]["content"]


def run(backend, **cfg):
    llm = LLM(backend, cache=NullCache())
    return run_sync(madisse(EX, llm, make_config(MadisseConfig, cfg))), backend


def test_stances_are_imposed_as_configured_and_consensus_stops_early():
    be = ScriptedBackend().add(is_agent, answer(1))
    j, be = run(be, faithful_agents=2, unfaithful_agents=3, rounds=3)
    first_round = be.requests[:5]
    assert sorted(own_stance(r) for r in first_round) == ["faithful"] * 2 + ["unfaithful"] * 3
    assert all("The summary is" in r.messages[-1]["content"] for r in first_round)
    s = j.details["sessions"][0]
    assert s["consensus_round"] == 1 and len(s["rounds"]) == 1 and j.label == 1 and j.label_source == "consensus"
    assert len(be.requests) == 5 and be.batches == [5]  # one round, all agents in one backend call


def test_no_initialization_has_no_stances():
    be = ScriptedBackend().add(is_agent, answer(0))
    j, be = run(be, init="none")
    assert all(own_stance(r) is None for r in be.requests)
    assert "<chat_history>  </chat_history>" in be.requests[0].messages[-1]["content"]
    assert j.details["sessions"][0]["stances"] == [None] * 4


def test_disagreement_runs_all_rounds_with_shuffled_history_then_adjudicators_see_permuted_orders():
    def agent_reply(req):  # agents keep their imposed stance forever
        stance = own_stance(req)
        if stance is None:  # later rounds: find my own previous label in the history
            me = re.search(r"You \(Agent \d\): <label>(\d)</label>", req.messages[-1]["content"]).group(1)
            return answer(me, "I stand by it")
        return answer(1 if stance == "faithful" else 0, f"initially {stance}")

    be = ScriptedBackend().add(is_adjudicator, answer(0, "adjudicated")).add(is_agent, agent_reply)
    j, be = run(be, rounds=3, adjudicators=3, seed=7)
    s = j.details["sessions"][0]
    assert len(s["rounds"]) == 3 and s["consensus_round"] is None
    assert [len(r) for r in s["rounds"]] == [4, 4, 4]
    round3 = [r for r in be.requests if "/r3/" in r.tag]
    assert len(round3) == 4 and all(r.messages[-1]["content"].count("<label>") >= 8 for r in round3)
    assert "The summary is faithful." not in round3[0].messages[-1]["content"].split("<chat_history>")[1]
    orders = [a["order"] for a in s["adjudication"]]
    assert len(orders) == 3 and all(sorted(o) == [1, 2, 3, 4] for o in orders)
    assert len({tuple(o) for o in orders}) > 1  # each adjudicator its own order (seeded)
    adj_prompts = [r for r in be.requests if is_adjudicator(r)]
    for o, r in zip(orders, adj_prompts):
        shown = [int(x) for x in re.findall(r"Agent (\d): <label>", r.messages[-1]["content"])]
        assert shown == o
    assert j.label == 0 and j.label_source == "adjudication" and j.explanation == "adjudicated"
    assert j.details["no_agent_changed_stance"] == [True]
    assert be.batches == [4, 4, 4, 3]  # every round one call; adjudicators together


def test_everything_random_is_seeded():
    def reply(req):
        return answer(1 if own_stance(req) == "faithful" else 0) if own_stance(req) else answer(1)

    a, _ = run(ScriptedBackend().add(is_adjudicator, answer(1)).add(is_agent, reply), seed=3)
    b, _ = run(ScriptedBackend().add(is_adjudicator, answer(1)).add(is_agent, reply), seed=3)
    c, _ = run(ScriptedBackend().add(is_adjudicator, answer(1)).add(is_agent, reply), seed=4)
    assert a.details == b.details
    assert a.details["sessions"][0]["stances"] != c.details["sessions"][0]["stances"] or \
        a.details["sessions"][0]["adjudication"] != c.details["sessions"][0]["adjudication"]


def test_tie_rules():
    assert majority_with_rule([1, 0, 1]) == 1
    assert majority_with_rule([1, 0], 1) == 1  # tie: the fallback decides
    assert majority_with_rule([1, 0], None, None) == 0  # tie without fallback: unfaithful
    assert majority_with_rule([None, None], 1) == 1 and majority_with_rule([None]) is None
    assert majority_with_rule([1, None, 0, 0]) == 0


def test_simultaneous_debates_agents_vote_and_debates_vote_can_differ():
    # Session 0: 4 agents all say 1 (consensus 1). Sessions 1 and 2: agents split 3:1 for 1 but the
    # adjudicators say 0. Debates vote: 0 (two of three sessions). Agents vote: 1 (10 of 12 agents).
    def agent_reply(req):
        session = int(re.search(r"/s(\d)/", req.tag).group(1))
        agent = int(re.search(r"agent(\d)", req.tag).group(1))
        return answer(1 if session == 0 or agent != 4 else 0)

    be = ScriptedBackend().add(is_adjudicator, answer(0)).add(is_agent, agent_reply)
    j, be = run(be, sessions=3, rounds=2, adjudicators=3)
    assert [s["label"] for s in j.details["sessions"]] == [1, 0, 0]
    assert j.scores == {"agents_vote": 1, "debates_vote": 0} and j.label == 0
    assert be.batches[0] == 12  # the agents of all three sessions reach the backend together


def test_intervention_is_off_by_default_and_on_after_n_rounds():
    be = ScriptedBackend().add(is_adjudicator, answer(1)).add(
        is_agent, lambda r: answer(1 if own_stance(r) == "faithful" else 0) if own_stance(r) else answer(
            re.search(r"You \(Agent \d\): <label>(\d)", r.messages[-1]["content"]).group(1)))
    run(be, rounds=3)
    assert not any("Be open to accepting" in r.messages[-1]["content"] for r in be.requests)
    be2 = ScriptedBackend(rules=be.rules)
    run(be2, rounds=3, intervention_after=1)
    opened = [r.tag for r in be2.requests if "Be open to accepting" in r.messages[-1]["content"]]
    assert opened and all("/r2/" in t or "/r3/" in t for t in opened)


def test_unreadable_agent_breaks_consensus_and_is_recorded():
    be = ScriptedBackend().add(is_adjudicator, answer(1)).add(
        lambda r: is_agent(r) and "agent2" in r.tag, "I cannot decide.").add(is_agent, answer(1))
    j, _ = run(be, rounds=1)
    s = j.details["sessions"][0]
    assert s["consensus_round"] is None and s["rounds"][0][1]["source"] == "unparsed"
    assert j.label == 1 and j.label_source == "adjudication"


def test_self_consistency_majority_and_seeded_tie_break():
    assert majority([1, 1, 0], __import__("random").Random(0))[0] == 1
    be = ScriptedBackend().add(r".", lambda r: answer(r.sample_index % 2))
    llm = LLM(be, cache=NullCache())
    j = run_sync(self_consistency(EX, llm, SelfConsistencyConfig(samples=5)))
    assert j.label == 0 and j.details["counts"] == {0: 3, 1: 2}
    assert sorted(r.sample_index for r in be.requests) == [0, 1, 2, 3, 4] and be.batches == [5]


@pytest.mark.parametrize("bad", [{"init": "random"}])
def test_bad_settings_fail_clearly(bad):
    with pytest.raises(ConfigError, match="init"):
        run(ScriptedBackend().add(is_agent, answer(1)), **bad)


# ---- ambiguity detectors -------------------------------------------------------------------------
from sumjudge.data.records import Ambiguity  # noqa: E402
from sumjudge.methods.ambiguity import (  # noqa: E402
    AmbiguityDebateConfig,
    AmbiguitySCConfig,
    AmbiguityTaxonomyConfig,
    ambiguity_debate,
    ambiguity_sc,
    ambiguity_taxonomy,
)
from sumjudge.run_metrics import ambiguity_metrics  # noqa: E402


def test_self_consistency_variation_threshold():
    # 41 samples: 21 faithful, 20 unfaithful -> gap 2.4 points < 20 -> ambiguous
    be = ScriptedBackend().add(r".", lambda r: answer(int(r.sample_index < 21)))
    j = run_sync(ambiguity_sc(EX, LLM(be, cache=NullCache()), AmbiguitySCConfig()))
    assert j.label == 1 and j.details["pct_faithful"] == pytest.approx(100 * 21 / 41) and len(be.requests) == 41
    be2 = ScriptedBackend().add(r".", lambda r: answer(int(r.sample_index < 30)))
    assert run_sync(ambiguity_sc(EX, LLM(be2, cache=NullCache()), AmbiguitySCConfig())).label == 0


def test_taxonomy_baseline_prompt_has_the_taxonomy():
    be = ScriptedBackend().add(r"contains an ambiguity", answer(1))
    j = run_sync(ambiguity_taxonomy(EX, LLM(be, cache=NullCache()), AmbiguityTaxonomyConfig()))
    text = be.requests[0].messages[-1]["content"]
    assert j.label == 1 and "14. Conflation:" in text and "1 (ambiguous) or 0 (not ambiguous)" in text


def test_debate_detectors_reuse_the_debate_and_read_its_arguments(cache_file):
    from sumjudge.llm import ResponseCache

    def stubborn(req):
        stance = own_stance(req)
        if stance:
            return answer(1 if stance == "faithful" else 0, f"{stance} view")
        return answer(re.search(r"You \(Agent \d\): <label>(\d)", req.messages[-1]["content"]).group(1), "same")

    be = ScriptedBackend().add(lambda r: "Evaluator agents have had rounds" in r.messages[-1]["content"],
                               answer(1, "both readings are sound")).add(is_adjudicator, answer(0)).add(is_agent, stubborn)
    llm = LLM(be, cache=ResponseCache(cache_file))
    run_sync(madisse(EX, llm, MadisseConfig()))  # the madisse run
    before = len(be.requests)
    j = run_sync(ambiguity_debate(EX, llm, AmbiguityDebateConfig()))
    assert len(be.requests) == before + 1  # only the Table 32 call is new: the debate came from the cache
    assert j.scores == {"disagreement": 1, "arguments": 1}
    arg_prompt = be.requests[-1].messages[-1]["content"]
    assert "faithful view" in arg_prompt and "unfaithful view" in arg_prompt and "14. Conflation:" in arg_prompt


def test_ambiguity_metrics_treat_ambiguous_as_positive():
    from sumjudge.methods.base import Judgement

    exs = [FaithExample(id=str(i), dataset="t", document="d", summary="s", label=1,
                        ambiguity=Ambiguity(ambiguous=a)) for i, a in enumerate([True, True, False, False, False])]
    js = [Judgement(example_id=str(i), label=p) for i, p in enumerate([1, 0, 0, 0, 1])]
    m = ambiguity_metrics(exs, js)
    assert m["fnr"] == pytest.approx(1 / 2) and m["fpr"] == pytest.approx(1 / 3)
    assert m["bacc"] == pytest.approx(1 - (1 / 2 + 1 / 3) / 2)


# ---- guideline learning phase --------------------------------------------------------------------
from sumjudge.methods.guideline_learning import learn_guidelines, normalise  # noqa: E402


def test_guideline_learning_adds_correct_agents_rules_and_negated_wrong_ones():
    gold = [FaithExample(id="good", dataset="t", document="d1", summary="s1", label=1),
            FaithExample(id="bad", dataset="t", document="d2", summary="s2", label=0)]

    def agent(req):  # every agent says "faithful" and cites one rule per example
        text = req.messages[-1]["content"]
        assert "<guidelines_used>" in text  # the learning request is appended
        rule = "Paraphrases keep the summary consistent." if "s1" in text else "Minor additions are acceptable here."
        return answer(1, "ok") + f"<guidelines_used>\n1. {rule}\n</guidelines_used>"

    be = ScriptedBackend().add(r"Rewrite the following guideline",
                               lambda r: "<guideline>Minor additions make the summary inconsistent.</guideline>"
                               ).add(is_agent, agent)
    llm = LLM(be, cache=NullCache())
    out = run_sync(learn_guidelines(gold, llm, MadisseConfig(rounds=1), start="empty", max_passes=3))
    assert out.guidelines == ["Paraphrases keep the summary consistent.",
                              "Minor additions make the summary inconsistent."]
    assert [e["agent_correct"] for e in out.log] == [True, False]
    assert out.converged and out.passes == 2  # the second pass adds nothing new
    # from the second example on, the agents see the pool
    later = [r for r in be.requests if is_agent(r) and "s2" in r.messages[-1]["content"]]
    assert "1. Paraphrases keep the summary consistent." in later[0].messages[-1]["content"]
    assert normalise("3. Paraphrases keep the summary consistent!") == normalise(out.guidelines[0])
    assert out.text().startswith("1. Paraphrases")


def test_learning_starts_from_the_papers_guidelines_by_default():
    be = ScriptedBackend().add(is_agent, answer(1))
    out = run_sync(learn_guidelines([EX], LLM(be, cache=NullCache()), MadisseConfig(rounds=1), max_passes=1))
    assert len(out.guidelines) == 13 and out.guidelines[0].startswith("You should aim for accuracy")
