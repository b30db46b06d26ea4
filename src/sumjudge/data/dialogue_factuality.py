"""Dialogue-summary factuality benchmarks: DiaSumFact and FacEval (summary level).

Error classes are converted to the registered error taxonomy (``taxonomies.ERRORS``); the raw classes stay in
``meta``. A summary is unfaithful (label 0) if any of its sentences carries an error (DiaSumFact) or
its ``w/ Error`` flag is set (FacEval).
"""

from __future__ import annotations

from sumjudge.data import taxonomies
from sumjudge.data.readers import field, read_csv, read_json, yes_no
from sumjudge.data.records import FaithExample
from sumjudge.data.sources import DataFormatError, resolve

DIASUMFACT_FILE = "diasumfact/annotations.json"
FACEVAL_FILE = "faceval/FacEval_human_result.csv"
NO_ERROR = "No Error"
FACEVAL_FLAGS = ("SubObjE", "ProE", "NegE", "ParE", "HalE", "OtherE")  # the file's error columns


def load_diasumfact() -> list[FaithExample]:
    taxonomy = taxonomies.get(taxonomies.ERRORS)
    path = resolve(DIASUMFACT_FILE)
    data = read_json(path)
    if not isinstance(data, dict):
        raise DataFormatError(path, None, None, "expected a JSON object keyed by dialogue id")
    out = []
    for did, d in data.items():
        utterances = field(d, "utterances", path, did)
        document = "\n".join(str(u) for u in utterances)
        for model, ann in field(d, "annotations", path, did).items():
            where = f"{did}/{model}"
            sents = sorted(field(ann, "sentence_annotations", path, where), key=lambda s: s["index"])
            sentences, labels, raw, types = [], [], [], []
            for s in sents:
                anns = field(s, "annotation", path, f"{where}#{s.get('index')}")
                classes = [a.get("error_class") for a in anns]
                for c in classes:
                    if c != NO_ERROR and not taxonomy.knows("diasumfact", c):
                        raise DataFormatError(path, f"{where}#{s['index']}", "error_class", f"unknown class {c!r}")
                errs = [c for c in classes if c != NO_ERROR]
                sentences.append(field(s, "sentence", path, f"{where}#{s['index']}"))
                labels.append(int(not errs))
                raw.append(errs)
                types += taxonomy.convert("diasumfact", errs)
                types += [t for a in anns if a.get("error_class") != NO_ERROR
                          and str(a.get("intrinsic/extrinsic", "")).strip().lower() == "extrinsic"
                          for t in taxonomy.extrinsic]
            out.append(FaithExample(
                id=f"diasumfact-{did}|{model}", dataset="diasumfact", document=document,
                summary=field(ann, "model_prediction", path, where), label=int(all(labels)), level="summary",
                sentences=sentences, sentence_labels=labels, error_types=sorted(set(types)),
                meta={"dialogue_id": did, "model": model, "source": d.get("dataset_name"), "query": d.get("query", ""),
                      "raw_error_classes": raw}))
    return out


def load_faceval() -> list[FaithExample]:
    taxonomy = taxonomies.get(taxonomies.ERRORS)
    path = resolve(FACEVAL_FILE)
    rows = read_csv(path, ("DocID", "Dialogue", "Model", "Summary", *FACEVAL_FLAGS, "w/ Error"))
    out = []
    for i, r in rows:
        raw = [f for f in FACEVAL_FLAGS if yes_no(r, f, path, i)]
        with_error = yes_no(r, "w/ Error", path, i)
        out.append(FaithExample(
            id=f"faceval-{r['DocID']}|{r['Model']}", dataset="faceval", document=field(r, "Dialogue", path, i),
            summary=field(r, "Summary", path, i), label=1 - with_error, level="summary",
            error_types=taxonomy.convert("faceval", raw),
            meta={"doc_id": r["DocID"], "model": r["Model"], "raw_error_flags": raw, "row": i,
                  "flags_agree": bool(raw) == bool(with_error)}))
    return out
