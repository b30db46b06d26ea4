"""TofuEval MeetingBank (faithfulness, sentence and summary level) and its ambiguity annotations.

TofuEval's CSVs carry labels but no documents. The ambiguity annotation file carries, for each
*unique* test summary sentence, the MeetingBank transcript (a list of speaker turns). We join the
two on the sentence text (``summ_sent`` == ``summary``).

Duplicates: 777 TofuEval rows hold 770 distinct sentence texts: 7 sentences were produced word for
word by two or three summarisers for the same document. Every such row keeps its own TofuEval
identity (doc_id, annotation_id, model, sent_idx) and label, and gets the document and ambiguity
annotation of its text; the loader checks that the document agrees and reports how many rows
shared a text (``meta['shared_text']``). Nothing is dropped.
"""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from pathlib import Path

from sumjudge.data import taxonomies
from sumjudge.data.readers import field, read_jsonl
from sumjudge.data.records import Ambiguity, FaithExample
from sumjudge.data.sources import DataFormatError, DataMissingError, resolve
from sumjudge.paths import raw_dir

TOFU_CSV = "tofueval/factual_consistency/{domain}_factual_eval_{split}.csv"
AMBIGUITY_JSON = "madisse/MeetingBank_ambiguity_annotated.json"
SAMPLE_JSON = "madisse/sample_data.json"
TOFU_COLUMNS = ("doc_id", "annotation_id", "topic", "model_name", "sent_idx", "summ_sent", "sent_label", "exp", "type")
YES_NO = {"yes": 1, "no": 0}


def read_tofueval_csv(path: Path) -> list[dict]:
    rows = []
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        missing = [c for c in TOFU_COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise DataFormatError(path, None, missing[0], f"missing column(s) {missing}")
        for i, r in enumerate(reader, start=2):  # row numbers as a spreadsheet shows them (header = 1)
            if None in r.values() or None in r:
                raise DataFormatError(path, i, None, "wrong number of fields (truncated or malformed line)")
            if r["sent_label"].strip().lower() not in YES_NO:
                raise DataFormatError(path, i, "sent_label", f"unknown label {r['sent_label']!r} (expected yes/no)")
            if not r["summ_sent"].strip():
                raise DataFormatError(path, i, "summ_sent", "empty summary sentence")
            try:
                r["sent_idx"] = int(r["sent_idx"])
            except ValueError:
                raise DataFormatError(path, i, "sent_idx", f"not an integer: {r['sent_idx']!r}") from None
            r["_row"] = i
            rows.append(r)
    if not rows:
        raise DataFormatError(path, None, None, "no rows")
    return rows


def error_types(raw: str) -> list[str]:
    return [t.strip() for t in raw.split(",") if t.strip()]


def read_ambiguity_file(path: Path) -> list[dict]:
    taxonomy = taxonomies.get(taxonomies.AMBIGUITY)
    out = []
    for i, r in read_jsonl(path):
        for key in ("doc", "summary", "ambiguity", "category", "sub-category", "explanation"):
            if key not in r:
                raise DataFormatError(path, i, key, "missing")
        doc = r["doc"]
        if isinstance(doc, list):
            doc = "\n".join(str(t) for t in doc)
        if not str(doc).strip():
            raise DataFormatError(path, i, "doc", "empty document")
        if not str(r["summary"]).strip():
            raise DataFormatError(path, i, "summary", "empty summary")
        if str(r["ambiguity"]) not in ("0", "1"):
            raise DataFormatError(path, i, "ambiguity", f"expected 0/1, got {r['ambiguity']!r}")
        subtypes = taxonomy.subcategory(r["sub-category"], r["category"], file=str(path), row=i)
        cats = taxonomy.category(r["category"], file=str(path), row=i)
        amb = str(r["ambiguity"]) == "1"
        if amb and not subtypes:
            raise DataFormatError(path, i, "sub-category", "ambiguous sentence without a type")
        out.append({"doc": doc, "summary": r["summary"], "_row": i,
                    "ambiguity": Ambiguity(ambiguous=amb, categories=cats, subtypes=subtypes,
                                           raw_category=r["category"], raw_subcategory=r["sub-category"],
                                           explanation=r["explanation"])})
    return out


def _documents_by_text(split: str) -> dict[str, dict]:
    if split != "test":
        raise DataMissingError(
            "TofuEval MeetingBank documents are mirrored for the test split only (inside the ambiguity annotation "
            "file). For the dev split, download the MeetingBank transcripts (Hugging Face dataset "
            "'huuuyeah/meetingbank') and join them on TofuEval's doc_id.")
    path = resolve(AMBIGUITY_JSON)
    by_text = {}
    for r in read_ambiguity_file(path):
        if r["summary"] in by_text:
            raise DataFormatError(path, r["_row"], "summary", "sentence text annotated twice")
        by_text[r["summary"]] = r
    return by_text


def load_meetingbank(split: str = "test", level: str = "summary") -> list[FaithExample]:
    path = resolve(TOFU_CSV.format(domain="meetingbank", split=split))
    rows = read_tofueval_csv(path)
    docs = _documents_by_text(split)
    doc_of_id: dict[str, str] = {}

    def document(r: dict) -> tuple[str, Ambiguity | None]:
        ann = docs.get(r["summ_sent"])
        if ann is None:
            raise DataFormatError(path, r["_row"], "summ_sent", "sentence has no document in the ambiguity annotation file")
        if doc_of_id.setdefault(r["doc_id"], ann["doc"]) != ann["doc"]:
            raise DataFormatError(path, r["_row"], "doc_id", "two different transcripts for one doc_id")
        return ann["doc"], ann["ambiguity"]

    return _examples("tofueval-meetingbank", rows, document, split, level)


def _examples(dataset: str, rows: list[dict], document, split: str, level: str) -> list[FaithExample]:
    """Sentence examples from TofuEval rows (``document(row) -> (text, ambiguity)``), or summaries of them."""
    text_count: dict[str, int] = defaultdict(int)
    for r in rows:
        text_count[r["summ_sent"]] += 1
    sent_examples = []
    for r in rows:
        doc, ambiguity = document(r)
        sid = f"{r['doc_id']}|{r['annotation_id']}|{r['model_name']}|{r['topic']}|{r['sent_idx']}"
        sent_examples.append(FaithExample(
            id=sid, dataset=dataset, document=doc, summary=r["summ_sent"],
            label=YES_NO[r["sent_label"].strip().lower()], level="sentence", error_types=error_types(r["type"]),
            ambiguity=ambiguity,
            meta={"doc_id": r["doc_id"], "annotation_id": r["annotation_id"], "model": r["model_name"],
                  "topic": r["topic"], "sent_idx": r["sent_idx"], "explanation": r["exp"],
                  "shared_text": text_count[r["summ_sent"]], "split": split}))
    if level == "sentence":
        return sent_examples
    if level != "summary":
        raise ValueError(f"level must be 'sentence' or 'summary', got {level!r}")
    return summaries_from_sentences(sent_examples, dataset)


MEDIASUM_DOCS = "mediasum/tofueval_documents.jsonl"
MEDIASUM_FULL = "mediasum/news_dialogue.json"
MEDIASUM_HELP = (
    "TofuEval MediaSum needs the MediaSum interview transcripts, which TofuEval does not redistribute. "
    "Download MediaSum's news_dialogue.json (https://github.com/zcgzcgzcg1/MediaSum, section 'Data'; about 4 GB) "
    "to data/raw/mediasum/news_dialogue.json and rerun: the {n} TofuEval documents are extracted once to "
    "data/raw/mediasum/tofueval_documents.jsonl (that small file alone is also enough).")


def load_mediasum(split: str = "test", level: str = "summary") -> list[FaithExample]:
    """TofuEval MediaSum: labels from the TofuEval CSV, transcripts from MediaSum joined on ``doc_id`` == MediaSum ``id``."""
    path = resolve(TOFU_CSV.format(domain="mediasum", split=split))
    rows = read_tofueval_csv(path)
    ids = sorted({r["doc_id"] for r in rows})
    docs = mediasum_documents(ids)
    missing = [i for i in ids if i not in docs]
    if missing:
        raise DataMissingError(f"{len(missing)} TofuEval MediaSum documents (e.g. {missing[0]}) are not in the MediaSum "
                               "file. " + MEDIASUM_HELP.format(n=len(ids)))
    return _examples("tofueval-mediasum", rows, lambda r: (docs[r["doc_id"]], None), split, level)


def mediasum_documents(ids: list[str]) -> dict[str, str]:
    """Transcripts ("SPEAKER: utterance" lines) for MediaSum ``ids``, from the extracted file or the full dump."""

    try:
        small = resolve(MEDIASUM_DOCS)
    except DataMissingError:
        try:
            full = resolve(MEDIASUM_FULL)
        except DataMissingError:
            raise DataMissingError(MEDIASUM_HELP.format(n=len(ids))) from None
        small = raw_dir() / MEDIASUM_DOCS
        extract_mediasum(full, set(ids), small)
    docs = {}
    with small.open(encoding="utf-8") as f:
        for i, line in enumerate(f, start=1):
            if line.strip():
                try:
                    d = json.loads(line)
                except json.JSONDecodeError:
                    raise DataFormatError(small, i, None, "not a JSON line (truncated file?)") from None
                docs[d["id"]] = d["document"]
    return docs


def extract_mediasum(full: Path, ids: set[str], dest: Path) -> int:
    """Stream MediaSum's news_dialogue.json (a JSON list of {id, utt, speaker, ...}) and keep ``ids``.
    Reads the list object by object, so the multi-gigabyte file never sits in memory at once."""
    decoder = json.JSONDecoder()
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_suffix(".part")
    found = 0
    with full.open(encoding="utf-8") as f, tmp.open("w", encoding="utf-8") as out:
        buf, pos, eof = "", 0, False
        while True:
            while pos < len(buf) and buf[pos] in " \t\r\n,[":
                pos += 1
            if pos < len(buf) and buf[pos] == "]":
                break
            try:
                obj, end = decoder.raw_decode(buf, pos)
            except json.JSONDecodeError:
                if eof:
                    if buf[pos:].strip():
                        raise DataFormatError(full, None, None, "truncated JSON list") from None
                    break
                chunk = f.read(1 << 22)
                eof = not chunk
                buf, pos = buf[pos:] + chunk, 0
                continue
            pos = end
            if obj.get("id") in ids:
                utt, spk = obj.get("utt") or [], obj.get("speaker") or []
                if len(utt) != len(spk):
                    raise DataFormatError(full, obj["id"], "speaker", "utt and speaker lists differ in length")
                doc = "\n".join(f"{s}: {u}" for s, u in zip(spk, utt))
                out.write(json.dumps({"id": obj["id"], "document": doc}) + "\n")
                found += 1
    tmp.replace(dest)
    return found


def load_sample_mediasum() -> list[FaithExample]:
    """The ambiguity release's sample data: one NPR interview with five summary sentences (label, error types)."""
    path = resolve(SAMPLE_JSON)
    out = []
    for i, r in read_jsonl(path):
        label = str(field(r, "label", path, i)).strip()
        if label not in ("0", "1"):
            raise DataFormatError(path, i, "label", f"expected 0/1, got {label!r}")
        doc = field(r, "doc", path, i)
        out.append(FaithExample(id=f"sample-{field(r, 'doc_id', path, i)}-{i}", dataset="sample-mediasum",
                                document="\n".join(doc) if isinstance(doc, list) else doc,
                                summary=field(r, "claim", path, i), label=int(label), level="sentence",
                                error_types=error_types(r.get("type", "")),
                                meta={"doc_id": r["doc_id"], "explanation": r.get("exp", ""), "row": i}))
    return out


def summaries_from_sentences(sents: list[FaithExample], dataset: str) -> list[FaithExample]:
    """Rebuild summaries: sentences grouped by (doc_id, annotation_id, model, topic), ordered by sent_idx;
    a summary is unfaithful if any of its sentences is. (TofuEval summaries are topic-focused: one
    annotation_id/model pair holds one summary per topic, so the topic is part of the key.)"""
    groups: dict[tuple, list[FaithExample]] = defaultdict(list)
    for s in sents:
        groups[(s.meta["doc_id"], s.meta["annotation_id"], s.meta["model"], s.meta["topic"])].append(s)
    out = []
    for (doc_id, ann_id, model, topic), ss in groups.items():
        ss.sort(key=lambda x: x.meta["sent_idx"])
        idx = [x.meta["sent_idx"] for x in ss]
        if len(set(idx)) != len(idx):
            raise DataFormatError(dataset, f"{doc_id}/{ann_id}/{model}", "sent_idx", f"repeated sentence index {idx}")
        labels = [x.label for x in ss if x.label is not None]
        if len(labels) != len(ss):  # every TofuEval sentence is labelled yes/no (read_tofueval_csv)
            raise DataFormatError(dataset, f"{doc_id}/{ann_id}/{model}", "sent_label", "a sentence without a label")
        out.append(FaithExample(
            id=f"{doc_id}|{ann_id}|{model}|{topic}", dataset=dataset, document=ss[0].document,
            summary=" ".join(x.summary for x in ss), label=int(all(labels)), level="summary",
            sentences=[x.summary for x in ss], sentence_labels=labels,
            error_types=sorted({t for x in ss for t in x.error_types}),
            meta={"doc_id": doc_id, "annotation_id": ann_id, "model": model, "topic": topic,
                  "sent_idx": idx, "split": ss[0].meta["split"]}))
    return out


def load_ambiguity() -> list[FaithExample]:
    """The 770 annotated MeetingBank sentences (unique texts), with faithfulness labels from TofuEval.

    Where a text occurs in several TofuEval rows their labels agree (checked); ``meta['rows']`` counts them."""
    sents = load_meetingbank("test", "sentence")
    by_text: dict[str, list[FaithExample]] = defaultdict(list)
    for s in sents:
        by_text[s.summary].append(s)
    out = []
    for text, ss in by_text.items():
        labels = {s.label for s in ss}
        if len(labels) != 1:
            raise DataFormatError(TOFU_CSV.format(domain="meetingbank", split="test"), ss[0].id, "sent_label",
                                  f"duplicate sentence with conflicting labels {sorted(labels, key=str)}")
        first = ss[0]
        out.append(FaithExample(id=first.id, dataset="meetingbank-ambiguity", document=first.document, summary=text,
                                label=first.label, level="sentence", error_types=first.error_types,
                                ambiguity=first.ambiguity, meta={**first.meta, "rows": len(ss)}))
    return out
