"""MADISSE (arXiv 2502.08514): evaluator agents with imposed initial stances debate, adjudicators decide.

One session (Figure 1): (1) stance initialisation: ``faithful_agents`` agents start believing "The
summary is faithful", ``unfaithful_agents`` "The summary is unfaithful" (``init=none``: no stances);
(2) up to ``rounds`` rounds of debate (Table 28 prompt in round 1 with the stances as chat history,
Table 29 afterwards with the previous rounds' arguments, each round shuffled); the debate stops as
soon as every agent gives the same label (Appendix A.1.2); (3) otherwise ``adjudicators`` agents
(Table 30) each read the final arguments in their own random order; majority vote, explanation drawn
at random from the majority. ``sessions`` > 1 runs independent sessions and aggregates by *debates
vote* (majority of session labels) and *agents vote* (majority of all agents' final labels); both
come out of one run (``Judgement.scores``); ``label`` is the debates vote.

Ties (documented rule): a tied adjudicator vote is decided by the majority of the agents' final
labels; a tie there, or an even split of sessions/agents, falls to 0 (unfaithful, the "contains an
error" side the papers treat as positive). Every random choice (stance order, shuffles, adjudicator
orders, explanation draw) comes from ``random.Random`` seeded by (seed, example id, session) and is
recorded in the judgement.

Prefix reuse: everything before the chat history (instructions, guidelines, document, summary) is the
same for all agents of an example, so shared-prefix prefill (hf) and prefix caching (vLLM) reuse it.
"""

from __future__ import annotations

import asyncio
import random
import re
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..data.records import FaithExample
from ..llm import ConfigError
from ..llm.engine import LLM
from ..llm.parsing import ParseError, xml_tag
from ..prompts import load as load_template
from ..prompts import variant
from .base import Judgement, MethodSpec, fit_fields, register, request
from .baselines import label_with_fallback

STANCE_TEXT = {"faithful": "The summary is faithful.", "unfaithful": "The summary is unfaithful."}
UNFAITHFUL = 0


@dataclass
class MadisseConfig:
    init: str = "stance"  # stance | none (MADISSE wo initialization)
    faithful_agents: int = 2
    unfaithful_agents: int = 2
    rounds: int = 3
    adjudicators: int = 3
    sessions: int = 1
    intervention_after: int = 0  # 0 = off; N: from round N+1 on, agents are asked to be more open (A.1.2)
    guidelines: str = ""  # a guidelines file (e.g. learned ones); empty = the paper's 13 guidelines
    guideline_list: tuple[str, ...] | None = None  # inline guidelines (learning phase; may be empty): win over the file
    max_new_tokens: int = 1024
    history_tokens: int | None = None  # context reserved for the chat history when fitting the document
    # (None: a third of the model context). A round whose history still overflows drops its oldest rounds
    # (recorded as history_rounds_dropped); the paper does not say what it did.
    temperature: float = 0.0
    seed: int = 0
    truncate: str = "error"
    fallback: str = "none"  # none | option_scores, for an agent's or adjudicator's unreadable label
    learning: bool = False  # guideline learning phase: agents also state the guidelines they used
    doc_first: bool = True  # the paper's <doc> block first (same wording), so all prompts share a prefix


@dataclass
class Turn:
    agent: int  # 1-based
    round: int
    label: int | None
    explanation: str
    source: str  # parsed | option_scores | unparsed
    guidelines_used: list[str] = field(default_factory=list)  # learning phase only


@dataclass
class Session:
    index: int
    stances: list[str | None]
    rounds: list[list[Turn]] = field(default_factory=list)
    consensus_round: int | None = None
    adjudication: list[dict] = field(default_factory=list)
    label: int | None = None
    explanation: str = ""
    label_source: str = ""  # consensus | adjudication | agents | unparsed
    history_rounds_dropped: int = 0

    @property
    def final_turns(self) -> list[Turn]:
        return self.rounds[-1] if self.rounds else []

    def changed_stance(self) -> bool:
        """Did any agent end with a label other than its imposed stance? (debate disagreement, Section 4.3)"""
        want = {"faithful": 1, "unfaithful": 0}
        return any(s is not None and t.label != want[s] for s, t in zip(self.stances, self.final_turns))


def guidelines_text(config: MadisseConfig) -> str:
    if config.guideline_list is not None:
        return "\n\n".join(f"{i}. {g}" for i, g in enumerate(config.guideline_list, start=1))
    if config.guidelines:
        return Path(config.guidelines).read_text(encoding="utf-8").strip()
    return load_template("madisse/table28_guidelines").body


def majority_with_rule(labels: list[int | None], *fallbacks: int | None) -> int | None:
    """Majority of readable labels; a tie goes to the first readable fallback, then to 0 (unfaithful)."""
    counts = Counter(x for x in labels if x is not None)
    if not counts:
        return next((f for f in fallbacks if f is not None), None)
    top = counts.most_common()
    if len(top) == 1 or top[0][1] > top[1][1]:
        return top[0][0]
    return next((f for f in fallbacks if f is not None), UNFAITHFUL)


def learning_text(on: bool) -> str:
    return "\n\n" + load_template("madisse/a11_guideline_request").body if on else ""


def history_reserve(llm: LLM, config: MadisseConfig) -> int:
    if config.history_tokens is not None:
        return config.history_tokens
    ctx = llm.context_length
    if not ctx:
        return 0
    # Later rounds and the adjudicators (even after a single round) see the agents' arguments: keep room for
    # at least one round of them (about 24 tokens of markup per argument), for all shown rounds where a third
    # of the context allows (fit_history drops the oldest rounds when they do not fit).
    one_round = (config.faithful_agents + config.unfaithful_agents) * (config.max_new_tokens + 24)
    return max(one_round, min(one_round * max(1, config.rounds - 1), ctx // 3))


def _argument(t: Turn, me: int) -> str:
    who = f"You (Agent {t.agent})" if t.agent == me else f"Agent {t.agent}"
    if t.label is None:
        return f"{who}: (no readable label) {t.explanation}".rstrip()
    return f"{who}: <label>{t.label}</label> <explanation>{t.explanation}</explanation>"


def stance_history(stances: list[str | None], me: int) -> str:
    if all(s is None for s in stances):
        return ""
    return " ".join(f"{'You (Agent %d)' % i if i == me else 'Agent %d' % i}: {STANCE_TEXT[s]}"
                    for i, s in enumerate(stances, start=1))


def fit_history(llm: LLM, tmpl: str, fields: dict, shown: list[list[Turn]], me: int, intervention: str,
                learning: str, max_new_tokens: int) -> tuple[str, int]:
    """The chat history for agent ``me``: every previous round, or, if that overflows the context, the
    latest rounds that fit (the number of dropped rounds is returned)."""
    ctx = llm.context_length
    for drop in range(len(shown)):
        hist = " ".join(_argument(t, me) for rnd in shown[drop:] for t in rnd)
        if ctx is None:
            return hist, 0
        text = load_template(tmpl).render(**fields, chat_history=hist, intervention=intervention, learning=learning)
        if llm.prompt_tokens([{"role": "user", "content": text}]) + max_new_tokens <= ctx:
            return hist, drop
    return hist, len(shown) - 1  # the latest round alone; the backend reports an overflow if it remains


async def _ask(llm: LLM, prompt: str, config: MadisseConfig, tag: str, seed: int):
    req = request(prompt, max_new_tokens=config.max_new_tokens, temperature=config.temperature, seed=seed, tag=tag)
    label, expl, source, details = await label_with_fallback(llm, req, config.fallback)
    if source == "unparsed":
        expl = details.get("raw", "")[:500]
    return label, expl, source, stated_guidelines(details.get("raw", "")) if config.learning else []


def stated_guidelines(text: str) -> list[str]:
    """The lines inside <guidelines_used> (numbering and bullets removed); [] when absent."""
    try:
        body = xml_tag(text, "guidelines_used")
    except ParseError:
        return []
    lines = [re.sub(r"^\s*(?:\d+[.)]|[-*])\s*", "", line).strip() for line in body.splitlines()]
    return [x for x in lines if len(x.split()) >= 3]


async def run_session(example: FaithExample, llm: LLM, config: MadisseConfig, index: int, fields: dict) -> Session:
    rng = random.Random(f"{config.seed}|{example.id}|{index}")
    n = config.faithful_agents + config.unfaithful_agents
    if config.init == "stance":
        stances: list[str | None] = ["faithful"] * config.faithful_agents + ["unfaithful"] * config.unfaithful_agents
        rng.shuffle(stances)
    elif config.init == "none":
        stances = [None] * n
    else:
        raise ConfigError(f"init must be 'stance' or 'none', got {config.init!r}")
    s = Session(index=index, stances=stances)
    learning = learning_text(config.learning)
    shown: list[list[Turn]] = []  # each previous round, in the shuffled order the agents saw it
    for r in range(1, config.rounds + 1):
        intervention = ""
        if config.intervention_after and r - 1 >= config.intervention_after:
            intervention = load_template("madisse/a12_intervention").render(rounds=r - 1)
        prompts = []
        for i in range(1, n + 1):
            if r == 1:
                hist = stance_history(stances, i)
                tmpl = variant("madisse/table28_evaluator_round1", config.doc_first)
            else:
                tmpl = variant("madisse/table29_evaluator", config.doc_first)
                hist, dropped = fit_history(llm, tmpl, fields, shown, i, intervention, learning,
                                            config.max_new_tokens)
                s.history_rounds_dropped = max(s.history_rounds_dropped, dropped)
            prompts.append(load_template(tmpl).render(**fields, chat_history=hist, intervention=intervention,
                                                      learning=learning))
        answers = await asyncio.gather(*(
            _ask(llm, p, config, f"{example.id}/s{index}/r{r}/agent{i}", config.seed + 1000 * index + i)
            for i, p in enumerate(prompts, start=1)))
        turns = [Turn(agent=i, round=r, label=a[0], explanation=a[1], source=a[2], guidelines_used=a[3])
                 for i, a in enumerate(answers, 1)]
        s.rounds.append(turns)
        labels = [t.label for t in turns]
        if None not in labels and len(set(labels)) == 1:
            s.consensus_round, s.label, s.label_source = r, labels[0], "consensus"
            s.explanation = rng.choice([t.explanation for t in turns])
            return s
        order = list(turns)
        rng.shuffle(order)
        shown.append(order)
    await adjudicate(example, llm, config, s, fields, rng)
    return s


async def adjudicate(example: FaithExample, llm: LLM, config: MadisseConfig, s: Session, fields: dict,
                     rng: random.Random) -> None:
    final = s.final_turns
    orders = [rng.sample(range(len(final)), len(final)) for _ in range(config.adjudicators)]
    tmpl = load_template(variant("madisse/table30_adjudicator", config.doc_first))
    answers = await asyncio.gather(*(
        _ask(llm, tmpl.render(**fields, chat_history=" ".join(_argument(final[j], me=0) for j in order)), config,
             f"{example.id}/s{s.index}/adjudicator{k}", config.seed + 1000 * s.index + 100 + k)
        for k, order in enumerate(orders, start=1)))
    s.adjudication = [{"adjudicator": k, "order": [final[j].agent for j in order], "label": a[0],
                       "explanation": a[1], "source": a[2]} for k, (order, a) in enumerate(zip(orders, answers), 1)]
    agents_majority = majority_with_rule([t.label for t in final], None)
    s.label = majority_with_rule([a[0] for a in answers], agents_majority)
    readable = [a for a in answers if a[0] is not None]
    s.label_source = "adjudication" if readable else ("agents" if s.label is not None else "unparsed")
    pool = [a[1] for a in readable if a[0] == s.label] or [t.explanation for t in final if t.label == s.label]
    s.explanation = rng.choice(pool) if pool else ""


async def madisse(example: FaithExample, llm: LLM, config: MadisseConfig) -> Judgement:
    # Budget the document on the longest prompt an agent sees: the last round's, with the chat history.
    fields, fit = fit_fields(llm, variant("madisse/table29_evaluator", config.doc_first),
                             {"doc": example.document, "summary": example.summary, "guidelines": guidelines_text(config),
                              "chat_history": "", "intervention": "", "learning": learning_text(config.learning)},
                             max_new_tokens=config.max_new_tokens + history_reserve(llm, config), policy=config.truncate,
                             tag=example.id)
    if config.init == "stance":  # round 1 shows the imposed stances instead: its prompt must fit as well
        stances = ["faithful"] * config.faithful_agents + ["unfaithful"] * config.unfaithful_agents
        fields, fit1 = fit_fields(llm, variant("madisse/table28_evaluator_round1", config.doc_first),
                                  {**fields, "chat_history": stance_history(stances, 1)},
                                  max_new_tokens=config.max_new_tokens, policy=config.truncate, tag=example.id)
        if fit1:
            fit = {"truncated_words": fit.get("truncated_words", 0) + fit1["truncated_words"]}
    fields = {k: fields[k] for k in ("doc", "summary", "guidelines")}
    sessions = await asyncio.gather(*(run_session(example, llm, config, m, fields) for m in range(config.sessions)))
    all_final = [t.label for s in sessions for t in s.final_turns]
    session_labels = [s.label for s in sessions]
    agents_vote = majority_with_rule(all_final, None)
    debates_vote = majority_with_rule(session_labels, agents_vote)
    label = sessions[0].label if config.sessions == 1 else debates_vote
    source = sessions[0].label_source if config.sessions == 1 else "debates_vote"
    expl = next((s.explanation for s in sessions if s.label == label), "")
    scores = {"agents_vote": agents_vote, "debates_vote": debates_vote} if config.sessions > 1 else {}
    return Judgement(example_id=example.id, label=label, explanation=expl, parsed=label is not None,
                     label_source=source if label is not None else "unparsed", scores=scores,
                     details={"sessions": [asdict(s) for s in sessions],
                              "rounds_used": [len(s.rounds) for s in sessions],
                              "consensus": [s.consensus_round is not None for s in sessions],
                              "no_agent_changed_stance": [not s.changed_stance() for s in sessions], **fit})


register(MethodSpec(name="madisse", paper="madisse", kind="faithfulness", config_cls=MadisseConfig, judge=madisse,
                    description="MADISSE: stance-initialised multi-agent debate with adjudicators (init=none: "
                                "without initialization; sessions=m: simultaneous debates, agents/debates vote)"))
