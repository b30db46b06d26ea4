"""MADISSE (arXiv 2502.08514): evaluator agents with imposed initial stances debate, adjudicators decide.

Defaults are what produced the paper's numbers: the authors' released code (github.com/amazon-science/madisse
@ ddb8276, ``faithfulness_evaluation.py``), where the paper is silent or prints a glitch. The README's
"MADISSE: what the paper leaves open" lists every choice.

One session (Figure 1): (1) stance initialisation: ``faithful_agents`` agents start believing the summary
faithful, ``unfaithful_agents`` unfaithful (``init=none``: no stances); an agent whose first answer
contradicts its stance is asked again (``stance_retries``, once in the code). (2) up to ``rounds`` rounds of
debate (the first with the stances as chat history, later ones with every previous round's arguments,
each agent seeing each round in its own random order); from round ``intervention_after + 1`` on the
agents get the code's mediator text; the debate stops as soon as every agent gives the same label. An
agent whose label cannot be read keeps its previous one (its stance in round 1). (3) a tied session
(``adjudicate=tie``, the code; ``disagreement``: any disagreement, as §3.3 reads) goes to adjudicators,
each reading the final arguments in its own distinct order; majority vote, a tie of readable votes
going to "faithful" (the code's rule), the explanation drawn from the majority. An untied session
takes its agents' majority.

``sessions`` > 1 runs simultaneous debates: the *agents vote* (majority of every session's final
labels; a tie goes to ``adjudicators`` over all sessions' final arguments, as the code does) is the
label, as in the code; the *debates vote* (majority of the session labels; a tie falls back to the
agents vote) comes out of the same run (``Judgement.scores``). With several sessions a tied session is
decided by ``session_adjudicators`` (1 in the code). With one session the agents vote is the session's
label, so a tie there is decided by ``adjudicators``.

Every call samples (temperature 1.0, top_p 0.9, as ``llama_prediction``) with a seed derived from (run
seed, example, session, round, agent, attempt), recorded per turn: reruns are identical, and no two
agents, rounds or sessions share a cache entry. Every other random choice (stance order, shuffles,
adjudicator orders, explanation draws) comes from ``random.Random`` seeded by (seed, example, session).

``prompts=code`` (default) sends the code's prompts (one evaluator prompt for every round, answers in
``<argument>``/``<label>`` tags, the mediator text, the code's stance wording, history one line per agent);
``prompts=printed`` the paper's Tables 28-30 (glitches fixed, answers in ``<explanation>``/``<label>``).
"""

from __future__ import annotations

import asyncio
import itertools
import random
import re
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

from sumjudge.data.records import FaithExample
from sumjudge.errors import ConfigError
from sumjudge.judges.base import GREEDY_WARNING, Judgement, derive_seed, fit_fields, request, user
from sumjudge.judges.settings import Generation
from sumjudge.llm.engine import Calls
from sumjudge.llm.fitting import fit_to_context
from sumjudge.llm.parsing import ParseError, xml_tag
from sumjudge.papers.madisse.baselines import answer_room, label_with_fallback
from sumjudge.prompts import load as load_template
from sumjudge.prompts import variant
from sumjudge.run.methods import AsPrinted, MethodSpec, register

FAITHFUL, UNFAITHFUL = 1, 0


@dataclass
class MadisseConfig(Generation):
    max_new_tokens: int = 1000  # the code's max_gen_len
    temperature: float = 1.0  # the code samples every call (llama_prediction)
    init: str = "stance"  # stance | none (MADISSE wo initialization)
    faithful_agents: int = 2
    unfaithful_agents: int = 2
    rounds: int = 3  # the code: a first round and num_rounds=2 debate turns
    adjudicators: int = 3
    sessions: int = 1
    session_adjudicators: int = 1  # sessions > 1: adjudicators of a tied session (the code uses one)
    adjudicate: str = "tie"  # tie (the code: only an even split) | disagreement (any, as §3.3 reads)
    intervention_after: int = 2  # the mediator text from round N+1 on (the code: from the third round); 0 = off
    stance_retries: int = 1  # round 1: ask again when the answer contradicts the imposed stance (the code: once)
    prompts: str = "code"  # code (the authors' prompts.py) | printed (the paper's Tables 28-30)
    guidelines: str = ""  # a guidelines file (e.g. learned ones); empty = the paper's 13 guidelines
    guideline_list: tuple[str, ...] | None = None  # inline guidelines (learning phase; may be empty): win over the file
    history_tokens: int | None = None  # context reserved for the chat history when fitting the document
    # (None: a third of the model context). A round whose history still overflows drops its oldest rounds
    # (recorded as history_rounds_dropped); neither the paper nor the code cuts anything (8k context).
    top_p: float = 0.9
    # fallback=option_scores: for an agent's or adjudicator's unreadable label
    # resample (the engine's retries draw a new answer) | follow_up: an answer without a readable label is followed
    # by a turn asking for it (madisse/label_follow_up: a short reply instead of a new argument)
    label_retry: str = "resample"
    learning: bool = False  # guideline learning phase: agents also state the guidelines they used
    doc_first: bool = False  # True: the <doc> block first (same wording), a speed option for prefix caching

    def warnings(self) -> list[str]:
        return [GREEDY_WARNING] if self.temperature == 0 else []

    def check(self) -> None:
        """The guidelines file must be there before any model loads (named by the setting)."""
        if self.guidelines and not Path(self.guidelines).is_file():
            raise ConfigError(f"madisse setting guidelines={self.guidelines!r}: no such file (a guidelines file, "
                              "one guideline per line, e.g. from `sumjudge learn-guidelines`)")


@dataclass
class Turn:
    agent: int  # 1-based
    round: int
    label: int | None  # as read, or carried forward from the agent's previous label (source "carried")
    explanation: str  # the argument (prompts=code) or explanation (printed) the others see
    source: str  # parsed | carried | option_scores | unparsed
    guidelines_used: list[str] = field(default_factory=list)  # learning phase only
    seed: int | None = None
    attempts: int = 1  # round 1: 2 when the agent was asked again for contradicting its stance


@dataclass
class Session:
    index: int
    stances: list[str | None]
    rounds: list[list[Turn]] = field(default_factory=list)
    consensus_round: int | None = None
    adjudication: list[dict] = field(default_factory=list)
    label: int | None = None
    explanation: str = ""
    label_source: str = ""  # consensus | majority | adjudication | unparsed
    history_rounds_dropped: int = 0

    @property
    def final_turns(self) -> list[Turn]:
        return self.rounds[-1] if self.rounds else []

    def changed_stance(self) -> bool:
        """Did any agent end with a label other than its imposed stance? (debate disagreement, Section 4.3)"""
        want = {"faithful": FAITHFUL, "unfaithful": UNFAITHFUL}
        return any(s is not None and t.label != want[s] for s, t in zip(self.stances, self.final_turns))


@dataclass(frozen=True)
class Prompts:
    """The templates and formats of one prompt source (``prompts=code|printed``)."""

    first: str  # the round-1 template
    later: str
    adjudicator: str
    answer_tag: str  # where the agents' reasoning is: argument (code) | explanation (printed)
    separator: str  # between chat-history entries: one line each (code) | a space (printed, as Table 28)
    stances: dict[str, str]
    own_first: bool  # the code lists the agent's own entry first in each history block

    def intervention(self) -> str:
        """The mediator text as the template's slot takes it: inside the code's closing sentence (with its
        leading space), or as a paragraph of its own before the printed closing instruction."""
        text = load_template("madisse/a12_intervention").body
        return text if self.answer_tag == "argument" else text.strip() + "\n\n"

    def entry(self, t: Turn, me: int) -> tuple[str, str]:
        """(speaker, what the others see of this turn)."""
        who = f"You (Agent {t.agent})" if t.agent == me else f"Agent {t.agent}"
        if self.answer_tag == "argument":  # the code shows the argument text only
            return who, t.explanation
        if t.label is None or t.source == "carried":  # a carried label was not stated in this answer
            return who, f"(no readable label) {t.explanation}"
        return who, f"<label>{t.label}</label> <explanation>{t.explanation}</explanation>"

    def argument(self, t: Turn, me: int) -> str:
        who, text = self.entry(t, me)
        return f"{who}: {text}".rstrip()


def madisse_prompts(config: MadisseConfig) -> Prompts:
    code = config.prompts == "code"
    first = variant("madisse/table29_evaluator" if code else "madisse/table28_evaluator_round1", config.doc_first,
                    config.prompts)
    stances = {}
    for line in load_template(variant("madisse/table28_stances", False, config.prompts)).body.splitlines():
        key, _, text = line.partition(":")
        stances[key.strip()] = text.strip()
    return Prompts(first=first, later=variant("madisse/table29_evaluator", config.doc_first, config.prompts),
                   adjudicator=variant("madisse/table30_adjudicator", config.doc_first, config.prompts),
                   answer_tag="argument" if code else "explanation", separator="\n" if code else " ",
                   stances=stances, own_first=code)


def guidelines_text(config: MadisseConfig) -> str:
    if config.guideline_list is not None:
        return "\n\n".join(f"{i}. {g}" for i, g in enumerate(config.guideline_list, start=1))
    if config.guidelines:
        return Path(config.guidelines).read_text(encoding="utf-8").strip()
    return load_template("madisse/table28_guidelines").body


def majority(labels: list[int | None], tie: int | None = None) -> int | None:
    """Majority of the readable labels; ``tie`` on an even split; None when none is readable."""
    counts = Counter(x for x in labels if x is not None)
    if not counts:
        return None
    if counts[FAITHFUL] == counts[UNFAITHFUL]:
        return tie
    return counts.most_common(1)[0][0]


def is_tie(labels: list[int | None]) -> bool:
    counts = Counter(x for x in labels if x is not None)
    return bool(counts) and counts[FAITHFUL] == counts[UNFAITHFUL]


def learning_text(on: bool) -> str:
    return "\n\n" + load_template("madisse/a11_guideline_request").body if on else ""


def history_reserve(llm: Calls, config: MadisseConfig) -> int:
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


def stance_history(p: Prompts, stances: list[str | None], me: int) -> str:
    if all(s is None for s in stances):
        return ""
    entries = [(i, f"{'You (Agent %d)' % i if i == me else 'Agent %d' % i}: {p.stances[s]}")
               for i, s in enumerate(stances, start=1)]
    if p.own_first:
        entries.sort(key=lambda e: e[0] != me)
    return p.separator.join(text for _, text in entries)


def shuffled_blocks(p: Prompts, shown: list[list[Turn]], me: int, rng: random.Random) -> list[list[str]]:
    """Each previous round as agent ``me`` sees it: one entry per agent, in this agent's own random order."""
    blocks = []
    for rnd in shown:
        entries = [p.argument(t, me) for t in sorted(rnd, key=lambda t: (p.own_first and t.agent != me, t.agent))]
        rng.shuffle(entries)
        blocks.append(entries)
    return blocks


async def fit_history(llm: Calls, tmpl: str, fields: dict, p: Prompts, blocks: list[list[str]], intervention: str,
                      learning: str, max_new_tokens: int) -> tuple[str, int]:
    """The chat history: every previous round, or, if that overflows the context, the latest rounds that
    fit (the number of dropped rounds is returned)."""
    def history(kept: int) -> str:
        return p.separator.join(e for block in blocks[len(blocks) - kept:] for e in block)

    def build(kept: int) -> list[dict[str, str]]:
        return user(load_template(tmpl).render(**fields, chat_history=history(kept), intervention=intervention,
                                               learning=learning))

    kept = await fit_to_context(llm, build, len(blocks), max_new_tokens)
    kept = max(1, kept or 0)  # at least the latest round; the backend reports an overflow if it remains
    return history(kept), len(blocks) - kept


@dataclass
class Answer:
    """One agent's or adjudicator's answer: its label (None when unreadable), explanation, where the label came
    from, and the guidelines it says it used (guideline learning)."""

    label: int | None
    explanation: str
    source: str
    guidelines_used: list[str] = field(default_factory=list)


def stated_guidelines(text: str) -> list[str]:
    """The lines inside <guidelines_used> (numbering and bullets removed); [] when absent."""
    try:
        body = xml_tag(text, "guidelines_used")
    except ParseError:
        return []
    lines = [re.sub(r"^\s*(?:\d+[.)]|[-*])\s*", "", line).strip() for line in body.splitlines()]
    return [x for x in lines if len(x.split()) >= 3]


@dataclass
class Debate:
    """What every session of one example shares: the example, the engine, the configuration, the prompts and the
    fields (the document cut once for every prompt)."""

    example: FaithExample
    llm: Calls
    config: MadisseConfig
    prompts: Prompts
    fields: dict

    async def ask(self, prompt: str, answer_tag: str, tag: str, seed: int) -> Answer:
        cfg = self.config
        req = request(prompt, max_new_tokens=cfg.max_new_tokens, temperature=cfg.temperature, top_p=cfg.top_p,
                      seed=seed, tag=tag)
        label, expl, source, details = await label_with_fallback(self.llm, req, cfg.fallback, explanation_tag=answer_tag,
                                                              retry=cfg.label_retry)
        if source == "unparsed" or not expl:
            expl = expl or re.sub(r"<\s*/?\s*label\s*>", " ", details.get("raw", "")).strip()[:2000]
        return Answer(label, expl, source, stated_guidelines(details.get("raw", "")) if cfg.learning else [])

    async def agent_turn(self, session: int, r: int, agent: int, prompt: str, stance: str | None,
                         previous: int | None) -> Turn:
        """One agent's answer in round ``r``: asked again (round 1, ``stance_retries``) while it contradicts the
        imposed stance; an unreadable label keeps the agent's previous one."""
        ex, cfg = self.example, self.config
        want = {"faithful": FAITHFUL, "unfaithful": UNFAITHFUL}.get(stance or "")
        tries = 1 + (cfg.stance_retries if r == 1 and want is not None else 0)
        for attempt in range(tries):
            seed = derive_seed(cfg.seed, ex.id, session, r, agent, attempt)
            tag = f"{ex.id}/s{session}/r{r}/agent{agent}" + (f"#ask{attempt}" if attempt else "")
            ans = await self.ask(prompt, self.prompts.answer_tag, tag, seed)
            if ans.label is None or ans.label == want:
                break
        turn = Turn(agent=agent, round=r, label=ans.label, explanation=ans.explanation, source=ans.source,
                    guidelines_used=ans.guidelines_used, seed=seed, attempts=attempt + 1)
        if ans.label is None and previous is not None:
            turn.label, turn.source = previous, "carried"
        return turn

    def draw_stances(self, rng: random.Random) -> list[str | None]:
        cfg = self.config
        if cfg.init == "stance":
            stances: list[str | None] = ["faithful"] * cfg.faithful_agents + ["unfaithful"] * cfg.unfaithful_agents
            rng.shuffle(stances)
            return stances
        if cfg.init == "none":
            return [None] * (cfg.faithful_agents + cfg.unfaithful_agents)
        raise ConfigError(f"init must be 'stance' or 'none', got {cfg.init!r}")

    async def round_prompts(self, s: Session, r: int, shown: list[list[Turn]], rng: random.Random) -> list[str]:
        """Each agent's prompt in round ``r``: the stances (round 1), else the previous rounds in the agent's own
        order, the oldest dropped when they overflow the context (recorded on the session)."""
        p, cfg, n = self.prompts, self.config, len(s.stances)
        learning = learning_text(cfg.learning)
        late = cfg.intervention_after and r - 1 >= cfg.intervention_after
        intervention = p.intervention() if late else ""
        if r == 1:
            tmpl, histories = p.first, [stance_history(p, s.stances, i) for i in range(1, n + 1)]
        else:
            tmpl = p.later
            views = [shuffled_blocks(p, shown, i, rng) for i in range(1, n + 1)]  # each agent's order, in turn
            fitted = await asyncio.gather(*(fit_history(self.llm, tmpl, self.fields, p, blocks, intervention,
                                                        learning, answer_room(cfg.max_new_tokens, cfg.label_retry))
                                              for blocks in views))
            histories = [hist for hist, _ in fitted]
            s.history_rounds_dropped = max([s.history_rounds_dropped] + [dropped for _, dropped in fitted])
        return [load_template(tmpl).render(**self.fields, chat_history=hist, intervention=intervention,
                                           learning=learning) for hist in histories]

    async def run_session(self, index: int) -> Session:
        """One debate: rounds until the agents agree or ``rounds`` is reached, then the session's verdict."""
        rng = random.Random(f"{self.config.seed}|{self.example.id}|{index}")
        s = Session(index=index, stances=self.draw_stances(rng))
        want = {"faithful": FAITHFUL, "unfaithful": UNFAITHFUL}
        previous: list[int | None] = [want.get(st or "") for st in s.stances]
        shown: list[list[Turn]] = []  # the previous rounds
        for r in range(1, self.config.rounds + 1):
            prompts = await self.round_prompts(s, r, shown, rng)
            turns = list(await asyncio.gather(*(self.agent_turn(index, r, i, prompt, s.stances[i - 1], previous[i - 1])
                                                for i, prompt in enumerate(prompts, start=1))))
            s.rounds.append(turns)
            previous = [t.label for t in turns]
            if None not in previous and len(set(previous)) == 1:
                s.consensus_round, s.label, s.label_source = r, previous[0], "consensus"
                s.explanation = rng.choice([t.explanation for t in turns])
                return s
            shown.append(turns)
        await self.conclude(s, rng)
        return s

    async def conclude(self, s: Session, rng: random.Random) -> None:
        """A session without consensus: adjudicators (always, or on a tie) or the agents' majority."""
        cfg, final = self.config, s.final_turns
        if cfg.adjudicate == "disagreement" or is_tie([t.label for t in final]):
            k = cfg.adjudicators if cfg.sessions == 1 else cfg.session_adjudicators
            s.label, s.explanation, s.adjudication = await self.adjudicate(final, rng, k, f"s{s.index}")
            s.label_source = "adjudication" if s.label is not None else "unparsed"
        else:
            s.label = majority([t.label for t in final])
            s.label_source = "majority" if s.label is not None else "unparsed"
            s.explanation = rng.choice([t.explanation for t in final if t.label == s.label] or [""])

    async def adjudicate(self, final: list[Turn], rng: random.Random, k: int, scope: str
                         ) -> tuple[int | None, str, list[dict]]:
        """``k`` adjudicators, each reading ``final`` (numbered Agent 1..n) in its own order: (label, explanation,
        records). Majority of the readable votes; a tie goes to faithful (the code's rule); None when no vote
        is readable."""
        p, cfg, ex = self.prompts, self.config, self.example
        numbered = [Turn(**{**asdict(t), "agent": j}) for j, t in enumerate(final, start=1)]
        orders = distinct_orders(len(numbered), k, rng)
        tmpl = load_template(p.adjudicator)
        histories = await asyncio.gather(*(fit_entries(self.llm, tmpl, self.fields, p,
                                                       [p.entry(numbered[j], me=0) for j in order],
                                                       answer_room(cfg.max_new_tokens, cfg.label_retry))
                                           for order in orders))
        answers = await asyncio.gather(*(
            self.ask(tmpl.render(**self.fields, chat_history=hist), "explanation", f"{ex.id}/{scope}/adjudicator{a}",
                     derive_seed(cfg.seed, ex.id, scope, "adj", a))
            for a, (hist, _) in enumerate(histories, start=1)))
        records = [{"adjudicator": a, "order": [numbered[j].agent for j in order], "label": ans.label,
                    "explanation": ans.explanation, "source": ans.source, "argument_words_cut": cut}
                   for a, (order, ans, (_, cut)) in enumerate(zip(orders, answers, histories), 1)]
        label = majority([ans.label for ans in answers], tie=FAITHFUL)
        pool = [ans.explanation for ans in answers if ans.label is not None and ans.label == label]
        return label, (rng.choice(pool) if pool else ""), records


def distinct_orders(n: int, k: int, rng: random.Random) -> list[list[int]]:
    """``k`` orders of ``n`` arguments, all different while there are enough of them (n! >= k)."""
    if n <= 6:
        perms = [list(x) for x in itertools.permutations(range(n))]
        picked = rng.sample(perms, min(k, len(perms)))
        return picked + [rng.choice(perms) for _ in range(k - len(picked))]
    seen: set[tuple[int, ...]] = set()
    out: list[list[int]] = []
    while len(out) < k:
        order = rng.sample(range(n), n)
        if tuple(order) not in seen:
            seen.add(tuple(order))
            out.append(order)
    return out


async def fitted_fields(example: FaithExample, llm: Calls, config: MadisseConfig, p: Prompts) -> tuple[dict, dict]:
    """The document cut (``truncate=truncate``) so that every prompt this configuration sends fits: round 1
    with the stances, later rounds (when there are any) with room for the chat history and the mediator
    text, the adjudicators with room for one round of arguments."""
    one_round = (config.faithful_agents + config.unfaithful_agents) * (config.max_new_tokens + 24)
    room = answer_room(config.max_new_tokens, config.label_retry)  # the answer, and a follow-up turn where asked
    stances = ["faithful"] * config.faithful_agents + ["unfaithful"] * config.unfaithful_agents
    checks = [(p.first, {"chat_history": stance_history(p, stances if config.init == "stance" else [None], 1),
                         "intervention": ""}, room)]
    if config.rounds > 1:
        late = config.intervention_after and config.rounds > config.intervention_after
        checks.append((p.later, {"chat_history": "", "intervention": p.intervention() if late else ""},
                       room + history_reserve(llm, config)))
    checks.append((p.adjudicator, {"chat_history": ""}, room + one_round))
    fields = {"doc": example.document, "summary": example.summary, "guidelines": guidelines_text(config),
              "learning": learning_text(config.learning)}
    for tmpl, extra, reserve in checks:
        fitted, _ = await fit_fields(llm, tmpl, {**fields, **extra}, max_new_tokens=reserve, policy=config.truncate,
                               tag=example.id)
        fields["doc"] = fitted["doc"]
    cut = len(example.document.split()) - len(fields["doc"].split())
    return {k: fields[k] for k in ("doc", "summary", "guidelines")}, ({"truncated_words": cut} if cut else {})


async def fit_entries(llm: Calls, tmpl, fields: dict, p: Prompts, entries: list[tuple[str, str]], max_new_tokens: int,
                      field: str = "chat_history") -> tuple[str, int]:
    """The chat history of ``entries`` ((speaker, text)), for the template's ``field``; when it would overflow the
    context, every text is cut to the same number of words, the most that fits (the number of words cut is
    returned)."""
    def history(limit: int | None) -> str:
        return p.separator.join(f"{who}: {' '.join(text.split()[:limit]) if limit is not None else text}".rstrip()
                                for who, text in entries)

    if await llm.fits(user(tmpl.render(**fields, **{field: history(None)})), max_new_tokens):
        return history(None), 0
    most = max(len(t.split()) for _, t in entries)
    limit = await fit_to_context(llm, lambda k: user(tmpl.render(**fields, **{field: history(k)})), most,
                                 max_new_tokens) or 0
    return history(limit), sum(max(0, len(t.split()) - limit) for _, t in entries)


async def madisse(example: FaithExample, llm: Calls, config: MadisseConfig) -> Judgement:
    p = madisse_prompts(config)
    fields, fit = await fitted_fields(example, llm, config, p)
    debate = Debate(example, llm, config, p, fields)
    sessions = await asyncio.gather(*(debate.run_session(m) for m in range(config.sessions)))
    details = {"sessions": [asdict(s) for s in sessions], "rounds_used": [len(s.rounds) for s in sessions],
               "consensus": [s.consensus_round is not None for s in sessions],
               "no_agent_changed_stance": [not s.changed_stance() for s in sessions], **fit}
    if config.sessions == 1:
        s = sessions[0]
        return Judgement(example_id=example.id, label=s.label, explanation=s.explanation, parsed=s.label is not None,
                         label_source=s.label_source, details=details)
    all_final = [t for s in sessions for t in s.final_turns]
    agents_vote, source, expl = majority([t.label for t in all_final]), "agents_vote", ""
    if is_tie([t.label for t in all_final]):  # the code: adjudicators over every session's final arguments
        rng = random.Random(f"{config.seed}|{example.id}|all-sessions")
        agents_vote, expl, details["adjudication"] = await debate.adjudicate(all_final, rng, config.adjudicators, "all")
        source = "agents_vote_adjudicated"
    debates_vote = majority([s.label for s in sessions], tie=agents_vote)
    expl = expl or next((s.explanation for s in sessions if s.label == agents_vote), "")
    return Judgement(example_id=example.id, label=agents_vote, explanation=expl, parsed=agents_vote is not None,
                     label_source=source if agents_vote is not None else "unparsed",
                     scores={"agents_vote": agents_vote, "debates_vote": debates_vote}, details=details)


def agent_role(tag: str) -> str | None:
    """``agents`` or ``adjudicators``: the role of a parse event (``.../r1/agent3``, ``.../adjudicator1``), for
    the parse-rate report."""
    m = re.search(r"/(?:r\d+/)?(agent|adjudicator)\d*(?:$|#)", tag)
    return m.group(1) + "s" if m else None


register(MethodSpec(name="madisse", paper="madisse", kind="faithfulness", config_cls=MadisseConfig, judge=madisse,
                    roles=agent_role,
                    as_printed=(AsPrinted("the authors' prompts.py vs the paper's printed Tables 28-30", (),
                                          (("prompts", "printed"),)),),
                    description="MADISSE: stance-initialised multi-agent debate with adjudicators (init=none: "
                                "without initialization; sessions=m: simultaneous debates, agents/debates vote)"))
