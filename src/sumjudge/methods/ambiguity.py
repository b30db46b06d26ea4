"""MADISSE ambiguity detectors (Section 4.3, Table 4). Label 1 = ambiguous, 0 = not ambiguous.

- ``ambiguity-sc``: self-consistency variation. The zero-shot faithfulness judge (Table 26) is sampled
  ``samples`` times (41 in the paper); a summary is ambiguous when the percentages of "faithful" and
  "unfaithful" answers differ by less than ``threshold`` points (20 in the paper).
- ``ambiguity-taxonomy``: zero-shot with the ambiguity taxonomy (Table 31).
- ``ambiguity-debate``: from a MADISSE debate with the same settings as a ``madisse`` run (its calls are
  cache hits, nothing is debated again): *debate disagreement* (no agent left its initial stance
  after all rounds; ``scores['disagreement']``) and *debate arguments* (Table 32 over the agents'
  arguments; ``label`` and ``scores['arguments']``).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from ..data.records import FaithExample
from ..llm.engine import LLM
from ..prompts import load as load_template
from ..prompts import variant
from .base import Judgement, MethodSpec, fit_fields, register, request
from .baselines import ZeroShotConfig, label_with_fallback
from .madisse import MadisseConfig, Turn, _argument, guidelines_text, madisse


def taxonomy_text() -> str:
    return load_template("madisse/table31_taxonomy").body


@dataclass
class AmbiguitySCConfig(ZeroShotConfig):
    samples: int = 41
    threshold: float = 20.0  # percentage points
    temperature: float = 0.7


async def ambiguity_sc(example: FaithExample, llm: LLM, config: AmbiguitySCConfig) -> Judgement:
    name = variant(config.template, config.doc_first)
    fields, fit = fit_fields(llm, name, {"doc": example.document, "summary": example.summary},
                             max_new_tokens=config.max_new_tokens, policy=config.truncate, tag=example.id)
    prompt = load_template(name).render(**fields)
    reqs = [request(prompt, max_new_tokens=config.max_new_tokens, temperature=config.temperature, seed=config.seed,
                    sample_index=i, tag=f"{example.id}/ambiguity-sc#{i}") for i in range(config.samples)]
    answers = await asyncio.gather(*(label_with_fallback(llm, r, config.fallback) for r in reqs))
    labels = [a[0] for a in answers if a[0] is not None]
    if not labels:
        return Judgement(example_id=example.id, label=None, parsed=False, label_source="unparsed",
                         details={"samples": config.samples, **fit})
    pf = 100 * sum(x == 1 for x in labels) / len(labels)
    gap = abs(pf - (100 - pf))
    return Judgement(example_id=example.id, label=int(gap < config.threshold), score=gap, label_source="variation",
                     details={"pct_faithful": pf, "readable": len(labels), "samples": config.samples, **fit})


@dataclass
class AmbiguityTaxonomyConfig(ZeroShotConfig):
    template: str = "madisse/table31_ambiguity_baseline"


async def ambiguity_taxonomy(example: FaithExample, llm: LLM, config: AmbiguityTaxonomyConfig) -> Judgement:
    name = variant(config.template, config.doc_first)
    fields, fit = fit_fields(llm, name,
                             {"doc": example.document, "summary": example.summary, "taxonomy": taxonomy_text()},
                             max_new_tokens=config.max_new_tokens, policy=config.truncate, tag=example.id)
    req = request(load_template(name).render(**fields), max_new_tokens=config.max_new_tokens,
                  temperature=config.temperature, seed=config.seed, tag=f"{example.id}/ambiguity-taxonomy")
    label, expl, source, details = await label_with_fallback(llm, req, config.fallback)
    return Judgement(example_id=example.id, label=label, explanation=expl, parsed=source == "parsed",
                     label_source=source, details={**details, **fit})


@dataclass
class AmbiguityDebateConfig(MadisseConfig):
    arguments_template: str = "madisse/table32_ambiguity_arguments"


async def ambiguity_debate(example: FaithExample, llm: LLM, config: AmbiguityDebateConfig) -> Judgement:
    debate = await madisse(example, llm, config)
    sessions = debate.details["sessions"]
    disagreement = int(all(no_change for no_change in debate.details["no_agent_changed_stance"])
                       and not any(debate.details["consensus"])) if config.init == "stance" else None
    arguments = " ".join(_argument(Turn(**t), me=0) for rnd in sessions[0]["rounds"] for t in rnd)
    name = variant(config.arguments_template, config.doc_first)
    fields, fit = fit_fields(llm, name,
                             {"doc": example.document, "summary": example.summary, "arguments": arguments,
                              "guidelines": guidelines_text(config), "taxonomy": taxonomy_text()},
                             max_new_tokens=config.max_new_tokens, policy=config.truncate, tag=example.id)
    req = request(load_template(name).render(**fields), max_new_tokens=config.max_new_tokens,
                  temperature=config.temperature, seed=config.seed, tag=f"{example.id}/ambiguity-arguments")
    label, expl, source, details = await label_with_fallback(llm, req, config.fallback)
    return Judgement(example_id=example.id, label=label, explanation=expl, parsed=source == "parsed",
                     label_source=source, scores={"disagreement": disagreement, "arguments": label},
                     details={"debate_label": debate.label, "arguments_fit": fit, **details})


for _name, _cfg, _fn, _desc in (
        ("ambiguity-sc", AmbiguitySCConfig, ambiguity_sc, "Ambiguity: self-consistency variation (41 samples)"),
        ("ambiguity-taxonomy", AmbiguityTaxonomyConfig, ambiguity_taxonomy,
         "Ambiguity: zero-shot with the taxonomy (Table 31)"),
        ("ambiguity-debate", AmbiguityDebateConfig, ambiguity_debate,
         "Ambiguity: debate disagreement and debate arguments (Table 32)")):
    register(MethodSpec(name=_name, paper="madisse", kind="ambiguity", config_cls=_cfg, judge=_fn, description=_desc))
