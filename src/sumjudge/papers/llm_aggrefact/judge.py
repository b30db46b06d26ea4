"""LLM-AggreFact's LLM prompt as a faithfulness judge: a system message asking whether the claim is consistent with
the document, answered "Yes" or "No" (``llm_aggrefact/minicheck_system``, ``minicheck_user``; one claim per call: the
leaderboard's unit is a summary sentence), read two ways:

- ``llm-aggrefact``: the answer as stated (``parsing.yes_no``: "Yes" is consistent); an answer without a stated
  yes or no is retried, then unreadable (``fallback=option_scores``: the likelier of "Yes"/"No", recorded);
- ``llm-aggrefact-p-yes``: P(Yes), the model's probability of answering "Yes" renormalised over "Yes" and "No"
  (option scoring, no text generated); the label is P(Yes) >= ``threshold``, which the arena chooses on held-out
  examples (it reports the ROC-AUC of P(Yes) beside). Where "Yes" and "No" hold less than ``min_coverage`` of the
  first answer token's probability, the reading is unreadable, as G-Eval's.

A small model read greedily can answer "No" to everything while its P(Yes) still ranks the claims: the two readings
say how much of what a model knows its stated answer shows. The leaderboard's own number for the same model and
dataset is ``published``.
"""

from __future__ import annotations

from dataclasses import dataclass

from sumjudge.data.records import FaithExample
from sumjudge.judges.base import Judgement, fit_prompt, with_system
from sumjudge.judges.settings import Generation
from sumjudge.llm import ChatRequest
from sumjudge.llm.engine import Calls
from sumjudge.llm.parsing import complete_lines, yes_no
from sumjudge.papers.llm_aggrefact import published
from sumjudge.prompts import load as load_template
from sumjudge.run.methods import MethodSpec, register

SYSTEM, USER = "llm_aggrefact/minicheck_system", "llm_aggrefact/minicheck_user"
OPTIONS = ("Yes", "No")


@dataclass
class AggreFactConfig(Generation):  # greedy, as the leaderboard's LLMs were read
    max_new_tokens: int = 32  # the leaderboard does not say; "Yes" or "No" and a few words fit


@dataclass
class AggreFactPYesConfig(AggreFactConfig):
    threshold: float = 0.5  # the arena's held-out threshold replaces it there
    min_coverage: float = 0.5  # the least probability "Yes" and "No" must hold together


async def messages(example: FaithExample, llm: Calls, config: AggreFactConfig, room: int) -> tuple[list, dict]:
    """The system and user messages for ``example`` (its summary is the claim), fitted to the context with ``room``
    tokens left for the answer (``fit_prompt``: the document's end cut where ``config.truncate`` allows it)."""
    system = load_template(SYSTEM).render()
    text, fit = await fit_prompt(llm, USER, {"doc": example.document, "claim": example.summary}, max_new_tokens=room,
                                 policy=config.truncate, tag=example.id, system=system)
    return with_system(system, text), fit


async def stated(example: FaithExample, llm: Calls, config: AggreFactConfig) -> Judgement:
    msgs, fit = await messages(example, llm, config, config.max_new_tokens)
    req = ChatRequest(messages=msgs, max_new_tokens=config.max_new_tokens, temperature=config.temperature,
                      seed=config.seed, tag=f"{example.id}/llm-aggrefact")
    res = await llm.chat_parsed(req, yes_no, cut_parse=complete_lines(yes_no))
    label, source, details = (res.value, "parsed", {}) if res.ok else (None, "unparsed", {"parse_error": res.error})
    if label is None and config.fallback == "option_scores":
        sc = await llm.score_fallback(msgs, list(OPTIONS), tag=req.tag)
        label, source, details = int(sc.best() == "Yes"), "option_scores", {"option_probs": sc.probs}
    return Judgement(example_id=example.id, label=label, parsed=label is not None, label_source=source,
                     details={**fit, **details, "raw": res.response.text})


async def p_yes(example: FaithExample, llm: Calls, config: AggreFactPYesConfig) -> Judgement:
    msgs, fit = await messages(example, llm, config, 1)
    sc = await llm.score_options(msgs, list(OPTIONS), tag=f"{example.id}/llm-aggrefact/p-yes")
    details = {**fit, "option_probs": sc.probs, "coverage": sc.coverage, "method": sc.method}
    if sc.coverage < config.min_coverage:  # "Yes" and "No" are not what the model would answer: no reading
        return Judgement(example_id=example.id, parsed=False, label_source="unparsed", details=details)
    score = sc.probs["Yes"] / (sc.probs["Yes"] + sc.probs["No"])
    return Judgement(example_id=example.id, label=int(score >= config.threshold), score=score,
                     label_source="option_scores", details=details)


register(MethodSpec(name="llm-aggrefact", paper="llm_aggrefact", kind="faithfulness", config_cls=AggreFactConfig,
                    judge=stated, published=published.published,
                    description="LLM-AggreFact's LLM prompt (MiniCheck), the stated Yes/No"))
register(MethodSpec(name="llm-aggrefact-p-yes", paper="llm_aggrefact", kind="faithfulness",
                    config_cls=AggreFactPYesConfig, judge=p_yes, scores=True, published=published.published,
                    description="LLM-AggreFact's LLM prompt (MiniCheck), P(Yes) by option scoring, a held-out threshold"))
