"""MADISSE protocol, pinned down with the *scripted* backend (a rule-driven test double, not a model).

The defaults are the authors' run (github.com/amazon-science/madisse @ ddb8276): sampled calls, the code's
prompts (answers in <argument>/<label>), the mediator text from round 3, ties adjudicated."""

import re

import pytest
from conftest import needs_mirror

from sumjudge.data.records import FaithExample
from sumjudge.judges.settings import make_config
from sumjudge.llm import ConfigError, NullCache, ResponseCache, run_sync
from sumjudge.llm.engine import LLM
from sumjudge.llm.scripted import ScriptedBackend
from sumjudge.papers.madisse.baselines import SelfConsistencyConfig, majority, self_consistency
from sumjudge.papers.madisse.protocol import MadisseConfig, madisse

EX = FaithExample(id="ex1", dataset="t", document="The council voted 5 to 2.", summary="The council voted.", label=1)
STANCE = {"faithful": 1, "unfaithful": 0}


def arg(label, why="because"):  # an answer in the format the code's debate prompt asks for
    return f"<argument>{why}</argument> <label>{label}</label>"


def answer(label, why="because"):  # the printed prompts' format (and the adjudicator's)
    return f"<thinking>hm</thinking><label>{label}</label><explanation>{why}</explanation>"


def own_stance(req) -> str | None:
    text = req.messages[-1]["content"]
    m = re.search(r"You \(Agent \d\): The summary is (faithful|unfaithful)\.", text)
    if m:
        return m.group(1)
    m = re.search(r"You \(Agent \d\): The summary is factually (consistent|inconsistent) with the document\.", text)
    return {"consistent": "faithful", "inconsistent": "unfaithful"}[m.group(1)] if m else None


def own_label(req) -> int:
    """This agent's previous label, which the scripted agents write into their arguments ("label=1")."""
    return int(re.search(r"You \(Agent \d\): [^\n]*label=(\d)", req.messages[-1]["content"]).group(1))


def is_agent(req):
    return "evaluator agents assigned the same task" in req.messages[-1]["content"]


def is_adjudicator(req):
    return "make the final call" in req.messages[-1]["content"]


def stubborn(req):  # agents keep their imposed stance (or their previous label) forever
    stance = own_stance(req)
    label = STANCE[stance] if stance else own_label(req)
    return arg(label, f"label={label} {stance or 'same'} view")


def run(backend, cache=None, **cfg):
    llm = LLM(backend, cache=cache or NullCache())
    return run_sync(madisse(EX, llm, make_config(MadisseConfig, cfg))), backend


def prompt(req) -> str:
    return req.messages[-1]["content"]


def test_defaults_are_the_authors_run():
    c = MadisseConfig()
    assert (c.temperature, c.top_p, c.max_new_tokens, c.rounds, c.prompts, c.doc_first) == (1.0, 0.9, 1000, 3, "code", False)
    assert (c.adjudicate, c.intervention_after, c.stance_retries, c.session_adjudicators) == ("tie", 2, 1, 1)
    assert c.warnings() == [] and "greedy" in MadisseConfig(temperature=0).warnings()[0]


def test_stances_are_imposed_every_call_sampled_and_consensus_stops_early():
    be = ScriptedBackend().add(is_agent, arg(1))
    j, be = run(be, faithful_agents=2, unfaithful_agents=3, rounds=3, stance_retries=0)
    first_round = be.requests[:5]
    assert sorted(own_stance(r) for r in first_round) == ["faithful"] * 2 + ["unfaithful"] * 3
    assert all(r.temperature == 1.0 and r.top_p == 0.9 and r.max_new_tokens == 1000 for r in first_round)
    assert len({r.seed for r in first_round}) == 5
    text = prompt(first_round[0])
    assert text.index("<guidelines>\n") < text.index("<doc> The council")  # the paper's order of blocks, not document first
    assert "Continue the discussion with other evaluator agents" in text and "<argument></argument>" in text
    s = j.details["sessions"][0]
    assert s["consensus_round"] == 1 and len(s["rounds"]) == 1 and j.label == 1 and j.label_source == "consensus"
    assert len(be.requests) == 5 and be.batches == [5]  # one round, all agents in one backend call


def test_without_initialization_agents_get_distinct_seeds_send_distinct_requests_and_can_disagree(cache_file):
    """init=none: four identical prompts, but each agent samples with its own seed: four requests, four cache
    entries, and answers that can differ (here: by seed parity), so the debate goes on."""
    be = ScriptedBackend().add(is_adjudicator, answer(1)).add(is_agent, lambda r: arg(r.seed % 2, f"label={r.seed % 2}"))
    seeds = []
    for cfg_seed in range(20):  # find a run seed whose four first-round seeds do not all share a parity
        be.requests.clear()
        j, _ = run(be, init="none", rounds=1, seed=cfg_seed)
        seeds = [r.seed for r in be.requests[:4]]
        if len({x % 2 for x in seeds}) == 2:
            break
    assert len(set(seeds)) == 4 and len({prompt(r) for r in be.requests[:4]}) == 1
    assert "<chat_history>\n\n</chat_history>" in prompt(be.requests[0])
    s = j.details["sessions"][0]
    assert s["stances"] == [None] * 4 and s["consensus_round"] is None
    assert len({t["label"] for t in s["rounds"][0]}) == 2  # the four agents disagree
    llm = LLM(ScriptedBackend(rules=be.rules), cache=ResponseCache(cache_file))
    j = run_sync(madisse(EX, llm, MadisseConfig(init="none", rounds=1, seed=cfg_seed)))
    calls = 4 + len(j.details["sessions"][0]["adjudication"])
    assert llm.usage.backend_calls == calls == llm.cache.count()  # nothing collapsed into one entry


def test_sessions_and_rounds_never_share_a_cache_entry(cache_file):
    be = ScriptedBackend().add(is_adjudicator, answer(0)).add(is_agent, stubborn)
    llm = LLM(be, cache=ResponseCache(cache_file))
    run_sync(madisse(EX, llm, MadisseConfig(sessions=3, rounds=2, stance_retries=0)))
    keys = [llm._key("chat", r) for r in be.requests]
    assert len(keys) == len(set(keys)) == llm.cache.count() and llm.usage.cache_hits == 0
    agents = [r for r in be.requests if is_agent(r)]
    assert len({(re.search(r"/s(\d)/r(\d)/agent(\d)", r.tag).groups()) for r in agents}) == len(agents) == 24


def test_disagreement_runs_all_rounds_with_shuffled_history_then_adjudicators_read_distinct_orders():
    be = ScriptedBackend().add(is_adjudicator, answer(0, "adjudicated")).add(is_agent, stubborn)
    j, be = run(be, rounds=3, adjudicators=3, seed=7)
    s = j.details["sessions"][0]
    assert len(s["rounds"]) == 3 and s["consensus_round"] is None
    round3 = [r for r in be.requests if "/r3/" in r.tag]
    assert len(round3) == 4
    for r in round3:
        hist = re.search(r"<chat_history>\n(.*?)\n</chat_history>", prompt(r), re.S).group(1).splitlines()
        assert len(hist) == 8 and all(re.match(r"(You \(Agent \d\)|Agent \d): label=", h) for h in hist)
        assert "factually consistent with the document." not in "".join(hist)  # the stances are not repeated
    orders = [a["order"] for a in s["adjudication"]]
    assert len(orders) == 3 and all(sorted(o) == [1, 2, 3, 4] for o in orders)
    assert len({tuple(o) for o in orders}) == 3  # every adjudicator its own order
    for o, r in zip(orders, [r for r in be.requests if is_adjudicator(r)]):
        assert [int(x) for x in re.findall(r"^Agent (\d): ", prompt(r), re.M)] == o
    assert j.label == 0 and j.label_source == "adjudication" and j.explanation == "adjudicated"
    assert j.details["no_agent_changed_stance"] == [True]


def test_an_untied_disagreement_takes_the_majority_unless_adjudicate_is_disagreement():
    def three_to_one(req):  # agents 1-3 say 1 whatever their stance, agent 4 says 0
        return arg(0 if req.tag.endswith("agent4") or "/agent4#" in req.tag else 1, "x")

    be = ScriptedBackend().add(is_adjudicator, answer(0)).add(is_agent, three_to_one)
    j, be = run(be, rounds=2, stance_retries=0)
    assert j.label == 1 and j.label_source == "majority" and not any(is_adjudicator(r) for r in be.requests)
    j2, be2 = run(ScriptedBackend(rules=be.rules), rounds=2, stance_retries=0, adjudicate="disagreement")
    assert j2.label == 0 and j2.label_source == "adjudication"


def test_an_answer_contradicting_its_stance_is_asked_once_more_in_round_one():
    def contrary_first(req):  # the first ask contradicts the stance, the second follows it
        want = STANCE[own_stance(req)] if own_stance(req) else 1
        return arg(1 - want if "#ask" not in req.tag else want, "x")

    be = ScriptedBackend().add(is_adjudicator, answer(1)).add(is_agent, contrary_first)
    j, be = run(be, rounds=1)
    r1 = j.details["sessions"][0]["rounds"][0]
    assert [t["attempts"] for t in r1] == [2] * 4 and len(be.requests) == 8 + 3
    stances = j.details["sessions"][0]["stances"]
    assert [t["label"] for t in r1] == [STANCE[s] for s in stances]
    j0, be0 = run(ScriptedBackend(rules=be.rules), rounds=1, stance_retries=0)
    assert [t["attempts"] for t in j0.details["sessions"][0]["rounds"][0]] == [1] * 4


def test_unreadable_labels_carry_the_previous_label_forward():
    """Agent 2 never writes a readable label: it keeps its stance (round 1), then that label again; the
    others agree with that label, so the debate reaches consensus on carried labels."""
    stances = {}

    def reply(req):
        if req.tag.split("/")[-1].startswith("agent2"):
            return "I cannot decide."
        stance = own_stance(req)
        if stance:
            stances[req.tag.split("/")[-1]] = stance
        return arg(1, "label=1")

    be = ScriptedBackend().add(is_adjudicator, answer(1)).add(is_agent, reply)
    j, _ = run(be, rounds=3, seed=0, faithful_agents=4, unfaithful_agents=0)
    r1 = j.details["sessions"][0]["rounds"][0]
    assert r1[1]["source"] == "carried" and r1[1]["label"] == 1
    assert j.details["sessions"][0]["consensus_round"] == 1 and j.label == 1


def test_label_follow_up_asks_an_agent_for_the_label_its_argument_left_out():
    """label_retry=follow_up: an agent's argument without a label is followed by a turn asking for the factuality
    label (a short reply); the label read there is the agent's, the argument the first answer's. The default draws
    a new answer instead."""
    followed = lambda r: len(r.messages) == 3  # noqa: E731

    def reply(req):
        if req.tag.split("/")[-1].startswith("agent3"):  # stance: unfaithful, which the label it gives keeps
            return "<argument>the date is not in the document</argument>"
        return stubborn(req)

    be = ScriptedBackend().add(followed, "<label>0</label>").add(is_adjudicator, answer(1)).add(is_agent, reply)
    j, _ = run(be, rounds=1, seed=0, faithful_agents=2, unfaithful_agents=2, label_retry="follow_up")
    follow = [r for r in be.requests if followed(r)]
    assert len(follow) == 1 and follow[0].max_new_tokens < 100
    assert "the date is not in the document" in follow[0].messages[1]["content"]
    assert "<label>1</label> if the sentence is factually consistent" in prompt(follow[0])
    turn = j.details["sessions"][0]["rounds"][0][2]
    assert (turn["label"], turn["source"]) == (0, "parsed") and "the date is not in the document" in turn["explanation"]
    default = ScriptedBackend().add(followed, "<label>0</label>").add(is_adjudicator, answer(1)).add(is_agent, reply)
    run(default, rounds=1, seed=0, faithful_agents=2, unfaithful_agents=2)
    assert not any(followed(r) for r in default.requests)
    assert sum(r.tag.split("/")[-1].startswith("agent3") for r in default.requests) > 1  # asked again instead


def test_a_follow_up_fits_the_context_the_prompt_was_fitted_to():
    """label_retry=follow_up: the prompt leaves room for the follow-up turn too (it carries the first answer, up to
    max_new_tokens, and asks again), so a document cut to fit the first request never makes the follow-up overflow."""
    from sumjudge.papers.madisse.baselines import ZeroShotConfig, zero_shot

    long = FaithExample(id="long", dataset="t", document=" ".join(["word"] * 4000), summary="The council voted.",
                        label=1)
    followed = lambda r: len(r.messages) == 3  # noqa: E731
    be = (ScriptedBackend(context_length=2000).add(followed, "<label>1</label>").add(is_adjudicator, answer(1))
          .add(r".", " ".join(["reason"] * 100)))
    llm = LLM(be, cache=NullCache())
    settings = dict(max_new_tokens=100, truncate="truncate", label_retry="follow_up")
    run_sync(zero_shot(long, llm, ZeroShotConfig(**settings)))
    run_sync(ambiguity_taxonomy(long, llm, AmbiguityTaxonomyConfig(**settings)))
    run_sync(madisse(long, llm, make_config(MadisseConfig, {**settings, "rounds": 1})))
    follow = [r for r in be.requests if followed(r)]
    assert len(follow) >= 6  # zero-shot's, the detector's and the agents'
    assert all(be.prompt_tokens(r.messages) + r.max_new_tokens <= 2000 for r in be.requests)


def test_intervention_is_the_codes_mediator_text_from_round_three():
    be = ScriptedBackend().add(is_adjudicator, answer(1)).add(is_agent, stubborn)
    run(be, rounds=3)
    opened = [r.tag for r in be.requests if "Look back at the guidelines and how you have used them." in prompt(r)]
    assert opened and all("/r3/" in t for t in opened) and len(opened) == 4
    assert "each summary sentence. Look back at the guidelines" in prompt(next(r for r in be.requests if r.tag in opened))
    be2 = ScriptedBackend(rules=be.rules)
    run(be2, rounds=3, intervention_after=0)
    assert not any("Look back at the guidelines" in prompt(r) for r in be2.requests)


def test_simultaneous_debates_agents_vote_with_tie_adjudication_over_all_sessions():
    """Sessions 0 and 1 agree on 1 and 0 by consensus, session 2 splits 2-2: agents 6-6. The agents vote goes to
    the adjudicators over all 12 final arguments; the tied session had its own single adjudicator."""
    def reply(req):
        session = int(re.search(r"/s(\d)/", req.tag).group(1))
        if session < 2:
            return arg(1 - session, f"s{session}")
        stance = own_stance(req)
        label = STANCE[stance] if stance else own_label(req)
        return arg(label, f"label={label}")

    def adjudicator(req):
        return answer(0 if prompt(req).count("\nAgent ") + prompt(req).count("<chat_history>\nAgent") > 6 else 1)

    be = ScriptedBackend().add(is_adjudicator, adjudicator).add(is_agent, reply)
    j, be = run(be, sessions=3, rounds=2, adjudicators=3)
    sessions = j.details["sessions"]
    assert [s["label_source"] for s in sessions] == ["consensus", "consensus", "adjudication"]
    assert len(sessions[2]["adjudication"]) == 1  # session_adjudicators=1, as in the code
    all_adj = j.details["adjudication"]
    assert len(all_adj) == 3 and all(sorted(a["order"]) == list(range(1, 13)) for a in all_adj)
    assert len({tuple(a["order"]) for a in all_adj}) == 3
    assert j.label == 0 and j.label_source == "agents_vote_adjudicated" and j.scores["agents_vote"] == 0
    # the session's own adjudicator saw 4 arguments and said 1: sessions 1, 0, 1 -> debates vote 1
    assert sessions[2]["label"] == 1 and j.scores["debates_vote"] == 1


def test_agents_vote_and_debates_vote_can_differ():
    # Session 0: all say 1 (consensus). Sessions 1 and 2: 3:1 for 1 whatever the stance -> majority 1 ... unless
    # adjudicate=disagreement sends them to an adjudicator that says 0. Debates vote 0 (two sessions), agents 10:2.
    def agent_reply(req):
        session = int(re.search(r"/s(\d)/", req.tag).group(1))
        agent = int(re.search(r"agent(\d)", req.tag).group(1))
        return arg(1 if session == 0 or agent != 4 else 0)

    be = ScriptedBackend().add(is_adjudicator, answer(0)).add(is_agent, agent_reply)
    j, be = run(be, sessions=3, rounds=2, adjudicate="disagreement", stance_retries=0)
    assert [s["label"] for s in j.details["sessions"]] == [1, 0, 0]
    assert j.scores == {"agents_vote": 1, "debates_vote": 0} and j.label == 1 and j.label_source == "agents_vote"
    assert be.batches[0] == 12  # the agents of all three sessions reach the backend together


def test_everything_random_is_seeded():
    be_rules = ScriptedBackend().add(is_adjudicator, answer(1)).add(is_agent, stubborn).rules
    a, _ = run(ScriptedBackend(rules=be_rules), seed=3)
    b, _ = run(ScriptedBackend(rules=be_rules), seed=3)
    c, _ = run(ScriptedBackend(rules=be_rules), seed=4)
    assert a.details == b.details
    assert a.details["sessions"][0]["stances"] != c.details["sessions"][0]["stances"] or \
        a.details["sessions"][0]["adjudication"] != c.details["sessions"][0]["adjudication"]


def test_printed_prompts_are_one_setting_away():
    be = ScriptedBackend().add(is_adjudicator, answer(0)).add(
        is_agent, lambda r: answer(STANCE[own_stance(r)]) if own_stance(r) else answer(
            re.search(r"You \(Agent \d\): <label>(\d)</label>", prompt(r)).group(1)))
    j, be = run(be, prompts="printed", rounds=2, stance_retries=0)
    first = prompt(be.requests[0])
    assert "You (Agent 1): The summary is" in first and "Before answering, please think about the question" in first
    assert re.search(r"<chat_history> (You \(Agent \d\)|Agent \d): The summary is (un)?faithful\. Agent", first)
    assert "Continue the discussion" not in first
    assert j.label_source == "adjudication"


def test_self_consistency_defaults_and_tie_rule():
    c = SelfConsistencyConfig()
    assert (c.samples, c.temperature, c.top_p, c.template_name()) == (41, 1.0, 0.9, "madisse/table27_cot_as_run")
    assert majority([1, 1, 0])[0] == 1 and majority([1, 0])[0] == 1 and majority([None, 0])[0] == 0
    assert majority([None, None]) == (None, {})
    be = ScriptedBackend().add(r".", lambda r: answer(r.sample_index % 2))
    llm = LLM(be, cache=NullCache())
    j = run_sync(self_consistency(EX, llm, SelfConsistencyConfig(samples=5)))
    assert j.label == 0 and j.details["counts"] == {0: 3, 1: 2}
    assert sorted(r.sample_index for r in be.requests) == [0, 1, 2, 3, 4] and be.batches == [5]
    assert "within <thinking></thinking> XML tags." in prompt(be.requests[0])


@pytest.mark.parametrize("bad", [{"init": "random"}, {"prompts": "paper"}, {"adjudicate": "always"}])
def test_bad_settings_fail_clearly(bad):
    (key,) = bad
    with pytest.raises(ConfigError, match=key):
        run(ScriptedBackend().add(is_agent, arg(1)), **bad)


# ---- ambiguity detectors -------------------------------------------------------------------------
from sumjudge.data.records import Ambiguity  # noqa: E402
from sumjudge.papers.madisse.ambiguity import (  # noqa: E402
    AmbiguityDebateConfig,
    AmbiguitySCConfig,
    AmbiguityTaxonomyConfig,
    ambiguity_debate,
    ambiguity_metrics,  # noqa: E402
    ambiguity_sc,
    ambiguity_taxonomy,
)


def test_self_consistency_variation_threshold():
    # 41 samples: 21 faithful, 20 unfaithful -> gap 2.4 points < 20 -> ambiguous
    be = ScriptedBackend().add(r".", lambda r: answer(int(r.sample_index < 21)))
    j = run_sync(ambiguity_sc(EX, LLM(be, cache=NullCache()), AmbiguitySCConfig()))
    assert j.label == 1 and j.details["pct_faithful"] == pytest.approx(100 * 21 / 41) and len(be.requests) == 41
    be2 = ScriptedBackend().add(r".", lambda r: answer(int(r.sample_index < 30)))
    assert run_sync(ambiguity_sc(EX, LLM(be2, cache=NullCache()), AmbiguitySCConfig())).label == 0


def test_label_follow_up_asks_after_the_answer_for_the_label_it_left_out():
    # a chain of thought that states no <label>: with label_retry=follow_up the model is asked, after its own answer,
    # for the label (a short greedy reply); the label is the reply's, the explanation the first answer's
    followed = lambda r: len(r.messages) == 3  # noqa: E731
    be = (ScriptedBackend().add(followed, lambda r: "<label>0</label>" if r.sample_index else "No label here.")
          .add(r".", lambda r: "<thinking>the vote count is missing</thinking><explanation>it omits 5 to 2"
                              "</explanation>" if r.sample_index < 2 else answer(1)))
    j = run_sync(ambiguity_sc(EX, LLM(be, cache=NullCache()), AmbiguitySCConfig(samples=3, label_retry="follow_up")))
    follow = [r for r in be.requests if followed(r)]
    assert sorted((r.sample_index, r.tag.rsplit("#", 1)[-1], r.temperature) for r in follow) == [
        (0, "label1", 0.0), (0, "label2", 1.0), (1, "label1", 0.0)]
    first = follow[0]
    assert first.messages[1]["role"] == "assistant" and "the vote count is missing" in first.messages[1]["content"]
    assert "reply with the label only: <label>1</label>" in prompt(first)
    assert first.max_new_tokens < 100
    # sample 0 never states a label (counted unreadable), sample 1 does after the follow-up, sample 2 at once
    assert j.details["readable"] == 2 and j.details["pct_faithful"] == 50.0
    cot = run_sync(self_consistency(EX, LLM(be, cache=NullCache()), SelfConsistencyConfig(samples=3,
                                                                                         label_retry="follow_up")))
    assert cot.details["sample_labels"] == [None, 0, 1] and cot.details["sample_sources"][1] == "parsed"
    # the default is the engine's resampling: the same request, a new sample, no follow-up turn
    be2 = ScriptedBackend().add(r".", lambda r: "<label>1</label>" if "#retry" in r.tag else "no label")
    run_sync(ambiguity_sc(EX, LLM(be2, cache=NullCache()), AmbiguitySCConfig(samples=1)))
    assert [len(r.messages) for r in be2.requests] == [1, 1]
    with pytest.raises(ConfigError, match="label_retry"):
        make_config(AmbiguitySCConfig, {"label_retry": "ask"})


def test_taxonomy_baseline_prompt_has_the_taxonomy_and_the_category_is_recorded():
    be = ScriptedBackend().add(r"contains an ambiguity", answer(1) + "<category>Vagueness</category>")
    j = run_sync(ambiguity_taxonomy(EX, LLM(be, cache=NullCache()), AmbiguityTaxonomyConfig()))
    text = prompt(be.requests[0])
    assert j.label == 1 and j.details["category"] == "Vagueness" and "14. Conflation:" in text
    assert "values 1 as ambiguous and 0 as non-ambiguous, <category></category> tags" in text
    printed = ScriptedBackend().add(r"contains an ambiguity", answer(0))
    run_sync(ambiguity_taxonomy(EX, LLM(printed, cache=NullCache()), AmbiguityTaxonomyConfig(prompts="printed")))
    assert "1 (ambiguous) or 0 (not ambiguous)" in prompt(printed.requests[0])


def test_taxonomy_baseline_follow_up_asks_for_the_ambiguity_label():
    # the detector's follow-up keeps the detector's label convention (1 = ambiguous), not the factuality one
    followed = lambda r: len(r.messages) == 3  # noqa: E731
    be = (ScriptedBackend().add(followed, "<label>1</label>")
          .add(r"contains an ambiguity", "<explanation>'the vote' may mean either vote</explanation>"))
    j = run_sync(ambiguity_taxonomy(EX, LLM(be, cache=NullCache()), AmbiguityTaxonomyConfig(label_retry="follow_up")))
    follow = [r for r in be.requests if followed(r)]
    assert j.label == 1 and j.parsed and len(follow) == 1
    assert "<label>1</label> if the summary contains an ambiguity" in prompt(follow[0])
    assert "factually consistent" not in prompt(follow[0])


def test_self_consistency_variation_reads_the_self_consistency_samples(cache_file):
    be = ScriptedBackend().add(r".", lambda r: answer(int(r.sample_index < 21)))
    llm = LLM(be, cache=ResponseCache(cache_file))
    run_sync(self_consistency(EX, llm, SelfConsistencyConfig()))
    n = len(be.requests)
    j = run_sync(ambiguity_sc(EX, llm, AmbiguitySCConfig()))
    assert n == 41 and len(be.requests) == n  # every sample was a cache hit: nothing drawn again
    assert j.label == 1


def test_debate_detectors_reuse_the_debate_and_read_every_sessions_final_arguments(cache_file):
    be = ScriptedBackend().add(lambda r: "Evaluator agents have had rounds" in prompt(r),
                               answer(1, "both readings are sound")).add(is_adjudicator, answer(0)).add(is_agent, stubborn)
    llm = LLM(be, cache=ResponseCache(cache_file))
    run_sync(madisse(EX, llm, MadisseConfig(sessions=2)))  # the madisse run
    before = len(be.requests)
    j = run_sync(ambiguity_debate(EX, llm, AmbiguityDebateConfig(sessions=2)))
    assert len(be.requests) == before + 1  # only the Table 32 call is new: the debate came from the cache
    assert j.scores == {"disagreement": 1, "arguments": 1}
    arg_prompt = prompt(be.requests[-1])
    shown = re.search(r"<arguments>\n(.*?)\n</arguments>", arg_prompt, re.S).group(1).splitlines()
    assert [x.split(":")[0] for x in shown] == [f"Agent {k}" for k in range(1, 9)]  # both sessions' final rounds
    assert any("label=1 same view" in x for x in shown) and any("label=0 same view" in x for x in shown)
    assert "14. Conflation:" in arg_prompt and "would lead to opposing factuality labels" in arg_prompt


def test_ambiguity_metrics_treat_ambiguous_as_positive():
    from sumjudge.judges.base import Judgement

    exs = [FaithExample(id=str(i), dataset="t", document="d", summary="s", label=1,
                        ambiguity=Ambiguity(ambiguous=a)) for i, a in enumerate([True, True, False, False, False])]
    js = [Judgement(example_id=str(i), label=p) for i, p in enumerate([1, 0, 0, 0, 1])]
    m = ambiguity_metrics(exs, js)
    assert m["fnr"] == pytest.approx(1 / 2) and m["fpr"] == pytest.approx(1 / 3)
    assert m["bacc"] == pytest.approx(1 - (1 / 2 + 1 / 3) / 2)
    # the label counts the tables show are in the detectors' own labels: 1 = ambiguous
    assert m["said"] == {"1": 2, "0": 3} and m["gold"] == {"1": 2, "0": 3}


def test_the_random_detector_s_interval_is_a_coin_s_not_one_draw_s():
    """A bootstrap of one coin draw conditions on that draw (25 [12.5, 37.5] excludes 50, the coin's expectation);
    the random detector's interval redraws the coin in every resample: it holds chance, and it is seeded."""
    from sumjudge.metrics import readable_bacc_ci
    from sumjudge.papers.madisse.tables import coin_bacc_ci

    y = [1] * 12 + [0] * 8
    one_draw = [0] * 9 + [1] * 3 + [1] * 6 + [0] * 2  # an unlucky draw: BAcc 25
    assert readable_bacc_ci(y, one_draw)[1] < 0.5
    lo, hi = coin_bacc_ci(y, seed=0)
    assert lo < 0.5 < hi and (lo, hi) == coin_bacc_ci(y, seed=0)
    assert coin_bacc_ci([1, 1, 1], seed=0) is None


def test_binary_metrics_count_the_gold_labels_of_the_examples_they_read():
    """The gold labels of the readable examples (a rate over one gold class rests on that class's count) come
    beside the labels said, as a table column."""
    from sumjudge.judges.base import Judgement
    from sumjudge.run.metrics import binary_metrics, said_column

    said = [1, None, 0, 1, 0]
    m = binary_metrics([1, 1, 0, 0, 0], [Judgement(example_id=str(i), label=p) for i, p in enumerate(said)])
    assert m["gold"] == {"1": 1, "0": 3} and m["said"] == {"1": 2, "0": 2}
    assert said_column(m["said"], m["gold"]) == {"labels said": "2 × 1, 2 × 0", "gold labels": "1 × 1, 3 × 0"}
    assert said_column(m["said"]) == {"labels said": "2 × 1, 2 × 0"}

# ---- guideline learning phase --------------------------------------------------------------------
from sumjudge.papers.madisse.guidelines import learn_guidelines, normalise  # noqa: E402


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


def test_a_greedy_madisse_run_says_so_in_its_record(tmp_path, capsys):
    import json

    from sumjudge.run.folder import RunConfig
    from sumjudge.run.runs import run

    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"id": "a", "document": "The council voted.", "summary": "It voted.", "label": 1}) + "\n")
    be = ScriptedBackend().add(is_agent, arg(1))
    rc = RunConfig(method="madisse", dataset=f"file:{data}", backend="scripted", settings={"temperature": 0})
    run(rc, tmp_path / "greedy", llm=LLM(be, cache=NullCache()), progress=False)
    cfg = json.loads((tmp_path / "greedy" / "config.json").read_text())
    assert len(cfg["warnings"]) == 1 and "greedy" in cfg["warnings"][0] and "greedy" in capsys.readouterr().err
    run(RunConfig(method="madisse", dataset=f"file:{data}", backend="scripted"), tmp_path / "sampled",
        llm=LLM(be, cache=NullCache()), progress=False)
    assert json.loads((tmp_path / "sampled" / "config.json").read_text())["warnings"] == []


@needs_mirror
def test_table4_detectors_are_submitted_together():
    """Table 4's three detector runs go to the engine in one ``run_many`` (their requests share batches), each once
    (the two debate detectors read one run)."""
    from types import SimpleNamespace

    from sumjudge.papers.madisse.tables import AMBIGUITY_DETECTORS, run_ambiguity_detectors

    class Session:
        prof = SimpleNamespace(n=4, seed=0)
        batches: list = []

        def run_many(self, specs):
            self.batches.append([s["method"] for s in specs])
            variant = {"bacc": 0.5, "unparsed": 0}
            return [({"n_examples": 4, "bacc": 0.5, "unparsed": 0,
                      "variants": {"disagreement": variant, "arguments": variant}}, None) for _ in specs]

    s = Session()
    rows = run_ambiguity_detectors(s, sc_samples=3)
    assert s.batches == [["ambiguity-sc", "ambiguity-taxonomy", "ambiguity-debate"]]
    assert [r["detector"] for r in rows] == [d for d, _, _ in AMBIGUITY_DETECTORS]
    # the random row counts in the detectors' own labels too (1 = ambiguous), as ambiguity_metrics gives the others
    from sumjudge.data import registry
    s.prof = SimpleNamespace(n=3, seed=0)  # 1 of these 3 sentences is ambiguous: the two readings differ
    rows = run_ambiguity_detectors(s, sc_samples=3)
    ambiguous = sum(e.ambiguity.ambiguous for e in registry.load("meetingbank-ambiguity", limit=3, seed=0))
    assert ambiguous == 1 and rows[0]["gold labels"] == "1 × 1, 2 × 0"


def test_arguments_too_long_for_the_context_are_each_cut_not_the_run():
    """Agents that argue at length in a small context: under the truncate policy each final argument keeps its
    start (the same number of words each; the words cut are recorded) and the document keeps room; the detector still answers.
    Under the error policy the overflow is reported."""
    from sumjudge.llm.errors import PromptTooLongError

    def verbose(req):
        stance = own_stance(req)
        label = STANCE[stance] if stance else own_label(req)
        return arg(label, " ".join(["point"] * 600))

    def backend():
        return ScriptedBackend(context_length=3000).add(
            lambda r: "Evaluator agents have had rounds" in prompt(r), answer(1)).add(is_adjudicator, answer(0)).add(
            is_agent, verbose)

    be = backend()
    cfg = dict(rounds=1, max_new_tokens=200, truncate="truncate")
    j = run_sync(ambiguity_debate(EX, LLM(be, cache=NullCache()), AmbiguityDebateConfig(**cfg)))
    kept = 600 - j.details["argument_words_cut"] // 4
    assert 0 < kept < 600 and j.scores["arguments"] == 1
    shown = max(re.findall(r"<arguments>(.*?)</arguments>", prompt(be.requests[-1]), re.S), key=len)
    assert [len(x.split(":", 1)[1].split()) for x in shown.strip().splitlines() if x.strip()] == [kept] * 4
    assert len(prompt(be.requests[-1]).split()) + 200 <= 3000
    with pytest.raises(PromptTooLongError):
        run_sync(ambiguity_debate(EX, LLM(backend(), cache=NullCache()), AmbiguityDebateConfig(**{**cfg, "truncate": "error"})))
