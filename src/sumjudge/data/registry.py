"""Dataset registry: CLI names -> loaders, with where each comes from."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from sumjudge.data import (
    aggrefact,
    dialogue_factuality,
    long_factuality,
    meeting_errors,
    sources,
    summeval,
    tofueval,
    unieval,
    user_files,
)
from sumjudge.data.records import Example, FaithExample, MeetingErrorExample, RatedExample, of_kind
from sumjudge.data.sources import DataFormatError, DataMissingError, resolve
from sumjudge.errors import ConfigError, UnknownName
from sumjudge.registry import Registry


@dataclass(frozen=True)
class DatasetSpec:
    name: str
    kind: str  # "faithfulness" | "rated" | "meeting-errors"
    description: str
    source: str
    files: tuple[str, ...]
    levels: tuple[str, ...]
    splits: tuple[str, ...]
    loader: Callable[..., Sequence[Example]]  # (split=, level=) -> the examples, all of one kind
    present: Callable[[], bool] | None = None  # for datasets without pinned files: is a local copy there?
    fetch: Callable[[], object] | None = None  # for datasets without pinned files: download them
    correlations: tuple[str, ...] = ("spearman", "kendall")  # rated data: the paper's summary-level correlations
    provenance: Callable[[str], dict | None] | None = None  # downloaded from the Hub: repository and commit, by split
    domain: str | None = None  # the domain a user's dataset enters in the domain tables (file:...&domain=); None: built-in
    paper_column: str | None = None  # the paper's column shown beside it (file:...&paper=)


DATASETS: Registry[DatasetSpec] = Registry("dataset", plugins=False)  # every dataset is registered below
FILE_SUFFIXES = (".jsonl", ".json", ".csv", ".tsv", ".parquet")  # what ``file:PATH`` reads


def register(spec: DatasetSpec) -> None:
    DATASETS.add(spec.name, spec)


register(DatasetSpec(
    name="tofueval-meetingbank", kind="faithfulness",
    description="TofuEval MeetingBank test: 777 topic-focused summary sentences (267 summaries), yes/no faithfulness; "
                "transcripts from the ambiguity annotation file",
    source="github.com/amazon-science/tofueval + github.com/amazon-science/madisse",
    files=(tofueval.TOFU_CSV.format(domain="meetingbank", split="test"), tofueval.AMBIGUITY_JSON),
    levels=("summary", "sentence"), splits=("test",),
    loader=lambda split="test", level="summary": tofueval.load_meetingbank(split, level)))
register(DatasetSpec(
    name="meetingbank-ambiguity", kind="faithfulness",
    description="Ambiguity annotations of TofuEval MeetingBank: 770 unique MeetingBank test sentences, 131 ambiguous, 16-type taxonomy",
    source="github.com/amazon-science/madisse",
    files=(tofueval.AMBIGUITY_JSON, tofueval.TOFU_CSV.format(domain="meetingbank", split="test")),
    levels=("sentence",), splits=("test",),
    loader=lambda split="test", level="sentence": tofueval.load_ambiguity()))


_SEL = tofueval.TOFU_CSV.format
register(DatasetSpec(
    name="tofueval-mediasum", kind="faithfulness",
    description="TofuEval MediaSum: topic-focused summaries of NPR/CNN interviews, sentence labels; transcripts from "
                "MediaSum's news_dialogue.json (not redistributed: the loader says what to download)",
    source="github.com/amazon-science/tofueval + github.com/zcgzcgzcg1/MediaSum",
    files=(_SEL(domain="mediasum", split="test"), tofueval.MEDIASUM_DOCS), levels=("summary", "sentence"),
    splits=("test", "dev"), loader=lambda split="test", level="summary": tofueval.load_mediasum(split, level)))
register(DatasetSpec(
    name="sample-mediasum", kind="faithfulness",
    description="The ambiguity release's sample data: one NPR interview, five summary sentences with labels and error types",
    source="github.com/amazon-science/madisse", files=(tofueval.SAMPLE_JSON,), levels=("sentence",), splits=("test",),
    loader=lambda split="test", level="sentence": tofueval.load_sample_mediasum()))
for _d in ("cnndm", "xsum"):
    register(DatasetSpec(
        name=f"qags-{_d}", kind="faithfulness",
        description=f"QAGS-{'C' if _d == 'cnndm' else 'X'} (Wang'20 in AggreFact): {_d} summaries, faithful iff every "
                    "sentence was judged consistent by the annotator majority",
        source="github.com/maszhongming/UniEval (reproduce/data/fact)", files=(unieval.QAGS_FILES[_d],),
        levels=("summary",), splits=("test",), loader=lambda split="test", level="summary", _d=_d: unieval.load_qags(_d)))
register(DatasetSpec(
    name="summeval", kind="rated",
    description="SummEval: 100 CNN/DM documents x 16 systems, mean expert scores for coherence, consistency, fluency, "
                "relevance",
    source="github.com/neulab/BARTScore (SUM/SummEval/data.pkl)", files=(summeval.SUMMEVAL,), levels=("summary",),
    splits=("test",), loader=lambda split="test", level="summary": summeval.load_summeval()))
register(DatasetSpec(
    name="summeval-consistency", kind="faithfulness",
    description="SummEval consistency binarised as AggreFact does (consistent only when all experts gave 5)",
    source="github.com/neulab/BARTScore (SUM/SummEval/data.pkl)", files=(summeval.SUMMEVAL,), levels=("summary",),
    splits=("test",), loader=lambda split="test", level="summary": summeval.load_summeval_binary()))
register(DatasetSpec(
    name="summeval-consistency-sota", kind="faithfulness",
    description="SummEval consistency (binarised as above) of AggreFact-FtSota's SOTA systems only: T5, BART, Pegasus "
                "(300 summaries; FtSota's test cut has 200 and a PegasusDynamic system SummEval did not annotate)",
    source="github.com/neulab/BARTScore (SUM/SummEval/data.pkl)", files=(summeval.SUMMEVAL,), levels=("summary",),
    splits=("test",), loader=lambda split="test", level="summary": summeval.load_summeval_binary(sota_only=True)))
register(DatasetSpec(
    name="topical-chat", kind="rated",
    description="Topical-Chat (USR): 60 dialogue contexts x 6 responses with the fact, human scores for naturalness, "
                "coherence, engagingness, groundedness, understandability, overall",
    source="github.com/maszhongming/UniEval (reproduce/data/dialogue)", files=(unieval.TOPICAL_CHAT,),
    levels=("response",), splits=("test",), loader=lambda split="test", level="response": unieval.load_topical_chat(),
    correlations=("pearson", "spearman")))
register(DatasetSpec(
    name="diasumfact", kind="faithfulness",
    description="DiaSumFact: 475 dialogue summaries (QMSum, SAMSum), sentence error classes mapped to the error taxonomy",
    source="github.com/731935354/Dia-Sum-Fact", files=(dialogue_factuality.DIASUMFACT_FILE,), levels=("summary",),
    splits=("test",), loader=lambda split="test", level="summary": dialogue_factuality.load_diasumfact()))
register(DatasetSpec(
    name="faceval", kind="faithfulness",
    description="FacEval: 150 SAMSum dialogues x 5 summaries, error flags mapped to the error taxonomy",
    source="github.com/BinWang28/FacEval", files=(dialogue_factuality.FACEVAL_FILE,), levels=("summary",),
    splits=("test",), loader=lambda split="test", level="summary": dialogue_factuality.load_faceval()))
register(DatasetSpec(
    name="govreport", kind="faithfulness",
    description="GovReport (Koh et al. 2022): 204 long report summaries with the human share of consistent sentences "
                "(score 0-1, Pearson); error types converted to the error taxonomy where the annotation file is there",
    source="github.com/huankoh/How-Far-are-We-from-Robust-Long-Abstractive-Summarization + GovReport reports "
           f"(Hugging Face {long_factuality.GOVREPORT_HF})",
    files=(long_factuality.GOVREPORT_ANNOTATIONS,), levels=("summary",), splits=("test",),
    loader=lambda split="test", level="summary": long_factuality.load_govreport(),
    present=long_factuality.govreport_present, fetch=lambda: long_factuality.fetch_govreport_documents(),
    provenance=long_factuality.govreport_provenance))
register(DatasetSpec(
    name="squality", kind="faithfulness",
    description="SQuALITY (LongEval, Krishna et al. 2023): 60 story summaries with FINE-grained human consistency "
                "scores (0-1, Pearson)",
    source=long_factuality.SQUALITY_ORIGIN, files=(), levels=("summary",), splits=("test",),
    loader=lambda split="test", level="summary": long_factuality.load_squality(),
    present=long_factuality.squality_present))
register(DatasetSpec(
    name="meeting-errors", kind="meeting-errors",
    description="QMSum meeting summaries (5 summarisers) with yes/no labels mapped to eight error codes "
                "(IRR has no label here)",
    source="github.com/FKIRSTE/emnlp2024-Meeting-Sum-Metrics",
    files=(*(meeting_errors.FILE.format(model=m) for m in meeting_errors.MODELS), *sources.RESOURCES["qmsum"]),
    levels=("summary",), splits=meeting_errors.SPLITS,
    loader=lambda split="all", level="summary": meeting_errors.split_by_meeting(meeting_errors.load_meeting_errors(),
                                                                                split)))
register(DatasetSpec(
    name="aggrefact-errors", kind="faithfulness",
    description="AggreFact's error-type files (XSumFaith, FRANK, Goyal'21, CLIFF): labels from error_type, unified "
                "types converted to the error taxonomy, cut as the split",
    source="github.com/Liyan06/AggreFact @ f0654b2 (data/error_type_mapping)", files=sources.RESOURCES["aggrefact-errors"],
    levels=("summary",), splits=("test", "val", "all"),
    loader=lambda split="test", level="summary": user_files.load_aggrefact_errors(
        sources.resolve(sources.RESOURCES["aggrefact-errors"][0]).parent, split)))
register(DatasetSpec(
    name="mistek-qmsum", kind="meeting-errors",
    description="QMSum Mistake (Kirstein et al. 2025): per error type existence, annotator reasoning and 0-5 impact "
                "(Likert), all eight types; the authors' HumanJudgment/MistekQMSum.csv",
    source="github.com/FKIRSTE/coling2025-MESA (HumanJudgment/MistekQMSum.csv)",
    files=(meeting_errors.MISTEK_FILE,), levels=("summary",), splits=meeting_errors.SPLITS,
    loader=lambda split="all", level="summary": meeting_errors.split_by_meeting(meeting_errors.load_mistek_qmsum(),
                                                                                split)))
register(DatasetSpec(
    name="llm-aggrefact", kind="faithfulness",
    description="LLM-AggreFact (all benchmarks of the split); downloaded through `datasets` on first use",
    source="huggingface.co/datasets/lytang/LLM-AggreFact", files=(), levels=("summary",), splits=("test", "dev"),
    loader=lambda split="test", level="summary": aggrefact.load_llm_aggrefact(split),
    present=lambda: aggrefact.llm_aggrefact_local("test") is not None,
    fetch=lambda: [aggrefact.llm_aggrefact_file(s) for s in ("dev", "test")], provenance=aggrefact.llm_aggrefact_provenance))
for _k, _v in aggrefact.LLM_AGGREFACT_SUBSETS.items():
    register(DatasetSpec(
        name=f"llm-aggrefact-{_k}", kind="faithfulness", description=f"LLM-AggreFact {_v}",
        source="huggingface.co/datasets/lytang/LLM-AggreFact", files=(), levels=("summary",), splits=("test", "dev"),
        loader=lambda split="test", level="summary", _k=_k: aggrefact.load_llm_aggrefact(split, _k),
        present=lambda: aggrefact.llm_aggrefact_local("test") is not None, provenance=aggrefact.llm_aggrefact_provenance))
for _o in (None, "cnndm", "xsum", *aggrefact.SOTA_SOURCES):
    _src = _o if _o in aggrefact.SOTA_SOURCES else None
    register(DatasetSpec(
        name="aggrefact-sota" + (f"-{_o}" if _o else ""), kind="faithfulness",
        description="AggreFact-FtSota (FRANK, Polytope, SummEval, CLIFF, Goyal'21, Cao'22, Wang'20; SOTA models)"
                    + (f", {_o} part" if _o and not _src else "") + (f": {_src} only (a Table 2 column)" if _src else ""),
        source=aggrefact.AGGREFACT_SOTA_URL, files=(), levels=("summary",),  # aggre_fact_sota.csv or _final.csv
        splits=("test", "val"), present=lambda: aggrefact.aggrefact_sota_local() is not None,
        fetch=(lambda: sources.fetch(aggrefact.AGGREFACT_SOTA)) if _o is None else None,
        loader=lambda split="test", level="summary", _o=None if _src else _o, _src=_src: aggrefact.load_aggrefact_sota(
            split, _o, _src)))


def get(name: str) -> DatasetSpec:
    if name.startswith("file:"):
        _, opts = user_files.parse_file_spec(name)
        return DatasetSpec(name=name, kind="faithfulness", description="your own file", source=name, files=(),
                           levels=("summary",), splits=("test", "val", "train", "all") if opts.get("split") else ("test",),
                           loader=lambda split="test", level="summary": user_files.load_file_spec(name, split),
                           domain=opts.get("domain"), paper_column=opts.get("paper"))
    if name.startswith("aggrefact-errors:"):
        path = name.split(":", 1)[1]
        return DatasetSpec(name=name, kind="faithfulness", description="AggreFact error-type files (your copy)",
                           source=path, files=(), levels=("summary",), splits=("test", "val", "all"),
                           loader=lambda split="test", level="summary": user_files.load_aggrefact_errors(path, split))
    if name.startswith("meeting-file:"):
        path = name.split(":", 1)[1]
        return DatasetSpec(name=name, kind="meeting-errors", description="your own meeting-summary annotations",
                           source=name, files=(), levels=("summary",), splits=meeting_errors.SPLITS,
                           loader=lambda split="all", level="summary": meeting_errors.split_by_meeting(
                               meeting_errors.load_meeting_table(path), split))
    if name not in DATASETS:
        if name.lower().endswith(FILE_SUFFIXES) or Path(name).expanduser().exists():
            raise UnknownName(f"unknown dataset {name!r}: a file of your own is given as --dataset file:{name} "
                              "(options: docs/data.md)")
    return DATASETS.find(name)


def is_present(name: str) -> bool:
    """Whether the dataset's files are here (data/raw or the mirror), without trying a download."""

    spec = get(name)
    try:
        for f in spec.files:
            resolve(f)
    except DataMissingError:
        return False
    return spec.present is None or bool(spec.present())


def subset(examples: Sequence[Example], limit: int | None, seed: int = 0) -> list[Example]:
    """A seeded subset of ``limit`` examples that keeps what the metrics need, in the dataset's order.

    - rated examples (correlation per group): whole groups, drawn at random, until ``limit`` examples
      (a ``limit`` below one group's size: that many examples of one group);
    - labelled examples: stratified by label and, where annotated, ambiguity (each stratum keeps its
      share, at least one of each when ``limit`` allows), so balanced accuracy is defined even for
      small ``limit``;
    - otherwise: a random sample.
    ``limit`` None or >= the dataset size returns everything unchanged.
    """

    if limit is None or limit >= len(examples):
        return list(examples)
    rng = random.Random(seed)
    rated, faith = of_kind(examples, RatedExample), of_kind(examples, FaithExample)
    if rated is not None:
        groups: dict[str, list[int]] = {}
        for i, r in enumerate(rated):
            groups.setdefault(r.group_id, []).append(i)
        order = list(groups)
        rng.shuffle(order)
        if limit < len(groups[order[0]]):  # less than one group: part of one group (correlations are per group)
            return [examples[i] for i in sorted(rng.sample(groups[order[0]], limit))]
        chosen: list[int] = []
        for g in order:
            if len(chosen) >= limit:
                break
            chosen += groups[g]
        return [examples[i] for i in sorted(chosen)]
    if faith is not None:
        by_label: dict[object, list[int]] = {}
        for i, f in enumerate(faith):  # strata: label, and ambiguity where annotated
            by_label.setdefault((f.label, f.ambiguity.ambiguous if f.ambiguity else None), []).append(i)
        quotas = stratum_quotas({k: len(v) for k, v in by_label.items()}, limit)
        chosen = [i for k, idx in by_label.items() for i in rng.sample(idx, min(quotas[k], len(idx)))]
        return [examples[i] for i in sorted(chosen)]
    return [examples[i] for i in sorted(rng.sample(range(len(examples)), limit))]


def stratum_quotas(sizes: dict, limit: int) -> dict:
    """How many of each stratum a subset of exactly ``limit`` takes: shares by largest remainder, at least
    one of each stratum while ``limit`` allows, never more than a stratum holds."""
    total = sum(sizes.values())
    share = {k: limit * n / total for k, n in sizes.items()}
    quotas = {k: min(n, int(share[k])) for k, n in sizes.items()}
    for k in sorted(sizes, key=lambda k: -sizes[k])[:limit]:  # at least one of each stratum where possible
        quotas[k] = max(quotas[k], 1)
    while sum(quotas.values()) > limit:  # the at-least-one rule overshot: trim the largest quota
        quotas[max(quotas, key=lambda k: quotas[k])] -= 1
    while sum(quotas.values()) < limit:  # largest remainders first, where the stratum has room
        k = max((k for k in sizes if quotas[k] < sizes[k]), key=lambda k: share[k] - quotas[k])
        quotas[k] += 1
    return quotas


def load(dataset: str | DatasetSpec, *, split: str | None = None, level: str | None = None, limit: int | None = None,
         seed: int = 0, outside: int | None = None) -> list[Example]:
    """The examples of ``dataset`` (its name, or the spec a caller already resolved, which is not looked up again):
    ``limit`` of them (a seeded subset, see ``subset``) or all. ``outside``: only from the examples a load with
    ``limit=outside`` (same seed) leaves out, a held-out set disjoint from it (ConfigError when there are none)."""
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ConfigError(f"--limit {limit!r}: expected a whole number >= 1 (leave it out for every example)")
    spec = dataset if isinstance(dataset, DatasetSpec) else get(dataset)
    name = spec.name
    level = level or spec.levels[0]
    if level not in spec.levels:
        raise ConfigError(f"dataset {name} has levels {spec.levels}, not {level!r}")
    split = split or spec.splits[0]
    if split not in spec.splits:
        raise ConfigError(f"dataset {name} has splits {spec.splits}, not {split!r}")
    examples = spec.loader(split=split, level=level)
    check_examples(name, examples)
    if outside is not None:
        judged = {e.id for e in subset(examples, outside, seed)}
        examples = [e for e in examples if e.id not in judged]
        if not examples:
            raise ConfigError(f"dataset {name} ({split}, {level}): no examples are left out of a subset of {outside}; "
                              "a held-out set needs --limit below the dataset's size")
    return subset(examples, limit, seed)


REQUIRED_TEXT = {FaithExample: ("document", "summary"), RatedExample: ("source", "output"),
                 MeetingErrorExample: ("transcript", "summary")}


def check_examples(dataset: str, examples: Sequence[Example]) -> None:
    """Refuse examples whose text fields are empty, naming the dataset, the example and the field
    (a judge would otherwise be asked about nothing and its answer scored as if it meant something), and an
    empty dataset."""
    if not examples:
        raise DataFormatError(dataset, None, None, "no examples (an empty file, or every row filtered out)")
    seen: set[str] = set()
    for e in examples:
        if e.id in seen:
            raise DataFormatError(dataset, e.id, "id", "duplicate example id")
        seen.add(e.id)
        for f in REQUIRED_TEXT.get(type(e), ()):
            text = str(getattr(e, f) or "")
            if not text.strip():
                raise DataFormatError(dataset, e.id, f, "empty text; fix or drop this example")
            if "\x00" in text:
                raise DataFormatError(dataset, e.id, f, f"a NUL byte at character {text.index(chr(0)) + 1} "
                                                        "(binary data in a text field?); fix or drop this example")
