"""Dataset statistics (``sumjudge data stats NAME``): counts, label balance, lengths, categories."""

from __future__ import annotations

import statistics
from collections import Counter
from typing import Any

from sumjudge.data import registry, taxonomies
from sumjudge.data.meeting_errors import read_meeting_errors, restore_transcripts
from sumjudge.data.records import FaithExample, MeetingErrorExample, RatedExample, of_kind
from sumjudge.data.sources import DataFormatError


def _words(text: str) -> int:
    return len(text.split())


def faith_stats(examples: list[FaithExample]) -> dict[str, Any]:
    labels = Counter(ex.label for ex in examples)
    n = len(examples)
    out: dict[str, Any] = {
        "examples": n,
        "faithful": labels.get(1, 0),
        "unfaithful": labels.get(0, 0),
        "pct_unfaithful": round(100 * labels.get(0, 0) / n, 1) if n else None,
        "documents": len({ex.meta.get("doc_id", ex.document) for ex in examples}),
        "mean_document_words": round(statistics.mean(_words(ex.document) for ex in examples), 1) if n else None,
        "mean_summary_words": round(statistics.mean(_words(ex.summary) for ex in examples), 1) if n else None,
    }
    scores = [ex.score for ex in examples if ex.score is not None]
    if scores:  # score-labelled data (GovReport, SQuALITY): no binary label
        out["scored"] = len(scores)
        out["mean_score"] = round(statistics.mean(scores), 3)
        out["pct_unfaithful"] = None
    if any(ex.error_types for ex in examples):
        unmapped = taxonomies.get(taxonomies.ERRORS).unmapped
        if n_unmapped := sum(unmapped in ex.error_types for ex in examples):
            out["summaries_with_unmapped_error_class"] = n_unmapped
    if any(ex.sentences for ex in examples):
        out["sentences"] = sum(len(ex.sentences) for ex in examples)
    types = Counter(t for ex in examples for t in ex.error_types)
    if types:
        out["error_types"] = dict(types.most_common())
    amb = [ex.ambiguity for ex in examples if ex.ambiguity is not None]
    if amb:
        pos = [a for a in amb if a.ambiguous]
        out["ambiguous"] = len(pos)
        cats = Counter(c for a in pos for c in a.categories)
        out["ambiguity_categories"] = dict(cats.most_common())
        # shares of the category mentions (a sentence with two categories counts in both): the paper's Table 2
        # percentages are these (29/29/34/7 of 136 mentions; per sentence, over 131, they would add up to 104)
        mentions = sum(cats.values())
        out["ambiguity_category_mentions"] = mentions
        out["ambiguity_category_pct"] = {c: round(100 * k / mentions, 1) for c, k in cats.most_common()} if mentions else {}
        out["ambiguity_subtypes"] = dict(Counter(t for a in pos for t in a.subtypes).most_common())
        # a sentence whose stated category is not the category of its stated type: the category shares (Table 2)
        # count it under the category, the type counts (Table 24) under the type's category
        cat_of = {t: c for c, t in taxonomies.get(taxonomies.AMBIGUITY).types}
        out["ambiguity_type_outside_category"] = [
            {"category": "/".join(a.categories), "type": t, "type_category": cat_of.get(t)}
            for a in pos for t in a.subtypes if cat_of.get(t) not in a.categories]
    return out


def _mean_words(texts) -> float | None:
    texts = list(texts)
    return round(statistics.mean(_words(t) for t in texts), 1) if texts else None


def rated_stats(examples: list[RatedExample]) -> dict[str, Any]:
    groups = Counter(ex.group_id for ex in examples)
    aspects = sorted({a for ex in examples for a in ex.scores})
    return {
        "examples": len(examples), "groups": len(groups), "outputs_per_group": sorted(set(groups.values())),
        "systems": len({ex.meta.get("system") for ex in examples}),
        "mean_source_words": _mean_words(dict.fromkeys(ex.source for ex in examples)),
        "mean_output_words": _mean_words(ex.output for ex in examples),
        "aspects": {a: {"mean": round(statistics.mean(v), 3), "std": round(statistics.pstdev(v), 3),
                        "min": min(v), "max": max(v)}
                    for a in aspects for v in [[ex.scores[a] for ex in examples if a in ex.scores]]},
    }


def meeting_error_stats(examples: list[MeetingErrorExample], dropped: dict[str, int] | None = None) -> dict[str, Any]:
    types = list(examples[0].labels) if examples else []
    return {
        "examples": len(examples), "transcripts": len({ex.transcript for ex in examples}),
        "mean_transcript_words": _mean_words(dict.fromkeys(ex.transcript for ex in examples)),
        "mean_summary_words": _mean_words(ex.summary for ex in examples),
        "with_any_error": sum(any(v for v in ex.labels.values()) for ex in examples),
        "errors_per_type": {t: sum(ex.labels[t] == 1 for ex in examples) for t in types},
        "unlabelled_per_type": {t: sum(ex.labels[t] is None for ex in examples) for t in types},
        "transcripts_truncated": sum(bool(ex.meta.get("transcript_truncated")) for ex in examples),
        "transcripts_restored": sum(bool(ex.meta.get("transcript_restored")) for ex in examples),
        "dropped": dropped or {},
    }


def dataset_stats(name: str, level: str | None = None) -> dict[str, Any]:
    """The statistics of dataset ``name``, read through its own loader (DataMissingError when its files are not
    here). Only ``meeting-errors`` itself is read with its dropped rows counted: another meeting-error dataset
    (``mistek-qmsum``, ``meeting-file:PATH``) shares its kind, not its files."""
    spec = registry.get(name)
    if name == "meeting-errors":
        examples, dropped = read_meeting_errors()
        examples = restore_transcripts(examples)  # as every run reads them
        registry.check_examples(name, examples)
        body = meeting_error_stats(examples, dropped)
    else:  # the statistics of the records its own loader gives (one kind of record per dataset)
        loaded = registry.load(name, level=level)
        if (meeting := of_kind(loaded, MeetingErrorExample)) is not None:
            body = meeting_error_stats(meeting)
        elif (rated := of_kind(loaded, RatedExample)) is not None:
            body = rated_stats(rated)
        elif (faith := of_kind(loaded, FaithExample)) is not None:
            body = faith_stats(faith)
        else:
            raise DataFormatError(name, None, None, "examples of more than one kind")
    return {"dataset": name, "level": level or spec.levels[0], **body}
