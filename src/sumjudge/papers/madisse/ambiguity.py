"""MADISSE ambiguity detectors (Section 4.3, Table 4). Label 1 = ambiguous, 0 = not ambiguous.

- ``ambiguity-sc``: self-consistency variation. It reads the ``samples`` chain-of-thought answers of the
  ``self-consistency`` baseline (41, temperature 1.0: the same requests, so a run after self-consistency
  draws nothing new); a summary is ambiguous when the percentages of "faithful" and "unfaithful" answers
  differ by less than ``threshold`` points (20 in the paper).
- ``ambiguity-taxonomy``: zero-shot with the ambiguity taxonomy (Table 31; ``prompts=code``: the code's
  closing, which also asks for the category, recorded per example).
- ``ambiguity-debate``: from a MADISSE debate with the same settings as a ``madisse`` run (its calls are
  cache hits, nothing is debated again): *debate disagreement* (no agent left its initial stance
  after all rounds; ``scores['disagreement']``) and *debate arguments* (Table 32 over the final arguments
  of every session's agents, as the code reads them; ``label`` and ``scores['arguments']``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from ...data.records import FaithExample
from ...llm.engine import LLM
from ...llm.parsing import tag_bodies
from ...prompts import load as load_template
from ...prompts import variant
from ...judges.base import Judgement, MethodSpec, fit_fields, register
from ...judges.baselines import SelfConsistencyConfig, ZeroShotConfig, cot_samples, label_with_fallback
from .protocol import MadisseConfig, Turn, guidelines_text, madisse, madisse_prompts


def taxonomy_text() -> str:
    return load_template("madisse/table31_taxonomy").body


@dataclass
class AmbiguitySCConfig(SelfConsistencyConfig):
    threshold: float = 20.0  # percentage points


async def ambiguity_sc(example: FaithExample, llm: LLM, config: AmbiguitySCConfig) -> Judgement:
    answers, fit = await cot_samples(example, llm, config)
    labels = [a[0] for a in answers if a[0] is not None]
    if not labels:
        return Judgement(example_id=example.id, label=None, parsed=False, label_source="unparsed",
                         details={"samples": config.samples, **fit})
    pf = 100 * sum(x == 1 for x in labels) / len(labels)
    gap = abs(pf - (100 - pf))
    return Judgement(example_id=example.id, label=int(gap < config.threshold), score=gap, label_source="variation",
                     details={"pct_faithful": pf, "readable": len(labels), "samples": config.samples, **fit})


def category(raw: str) -> str:
    """The ambiguity type an answer names in ``<category>`` (prompts=code asks for it); "" when absent."""
    return " ".join(b.strip() for b, closed in tag_bodies(raw, "category") if closed and b.strip())


async def ask_ambiguity(example: FaithExample, llm: LLM, config: ZeroShotConfig, template: str, fields: dict,
                        tag: str) -> tuple[int | None, str, str, dict]:
    name = variant(template, config.doc_first, config.prompts)
    fitted, fit = await fit_fields(llm, name, {"doc": example.document, "summary": example.summary, **fields},
                             max_new_tokens=config.max_new_tokens, policy=config.truncate, tag=example.id)
    (req,) = config.requests(example, load_template(name).render(**fitted), 1, tag)
    label, expl, source, details = await label_with_fallback(llm, req, config.fallback)
    return label, expl, source, {**details, "category": category(details.get("raw", "")), **fit}


@dataclass
class AmbiguityTaxonomyConfig(ZeroShotConfig):
    template: str = "madisse/table31_ambiguity_baseline"


async def ambiguity_taxonomy(example: FaithExample, llm: LLM, config: AmbiguityTaxonomyConfig) -> Judgement:
    label, expl, source, details = await ask_ambiguity(example, llm, config, config.template,
                                                       {"taxonomy": taxonomy_text()}, "ambiguity-taxonomy")
    return Judgement(example_id=example.id, label=label, explanation=expl, parsed=source == "parsed",
                     label_source=source, details=details)


@dataclass
class AmbiguityDebateConfig(MadisseConfig):
    arguments_template: str = "madisse/table32_ambiguity_arguments"


async def ambiguity_debate(example: FaithExample, llm: LLM, config: AmbiguityDebateConfig) -> Judgement:
    debate = await madisse(example, llm, config)
    sessions = debate.details["sessions"]
    disagreement = int(all(no_change for no_change in debate.details["no_agent_changed_stance"])
                       and not any(debate.details["consensus"])) if config.init == "stance" else None
    p = madisse_prompts(config)
    final = [Turn(**t) for s in sessions for t in s["rounds"][-1]]  # every session's final arguments

    def arguments(words: int | None) -> str:
        """The final arguments, each cut to its first ``words`` words (None: whole)."""
        return p.separator.join(p.argument(Turn(**{**asdict(t), "agent": j, "explanation": _first_words(
            t.explanation, words)}), me=0) for j, t in enumerate(final, start=1))

    asking = ZeroShotConfig(prompts=config.prompts, max_new_tokens=config.max_new_tokens,
                            temperature=config.temperature, top_p=config.top_p, seed=config.seed,
                            truncate=config.truncate, fallback=config.fallback, doc_first=config.doc_first)
    fields = {"guidelines": guidelines_text(config), "taxonomy": taxonomy_text()}
    words = await argument_words(llm, variant(config.arguments_template, config.doc_first, config.prompts), example,
                                 fields, final, arguments, asking)
    label, expl, source, details = await ask_ambiguity(example, llm, asking, config.arguments_template,
                                                       {"arguments": arguments(words), **fields}, "ambiguity-arguments")
    if words is not None:
        details["argument_words_kept"] = words
    return Judgement(example_id=example.id, label=label, explanation=expl, parsed=source == "parsed",
                     label_source=source, scores={"disagreement": disagreement, "arguments": label},
                     details={"debate_label": debate.label, **details})


def _first_words(text: str, words: int | None) -> str:
    return text if words is None else " ".join(text.split()[:words])


async def argument_words(llm: LLM, template: str, example: FaithExample, fields: dict, final: list[Turn],
                         arguments, config: ZeroShotConfig) -> int | None:
    """None when the whole arguments leave a quarter of the context for the document (which ``ask_ambiguity`` then
    cuts as its policy says); else, under the ``truncate`` policy, the most words of each final argument that do
    (agents that argue at length in a small context), so every agent keeps its argument's start and the document
    keeps some room. Under ``error`` the overflow is reported as it is."""
    from ...judges.base import user
    from ...llm.fitting import fit_to_context

    if config.truncate != "truncate" or not llm.context_length:
        return None
    tmpl = load_template(template)
    reserve = config.max_new_tokens + llm.context_length // 4  # the answer, and room for the document

    def prompt(words: int | None) -> list[dict[str, str]]:
        return user(tmpl.render(doc="", summary=example.summary, arguments=arguments(words), **fields))

    if await llm.fits(prompt(None), reserve):
        return None
    longest = max((len(t.explanation.split()) for t in final), default=0)
    return await fit_to_context(llm, prompt, longest, reserve) or 0


for _name, _cfg, _fn, _desc in (
        ("ambiguity-sc", AmbiguitySCConfig, ambiguity_sc, "Ambiguity: self-consistency variation (self-consistency's 41 samples)"),
        ("ambiguity-taxonomy", AmbiguityTaxonomyConfig, ambiguity_taxonomy,
         "Ambiguity: zero-shot with the taxonomy (Table 31)"),
        ("ambiguity-debate", AmbiguityDebateConfig, ambiguity_debate,
         "Ambiguity: debate disagreement and debate arguments (Table 32)")):
    register(MethodSpec(name=_name, paper="madisse", kind="ambiguity", config_cls=_cfg, judge=_fn, description=_desc))
