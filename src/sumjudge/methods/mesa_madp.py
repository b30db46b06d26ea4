"""MESA's multi-agent discussion protocol (MADP, Section 2.4, Figure 2) around one assessment step.

A moderator (the run's model) answers the step's prompt (the draft); ``challengers`` reviewers each
challenge and refine the draft from their own perspective, independently (their calls reach the backend
together); the moderator synthesises draft and refinements into the final answer, which is parsed like the
step's own answer (retried, then counted). MADP-S: every challenger is the run's model; MADP-M: challengers
cycle through ``challenger_models`` ("backend:model[@base_url]", engine companions on the same cache and
call log). The prompts are sumjudge's (``mesa/fig2_madp_*``): the paper publishes none.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any, Callable

from ..llm import ChatRequest
from ..llm.engine import LLM, Parsed
from ..prompts import render

# sumjudge's default perspectives (the paper names the aim, "identify and mitigate false positive or false
# negative detection", not the perspectives)
PERSPECTIVES = (
    "a sceptic who looks for false positives: instances or ratings that are not errors according to the criteria, "
    "or whose severity is overstated",
    "a completionist who looks for false negatives: error instances the draft overlooked, checked against the "
    "transcript",
    "a calibrator who checks that severities, ratings and certainties are consistent with the criteria and with "
    "each other",
)


def room(max_new_tokens: int, challengers: int) -> int:
    """Tokens the step prompt must leave free under MADP: the synthesis prompt carries the draft and every
    refinement (each up to ``max_new_tokens``) plus the protocol's own words."""
    return max_new_tokens * (challengers + 2) + 160 * (challengers + 1)


def challenger_llms(llm: LLM, n: int, models: list[str] | None) -> list[tuple[LLM, str]]:
    """(engine, model name) of each challenger: the run's model (MADP-S) or the companions in turn (MADP-M)."""
    if not models:
        return [(llm, llm.info.model)] * n
    return [(llm.companion(models[i % len(models)]), models[i % len(models)]) for i in range(n)]


async def discuss(llm: LLM, req: ChatRequest, parse: Callable[[str], Any], *, challengers: int,
                  perspectives: tuple[str, ...] | list[str], models: list[str] | None = None
                  ) -> tuple[Parsed, list[dict[str, str]]]:
    """(the parsed synthesis, the discussion: one entry per contribution with role, model and text)."""
    task = req.messages[-1]["content"]
    draft = await llm.chat(replace(req, tag=f"{req.tag}/madp-draft"))
    members = challenger_llms(llm, challengers, models)
    views = [perspectives[i % len(perspectives)] for i in range(challengers)]
    replies = await asyncio.gather(*(
        member.chat(replace(req, messages=[{"role": "user", "content": render(
            "mesa/fig2_madp_challenger", task=task, draft=draft.text, perspective=view)}],
            tag=f"{req.tag}/madp-challenger{i + 1}"))
        for i, ((member, _), view) in enumerate(zip(members, views))))
    refinements = "\n\n".join(f"--- Reviewer {i + 1} ({view}) ---\n{r.text}"
                              for i, (view, r) in enumerate(zip(views, replies)))
    final = await llm.chat_parsed(replace(req, messages=[{"role": "user", "content": render(
        "mesa/fig2_madp_moderator", task=task, draft=draft.text, refinements=refinements)}],
        tag=f"{req.tag}/madp-synthesis"), parse)
    log = [{"role": "moderator draft", "model": llm.info.model, "text": draft.text}]
    log += [{"role": f"challenger {i + 1}", "perspective": view, "model": name, "text": r.text}
            for i, ((_, name), view, r) in enumerate(zip(members, views, replies))]
    log.append({"role": "moderator synthesis", "model": llm.info.model, "text": final.response.text})
    return final, log
