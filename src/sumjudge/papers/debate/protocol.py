"""DEBATE (Kim et al.): Commander, Scorer and Critic (devil's advocate), Algorithm 1.

Per example and aspect:

1. the Commander formulates the task prompt P from the aspect's predefined template (Appendix G.2
   format) plus the zero-shot chain-of-thought request (step 2 of Appendix D.1);
2. the Scorer (system message G.1) scores: Score <- S(P);
3. for i = 1..n: the Commander forwards P and the Scorer's answer to the Critic (persona below);
   if the Critic's feedback contains NO ISSUE (also "NO ISSUES", "NO_ISSUES", "NO_ISSUE"; upper case,
   as a termination string is matched) the debate stops; otherwise the Commander sends the feedback to
   the Scorer, which rescores;
4. the final score is the Scorer's latest; with ``tie_breaker`` (Appendix E.3) a fourth agent decides
   from the debate log when the Critic never said NO ISSUE within n iterations ("Both" = devil's
   advocate Critic + Tie-breaker); the Tie-breaker's score is then final.

The Commander is this code, not a model: it holds the debate log (the paper's "collective memory")
and renders each agent's view of it as a chat: the agent's own turns as assistant messages, what the
Commander relays as user messages (templates ``debate/d1_*``; the paper gives no Commander text, so
that wording is sumjudge's and says so in the files). The paper used AutoGen; no dependency is needed.

Critic personas (Figure 2, middle): ``strictly-negative`` (DEBATE, Section 2 text; ``prompt_type``
``sophisticated`` = Appendix C, Table 3), ``moderately-negative``, ``weakly-negative``, ``plain`` (the
MultiAgent baseline). The Section 2 prompt never tells the Critic how to end a debate; ``critic_stop``
``instructed`` (default) appends G.1's "If you find the score absolutely acceptable, just say NO_ISSUES."
as every other persona has it (the paper's transcripts, Appendix H, end with NO ISSUE), ``paper`` sends the
Section 2 text as printed. SummEval fluency is scored 1-5 (DEBATE's Table 2; G-Eval keeps its 1-3 prompt).

Scores are read with ``scale_score`` on the aspect's scale. An unreadable score is asked again at the
debate's own temperature (0) with a one-line format reminder appended to the agent's last message
(``d1_retry_score_reminder``; engine ``parse_retries``), and the transcript marks the turn as reminded; a
sampled retry would change the debate the paper ran greedily. An unreadable *final* score (the Scorer's
latest, or the Tie-breaker's) is None (counted, with whether an earlier score was readable) unless
``fallback=option_scores``: then the likeliest score after the agent's own answer + "Score: ", recorded as
``option_scores (<agent>)``.
If a chat outgrows the model context, the oldest exchanges after P are left out (recorded per aspect as
``turns_dropped``); the document itself is fitted once, leaving ``history_tokens`` for the debate.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

from sumjudge.data.records import FaithExample, RatedExample
from sumjudge.errors import ConfigError
from sumjudge.judges.aspects import KIND, Aspect, consistency_aspect, score_aspects, thresholded
from sumjudge.judges.base import fit_fields
from sumjudge.judges.geval import GEvalConfig, g_eval
from sumjudge.judges.settings import Generation
from sumjudge.llm.engine import Calls
from sumjudge.llm.fitting import fit_to_context
from sumjudge.llm.parsing import complete_lines, scale_score
from sumjudge.llm.types import ChatRequest
from sumjudge.papers.debate.aspects import DEBATE_TEMPLATES
from sumjudge.papers.debate.metrics import debate_metrics
from sumjudge.prompts import load as load_template
from sumjudge.run.methods import AsPrinted, MethodSpec, register

CRITICS: dict[str, dict[str, str]] = {
    "strictly-negative": {"original": "debate/s2_devils_advocate",
                          "sophisticated": "debate/appc_sophisticated_devils_advocate"},
    "moderately-negative": {"original": "debate/g1_critic_moderate_negative"},
    "weakly-negative": {"original": "debate/g1_critic_weakly_negative"},
    "plain": {"original": "debate/g1_critic_plain"},
}
TIE_BREAKER = {"summary": "debate/g1_tie_breaker", "dialogue": "debate/g1_tie_breaker_dialogue"}
Debated = RatedExample | FaithExample  # an aspect reads its fields from either (judges.aspects.FIELDS)
NO_ISSUE = re.compile(r"\bNO[ _]ISSUES?\b")


def says_no_issue(feedback: str) -> bool:
    """Algorithm 1 line 8: 'NO ISSUE' in Feedback (and the variants the G.1 / Appendix C prompts ask for)."""
    return NO_ISSUE.search(feedback) is not None


@dataclass
class DebateConfig(Generation):  # the paper: temperature 0 (Generation's), top-p 1; 512 answer tokens
    aspects: Any = None  # list or comma-separated names; None = every aspect of the dataset
    iterations: int = 3  # n, the maximum number of Critic reviews (Figure 2 left: 1..5)
    critic: str = "strictly-negative"  # strictly-negative | moderately-negative | weakly-negative | plain
    prompt_type: str = "original"  # original | sophisticated (Appendix C; strictly-negative only)
    critic_stop: str = "instructed"  # instructed: + G.1's NO_ISSUES sentence | paper: the Section 2 text as printed
    tie_breaker: bool = False  # Appendix E.3
    history_tokens: int | None = None  # context kept for the debate when fitting the text (None: a third)
    # fallback=option_scores: for an unreadable final score

    def check(self) -> None:
        """Run when the config is built: an unknown persona / prompt type fails before any model loads."""
        self.critic_template()

    def critic_template(self) -> str:
        if self.critic not in CRITICS:
            raise ConfigError(f"unknown critic persona {self.critic!r}; known: {', '.join(CRITICS)}")
        if self.prompt_type not in CRITICS[self.critic]:
            raise ConfigError(f"prompt_type {self.prompt_type!r} exists for the critic personas "
                              f"{[k for k, v in CRITICS.items() if self.prompt_type in v]} only")
        return CRITICS[self.critic][self.prompt_type]


@dataclass
class DebateTurn:
    speaker: str  # scorer | critic | tie-breaker
    iteration: int  # 0: the Scorer's first score; i: the i-th Critic review and the rescore after it
    text: str
    score: float | None = None
    no_issue: bool = False
    reminded: bool = False  # the score was unreadable and the agent was asked again with a format reminder


@dataclass
class AspectDebate:
    aspect: str
    scale: tuple[int, int]
    critic: str
    turns: list[DebateTurn] = field(default_factory=list)
    iterations: int = 0  # Critic reviews that took place
    stopped: str = ""  # no_issue | cap
    initial_score: float | None = None
    final_score: float | None = None
    final_source: str = ""  # scorer | tie-breaker | option_scores (<agent>) | unparsed
    turns_dropped: int = 0
    truncated_words: int = 0
    earlier_score: float | None = None  # an unreadable final score: the latest readable one before it (not used)


def history_reserve(llm: Calls, config: DebateConfig) -> int:
    if config.history_tokens is not None:
        return config.history_tokens
    ctx = llm.context_length
    return ctx // 3 if ctx else 0


class Commander:
    """Holds P and the debate log; renders what each agent sees."""

    def __init__(self, llm: Calls, example: Debated, a: Aspect, config: DebateConfig, fields: dict[str, str],
                 truncated_words: int = 0):
        self.llm, self.a, self.config = llm, a, config
        self.tag = f"{example.id}/{a.name}"
        self.truncated_words = truncated_words
        self.task = load_template(a.template).render(**fields)
        self.scale = {"aspect": a.name, "lo": a.lo, "hi": a.hi}
        self.prompt = load_template("debate/d1_step2_commander_to_scorer").render(task=self.task, **self.scale)
        self.critic_system = load_template(config.critic_template()).body
        if config.critic_stop == "instructed" and not NO_ISSUE.search(self.critic_system):
            self.critic_system += " " + load_template("debate/g1_no_issues_instruction").body
        self.turns: list[DebateTurn] = []
        self.asked: dict[str, list[dict[str, str]]] = {}  # each role's latest request (for the fallback)
        self.dropped = 0

    @classmethod
    async def create(cls, llm: Calls, example: Debated, a: Aspect, config: DebateConfig) -> "Commander":
        """P for ``example`` and aspect ``a``, the document cut (``truncate``) to leave room for the debate."""
        fields, fit = await fit_fields(llm, a.template, a.fields(example),
                                       max_new_tokens=config.max_new_tokens + history_reserve(llm, config),
                                       policy=config.truncate, tag=f"{example.id}/{a.name}", shrink=a.shrink)
        return cls(llm, example, a, config, fields, fit.get("truncated_words", 0))

    async def scorer_view(self) -> list[dict[str, str]]:
        msgs = [{"role": "system", "content": load_template("debate/g1_scorer").body},
                {"role": "user", "content": self.prompt}]
        for t in self.turns:
            if t.speaker == "scorer":
                msgs.append({"role": "assistant", "content": t.text})
            elif t.speaker == "critic":
                msgs.append({"role": "user", "content": load_template("debate/d1_step5_commander_to_scorer").render(
                    feedback=t.text, **self.scale)})
        return await self.fit(msgs)

    async def critic_view(self) -> list[dict[str, str]]:
        msgs = [{"role": "system", "content": self.critic_system}]
        first = True
        for t in self.turns:
            if t.speaker == "scorer":
                text = (load_template("debate/d1_step4_commander_to_critic").render(task=self.prompt, answer=t.text)
                        if first else load_template("debate/d1_step6_commander_to_critic").render(answer=t.text))
                msgs.append({"role": "user", "content": text})
                first = False
            elif t.speaker == "critic":
                msgs.append({"role": "assistant", "content": t.text})
        return await self.fit(msgs)

    async def tie_breaker_view(self) -> list[dict[str, str]]:
        """The tie-breaker's request over the debate log, the oldest turns left out until it fits (the latest turn
        always stays)."""
        system = load_template(TIE_BREAKER[KIND[self.a.dataset]]).body
        turns = [t for t in self.turns if t.speaker in ("scorer", "critic")]

        def build(kept: int) -> list[dict[str, str]]:
            log = "\n\n".join(f"{t.speaker.capitalize()}: {t.text}" for t in turns[len(turns) - kept:])
            return [{"role": "system", "content": system},
                    {"role": "user", "content": load_template("debate/e3_tie_breaker_request").render(
                        task=self.task, log=log, **self.scale)}]

        kept = max(1, await fit_to_context(self.llm, build, len(turns), self.reserve) or 0) if turns else 0
        self.dropped += len(turns) - kept
        return build(kept)

    @property
    def reserve(self) -> int:
        return self.config.max_new_tokens + 8  # 8: the fallback's "Score: "

    async def fit(self, msgs: list[dict[str, str]]) -> list[dict[str, str]]:
        """Leave out the oldest exchanges (pairs of messages) after the first user message until the chat fits the
        context; at least one message after them stays."""
        head = 3 if msgs[1]["role"] == "user" and len(msgs) > 2 and msgs[2]["role"] == "assistant" else 2
        droppable = max(0, -(-(len(msgs) - head - 1) // 2))  # exchanges that may go, oldest first

        def build(kept: int) -> list[dict[str, str]]:
            return msgs[:head] + msgs[head + 2 * (droppable - kept):]

        kept = await fit_to_context(self.llm, build, droppable, self.reserve) or 0
        self.dropped += droppable - kept
        return build(kept)

    def request(self, messages, role: str, iteration: int) -> ChatRequest:
        return ChatRequest(messages=messages, max_new_tokens=self.config.max_new_tokens,
                           temperature=self.config.temperature, seed=self.config.seed,
                           tag=f"{self.tag}/{role}#{iteration}")


def reminded(req: ChatRequest, attempt: int, lo: int, hi: int) -> ChatRequest:
    """The same request at its own temperature, a format reminder appended to the last message."""
    note = load_template("debate/d1_retry_score_reminder").render(lo=lo, hi=hi)
    last = {**req.messages[-1], "content": req.messages[-1]["content"] + "\n\n" + note}
    return ChatRequest(messages=req.messages[:-1] + [last], max_new_tokens=req.max_new_tokens,
                       temperature=req.temperature, top_p=req.top_p, seed=req.seed, tag=f"{req.tag}#remind{attempt}")


async def score_turn(cmd: Commander, messages, role: str, iteration: int) -> DebateTurn:
    a = cmd.a
    parse = (lambda t: scale_score(t, a.lo, a.hi, a.name))  # noqa: E731
    res = await cmd.llm.chat_parsed(cmd.request(messages, role, iteration), parse, cut_parse=complete_lines(parse),
                                    reask=lambda r, k, _answers: reminded(r, k, a.lo, a.hi))
    cmd.asked[role] = messages
    return DebateTurn(speaker=role, iteration=iteration, text=res.response.text, score=res.value if res.ok else None,
                      reminded=res.attempts > 1)


async def debate_aspect(example: Debated, a: Aspect, llm: Calls, config: DebateConfig) -> tuple[float | None, dict]:
    cmd = await Commander.create(llm, example, a, config)
    out = AspectDebate(aspect=a.name, scale=(a.lo, a.hi), critic=f"{config.critic}/{config.prompt_type}",
                       truncated_words=cmd.truncated_words)
    cmd.turns.append(await score_turn(cmd, await cmd.scorer_view(), "scorer", 0))  # Score <- S(P)
    out.stopped = "cap"
    for i in range(1, config.iterations + 1):
        feedback = (await llm.chat(cmd.request(await cmd.critic_view(), "critic", i))).text  # Feedback <- Cr(Score)
        cmd.turns.append(DebateTurn(speaker="critic", iteration=i, text=feedback, no_issue=says_no_issue(feedback)))
        out.iterations = i
        if cmd.turns[-1].no_issue:
            out.stopped = "no_issue"
            break
        cmd.turns.append(await score_turn(cmd, await cmd.scorer_view(), "scorer", i))  # Score <- S(Feedback)
    out.initial_score = cmd.turns[0].score
    final = [t for t in cmd.turns if t.speaker == "scorer"][-1]  # the Scorer's latest ...
    if config.tie_breaker and out.stopped == "cap":  # ... unless the Tie-breaker decides (E.3)
        final = await score_turn(cmd, await cmd.tie_breaker_view(), "tie-breaker", out.iterations)
        cmd.turns.append(final)
    out.final_score, out.final_source = final.score, final.speaker
    if final.score is None:
        out.final_source = "unparsed"
        out.earlier_score = next((t.score for t in reversed(cmd.turns) if t.score is not None), None)
        if config.fallback == "option_scores":  # p(score | the agent's own answer + "Score: "), recorded
            sc = await llm.score_fallback(cmd.asked[final.speaker], a.options, prefix=final.text.rstrip() + "\nScore: ",
                                          tag=f"{cmd.tag}/{final.speaker}")
            out.final_score, out.final_source = float(sc.best()), f"option_scores ({final.speaker})"
    out.turns, out.turns_dropped = cmd.turns, cmd.dropped
    return out.final_score, asdict(out)


async def debate(example: RatedExample, llm: Calls, config: DebateConfig):
    config.critic_template()  # unknown persona / prompt type: fail before any call
    return await score_aspects(example, config.aspects, lambda a: debate_aspect(example, a, llm, config),
                               overrides=DEBATE_TEMPLATES)


register(MethodSpec(name="g-eval", paper="debate", kind="rated", config_cls=GEvalConfig, judge=g_eval,
                    description="G-Eval baseline: form-filling prompt, probability-weighted score (DEBATE Table 1)"))
register(MethodSpec(name="debate", paper="debate", kind="rated", config_cls=DebateConfig, judge=debate,
                    metrics=debate_metrics,
                    description="DEBATE: Commander, Scorer and devil's-advocate Critic (Algorithm 1)"))


@dataclass
class MultiAgentConfig(DebateConfig):
    critic: str = "plain"


register(MethodSpec(name="multiagent", paper="debate", kind="rated", config_cls=MultiAgentConfig, judge=debate,
                    metrics=debate_metrics,
                    description="MultiAgent baseline: DEBATE's protocol with the Plain Critic (G.1)"))


@dataclass
class DebateConsistencyConfig(DebateConfig):
    threshold: float = 4.0  # faithful when the final score >= threshold (the arena chooses its own, held out)


async def debate_consistency(example: FaithExample, llm: Calls, config: DebateConsistencyConfig):
    """DEBATE on a binary faithfulness example: the debate of Algorithm 1 over G-Eval's SummEval consistency task
    (the document and summary of the example), its final 1-5 score thresholded. Not in the paper, which rates
    SummEval and Topical-Chat only: the adaptation the judge arena compares with the other papers' judges."""
    config.critic_template()
    score, info = await debate_aspect(example, consistency_aspect(), llm, config)
    return thresholded(example.id, score, config.threshold, {"aspects": {"consistency": info}})


register(MethodSpec(name="debate-consistency", paper="debate", kind="faithfulness", config_cls=DebateConsistencyConfig,
                    judge=debate_consistency, scores=True,
                    as_printed=(AsPrinted("the Critic told to say NO_ISSUES (G.1, as the paper's transcripts end) vs "
                                          "the Section 2 text as printed", (), (("critic_stop", "paper"),)),),
                    description="DEBATE adapted to binary faithfulness: consistency debated 1-5, thresholded"))
