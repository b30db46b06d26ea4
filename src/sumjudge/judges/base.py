"""What every judge builds on: the Judgement record, requests, prompt fitting, seeds. The registry of methods is
``sumjudge.run.methods``; settings are parsed by ``judges.settings``."""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass, field
from typing import Any, Callable

from sumjudge.errors import ConfigError
from sumjudge.llm import ChatRequest, PromptTooLongError
from sumjudge.llm.engine import Calls
from sumjudge.llm.fitting import fit_to_context
from sumjudge.prompts import load as load_template


@dataclass
class Judgement:
    """One method's verdict on one example.

    ``label`` (1 faithful / 0 unfaithful) for faithfulness methods, ``score`` for scoring methods,
    ``scores`` for several aspects/types. ``parsed`` is False when the model's answer could not be
    read after the allowed retries: such examples carry ``label=None`` and are counted, never guessed.
    ``label_source`` says where a label came from ("parsed", "option_scores", ...).
    """

    example_id: str
    label: int | None = None
    score: float | None = None
    scores: dict[str, float | None] = field(default_factory=dict)
    explanation: str = ""
    parsed: bool = True
    label_source: str = "parsed"
    details: dict[str, Any] = field(default_factory=dict)
    usage: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


async def fit_prompt(llm: Calls, template: str, fields: dict[str, str], *, max_new_tokens: int, policy: str,
                     tag: str, shrink: str = "doc", system: str | None = None) -> tuple[str, dict[str, Any]]:
    """Render ``template`` so that prompt + ``max_new_tokens`` fit the model context (see ``fit_fields``)."""
    fitted, info = await fit_fields(llm, template, fields, max_new_tokens=max_new_tokens, policy=policy, tag=tag,
                                    shrink=shrink, system=system)
    return load_template(template).render(**fitted), info


async def fit_fields(llm: Calls, template: str, fields: dict[str, str], *, max_new_tokens: int, policy: str,
                     tag: str, shrink: str = "doc", system: str | None = None) -> tuple[dict[str, str], dict[str, Any]]:
    """The fields with which ``template`` fits the model context; if it would overflow, apply ``policy``:

    - ``error``: raise PromptTooLongError naming the example (the default);
    - ``truncate``: cut the end of field ``shrink`` (the document) to the most whole words that fit
      (``fit_to_context``); the run records how many words were cut.
    Tokens are counted as the backend will feed them (chat template included; ``system``: a system message sent
    before the prompt, counted with it). Backends without a tokenizer are not checked here: the server reports
    overflows.
    """
    tmpl = load_template(template)
    whole = with_system(system, tmpl.render(**fields))
    if await llm.fits(whole, max_new_tokens):
        return dict(fields), {}
    n, ctx = await llm.prompt_tokens(whole), llm.context_length
    if policy == "error":
        raise PromptTooLongError(tag, n, max_new_tokens, ctx)
    if policy != "truncate":
        raise ConfigError(f"unknown truncation policy {policy!r} (error | truncate)")
    kept, cut = await fit_document(llm, lambda d: tmpl.render(**{**fields, shrink: d}), fields[shrink],
                                   max_new_tokens=max_new_tokens, tag=tag, system=system)
    return {**fields, shrink: kept}, {"truncated_words": cut}


async def fit_document(llm: Calls, render: Callable[[str], str], document: str, *, max_new_tokens: int,
                       tag: str = "", system: str | None = None) -> tuple[str, int]:
    """The longest start of ``document`` (whole words) with which the prompt ``render(document)`` (one user
    message) and ``max_new_tokens`` fit the model context, and how many words were cut (0: it fits whole). For a
    judge's own prompts, written without a template file; PromptTooLongError when no start of it fits."""
    if await llm.fits(with_system(system, render(document)), max_new_tokens):
        return document, 0
    words = document.split()
    kept = await fit_to_context(llm, lambda k: with_system(system, render(" ".join(words[:k]))), len(words),
                                max_new_tokens)
    if not kept:
        raise PromptTooLongError(tag, await llm.prompt_tokens(with_system(system, render(document))), max_new_tokens,
                                 llm.context_length)
    return " ".join(words[:kept]), len(words) - kept


def user(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


def with_system(system: str | None, text: str) -> list[dict[str, str]]:
    """``text`` as the user message, after ``system`` as the system message where there is one."""
    return ([{"role": "system", "content": system}] if system is not None else []) + user(text)


def request(text: str, *, max_new_tokens: int, temperature: float = 0.0, seed: int | None = None,
            tag: str = "", sample_index: int = 0, top_p: float = 1.0) -> ChatRequest:
    return ChatRequest(messages=user(text), max_new_tokens=max_new_tokens, temperature=temperature, seed=seed,
                       tag=tag, sample_index=sample_index, top_p=top_p)


def derive_seed(*parts: object) -> int:
    """A sampling seed from the parts that name one call (run seed, example id, session, round, agent, ...):
    reproducible across reruns, distinct for every agent, round and session, so that sampled calls never
    share a cache entry by accident."""

    return int.from_bytes(hashlib.sha256("|".join(map(str, parts)).encode()).digest()[:4], "big") % (2 ** 31)


GREEDY_WARNING = ("temperature=0 (greedy): agents without stances send identical prompts and get one answer, "
                  "sessions that draw the same order repeat each other, and samples do not differ; the papers "
                  "sampled (the stance-initialised debate: temperature 1.0, top_p 0.9)")
