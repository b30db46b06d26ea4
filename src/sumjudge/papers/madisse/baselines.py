"""Single-LLM baselines, MADISSE Section 5.2: (1) zero-shot (Table 26 prompt), (2) chain of thought
(Table 27), (3) self-consistency (n sampled chains of thought, majority vote).

Defaults are the authors' run (``faithfulness_evaluation.py`` @ ddb8276): every call sampled at temperature
1.0, top_p 0.9, up to 1000 tokens; the prompts of ``prompts.py`` (``prompts=code``; ``printed``: the
paper's Tables 26/27); self-consistency over 41 samples, a tie going to faithful. The sampling seed of an
example is derived from (run seed, example id) and every sample has its own ``sample_index``, so chain of
thought is self-consistency's first sample and the self-consistency-variation ambiguity detector reads the
same samples (cache hits, nothing drawn twice).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass, replace

from sumjudge.data.records import FaithExample
from sumjudge.judges.base import GREEDY_WARNING, Judgement, derive_seed, fit_prompt, request
from sumjudge.judges.settings import Generation
from sumjudge.llm.engine import Calls
from sumjudge.llm.parsing import binary_label, tag_bodies
from sumjudge.llm.types import ChatRequest, ChatResponse
from sumjudge.prompts import load as load_template
from sumjudge.prompts import variant
from sumjudge.run.methods import AsPrinted, MethodSpec, register

LABEL_RETRIES = ("resample", "follow_up")


@dataclass
class ZeroShotConfig(Generation):  # fallback=option_scores: the likelier of "0"/"1" after "<label>"
    max_new_tokens: int = 1000  # the code's max_gen_len
    temperature: float = 1.0  # the code samples (llama_prediction)
    template: str = "madisse/table26_zero_shot"
    prompts: str = "code"  # code: the authors' prompts.py wording where it differs | printed: the paper's table
    top_p: float = 0.9
    # resample: an answer without a readable label is asked again (a new sample) | follow_up: the model is asked, after
    # its own answer, for the label it left out (madisse/label_follow_up; a short reply instead of a new chain of thought)
    label_retry: str = "resample"
    follow_up: str = "madisse/label_follow_up"  # the follow-up turn's template (its label convention is the prompt's)
    doc_first: bool = False  # True: the <doc> block first (same wording), a speed option for prefix caching

    def warnings(self) -> list[str]:
        return [GREEDY_WARNING] if self.temperature == 0 else []

    def template_name(self) -> str:
        return variant(self.template, self.doc_first, self.prompts)

    def requests(self, example, prompt: str, n: int, tag: str) -> list:
        """``n`` samples of ``prompt`` for ``example`` (sample_index 0..n-1, one seed per example)."""
        return [request(prompt, max_new_tokens=self.max_new_tokens, temperature=self.temperature, top_p=self.top_p,
                        seed=derive_seed(self.seed, example.id), sample_index=i, tag=f"{example.id}/{tag}" +
                        (f"#{i}" if n > 1 else "")) for i in range(n)]


def parse_label_and_explanation(text: str, closed_only: bool = False, tag: str = "explanation") -> tuple[int, str]:
    """The label (``binary_label``) and the text of every ``<tag>`` (explanation, or the code's argument)."""
    label = binary_label(text, closed_only=closed_only)
    bodies = [b.strip() for b, closed in tag_bodies(text, tag) if closed or not closed_only]
    return label, " ".join(" ".join(b.split()) for b in bodies if b)


FOLLOW_UP_TOKENS = 64  # the follow-up's reply: a label, perhaps a sentence around it
# what a follow-up adds to a conversation besides the first answer: its user turn (the templates' text is under 60
# tokens), the chat markup of two more turns and the reply
FOLLOW_UP_ROOM = FOLLOW_UP_TOKENS + 96


def answer_room(max_new_tokens: int, label_retry: str) -> int:
    """Tokens a prompt must leave free for its answer: ``max_new_tokens``, and with ``label_retry=follow_up`` room
    for the follow-up turn too (it carries the first answer, up to ``max_new_tokens``, then asks again)."""
    return max_new_tokens + (FOLLOW_UP_ROOM if label_retry == "follow_up" else 0)


def label_follow_up(req: ChatRequest, attempt: int, answer: ChatResponse,
                    template: str = "madisse/label_follow_up") -> ChatRequest:
    """``label_retry=follow_up``'s retry: the conversation goes on after ``answer`` (the first one, whatever was cut)
    with ``template`` (``madisse/label_follow_up``: a factuality label); greedy the first time, then sampled (derived
    seed) like any retry."""
    msgs = list(req.messages) + [{"role": "assistant", "content": answer.text},
                                 {"role": "user", "content": load_template(template).body}]
    temperature = 0.0 if attempt == 1 else (req.temperature or 1.0)
    return replace(req, messages=msgs, max_new_tokens=FOLLOW_UP_TOKENS, temperature=temperature,
                   seed=(req.seed or 0) + 100_000 * attempt, tag=f"{req.tag}#label{attempt}")


async def label_with_fallback(llm: Calls, req, fallback: str, explanation_tag: str = "explanation",
                              retry: str = "resample", follow_up: str = "madisse/label_follow_up"
                              ) -> tuple[int | None, str, str, dict]:
    """Ask, parse (with the engine's retries: new samples, or with ``retry="follow_up"`` a follow-up turn asking
    for the label the answer left out); optionally fall back to option scoring. Returns (label, explanation,
    label_source, details); a label read from a follow-up is "parsed" (the model wrote it), its explanation
    the first answer's, and ``details["followed_up"]`` says so."""
    if retry not in LABEL_RETRIES:
        raise ValueError(f"label_retry must be one of {LABEL_RETRIES}, not {retry!r}")
    # an answer cut at max_new_tokens keeps a label it closed before the cut (its explanation is cut short)
    res = await llm.chat_parsed(req, lambda t: parse_label_and_explanation(t, tag=explanation_tag),
                                cut_parse=lambda t: parse_label_and_explanation(t, True, explanation_tag),
                                reask=(lambda r, k, answers: label_follow_up(r, k, answers[0], follow_up))
                                if retry == "follow_up" else None)
    details = {"attempts": res.attempts, "raw": res.response.text}
    if res.ok:
        label, expl = res.value
        if retry == "follow_up" and res.attempts > 1:
            first = res.responses[0].text
            details.update(followed_up=True, raw=first, follow_up=res.response.text)
            expl = expl or " ".join(" ".join(b.split()) for b, _ in tag_bodies(first, explanation_tag) if b.strip())
        return label, expl, "parsed", details
    details["parse_error"] = res.error
    if fallback == "option_scores":
        sc = await llm.score_fallback(req.messages, ["0", "1"], prefix="<label>", tag=req.tag)
        details["option_probs"] = sc.probs
        return int(sc.best()), "", "option_scores", details
    return None, "", "unparsed", details


async def zero_shot(example: FaithExample, llm: Calls, config: ZeroShotConfig) -> Judgement:
    prompt, fit = await fit_prompt(llm, config.template_name(), {"doc": example.document, "summary": example.summary},
                                   max_new_tokens=answer_room(config.max_new_tokens, config.label_retry),
                                   policy=config.truncate, tag=example.id)
    (req,) = config.requests(example, prompt, 1, "zero-shot")
    label, expl, source, details = await label_with_fallback(llm, req, config.fallback, retry=config.label_retry,
                                                             follow_up=config.follow_up)
    return Judgement(example_id=example.id, label=label, explanation=expl, parsed=source == "parsed",
                     label_source=source, details={**details, **fit})


register(MethodSpec(name="zero-shot", paper="madisse", kind="faithfulness", config_cls=ZeroShotConfig,
                    judge=zero_shot, description="Zero-shot single LLM, MADISSE Table 26 prompt",
                    as_printed=(AsPrinted("the authors' prompts.py vs MADISSE's printed Table 26", (),
                                          (("prompts", "printed"),)),)))


@dataclass
class CoTConfig(ZeroShotConfig):
    template: str = "madisse/table27_cot"


register(MethodSpec(name="cot", paper="madisse", kind="faithfulness", config_cls=CoTConfig, judge=zero_shot,
                    description="Zero-shot chain of thought, MADISSE Table 27 prompt",
                    as_printed=(AsPrinted("the authors' prompts.py vs MADISSE's printed Table 27", (),
                                          (("prompts", "printed"),)),)))


@dataclass
class SelfConsistencyConfig(CoTConfig):
    samples: int = 41  # the code's --num_rep_cot (§6 also uses 41)


def majority(labels: list[int | None]) -> tuple[int | None, dict[int, int]]:
    """Majority of the readable labels, a tie going to faithful (the code's ``count(1) >= count(0)``); None
    when no label is readable."""
    counts = Counter(x for x in labels if x is not None)
    if not counts:
        return None, {}
    return (1 if counts[1] >= counts[0] else 0), dict(counts)


async def cot_samples(example: FaithExample, llm: Calls, config: SelfConsistencyConfig):
    """The ``samples`` chain-of-thought answers of ``example``: [(label, explanation, source, details)], fit."""

    prompt, fit = await fit_prompt(llm, config.template_name(), {"doc": example.document, "summary": example.summary},
                                   max_new_tokens=answer_room(config.max_new_tokens, config.label_retry),
                                   policy=config.truncate, tag=example.id)
    reqs = config.requests(example, prompt, config.samples, "self-consistency")
    return list(await asyncio.gather(*(label_with_fallback(llm, r, config.fallback, retry=config.label_retry,
                                                           follow_up=config.follow_up) for r in reqs))), fit


async def self_consistency(example: FaithExample, llm: Calls, config: SelfConsistencyConfig) -> Judgement:
    results, fit = await cot_samples(example, llm, config)
    labels = [r[0] for r in results]
    label, counts = majority(labels)
    expl = next((r[1] for r in results if r[0] == label and r[1]), "")
    return Judgement(example_id=example.id, label=label, explanation=expl, parsed=label is not None,
                     label_source="majority" if label is not None else "unparsed",
                     details={"sample_labels": labels, "sample_sources": [r[2] for r in results], "counts": counts,
                              **fit})


register(MethodSpec(name="self-consistency", paper="madisse", kind="faithfulness", config_cls=SelfConsistencyConfig,
                    judge=self_consistency,
                    description="Self-consistency: n sampled chains of thought (Table 27), majority vote"))
