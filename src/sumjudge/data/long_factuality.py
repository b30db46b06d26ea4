"""Long-document factuality benchmarks with score labels: GovReport (reports) and SQuALITY (stories),
evaluated by Pearson correlation.

Examples carry the human score in ``FaithExample.score`` (0-1, higher = more consistent) and no binary
``label`` (None): the papers evaluate these datasets by correlation only.

GovReport (Koh et al. 2022, "How Far are We from Robust Long Abstractive Summarization?"):
- ``govreport/robust_long_abstractive_human_annotation_dataset.jsonl``: a JSON list (or JSON lines) of
  ``dataset`` (GovReport | arXiv), ``dataset_id`` (e.g. ``ID_R45741``), ``model_type``, ``model_summary``,
  ``relevance``, ``factual_consistency`` (share of consistent summary sentences). Only GovReport rows are used.
- optional ``govreport/annotation_data.jsonl``: per annotator (``a1``, ``a2``, ...) the
  ``factual_error_type`` list (EntE, PredE, CircE, CorefE, LinkE, OutE, GramE), keyed by ``document_id`` and
  ``model``; converted to the registered error taxonomy (``taxonomies.ERRORS``) and pooled over annotators.
- the reports are not in these files: ``govreport/documents.jsonl`` (``id``, ``document``; ``report`` or
  ``reports`` also accepted) holds them. ``fetch_govreport_documents`` writes it from the GovReport release on
  Hugging Face (``launch/gov_report``, its Parquet export), keeping only the reports the annotations need.

SQuALITY (Krishna et al. 2023, LongEval; stories from Wang et al. 2022), under ``squality/``:
- ``fine/*.csv``: LongEval's FINE-grained judgements (Amazon Mechanical Turk result files): ``Input.doc_id``,
  ``Input.model``, ``WorkerId``, ``Answer.semantic-similarity.label`` (Yes / No per summary unit), and
  ``Input.annotated_summary`` (LongEval keeps the rows whose unit is marked ``claim-sent``).
- ``all-human-responses.jsonl``: the summaries, ``passage-id`` and ``questions`` -> ``"0"`` -> model ->
  ``response`` (and ``reviews`` with ``correctness-rating``, the COARSE scores, kept in ``meta``).
- ``test.jsonl``: the SQuALITY stories, ``metadata.passage_id`` and ``document``.
The score of a summary is LongEval's FINE score: per annotator, the share of its units judged supported
(Yes / (Yes + No)), averaged over annotators. LongEval's analysis leaves three annotators out
(``LONGEVAL_EXCLUDED_WORKERS``); so does this loader unless told otherwise.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Iterable

from sumjudge.data import sources, taxonomies
from sumjudge.data.readers import field, number, read_csv, read_json, read_jsonl
from sumjudge.data.records import FaithExample
from sumjudge.data.sources import DataFormatError, DataMissingError, fetch, resolve
from sumjudge.paths import raw_dir

GOVREPORT_ANNOTATIONS = "govreport/robust_long_abstractive_human_annotation_dataset.jsonl"
GOVREPORT_ERROR_TYPES = "govreport/annotation_data.jsonl"
GOVREPORT_DOCUMENTS = "govreport/documents.jsonl"
GOVREPORT_HF = "launch/gov_report"
GOVREPORT_HF_REVISION = "refs/convert/parquet"
GOVREPORT_HF_CONFIG = "plain_text"  # id, document, summary
SQUALITY_DIR = "squality"
SQUALITY_ORIGIN = ("github.com/martiansideofthemoon/longeval-summarization (data/squality_annotations: "
                   "squality_fine/*.csv, squality_coarse/all-human-responses.jsonl, squality_coarse/test.jsonl)")
LONGEVAL_EXCLUDED_WORKERS = ("A1KPNR32IOU0TP", "A8OTFKR8I2PL0", "A3DC192EMQSNUQ")
FINE_LABEL = "Answer.semantic-similarity.label"


def read_records(path: Path) -> list[tuple[int, dict]]:
    """(row number, object) from a JSON list or a JSON-lines file (Koh et al.'s ``.jsonl`` is one JSON list)."""
    with Path(path).open(encoding="utf-8") as f:
        head = f.read(256).lstrip()[:1]
    if head != "[":
        return read_jsonl(path)
    data = read_json(path)
    for i, r in enumerate(data, start=1):
        if not isinstance(r, dict):
            raise DataFormatError(path, i, None, f"expected a JSON object, got {type(r).__name__}")
    return list(enumerate(data, start=1))


def report_key(report_id: str) -> str:
    """A GovReport id as both files can spell it: ``ID_R45741``, ``CRS_R45741``, ``r45741`` -> ``R45741``."""
    key = str(report_id).strip().upper()
    for prefix in ("ID_", "CRS_", "GAO_"):
        if key.startswith(prefix):
            key = key[len(prefix):]
    return key


def _score(row: dict, names: Iterable[str], path: Path, i: int) -> float:
    name = next((n for n in names if n in row), None)
    if name is None:
        raise DataFormatError(path, i, "factual_consistency", "missing")
    v = number(row, name, path, i)
    if not 0.0 <= v <= 1.0:
        raise DataFormatError(path, i, name, f"score {v} outside [0, 1]")
    return v


def govreport_documents(path: Path, needed: set[str]) -> dict[str, str]:
    """Report text by ``report_key`` for the ``needed`` keys; an error lists the reports that are missing."""
    docs: dict[str, str] = {}
    for i, r in read_jsonl(path):
        key = report_key(field(r, "id", path, i))
        if key not in needed:
            continue
        text_field = next((f for f in ("document", "report", "reports", "text") if f in r), None)
        if text_field is None:
            raise DataFormatError(path, i, "document", "missing (expected document, report or reports)")
        text = r[text_field]
        docs[key] = " ".join(map(str, text)) if isinstance(text, list) else str(text)
    missing = sorted(needed - set(docs))
    if missing:
        raise DataMissingError(f"{path} lacks {len(missing)} of the {len(needed)} annotated GovReport reports "
                               f"(e.g. {', '.join(missing[:5])}); rerun fetch_govreport_documents() or add them")
    return docs


def govreport_error_types(path: Path | None) -> dict[tuple[str, str], dict[str, Any]]:
    """(report key, model) -> the error taxonomy's types pooled over annotators and the raw classes per annotator."""
    if path is None:
        return {}
    taxonomy = taxonomies.get(taxonomies.ERRORS)
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for i, r in read_records(path):
        for ann, a in r.items():
            if not isinstance(a, dict):
                raise DataFormatError(path, i, ann, "expected an object per annotator")
            key = (report_key(field(a, "document_id", path, f"{i}/{ann}")), str(field(a, "model", path, f"{i}/{ann}")))
            raw = [str(c).strip() for c in a.get("factual_error_type") or []]
            unknown = [c for c in raw if not taxonomy.knows("govreport", c)]
            if unknown:
                raise DataFormatError(path, f"{i}/{ann}", "factual_error_type", f"unknown class(es) {unknown}")
            slot = out.setdefault(key, {"types": set(), "raw": {}})
            slot["types"] |= set(taxonomy.convert("govreport", raw))
            slot["raw"][ann] = raw
    return out


def _optional(rel: str) -> Path | None:
    try:
        return resolve(rel)
    except DataMissingError:
        return None


def load_govreport() -> list[FaithExample]:
    path = resolve(GOVREPORT_ANNOTATIONS)
    rows = [(i, r) for i, r in read_records(path) if str(field(r, "dataset", path, i)).strip() == "GovReport"]
    if not rows:
        raise DataFormatError(path, None, "dataset", "no GovReport rows")
    needed = {report_key(field(r, "dataset_id", path, i)) for i, r in rows}
    docs_path = _optional(GOVREPORT_DOCUMENTS)  # data/raw, then the mirror
    if docs_path is None:
        raise DataMissingError(f"the GovReport reports are not in {raw_dir() / GOVREPORT_DOCUMENTS}; get them with "
                               "sumjudge.data.long_factuality.fetch_govreport_documents() (Hugging Face "
                               f"{GOVREPORT_HF}) or write that file with columns id, document")
    docs = govreport_documents(docs_path, needed)
    types = govreport_error_types(_optional(GOVREPORT_ERROR_TYPES))
    out = []
    for i, r in rows:
        key, model = report_key(r["dataset_id"]), str(field(r, "model_type", path, i))
        et = types.get((key, model))
        out.append(FaithExample(
            id=f"govreport-{key}|{model}", dataset="govreport", document=docs[key],
            summary=field(r, "model_summary", path, i), label=None, score=_score(r, ("factual_consistency",
                                                                                     "factual consistency"), path, i),
            error_types=sorted(et["types"]) if et else [],
            meta={"report_id": r["dataset_id"], "model": model, "relevance": r.get("relevance"), "row": i,
                  "raw_error_types": et["raw"] if et else None}))
    return out


def govreport_provenance(split: str = "test") -> dict | None:
    """Where the GovReport reports file came from (repository and commit), when ``data fetch`` wrote it."""
    return sources.read_provenance(_optional(GOVREPORT_DOCUMENTS))


def govreport_present() -> bool:
    return _optional(GOVREPORT_ANNOTATIONS) is not None and _optional(GOVREPORT_DOCUMENTS) is not None


def fetch_govreport_documents(dest: Path | None = None) -> Path:
    """Write the annotated GovReport reports to ``data/raw/govreport/documents.jsonl`` (id, document),
    reading the GovReport release through ``datasets`` (internet). Downloads the annotation files first."""
    path = fetch(GOVREPORT_ANNOTATIONS)
    fetch(GOVREPORT_ERROR_TYPES)
    needed = {report_key(r["dataset_id"]) for _, r in read_records(path) if r.get("dataset") == "GovReport"}
    dest = dest or raw_dir() / GOVREPORT_DOCUMENTS
    try:
        from datasets import load_dataset

        found: dict[str, str] = {}
        commit = sources.hf_dataset_commit(GOVREPORT_HF, GOVREPORT_HF_REVISION)
        for split in ("test", "validation", "train"):
            # The release is a loading-script dataset, which `datasets` >= 4 no longer runs; the Hub's Parquet
            # export of its plain_text configuration holds the same rows. One split is fetched at a time.
            files = {split: f"{GOVREPORT_HF_CONFIG}/{split}/*.parquet"}
            for row in load_dataset(GOVREPORT_HF, revision=commit or GOVREPORT_HF_REVISION, data_files=files,
                                    split=split):
                key = report_key(row["id"])
                if key in needed and key not in found:
                    text = next(row[f] for f in ("document", "report", "reports") if f in row)
                    found[key] = " ".join(map(str, text)) if isinstance(text, list) else str(text)
            if len(found) == len(needed):
                break
    except Exception as e:  # offline, renamed columns, ...
        raise DataMissingError(f"could not read the GovReport reports from Hugging Face {GOVREPORT_HF} "
                               f"({type(e).__name__}: {e}); write {dest} with columns id, document") from e
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_suffix(".part")
    with tmp.open("w", encoding="utf-8") as f:
        for key, text in sorted(found.items()):
            f.write(json.dumps({"id": key, "document": text}) + "\n")
    tmp.replace(dest)
    sources.write_provenance(dest, GOVREPORT_HF, GOVREPORT_HF_REVISION, commit)
    return dest


def _model(name: str) -> str:
    """LongEval spells model names with '-' in one file and '_' in another."""
    return re.sub(r"[-_]+", "-", str(name).strip().lower())


def squality_dir() -> Path:
    return raw_dir() / SQUALITY_DIR


def squality_present() -> bool:
    d = squality_dir()
    return (d / "test.jsonl").exists() and (d / "all-human-responses.jsonl").exists() and any(d.glob("fine/*.csv"))


def fine_scores(files: list[Path], exclude: Iterable[str] = LONGEVAL_EXCLUDED_WORKERS
                ) -> dict[tuple[str, str], dict[str, Any]]:
    """(passage id, model) -> FINE score (mean over annotators of Yes / (Yes + No)) and per-annotator counts."""
    counts: dict[tuple[str, str], dict[str, list[int]]] = {}
    excluded = set(exclude)
    for path in files:
        for i, r in read_csv(path, ("Input.doc_id", "Input.model", "WorkerId", FINE_LABEL)):
            if r["WorkerId"] in excluded:
                continue
            if "Input.annotated_summary" in r and "claim-sent" not in r["Input.annotated_summary"]:
                continue
            label = r[FINE_LABEL].strip().lower()
            if label not in ("yes", "no"):
                raise DataFormatError(path, i, FINE_LABEL, f"unknown label {r[FINE_LABEL]!r} (expected Yes/No)")
            key = (str(field(r, "Input.doc_id", path, i)).strip(), _model(field(r, "Input.model", path, i)))
            c = counts.setdefault(key, {}).setdefault(r["WorkerId"], [0, 0])
            c[0 if label == "yes" else 1] += 1
    return {key: {"score": sum(y / (y + n) for y, n in workers.values()) / len(workers),
                  "annotators": {w: {"yes": y, "no": n} for w, (y, n) in workers.items()}}
            for key, workers in counts.items()}


def load_squality(folder: Path | None = None, exclude: Iterable[str] = LONGEVAL_EXCLUDED_WORKERS
                  ) -> list[FaithExample]:
    d = Path(folder) if folder else squality_dir()
    fine = sorted(d.glob("fine/*.csv"))
    if not (fine and (d / "test.jsonl").exists() and (d / "all-human-responses.jsonl").exists()):
        raise DataMissingError(f"SQuALITY (LongEval) annotations are not in {d}: put fine/*.csv, "
                               f"all-human-responses.jsonl and test.jsonl there, from {SQUALITY_ORIGIN}")
    stories_path, responses_path = d / "test.jsonl", d / "all-human-responses.jsonl"
    stories = {}
    for i, r in read_jsonl(stories_path):
        pid = str(field(field(r, "metadata", stories_path, i), "passage_id", stories_path, i)).strip()
        stories[pid] = field(r, "document", stories_path, i)
    responses: dict[tuple[str, str], dict[str, Any]] = {}
    for i, r in read_jsonl(responses_path):
        pid = str(field(r, "passage-id", responses_path, i)).strip()
        question = field(field(r, "questions", responses_path, i), "0", responses_path, i)
        for model, resp in question.items():
            ratings = [rv.get("correctness-rating") for rv in resp.get("reviews", [])]
            responses[(pid, _model(model))] = {"text": field(resp, "response", responses_path, f"{i}/{model}"),
                                               "model": model, "coarse": [x for x in ratings if x is not None]}
    out = []
    for (pid, model), s in sorted(fine_scores(fine, exclude).items()):
        where = f"{pid}/{model}"
        if pid not in stories:
            raise DataFormatError(stories_path, where, "metadata.passage_id", "no story for this FINE-annotated passage")
        if (pid, model) not in responses:
            raise DataFormatError(responses_path, where, "response", "no summary for this FINE-annotated model")
        resp = responses[(pid, model)]
        out.append(FaithExample(
            id=f"squality-{pid}|{resp['model']}", dataset="squality", document=stories[pid], summary=resp["text"],
            label=None, score=s["score"],
            meta={"passage_id": pid, "model": resp["model"], "annotators": s["annotators"],
                  "coarse_correctness": resp["coarse"]}))
    return out

