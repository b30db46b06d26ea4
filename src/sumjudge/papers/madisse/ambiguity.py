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
from typing import Any

from sumjudge.data.records import FaithExample
from sumjudge.errors import ConfigError
from sumjudge.judges.base import Judgement, fit_fields
from sumjudge.llm.engine import Calls
from sumjudge.llm.parsing import tag_bodies
from sumjudge.papers.madisse.baselines import (
    SelfConsistencyConfig,
    ZeroShotConfig,
    answer_room,
    cot_samples,
    label_with_fallback,
)
from sumjudge.papers.madisse.protocol import MadisseConfig, Turn, fit_entries, guidelines_text, madisse, madisse_prompts
from sumjudge.prompts import load as load_template
from sumjudge.prompts import variant
from sumjudge.run.methods import MethodSpec, register
from sumjudge.run.metrics import MethodKind, binary_metrics, register_kind


def taxonomy_text() -> str:
    return load_template("madisse/table31_taxonomy").body


@dataclass
class AmbiguitySCConfig(SelfConsistencyConfig):
    threshold: float = 20.0  # percentage points


async def ambiguity_sc(example: FaithExample, llm: Calls, config: AmbiguitySCConfig) -> Judgement:
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


async def ask_ambiguity(example: FaithExample, llm: Calls, config: ZeroShotConfig, template: str, fields: dict,
                        tag: str) -> tuple[int | None, str, str, dict]:
    name = variant(template, config.doc_first, config.prompts)
    fitted, fit = await fit_fields(llm, name, {"doc": example.document, "summary": example.summary, **fields},
                             max_new_tokens=answer_room(config.max_new_tokens, config.label_retry),
                                   policy=config.truncate, tag=example.id)
    (req,) = config.requests(example, load_template(name).render(**fitted), 1, tag)
    label, expl, source, details = await label_with_fallback(llm, req, config.fallback, retry=config.label_retry,
                                                        follow_up=config.follow_up)
    return label, expl, source, {**details, "category": category(details.get("raw", "")), **fit}


@dataclass
class AmbiguityTaxonomyConfig(ZeroShotConfig):
    template: str = "madisse/table31_ambiguity_baseline"
    follow_up: str = "madisse/ambiguity_label_follow_up"


async def ambiguity_taxonomy(example: FaithExample, llm: Calls, config: AmbiguityTaxonomyConfig) -> Judgement:
    label, expl, source, details = await ask_ambiguity(example, llm, config, config.template,
                                                       {"taxonomy": taxonomy_text()}, "ambiguity-taxonomy")
    return Judgement(example_id=example.id, label=label, explanation=expl, parsed=source == "parsed",
                     label_source=source, details=details)


@dataclass
class AmbiguityDebateConfig(MadisseConfig):
    arguments_template: str = "madisse/table32_ambiguity_arguments"


async def ambiguity_debate(example: FaithExample, llm: Calls, config: AmbiguityDebateConfig) -> Judgement:
    debate = await madisse(example, llm, config)
    sessions = debate.details["sessions"]
    disagreement = int(all(no_change for no_change in debate.details["no_agent_changed_stance"])
                       and not any(debate.details["consensus"])) if config.init == "stance" else None
    p = madisse_prompts(config)
    final = [Turn(**t) for s in sessions for t in s["rounds"][-1]]  # every session's final arguments
    entries = [p.entry(Turn(**{**asdict(t), "agent": j}), me=0) for j, t in enumerate(final, start=1)]
    asking = ZeroShotConfig(prompts=config.prompts, max_new_tokens=config.max_new_tokens,
                            temperature=config.temperature, top_p=config.top_p, seed=config.seed,
                            truncate=config.truncate, fallback=config.fallback, doc_first=config.doc_first,
                            label_retry=config.label_retry, follow_up="madisse/ambiguity_label_follow_up")
    fields = {"guidelines": guidelines_text(config), "taxonomy": taxonomy_text()}
    arguments, cut = p.separator.join(f"{who}: {text}".rstrip() for who, text in entries), 0
    if config.truncate == "truncate" and llm.context_length:
        # arguments too long for the context (agents that argue at length, a small context) are each cut to the
        # same number of words, leaving the answer and a quarter of the context for the document
        tmpl = load_template(variant(config.arguments_template, config.doc_first, config.prompts))
        room = answer_room(config.max_new_tokens, config.label_retry) + llm.context_length // 4
        arguments, cut = await fit_entries(llm, tmpl, {"doc": "", "summary": example.summary, **fields}, p, entries,
                                           room, field="arguments")
    label, expl, source, details = await ask_ambiguity(example, llm, asking, config.arguments_template,
                                                       {"arguments": arguments, **fields}, "ambiguity-arguments")
    if cut:
        details["argument_words_cut"] = cut
    return Judgement(example_id=example.id, label=label, explanation=expl, parsed=source == "parsed",
                     label_source=source, scores={"disagreement": disagreement, "arguments": label},
                     details={"debate_label": debate.label, **details})


for _name, _cfg, _fn, _desc in (
        ("ambiguity-sc", AmbiguitySCConfig, ambiguity_sc, "Ambiguity: self-consistency variation (self-consistency's 41 samples)"),
        ("ambiguity-taxonomy", AmbiguityTaxonomyConfig, ambiguity_taxonomy,
         "Ambiguity: zero-shot with the taxonomy (Table 31)"),
        ("ambiguity-debate", AmbiguityDebateConfig, ambiguity_debate,
         "Ambiguity: debate disagreement and debate arguments (Table 32)")):
    register(MethodSpec(name=_name, paper="madisse", kind="ambiguity", config_cls=_cfg, judge=_fn, description=_desc))


def ambiguity_metrics(examples, judgements: list[Judgement]) -> dict[str, Any]:
    """Ambiguity detection against the human ambiguity labels. binary_report's positive class is label 0,
    so both sides are flipped: "positive" = ambiguous, FNR = missed ambiguous sentences. The label counts (``said``,
    ``gold``) are given back in the detectors' own labels, 1 = ambiguous, as the tables show them."""
    flip = (lambda v: None if v is None else 1 - v)
    flipped = [Judgement(example_id=j.example_id, label=flip(j.label), label_source=j.label_source,
                         scores={k: flip(v) for k, v in j.scores.items()}) for j in judgements]
    out = binary_metrics([flip(int(ex.ambiguity.ambiguous)) for ex in examples], flipped)
    for m in (out, *out.get("variants", {}).values()):
        for key in ("said", "gold"):
            if m.get(key) is not None:
                m[key] = {"1": m[key].get("0", 0), "0": m[key].get("1", 0)}
    return out


def needs_ambiguity_labels(method: str, dataset: str, examples: list) -> None:
    """An ambiguity detector runs on faithfulness examples that carry the human ambiguity labels."""
    if any(getattr(e, "ambiguity", None) is None for e in examples):
        raise ConfigError(f"method {method} needs ambiguity annotations; dataset {dataset} has none "
                          "(use meetingbank-ambiguity)")


# the ambiguity task: a kind of method of its own, judging faithfulness data with ambiguity labels
register_kind(MethodKind("ambiguity", ambiguity_metrics, data="faithfulness", check=needs_ambiguity_labels))
