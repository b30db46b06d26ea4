"""GovReport and SQuALITY (score-labelled long-document benchmarks of FacTax Table 2): loaders on small
synthetic files in the published formats, the Pearson path of the metrics and tables, and FacTax-WD end
to end on the tiny model."""

import csv
import json

import pytest
from scipy import stats

from sumjudge.data import long_factuality, registry
from sumjudge.data.error_taxonomy import ADDITION, ENTITY, PREDICATE
from sumjudge.data.sources import DataFormatError, DataMissingError
from sumjudge.judges.base import Judgement
from sumjudge.run.metrics import faithfulness_metrics


def _report(topic: str, n: int) -> str:
    return " ".join(f"The {topic} office reviewed program {i} and reported that funding rose by {i} percent in "
                    f"fiscal year {2000 + i}." for i in range(n))


def write_govreport(raw, *, scores=(1.0, 0.75, 0.4), doc_sentences=5, drop_doc=False, with_types=True):
    d = raw / "govreport"
    d.mkdir(parents=True, exist_ok=True)
    rows = [{"dataset": "GovReport", "dataset_id": "ID_R45741", "model_type": m, "model_summary": f"Summary by {m}.",
             "relevance": 0.5, "factual_consistency": s} for m, s in zip(("BART (LEAD 1K)", "BART (LEAD 4K)"), scores)]
    rows.append({"dataset": "GovReport", "dataset_id": "ID_GAO-19-123", "model_type": "PEGASUS (LEAD 1K)",
                 "model_summary": "A GAO summary. It has two sentences.", "relevance": 0.7,
                 "factual_consistency": scores[2]})
    rows.append({"dataset": "arXiv", "dataset_id": "arxiv-1", "model_type": "BART (LEAD 1K)",
                 "model_summary": "A paper.", "relevance": 0.1, "factual_consistency": 0.2})
    # the published ".jsonl" is one JSON list
    (d / "robust_long_abstractive_human_annotation_dataset.jsonl").write_text(json.dumps(rows))
    docs = [{"id": "CRS_R45741", "document": _report("memorial", doc_sentences)},
            {"id": "gao_GAO-19-123", "report": ["Section one text.", _report("audit", doc_sentences)]}]
    if drop_doc:
        docs = docs[:1]
    (d / "documents.jsonl").write_text("".join(json.dumps(x) + "\n" for x in docs))
    if with_types:
        ann = [{"a1": {"factual_error_type": ["GramE", "EntE"], "model": "BART (LEAD 1K)", "document_id": "ID_R45741"},
                "a2": {"factual_error_type": ["OutE"], "model": "BART (LEAD 1K)", "document_id": "ID_R45741"}}]
        (d / "annotation_data.jsonl").write_text(json.dumps(ann))


@pytest.fixture
def raw(tmp_path, monkeypatch):
    monkeypatch.setenv("SUMJUDGE_DATA_RAW", str(tmp_path / "raw"))
    return tmp_path / "raw"


def test_govreport_loader_joins_reports_scores_and_converted_error_types(raw):
    write_govreport(raw)
    assert registry.is_present("govreport")
    exs = registry.load("govreport")
    assert [e.id for e in exs] == ["govreport-R45741|BART (LEAD 1K)", "govreport-R45741|BART (LEAD 4K)",
                                   "govreport-GAO-19-123|PEGASUS (LEAD 1K)"]  # the arXiv row is not GovReport
    assert [e.score for e in exs] == [1.0, 0.75, 0.4] and all(e.label is None for e in exs)
    assert exs[0].document.startswith("The memorial office") and exs[2].document.startswith("Section one text.")
    # GramE -> Predicate, EntE -> Entity, OutE -> Addition (Appendix A), pooled over the annotators
    assert exs[0].error_types == sorted([PREDICATE, ENTITY, ADDITION]) and exs[1].error_types == []
    assert exs[0].meta["raw_error_types"] == {"a1": ["GramE", "EntE"], "a2": ["OutE"]}


def test_govreport_missing_report_and_bad_score_get_clear_errors(raw, tmp_path):
    write_govreport(raw, drop_doc=True)
    with pytest.raises(DataMissingError, match="GAO-19-123"):
        registry.load("govreport")
    write_govreport(raw, scores=(1.0, 1.5, 0.4))
    with pytest.raises(DataFormatError, match=r"row 2, field 'factual_consistency'.*outside"):
        registry.load("govreport")


def test_govreport_without_reports_says_how_to_get_them(raw):
    write_govreport(raw)
    (raw / "govreport" / "documents.jsonl").unlink()
    assert not registry.is_present("govreport")
    with pytest.raises(DataMissingError, match="fetch_govreport_documents"):
        registry.load("govreport")


def test_govreport_fetch_reads_the_parquet_export_split_by_split(raw, monkeypatch):
    """The Hub release is a loading-script dataset that `datasets` >= 4 refuses; the fetch reads its Parquet
    export, one split at a time, stops once every annotated report is found and keeps only those."""
    import datasets

    write_govreport(raw)
    (raw / "govreport" / "documents.jsonl").unlink()
    hub = {"test": [{"id": "CRS_R45741", "document": "Report R45741.", "summary": "s"},
                    {"id": "CRS_R99999", "document": "Not annotated.", "summary": "s"}],
           "validation": [{"id": "GAO_GAO-19-123", "document": "Report GAO-19-123.", "summary": "s"}],
           "train": []}
    calls = []

    def fake_load_dataset(path, *, revision, data_files, split):
        calls.append((path, revision, data_files, split))
        return hub[split]

    monkeypatch.setattr(datasets, "load_dataset", fake_load_dataset)
    monkeypatch.setattr(long_factuality.sources, "hf_dataset_commit", lambda repo, revision=None: "5eed")
    dest = long_factuality.fetch_govreport_documents()
    # the Parquet branch is resolved to its commit once, and that commit is read for every split
    assert calls == [("launch/gov_report", "5eed", {s: f"plain_text/{s}/*.parquet"}, s)
                     for s in ("test", "validation")]  # train is never downloaded
    assert long_factuality.govreport_provenance() == {"repo": "launch/gov_report",
                                                      "requested_revision": "refs/convert/parquet", "commit": "5eed"}
    rows = [json.loads(x) for x in dest.read_text().splitlines()]
    assert rows == [{"id": "GAO-19-123", "document": "Report GAO-19-123."}, {"id": "R45741", "document": "Report R45741."}]
    assert [e.document for e in registry.load("govreport")] == ["Report R45741."] * 2 + ["Report GAO-19-123."]


def write_squality(raw, *, bad_label=False):
    d = raw / "squality"
    (d / "fine").mkdir(parents=True, exist_ok=True)
    cols = ["Input.doc_id", "Input.model", "WorkerId", "Answer.semantic-similarity.label", "Input.annotated_summary"]
    unit = "<span class='claim-sent'>unit</span>"
    rows = [  # story 101, model bart_dpr: worker W1 3 yes / 1 no, worker W2 1 yes / 1 no -> (0.75 + 0.5) / 2
        *[("101", "bart_dpr", "W1", lab, unit) for lab in ("Yes", "Yes", "Yes", "No")],
        *[("101", "bart_dpr", "W2", lab, unit) for lab in ("Yes", "No")],
        ("101", "bart_dpr", "A1KPNR32IOU0TP", "No", unit),  # an annotator LongEval leaves out
        ("101", "bart_dpr", "W1", "No", "no marked unit"),  # not a claim-sent row
        *[("102", "human", "W3", lab, unit) for lab in ("Yes", "Yes")],  # 1.0
        *[("102", "bart", "W3", "Maybe" if bad_label else "No", unit)],  # 0.0
    ]
    with (d / "fine" / "batch1.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(cols)
        w.writerows(rows)
    responses = [
        {"passage-id": "101", "questions": {"0": {"bart-dpr": {"response": "Ferdinand explores the ship.",
                                                              "reviews": [{"correctness-rating": 6}]}}}},
        {"passage-id": "102", "questions": {"0": {"human": {"response": "A human summary of the story.",
                                                           "reviews": []},
                                                 "bart": {"response": "A model summary.", "reviews": []}}}}]
    (d / "all-human-responses.jsonl").write_text("".join(json.dumps(r) + "\n" for r in responses))
    stories = [{"metadata": {"passage_id": "101"}, "document": "Venus Is a Man's World. " * 50},
               {"metadata": {"passage_id": "102"}, "document": "Another story. " * 50}]
    (d / "test.jsonl").write_text("".join(json.dumps(s) + "\n" for s in stories))


def test_squality_fine_scores_follow_longeval(raw):
    assert not registry.is_present("squality")
    write_squality(raw)
    assert registry.is_present("squality")
    exs = {e.id: e for e in registry.load("squality")}
    assert set(exs) == {"squality-101|bart-dpr", "squality-102|human", "squality-102|bart"}
    e = exs["squality-101|bart-dpr"]
    assert e.score == pytest.approx((3 / 4 + 1 / 2) / 2) and e.label is None
    assert e.summary == "Ferdinand explores the ship." and e.document.startswith("Venus")
    assert e.meta["annotators"] == {"W1": {"yes": 3, "no": 1}, "W2": {"yes": 1, "no": 1}}
    assert e.meta["coarse_correctness"] == [6]
    assert exs["squality-102|human"].score == 1.0 and exs["squality-102|bart"].score == 0.0
    # keeping every annotator is a choice the caller can make
    kept = {x.id: x for x in long_factuality.load_squality(exclude=())}
    assert kept["squality-101|bart-dpr"].score == pytest.approx((3 / 4 + 1 / 2 + 0) / 3)


def test_squality_bad_label_names_file_row_and_column(raw):
    write_squality(raw, bad_label=True)
    with pytest.raises(DataFormatError, match=r"batch1.csv, row 12, field 'Answer.semantic-similarity.label'"):
        registry.load("squality")


def test_score_labelled_metrics_are_pearson_with_verdicts_as_0_1():
    from sumjudge.data.records import FaithExample

    human = [0.2, 0.9, 0.5, 1.0, 0.1]
    exs = [FaithExample(id=str(i), dataset="govreport", document="d", summary="s", label=None, score=h)
           for i, h in enumerate(human)]
    scores = [0.0, 1.0, 0.5, None, 0.25]
    js = [Judgement(example_id=str(i), label=None if s is None else int(s == 1.0), score=s)
          for i, s in enumerate(scores)]
    js[3] = Judgement(example_id="3", label=1, score=None)  # a verdict without a score (zero-shot, CoT)
    m = faithfulness_metrics(exs, js)
    method = [0.0, 1.0, 0.5, 1, 0.25]
    assert m["bacc"] is None and m["n"] == 5 and m["score_from_label"] == 1 and m["unparsed"] == 0
    assert m["pearson"]["r"] == pytest.approx(stats.pearsonr(human, method)[0])
    assert m["pearson"]["p"] == pytest.approx(stats.pearsonr(human, method)[1])
    js[0] = Judgement(example_id="0", label=None, score=None, parsed=False)  # unreadable: counted, left out
    m = faithfulness_metrics(exs, js)
    assert m["n"] == 4 and m["unparsed"] == 1
    assert m["pearson"]["r"] == pytest.approx(stats.pearsonr(human[1:], method[1:])[0])


def test_table2_reports_pearson_for_score_datasets_and_macro_mixes_domains(tmp_path):
    from sumjudge.papers.factax import tables as factax_tables

    def run_dir(name, rows, metrics):
        d = tmp_path / name
        d.mkdir()
        (d / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        (d / "metrics.json").write_text(json.dumps(metrics))
        return d

    lab = [{"example": {"label": y}, "judgement": {"label": p}} for y, p in ((1, 1), (0, 1), (0, 0), (1, 1))]
    qx = run_dir("qx", lab, {"bacc": 0.75, "n": 4, "unparsed": 0})
    gov = run_dir("gov", [], {"bacc": None, "n": 3, "unparsed": 0, "pearson": {"r": 0.4, "p": 0.7, "n": 3}})
    grid = {("FACTAX", "qags-xsum"): (json.loads((qx / "metrics.json").read_text()), qx),
            ("FACTAX", "govreport"): (json.loads((gov / "metrics.json").read_text()), gov)}
    rows = {(r["dataset"], r["metric"]): r for r in factax_tables.table2_rows(grid, "m")}
    assert rows[("govreport", "Pearson x100")]["reproduced"] == pytest.approx(40.0)
    assert rows[("govreport", "Pearson x100")]["paper"] == 40.54
    assert rows[("[Reports]", "Pearson x100")]["reproduced"] == pytest.approx(40.0)
    assert rows[("[XSum]", "BAcc %")]["reproduced"] == pytest.approx(75.0)
    assert rows[("[MACRO]", "BAcc %")]["reproduced"] == pytest.approx((75.0 + 40.0) / 2)


def test_factax_wd_on_long_reports_aligns_and_yields_a_score(raw, tiny_model_dir, tmp_path):
    from sumjudge.run.folder import RunConfig
    from sumjudge.run.runs import run

    write_govreport(raw, doc_sentences=80)  # ~1500 words: over align_over, so windows get aligned context
    rc = RunConfig(method="factax-wd", dataset="govreport", backend="hf", model=str(tiny_model_dir),
                   settings={"max_new_tokens": 8, "fallback": "option_scores"})
    m = run(rc, tmp_path / "gov", cache=tmp_path / "c", progress=False)
    assert m["bacc"] is None and m["n"] == 3 and m["unparsed"] == 0 and m["score_from_label"] == 0
    assert set(m["pearson"]) == {"r", "p", "n"} and m["pearson"]["n"] == 3
    rows = [json.loads(x) for x in (tmp_path / "gov" / "results.jsonl").read_text().splitlines()]
    for r in rows:
        j = r["judgement"]
        d = j["details"]
        assert j["score"] == pytest.approx(sum(w["correct"] for w in d["windows"]) / d["n_windows"])
        assert r["example"]["score"] is not None
    aligned = [w["alignment"] for r in rows for w in r["judgement"]["details"]["windows"]]
    assert aligned and all(a for a in aligned)  # every window judged against its own retrieved sentences
