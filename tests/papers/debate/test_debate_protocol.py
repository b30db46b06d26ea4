"""DEBATE and G-Eval protocols, pinned down with the *scripted* backend (a rule-driven test double, not a model)."""

import pytest

from sumjudge.data.records import RatedExample
from sumjudge.judges.settings import make_config
from sumjudge.llm import ConfigError, NullCache, OptionScoringError, run_sync
from sumjudge.llm.engine import LLM
from sumjudge.llm.scripted import ScriptedBackend
from sumjudge.papers.debate.protocol import CRITICS, says_no_issue
from sumjudge.prompts import load as load_template
from sumjudge.run.methods import get_method

EX = RatedExample(id="d1|m1", dataset="summeval", group_id="d1", source="The council voted 5 to 2 on Monday.",
                  output="The council voted.", scores={"coherence": 4.0, "consistency": 5.0, "fluency": 5.0,
                                                       "relevance": 3.0})
SCORER = load_template("debate/g1_scorer").body
TIE = load_template("debate/g1_tie_breaker").body


def role(req) -> str:
    system = req.messages[0]["content"]
    if system == SCORER:
        return "scorer"
    if system == TIE:
        return "tie-breaker"
    return "critic"


def is_(name):
    return lambda req: role(req) == name


def run(backend, method="debate", example=EX, **cfg):
    llm = LLM(backend, cache=NullCache())
    spec = get_method(method)
    return run_sync(spec.judge(example, llm, make_config(spec.config_cls, {"aspects": "coherence", **cfg}))), backend


def rescoring_scorer():
    """Scores 2 first, then one more per rescore (so the final score tells how many rescores happened)."""
    def reply(req):
        rescore = sum(m["role"] == "assistant" for m in req.messages)
        return f"Step by step ... Score: {min(5, 2 + rescore)}"
    return reply


@pytest.mark.parametrize("feedback", ["NO ISSUE.", "NO ISSUES", "I see NO_ISSUES here", "NO_ISSUE"])
def test_critic_saying_no_issue_stops_the_debate_with_the_scorers_latest_score(feedback):
    be = ScriptedBackend().add(is_("scorer"), rescoring_scorer()).add(is_("critic"), feedback)
    j, be = run(be)
    d = j.details["aspects"]["coherence"]
    assert [role(r) for r in be.requests] == ["scorer", "critic"]
    assert d["stopped"] == "no_issue" and d["iterations"] == 1 and j.scores == {"coherence": 2.0} and j.score == 2.0
    assert d["final_source"] == "scorer" and d["initial_score"] == 2.0


def test_no_issue_match_is_the_termination_string_not_prose():
    assert says_no_issue("NO ISSUE") and says_no_issue("Critic: NO_ISSUES.") and says_no_issue("NO ISSUES")
    assert not says_no_issue("there is no issue with the score") and not says_no_issue("NO ISSUED")


@pytest.mark.parametrize("n", [1, 3, 5])
def test_iteration_cap_n_reviews_and_n_rescores_final_is_the_last_rescore(n):
    be = ScriptedBackend().add(is_("scorer"), rescoring_scorer()).add(is_("critic"), "Too generous; criticise.")
    j, be = run(be, iterations=n)
    d = j.details["aspects"]["coherence"]
    roles = [role(r) for r in be.requests]
    assert roles == ["scorer"] + ["critic", "scorer"] * n
    assert d["stopped"] == "cap" and d["iterations"] == n and j.scores["coherence"] == min(5.0, 2.0 + n)
    # the Commander relays: the Scorer's k-th rescore sees all previous feedback, the Critic its own previous turns
    last_scorer = [r for r in be.requests if role(r) == "scorer"][-1]
    assert [m["role"] for m in last_scorer.messages] == ["system", "user"] + ["assistant", "user"] * n
    assert "The Critic's feedback on your score" in last_scorer.messages[-1]["content"]
    critic_reqs = [r for r in be.requests if role(r) == "critic"]
    assert "The Scorer was given this task" in critic_reqs[0].messages[1]["content"]
    assert EX.source in critic_reqs[0].messages[1]["content"]
    # the Scorer's answer is quoted and the Commander's message closes with its request (not on the answer)
    first = critic_reqs[0].messages[1]["content"]
    assert "<answer>" in first and first.rstrip().endswith("validate the Scorer's score and give your feedback.")
    if n > 1:
        assert critic_reqs[1].messages[2] == {"role": "assistant", "content": "Too generous; criticise."}
        assert "The Scorer's revised answer" in critic_reqs[1].messages[3]["content"]
        assert critic_reqs[1].messages[3]["content"].rstrip().endswith("validate the revised score and give your feedback.")


def test_tie_breaker_decides_only_when_the_critic_never_says_no_issue():
    be = (ScriptedBackend().add(is_("scorer"), rescoring_scorer()).add(is_("critic"), "Wrong.")
          .add(is_("tie-breaker"), "Siding with the Critic. Score: 1"))
    j, be = run(be, iterations=2, tie_breaker=True)
    d = j.details["aspects"]["coherence"]
    tb = be.requests[-1]
    assert role(tb) == "tie-breaker" and d["final_source"] == "tie-breaker" and j.scores["coherence"] == 1.0
    log = tb.messages[-1]["content"]
    assert "Debate Log of Other Agents" in log and log.count("Scorer: ") == 3 and log.count("Critic: Wrong.") == 2
    be2 = ScriptedBackend().add(is_("scorer"), rescoring_scorer()).add(is_("critic"), "NO ISSUE")
    j2, be2 = run(be2, iterations=2, tie_breaker=True)
    assert "tie-breaker" not in [role(r) for r in be2.requests] and j2.scores["coherence"] == 2.0


@pytest.mark.parametrize("critic,prompt_type,template", [
    ("strictly-negative", "original", "debate/s2_devils_advocate"),
    ("strictly-negative", "sophisticated", "debate/appc_sophisticated_devils_advocate"),
    ("moderately-negative", "original", "debate/g1_critic_moderate_negative"),
    ("weakly-negative", "original", "debate/g1_critic_weakly_negative"),
    ("plain", "original", "debate/g1_critic_plain")])
def test_critic_persona_selects_the_papers_system_message(critic, prompt_type, template):
    be = ScriptedBackend().add(is_("scorer"), "Score: 3").add(is_("critic"), "NO_ISSUES")
    _, be = run(be, critic=critic, prompt_type=prompt_type, critic_stop="paper")
    assert be.requests[1].messages[0] == {"role": "system", "content": load_template(template).body}
    assert CRITICS[critic][prompt_type] == template
    _, be = run(ScriptedBackend(rules=be.rules), critic=critic, prompt_type=prompt_type)  # critic_stop=instructed
    told = load_template(template).body
    if template == "debate/s2_devils_advocate":  # the only prompt that never says how to end the debate
        told += " " + load_template("debate/g1_no_issues_instruction").body
    assert be.requests[1].messages[0]["content"] == told


def test_multiagent_is_debate_with_the_plain_critic_and_bad_personas_fail_before_any_call():
    be = ScriptedBackend().add(is_("scorer"), "Score: 3").add(is_("critic"), "NO_ISSUES")
    _, be = run(be, method="multiagent")
    assert be.requests[1].messages[0]["content"] == load_template("debate/g1_critic_plain").body
    be = ScriptedBackend()
    with pytest.raises(ConfigError):
        run(be, critic="plain", prompt_type="sophisticated")
    with pytest.raises(ConfigError):
        run(be, critic="angry")
    assert be.requests == []


def test_aspects_and_examples_reach_the_backend_together():
    be = ScriptedBackend().add(is_("scorer"), "Score: 3").add(is_("critic"), "NO ISSUE")
    llm = LLM(be, cache=NullCache())
    spec = get_method("debate")
    cfg = make_config(spec.config_cls, {"aspects": "coherence,fluency,relevance"})
    ex2 = RatedExample(id="d1|m2", dataset="summeval", group_id="d1", source=EX.source, output="Votes.",
                       scores=EX.scores)
    import asyncio

    async def both():
        return await asyncio.gather(spec.judge(EX, llm, cfg), spec.judge(ex2, llm, cfg))

    js = run_sync(both())
    assert be.batches == [6, 6]  # round 1: every Scorer at once; round 2: every Critic at once
    assert all(set(j.scores) == {"coherence", "fluency", "relevance"} for j in js)
    fluency = [r for r in be.requests if "Fluency (1-5)" in r.messages[1]["content"]]  # DEBATE's fluency scale
    assert fluency and all("Score: <a number from 1 to 5>" in r.messages[1]["content"] for r in fluency[:1])
    assert js[0].details["aspects"]["fluency"]["scale"] == [1, 5]
    assert js[0].details["aspects"]["fluency"]["template"] == "debate/g2_format_summeval_fluency_1to5"


def test_unreadable_final_score_is_counted_not_guessed_unless_option_scores_is_asked_for():
    be = ScriptedBackend().add(is_("scorer"), "I cannot decide.").add(is_("critic"), "NO ISSUE")
    j, _ = run(be)
    assert j.scores == {"coherence": None} and not j.parsed and j.details["aspects"]["coherence"]["final_source"] == "unparsed"
    seen = []

    def opts(req):
        seen.append(req)
        return {"1": 0.1, "2": 0.1, "3": 0.1, "4": 0.6, "5": 0.1}

    be = ScriptedBackend(options=opts).add(is_("scorer"), "I cannot decide.").add(is_("critic"), "NO ISSUE")
    j, _ = run(be, fallback="option_scores")
    assert j.scores == {"coherence": 4.0} and j.details["aspects"]["coherence"]["final_source"] == "option_scores (scorer)"
    assert seen[0].prefix == "I cannot decide.\nScore: " and seen[0].messages[-1]["role"] == "user"
    # an unreadable Tie-breaker is the final answer's agent too: its own answer is scored, not the Scorer's
    be = (ScriptedBackend(options=opts).add(is_("scorer"), "Score: 2").add(is_("critic"), "Wrong.")
          .add(is_("tie-breaker"), "Hmm."))
    j, _ = run(be, iterations=1, tie_breaker=True, fallback="option_scores")
    assert j.details["aspects"]["coherence"]["final_source"] == "option_scores (tie-breaker)" and seen[-1].prefix == "Hmm.\nScore: "
    assert seen[-1].messages[0]["content"] == TIE
    j, _ = run(ScriptedBackend().add(is_("scorer"), "Score: 2").add(is_("critic"), "Wrong.").add(is_("tie-breaker"), "Hmm."),
               iterations=1, tie_breaker=True)
    assert j.scores == {"coherence": None}  # not silently the Scorer's 2


def test_geval_probability_weighted_score_and_sampling_variant():
    be = ScriptedBackend(options=lambda r: {o: (0.5 if o in ("4", "5") else 0.0) for o in r.options})
    j, be = run(be, method="g-eval")
    assert j.scores == {"coherence": 4.5} and j.details["aspects"]["coherence"]["source"] == "probs"
    replies = iter(["3", " 4", "Coherence: 5", "no idea"])
    be = ScriptedBackend().add(lambda r: True, lambda r: next(replies))
    j, be = run(be, method="g-eval", mode="samples", samples=4)
    d = j.details["aspects"]["coherence"]
    assert j.scores["coherence"] == 4.0 and d["samples"] == [3.0, 4.0, 5.0, None] and d["unparsed_samples"] == 1
    assert be.batches == [4] and {r.sample_index for r in be.requests} == {0, 1, 2, 3}


def test_geval_auto_mode_samples_when_the_backend_has_no_logprobs():
    def no_logprobs(r):
        raise OptionScoringError("server returned no logprobs")

    be = ScriptedBackend(options=no_logprobs).add(lambda r: True, "2")
    j, _ = run(be, method="g-eval", samples=3)
    d = j.details["aspects"]["coherence"]
    assert d["source"] == "samples" and "no logprobs" in d["probs_unavailable"] and j.scores["coherence"] == 2.0
    with pytest.raises(OptionScoringError):
        run(ScriptedBackend(options=no_logprobs), method="g-eval", mode="probs")


def test_topical_chat_aspects_use_dialogue_fields_and_their_scales():
    ex = RatedExample(id="tc-00|a", dataset="topical-chat", group_id="tc-00", source="A: hi\nB: hello",
                      output="Did you know the UN has an alien ambassador?", context="The UN appointed ...",
                      scores={"groundedness": 1.0})
    be = ScriptedBackend(options=lambda r: {"0": 0.25, "1": 0.75})
    j, be = run(be, method="g-eval", example=ex, aspects="groundedness")
    assert j.scores == {"groundedness": 0.75}
    with pytest.raises(ConfigError):
        run(ScriptedBackend(), method="g-eval", example=ex, aspects="fluency")


def told_to_stop(req) -> bool:
    return "just say NO_ISSUES" in req.messages[0]["content"]


def test_critic_stop_instructed_lets_the_devils_advocate_end_the_debate_and_tables_report_it():
    """A Critic that says NO_ISSUES only when its system message tells it how: the Section 2 prompt as printed
    runs every debate to the cap, the instructed one (default) ends it; the metrics report both facts."""
    from sumjudge.papers.debate.metrics import debate_metrics
    from sumjudge.papers.debate.tables import correlation_rows

    rules = ScriptedBackend().add(is_("scorer"), rescoring_scorer()).add(
        is_("critic"), lambda r: "NO_ISSUES" if told_to_stop(r) else "The score is too high.").rules
    j_paper, _ = run(ScriptedBackend(rules=rules), critic_stop="paper", iterations=3)
    j_told, _ = run(ScriptedBackend(rules=rules), iterations=3)
    assert j_paper.details["aspects"]["coherence"]["stopped"] == "cap" and j_paper.scores["coherence"] == 5.0
    assert j_told.details["aspects"]["coherence"]["stopped"] == "no_issue" and j_told.scores["coherence"] == 2.0
    ex2 = RatedExample(id="d1|m2", dataset="summeval", group_id="d1", source=EX.source, output="x",
                       scores={**EX.scores, "coherence": 2.0})
    m = {"dataset": "summeval", "n_examples": 2, **debate_metrics([EX, ex2], [j_paper, j_told])}
    d = m["aspects"]["coherence"]["debate"]
    assert d["no_issue_share"] == 0.5 and d["mean_iterations"] == 2.0 and d["debates"] == 2
    row = next(r for r in correlation_rows("DEBATE", m, experiment="t", model="m") if r["aspect"] == "coherence")
    assert row["no_issue_pct"] == 50.0 and row["mean_reviews"] == 2.0 and row["scale"] == "1-5"


def test_an_unreadable_score_is_asked_again_at_temperature_zero_with_a_format_reminder():
    def scorer(req):
        if "State your score on a line of its own" in req.messages[-1]["content"]:
            return "Having reconsidered: Score: 4"
        return "The summary is quite coherent."

    be = ScriptedBackend().add(is_("scorer"), scorer).add(is_("critic"), "NO ISSUE")
    j, be = run(be)
    first, again = be.requests[0], be.requests[1]
    assert again.temperature == 0.0 == first.temperature and again.seed == first.seed
    assert again.tag.endswith("#remind1") and again.messages[:-1] == first.messages[:-1]
    assert again.messages[-1]["content"].startswith(first.messages[-1]["content"])
    assert again.messages[-1]["content"].endswith('"Score: X", where X is a number from 1 to 5.')
    d = j.details["aspects"]["coherence"]
    assert j.scores["coherence"] == 4.0 and d["turns"][0]["reminded"] and d["turns"][0]["text"].startswith("Having")
    critic_saw = be.requests[2].messages[1]["content"]
    assert "Having reconsidered: Score: 4" in critic_saw  # the reminded answer is the one the debate goes on with


def test_an_unreadable_final_score_reports_an_earlier_readable_one_without_using_it():
    from sumjudge.papers.debate.metrics import debate_metrics

    be = ScriptedBackend().add(lambda r: is_("scorer")(r) and not any(m["role"] == "assistant" for m in r.messages),
                               "Score: 3").add(is_("scorer"), "Hard to say.").add(is_("critic"), "Too high.")
    j, _ = run(be, iterations=1)
    d = j.details["aspects"]["coherence"]
    assert j.scores["coherence"] is None and d["final_source"] == "unparsed" and d["earlier_score"] == 3.0
    m = debate_metrics([EX], [j])["aspects"]["coherence"]["debate"]
    assert m["final_unreadable"] == 1 and m["final_unreadable_with_earlier_score"] == 1


@pytest.mark.parametrize("protocol,temperature,tokens,role_name,mean,unparsed", [
    ("paper", 1.0, 16, "user", 4.0, 1),          # unreadable left out: (3 + 4 + 5) / 3
    ("repository", 2.0, 5, "system", 3.0, 1)])   # unreadable scored 0 and kept: (3 + 4 + 5 + 0) / 4
def test_geval_sampling_protocols(protocol, temperature, tokens, role_name, mean, unparsed):
    replies = iter(["3", " 4", "Coherence: 5", "no idea"])
    be = ScriptedBackend().add(lambda r: True, lambda r: next(replies))
    j, be = run(be, method="g-eval", mode="samples", samples=4, protocol=protocol)
    d = j.details["aspects"]["coherence"]
    assert j.scores["coherence"] == mean and d["unparsed_samples"] == unparsed and d["protocol"] == protocol
    r = be.requests[0]
    assert (r.temperature, r.max_new_tokens, r.messages[0]["role"], len(r.messages)) == (temperature, tokens, role_name, 1)
    assert d["temperature"] == temperature and d["message_role"] == role_name


def test_geval_probabilities_below_the_coverage_floor_are_not_a_score():
    low = ScriptedBackend(options=lambda r: ({o: (1.0 if o == "5" else 0.0) for o in r.options}, 1.45e-05))
    j, _ = run(low, method="g-eval", mode="probs")
    d = j.details["aspects"]["coherence"]
    assert j.scores["coherence"] is None and d["low_coverage"] and d["coverage"] == 1.45e-05 and d["source"] == "unparsed"
    low.add(lambda r: True, "Coherence: 2")
    j, _ = run(low, method="g-eval", samples=2)  # auto: sample instead
    d = j.details["aspects"]["coherence"]
    assert j.scores["coherence"] == 2.0 and d["source"] == "samples" and d["low_coverage"]
    ok = ScriptedBackend(options=lambda r: ({o: (1.0 if o == "5" else 0.0) for o in r.options}, 0.6))
    j, _ = run(ok, method="g-eval", mode="probs")
    assert j.scores["coherence"] == 5.0
    from sumjudge.run.metrics import rated_metrics

    cov = rated_metrics([EX], [j])["aspects"]["coherence"]["coverage"]
    assert cov["mean"] == 0.6 and cov["below_floor"] == 0


def test_table2_compares_only_like_scales():
    from sumjudge.papers.debate.tables import distribution_rows

    def metrics(lo, hi):
        dist = {str(p): 100 / (hi - lo + 1) for p in range(lo, hi + 1)}
        return {"aspects": {"fluency": {"scale": [lo, hi], "distribution": {"human": dist, "method": dist}}}}

    rows = [r for r in distribution_rows(metrics(1, 3), "summeval") if r["who"] == "DEBATE"]
    assert all(r["paper"] is None and "not compared" in r["note"] for r in rows)
    rows = [r for r in distribution_rows(metrics(1, 5), "summeval") if r["who"] == "DEBATE"]
    assert [r["paper"] for r in rows] == [7.71, 2.32, 0.51, 1.23, 88.22] and all(r["note"] is None for r in rows)
    assert all(r["ci"] is None and r["n"] is None for r in rows)  # no count of scored texts, no interval
    m = metrics(1, 5)
    m["aspects"]["fluency"].update(n=40, n_human=50)
    rows = distribution_rows(m, "summeval")
    human = [r for r in rows if r["who"] == "human"]
    debate = [r for r in rows if r["who"] == "DEBATE"]
    assert {r["n"] for r in human} == {50} and {r["n"] for r in debate} == {40}
    low, high = debate[0]["ci"]  # 20% of 40 texts: Wilson's interval, asymmetric around the share
    assert low == pytest.approx(10.5, abs=0.1) and high == pytest.approx(34.8, abs=0.1)
    assert human[0]["ci"][1] - human[0]["ci"][0] < high - low  # more texts, a narrower interval


def test_debate_adapted_to_binary_faithfulness_debates_consistency_and_thresholds_the_final_score():
    from sumjudge.data.records import FaithExample

    doc, summary = "The council voted 5 to 2 on Monday.", "The council voted on Tuesday."
    ex = FaithExample(id="t1", dataset="tofueval-meetingbank", document=doc, summary=summary, label=0)
    be = ScriptedBackend().add(is_("scorer"), rescoring_scorer()).add(is_("critic"), "Too generous.")
    llm = LLM(be, cache=NullCache())
    spec = get_method("debate-consistency")
    assert spec.kind == "faithfulness" and spec.scores
    j = run_sync(spec.judge(ex, llm, make_config(spec.config_cls, {"iterations": 2})))
    d = j.details["aspects"]["consistency"]
    # Scorer 2, Critic, Scorer 3, Critic, Scorer 4: the final score 4 reaches the default threshold 4
    assert [role(r) for r in be.requests] == ["scorer", "critic", "scorer", "critic", "scorer"]
    assert (j.score, j.label, d["stopped"]) == (4.0, 1, "cap")
    assert summary in be.requests[0].messages[1]["content"] and doc in be.requests[0].messages[1]["content"]
    j2 = run_sync(spec.judge(ex, LLM(ScriptedBackend().add(is_("scorer"), rescoring_scorer()).add(
        is_("critic"), "Too generous."), cache=NullCache()), make_config(spec.config_cls, {"iterations": 1})))
    assert (j2.score, j2.label) == (3.0, 0)  # below the threshold: unfaithful


def test_the_average_row_of_a_rated_run_carries_a_bootstrap_interval():
    """Figure 2 plots the average over aspects: its row gets an interval like every aspect's (a bootstrap over
    the source documents, every aspect resampled with the same documents)."""
    import numpy as np

    from sumjudge.judges.base import Judgement
    from sumjudge.papers.debate.tables import correlation_rows
    from sumjudge.run.metrics import rated_metrics

    rng = np.random.default_rng(0)
    exs, js = [], []
    for d in range(6):
        for k in range(8):
            human = {"coherence": float(rng.integers(1, 6)), "fluency": float(rng.integers(1, 4))}
            ex = RatedExample(id=f"d{d}|m{k}", dataset="summeval", group_id=f"d{d}", source="s", output="o",
                              scores={**EX.scores, **human})
            exs.append(ex)
            js.append(Judgement(example_id=ex.id, scores={a: v + float(rng.normal(0, 1)) for a, v in human.items()}))
    m = {"dataset": "summeval", "n_examples": len(exs), **rated_metrics(exs, js)}
    for corr in ("spearman", "kendall"):
        low, high = m["average_ci"][corr]
        assert low < m["average"][corr] < high
    avg = [r for r in correlation_rows("DEBATE", m, experiment="t", model="m") if r["aspect"] == "average"]
    assert len(avg) == 2 and all(r["ci"] is not None and r["ci"][0] < r["reproduced"] < r["ci"][1] for r in avg)
