"""MESA's multi-agent discussion protocol (MADP, Section 2.4, Figure 2) around one assessment step.

A moderator (the run's model) answers the step's prompt (the draft); ``challengers`` agents each challenge
and refine the draft, independently (their calls reach the backend together); the moderator consolidates
draft and revisions into the final answer, which is parsed like the step's own answer (retried, then
counted). MADP-S: every challenger is the run's model; MADP-M: challengers cycle through
``challenger_models`` ("backend:model[@base_url]", engine companions on the same cache and call log).

``prompts="code"`` (default) is the authors' panel (``panel.py`` ``seek_brainstorming``, github.com/FKIRSTE/
coling2025-MESA @ adb7e6f): one round, agents told to challenge "the headstart draft" and write what
should be improved before their new draft, the step's system prompt as the task description
(``mesa/fig2_madp_*_system`` / ``*_user``). ``prompts="sumjudge"`` is sumjudge's earlier protocol:
challengers with distinct perspectives (``PERSPECTIVES``; the paper names their aim, "identify and
mitigate false positive or false negative detection") and a synthesis prompt (``mesa/fig2_madp_challenger``,
``fig2_madp_moderator``).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from typing import Any, Callable

from sumjudge.llm import ChatRequest
from sumjudge.llm.engine import LLM, Calls, Parsed
from sumjudge.prompts import load as load_template
from sumjudge.prompts import render

PERSPECTIVES = (
    "a sceptic who looks for false positives: instances or ratings that are not errors according to the criteria, "
    "or whose severity is overstated",
    "a completionist who looks for false negatives: error instances the draft overlooked, checked against the "
    "transcript",
    "a calibrator who checks that severities, ratings and certainties are consistent with the criteria and with "
    "each other",
)
# the step's system prompt the panel describes its task with, where the step itself sends none (Figures 3-5)
TASK_SYSTEM = "mesa/steps_system_as_run"


def room(max_new_tokens: int, challengers: int) -> int:
    """Tokens the step prompt must leave free under MADP: the consolidation prompt carries the draft and every
    revision (each up to ``max_new_tokens``) plus the protocol's own words."""
    return max_new_tokens * (challengers + 2) + 160 * (challengers + 1)


def challenger_llms(llm: Calls, n: int, models: list[str] | None) -> list[tuple[LLM, str]]:
    """(engine, model name) of each challenger: the run's model (MADP-S) or the companions in turn (MADP-M)."""
    if not models:
        return [(llm, llm.info.model)] * n
    return [(llm.companion(models[i % len(models)]), models[i % len(models)]) for i in range(n)]


def _chat(req: ChatRequest, system: str | None, user: str, tag: str) -> ChatRequest:
    msgs = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": user}]
    return replace(req, messages=msgs, tag=tag)


async def discuss(llm: Calls, req: ChatRequest, parse: Callable[[str], Any], *, challengers: int,
                  prompts: str = "code", perspectives: tuple[str, ...] | list[str] = PERSPECTIVES,
                  models: list[str] | None = None) -> tuple[Parsed, list[dict[str, str]]]:
    """(the parsed consolidation, the discussion: one entry per contribution with role, model and text)."""
    task = req.messages[-1]["content"]
    system = next((m["content"] for m in req.messages if m["role"] == "system"), None)
    draft = await llm.chat(replace(req, tag=f"{req.tag}/madp-draft"))
    members = challenger_llms(llm, challengers, models)
    if prompts == "code":
        described = system or load_template(TASK_SYSTEM).body
        asks = [_chat(req, render("mesa/fig2_madp_challenger_system", system=described),
                      render("mesa/fig2_madp_challenger_user", task=task, draft=draft.text),
                      f"{req.tag}/madp-challenger{i + 1}") for i in range(challengers)]
        views: list[str | None] = [None] * challengers
    else:
        views = [perspectives[i % len(perspectives)] for i in range(challengers)]
        asks = [_chat(req, None, render("mesa/fig2_madp_challenger", task=task, draft=draft.text, perspective=view),
                      f"{req.tag}/madp-challenger{i + 1}") for i, view in enumerate(views)]
    replies = await asyncio.gather(*(member.chat(a) for (member, _), a in zip(members, asks)))
    if prompts == "code":
        final_req = _chat(req, render("mesa/fig2_madp_moderator_system", system=described),
                          render("mesa/fig2_madp_moderator_user", task=task, draft=draft.text,
                                 refinements=json.dumps([r.text for r in replies], ensure_ascii=False)),
                          f"{req.tag}/madp-synthesis")
    else:
        refinements = "\n\n".join(f"--- Reviewer {i + 1} ({view}) ---\n{r.text}"
                                  for i, (view, r) in enumerate(zip(views, replies)))
        final_req = _chat(req, None, render("mesa/fig2_madp_moderator", task=task, draft=draft.text,
                                            refinements=refinements), f"{req.tag}/madp-synthesis")
    final = await llm.chat_parsed(final_req, parse)
    log = [{"role": "moderator draft", "model": llm.info.model, "text": draft.text}]
    log += [{"role": f"challenger {i + 1}", **({"perspective": view} if view else {}), "model": name, "text": r.text}
            for i, ((_, name), view, r) in enumerate(zip(members, views, replies))]
    log.append({"role": "moderator synthesis", "model": llm.info.model, "text": final.response.text})
    return final, log
