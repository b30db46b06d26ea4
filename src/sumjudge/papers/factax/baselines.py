"""FacTax Table 2's LLM baselines on binary faithfulness data:

- ``chatgpt-zs`` / ``chatgpt-cot`` (Luo et al. 2023, whose zero-shot and chain-of-thought prompts the
  paper's ChatGPT-ZS and ChatGPT-CoT rows use: ``factax/luo2023_zero_shot``, ``factax/luo2023_cot``): yes is
  consistent, read by ``parsing.yes_no``; an answer without a stated yes/no is retried, then unparsed
  (``fallback=option_scores``: the likelier of "Yes"/"No" as the answer's start, recorded). MADISSE's prompts
  stay available as ``zero-shot`` and ``cot`` (``factax_tables.MADISSE_BASELINES``);
- ``star`` (ChatGPT-Star, Wang et al. 2023): one to five stars for consistency (``factax/star_rating``);
  consistent when stars >= ``threshold``;
- ``g-eval-consistency``: DEBATE's G-Eval code with G-Eval's SummEval consistency prompt over the
  document and summary, probability-weighted 1-5; consistent when the score >= ``threshold``.

Neither paper publishes the threshold that turns these scores into labels; the defaults (4 stars, 4.0) call
a summary consistent when it is rated consistent or better, and ``threshold`` changes them. The score is
kept in the judgement (for Pearson on score-labelled data, or to tune a threshold on a dev set).
"""

from __future__ import annotations

from dataclasses import dataclass

from sumjudge.data.records import FaithExample
from sumjudge.judges.aspects import consistency_aspect, thresholded
from sumjudge.judges.base import Judgement, fit_prompt, request
from sumjudge.judges.geval import GEvalConfig, geval_aspect
from sumjudge.judges.settings import Generation
from sumjudge.llm.engine import Calls
from sumjudge.llm.parsing import complete_lines, star_rating, yes_no
from sumjudge.run.methods import AsPrinted, MethodSpec, register


def parse_stars(text: str) -> float:
    """"4 stars", "Stars: 4", "4/5" or a bare number, 1-5 (``parsing.star_rating``)."""
    return star_rating(text, 1, 5)


@dataclass
class StarConfig(Generation):  # fallback=option_scores: the likeliest star count 1-5, recorded
    max_new_tokens: int = 64
    threshold: float = 4


async def star(example: FaithExample, llm: Calls, config: StarConfig) -> Judgement:
    prompt, fit = await fit_prompt(llm, "factax/star_rating", {"document": example.document, "summary": example.summary},
                             max_new_tokens=config.max_new_tokens, policy=config.truncate, tag=example.id)
    req = request(prompt, max_new_tokens=config.max_new_tokens, temperature=config.temperature, seed=config.seed,
                  tag=f"{example.id}/star")
    res = await llm.chat_parsed(req, parse_stars, cut_parse=complete_lines(parse_stars))
    stars, source = (res.value, "parsed") if res.ok else (None, "unparsed")
    if stars is None and config.fallback == "option_scores":
        sc = await llm.score_fallback(req.messages, ["1", "2", "3", "4", "5"], tag=req.tag)
        stars, source = float(sc.best()), "option_scores"
    label = None if stars is None else int(stars >= config.threshold)
    return Judgement(example_id=example.id, label=label, score=stars, parsed=label is not None, label_source=source,
                     details={**fit, "raw": res.response.text, "stars": stars})


@dataclass
class LuoConfig(Generation):  # greedy; the paper averages three runs: factax_tables.run_grid samples them (run_temperature)
    max_new_tokens: int = 16  # "Answer (yes or no):"
    template: str = "factax/luo2023_zero_shot"


@dataclass
class LuoCoTConfig(LuoConfig):
    template: str = "factax/luo2023_cot"
    max_new_tokens: int = 512  # reasoning, then the answer


async def luo(example: FaithExample, llm: Calls, config: LuoConfig) -> Judgement:
    prompt, fit = await fit_prompt(llm, config.template, {"document": example.document, "summary": example.summary},
                             max_new_tokens=config.max_new_tokens, policy=config.truncate, tag=example.id,
                             shrink="document")
    req = request(prompt, max_new_tokens=config.max_new_tokens, temperature=config.temperature, seed=config.seed,
                  tag=f"{example.id}/{config.template.rsplit('/', 1)[-1]}")
    res = await llm.chat_parsed(req, yes_no, cut_parse=complete_lines(yes_no))
    label, source = (res.value, "parsed") if res.ok else (None, "unparsed")
    details = {**fit, "raw": res.response.text, "attempts": res.attempts}
    if label is None and config.fallback == "option_scores":
        sc = await llm.score_fallback(req.messages, ["Yes", "No"], tag=req.tag)
        label, source, details["option_probs"] = int(sc.best() == "Yes"), "option_scores", sc.probs
    return Judgement(example_id=example.id, label=label, explanation=res.response.text if label is not None else "",
                     parsed=source == "parsed", label_source=source, details=details)


@dataclass
class GEvalConsistencyConfig(GEvalConfig):
    threshold: float = 4.0



async def g_eval_consistency(example: FaithExample, llm: Calls, config: GEvalConsistencyConfig) -> Judgement:
    score, info = await geval_aspect(example, consistency_aspect(), llm, config)
    return thresholded(example.id, score, config.threshold, info)


register(MethodSpec(name="chatgpt-zs", paper="factax", kind="faithfulness", config_cls=LuoConfig, judge=luo,
                    description="ChatGPT-ZS baseline: Luo et al. (2023)'s zero-shot yes/no prompt (FacTax Table 2)"))
register(MethodSpec(name="chatgpt-cot", paper="factax", kind="faithfulness", config_cls=LuoCoTConfig, judge=luo,
                    description="ChatGPT-CoT baseline: Luo et al. (2023)'s chain-of-thought prompt (FacTax Table 2)"))
register(MethodSpec(name="star", paper="factax", kind="faithfulness", config_cls=StarConfig, judge=star,
                    description="ChatGPT-Star baseline: 1-5 consistency stars, thresholded (FacTax Table 2)"))
register(MethodSpec(name="g-eval-consistency", paper="factax", kind="faithfulness", config_cls=GEvalConsistencyConfig,
                    judge=g_eval_consistency, scores=True,
                    as_printed=(AsPrinted("G-Eval's released code (temperature 2, the prompt as system message, 20 "
                                          "samples) vs the G-Eval paper's sampling",
                                          (("mode", "samples"), ("protocol", "repository")),
                                          (("mode", "samples"), ("protocol", "paper"))),),
                    description="G-Eval consistency on binary faithfulness data, thresholded"))
