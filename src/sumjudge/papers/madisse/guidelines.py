"""MADISSE guideline learning phase (Appendix A.1.1).

On a small labelled subset (the paper uses dev data, faithful and unfaithful), debate each example
with the current guidelines while the agents also state the guidelines they used. After each
example: the guidelines of agents whose final label was correct are added to the pool; those of
agents who were wrong are negated (one LLM call each) and added. The pool is given to the agents
from the next example on. Passes over the subset repeat until a whole pass adds no new guideline
(or ``max_passes``). The result is a guidelines file for ``madisse --set guidelines=FILE``.

Start from the paper's 13 guidelines (``start='paper'``) or from none (``start='empty'``).
Duplicates are recognised after normalisation (case, numbering, punctuation).
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from sumjudge.data.records import FaithExample
from sumjudge.judges.base import request
from sumjudge.llm.engine import Calls
from sumjudge.llm.parsing import xml_tag
from sumjudge.papers.madisse.protocol import MadisseConfig, guidelines_text, madisse
from sumjudge.prompts import load as load_template


@dataclass
class LearnedGuidelines:
    guidelines: list[str]
    log: list[dict] = field(default_factory=list)  # one entry per added guideline: example, agent, how
    passes: int = 0
    converged: bool = False

    def text(self) -> str:
        return "\n\n".join(f"{i}. {g}" for i, g in enumerate(self.guidelines, start=1))

    def save(self, path: str | Path) -> Path:
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(self.text() + "\n", encoding="utf-8")
        return p


def normalise(g: str) -> str:
    return re.sub(r"[^a-z0-9 ]+", "", re.sub(r"^\s*\d+[.)]\s*", "", g.lower())).strip()


def split_numbered(text: str) -> list[str]:
    items = [re.sub(r"^\s*\d+[.)]\s*", "", x).strip() for x in re.split(r"\n\s*\n|\n(?=\s*\d+[.)])", text)]
    return [x for x in items if x]


async def negate(llm: Calls, guideline: str, config: MadisseConfig, tag: str) -> str | None:
    prompt = load_template("madisse/a11_negate_guideline").render(guideline=guideline)
    resp = await llm.chat_parsed(request(prompt, max_new_tokens=128, seed=config.seed, tag=tag),
                                 lambda t: xml_tag(t, "guideline"), cut_parse=lambda t: xml_tag(t, "guideline", closed_only=True))
    return resp.value.strip() if resp.ok and resp.value.strip() else None


async def learn_guidelines(examples: list[FaithExample], llm: Calls, config: MadisseConfig, *,
                           max_passes: int = 3, start: str = "paper") -> LearnedGuidelines:
    if start not in ("paper", "empty"):
        raise ValueError(f"start must be 'paper' or 'empty', got {start!r}")
    pool = split_numbered(guidelines_text(config)) if start == "paper" else []
    seen = {normalise(g) for g in pool}
    result = LearnedGuidelines(guidelines=pool)
    for p in range(1, max_passes + 1):
        added = 0
        for ex in examples:
            cfg = replace(config, learning=True, sessions=1, guideline_list=tuple(result.guidelines))
            j = await madisse(ex, llm, cfg)
            final = j.details["sessions"][0]["rounds"][-1]
            stated = [(t, g) for t in final for g in t["guidelines_used"]]
            # the negations of one example are independent calls: they go to the backend together
            negated = await asyncio.gather(*(negate(llm, g, config, f"{ex.id}/learn{p}/negate")
                                             for t, g in stated if t["label"] != ex.label))
            negated_iter = iter(negated)
            for t, g in stated:
                correct = t["label"] == ex.label
                new = g if correct else next(negated_iter)
                if not new or normalise(new) in seen:
                    continue
                seen.add(normalise(new))
                result.guidelines.append(new)
                result.log.append({"pass": p, "example": ex.id, "agent": t["agent"], "agent_correct": correct,
                                   "stated": g, "added": new})
                added += 1
        result.passes = p
        if added == 0:
            result.converged = True
            break
    return result
