"""The other benchmarks: real counts on the mirror, label conversions, the restricted unpickler,
and the non-mirrored loaders on small synthetic files in their published formats."""

import csv
import json
import pickle
from collections import Counter

import pytest
from conftest import needs_mirror

from sumjudge.data import meeting_errors, registry, sources, summeval, tofueval, user_files
from sumjudge.data.error_taxonomy import ERROR_TYPES, UNMAPPED
from sumjudge.data.sources import DataFormatError, DataMissingError
from sumjudge.data.stats import dataset_stats


@needs_mirror
@pytest.mark.parametrize("name, n, unfaithful", [
    ("qags-cnndm", 235, 122), ("qags-xsum", 239, 123), ("diasumfact", 475, 290), ("faceval", 750, 294),
    ("sample-mediasum", 5, 2),
])
def test_faithfulness_counts(name, n, unfaithful):
    exs = registry.load(name)
    assert len(exs) == n and sum(e.label == 0 for e in exs) == unfaithful
    assert all(e.document.strip() and e.summary.strip() for e in exs)


@needs_mirror
def test_qags_label_is_all_sentences_consistent():
    exs = registry.load("qags-cnndm")
    assert all(e.label == int(e.meta["consistency"] == 1.0) for e in exs)
    assert {e.meta["consistency"] for e in registry.load("qags-xsum")} == {0.0, 1.0}


@needs_mirror
def test_summeval_and_topical_chat_shapes():
    se = registry.load("summeval")
    assert len(se) == 1600 and set(Counter(e.group_id for e in se).values()) == {16}
    assert all(set(e.scores) == set(summeval.SUMMEVAL_ASPECTS) and 1 <= e.scores["coherence"] <= 5 for e in se)
    tc = registry.load("topical-chat")
    assert len(tc) == 360 and len({e.group_id for e in tc}) == 60
    assert set(Counter(e.group_id for e in tc).values()) == {6}
    assert all(e.context for e in tc)
    assert Counter(round(e.scores["groundedness"], 2) for e in tc) == {0.0: 129, 0.33: 26, 0.67: 52, 1.0: 153}


@needs_mirror
def test_diasumfact_factax_mapping():
    exs = registry.load("diasumfact")
    assert sum(len(e.sentences) for e in exs) == 1340
    raw = Counter(c for e in exs for s in e.meta["raw_error_classes"] for c in s)
    assert raw == {"EntE": 256, "PredE": 106, "CorefE": 62, "CirE": 48, "Others": 42, "LinkE": 41}
    for e in exs:
        assert e.label == int(all(e.sentence_labels))
        assert set(e.error_types) <= set(ERROR_TYPES) | {UNMAPPED}
        if any("LinkE" in s for s in e.meta["raw_error_classes"]):
            assert "Predicate Error" in e.error_types
    assert Counter(e.meta["source"] for e in exs) == {"SAMSum": 295, "QMSum": 180}


@needs_mirror
def test_faceval_mapping_and_flag_consistency():
    exs = registry.load("faceval")
    types = Counter(t for e in exs for t in e.error_types)
    assert types["Entity Error"] == 120 and types["Coreference Error"] == 51 and types["Predicate Error"] == 47
    assert types["Circumstantial Error"] == 113 and types["Addition Error"] == 41 and types[UNMAPPED] == 30
    stats = dataset_stats("faceval")
    assert (stats["mean_document_words"], stats["mean_summary_words"]) == (98.5, 19.6)  # FacTax Table 1


@needs_mirror
def test_meeting_errors_mapping_and_dropped_rows():
    exs, dropped = meeting_errors.read_meeting_errors()
    assert len(exs) == 133 and sum(dropped.values()) == 175 - 133
    assert dropped["empty summary (GPT35)"] == 22
    assert all(e.labels["IRR"] is None for e in exs)  # MESA's irrelevance has no label in these files
    assert all(e.labels["OM"] is None for e in exs if e.meta["model"] == "Zephyr")
    assert all(e.labels["OM"] in (0, 1) for e in exs if e.meta["model"] != "Zephyr")
    assert set(exs[0].labels) == set(meeting_errors.ERROR_CODES)
    stats = dataset_stats("meeting-errors")
    assert stats["dropped"] == dropped and stats["unlabelled_per_type"]["IRR"] == 133


def test_restricted_unpickler_accepts_plain_types_and_refuses_anything_else(tmp_path):
    ok = tmp_path / "ok.pkl"
    ok.write_bytes(pickle.dumps({"d1": {"src": "x", "sys_summs": {"M1": {"sys_summ": "y", "scores": {"a": 1.0}}},
                                        "refs": ["r"], "t": (1, None, True, b"z")}}))
    assert summeval.safe_load(ok)["d1"]["t"] == (1, None, True, b"z")
    evil = tmp_path / "evil.pkl"
    evil.write_bytes(pickle.dumps({"x": Counter("ab")}))  # any class, even a harmless one, is refused
    with pytest.raises(DataFormatError, match="refusing to load collections.Counter"):
        summeval.safe_load(evil)

    class Boom:
        def __reduce__(self):
            return (print, ("pwned",))

    worse = tmp_path / "worse.pkl"
    worse.write_bytes(pickle.dumps(Boom()))
    with pytest.raises(DataFormatError, match="builtins.print"):
        summeval.safe_load(worse)
    cut = tmp_path / "cut.pkl"
    cut.write_bytes(ok.read_bytes()[:20])
    with pytest.raises(DataFormatError, match="truncated"):
        summeval.safe_load(cut)


@pytest.fixture
def raw(tmp_path, monkeypatch):
    monkeypatch.setenv("SUMJUDGE_DATA_RAW", str(tmp_path / "raw"))
    (tmp_path / "raw").mkdir()
    return tmp_path / "raw"


def test_llm_aggrefact_from_a_local_split(raw):
    d = raw / "llm-aggrefact"
    d.mkdir()
    rows = [{"dataset": "AggreFact-CNN", "doc": "The cat sat.", "claim": "A cat sat.", "label": 1},
            {"dataset": "AggreFact-CNN", "doc": "The dog ran.", "claim": "A cat ran.", "label": 0},
            {"dataset": "TofuEval-MeetB", "doc": "Council met.", "claim": "Council met twice.", "label": 0}]
    (d / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert len(registry.load("llm-aggrefact")) == 3
    cnn = registry.load("llm-aggrefact-cnn")
    assert [e.label for e in cnn] == [1, 0] and cnn[0].summary == "A cat sat."
    assert [e.label for e in registry.load("llm-aggrefact-meetingbank")] == [0]
    with pytest.raises(DataMissingError, match="no rows of AggreFact-XSum"):
        registry.load("llm-aggrefact-xsum")


def test_llm_aggrefact_missing_offline_says_what_to_do(raw, monkeypatch):
    import datasets

    def offline(*a, **k):
        raise ConnectionError("offline")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    monkeypatch.setattr(sources, "hf_dataset_commit", lambda repo, revision=None: None)  # the Hub cannot be asked
    with pytest.raises(DataMissingError, match="lytang/LLM-AggreFact.*dataset, doc, claim, label"):
        registry.load("llm-aggrefact", split="dev")


def test_llm_aggrefact_download_is_pinned_to_a_commit_recorded_beside_the_file_and_in_the_run(raw, monkeypatch,
                                                                                                tmp_path):
    import datasets

    from sumjudge.data import aggrefact
    from sumjudge.run.folder import RunConfig
    from sumjudge.run.runs import run

    calls = []
    monkeypatch.setattr(sources, "hf_dataset_commit", lambda repo, revision=None: "c0ffee" if revision is None else revision)

    def hub(path, *, split, revision):
        calls.append((path, split, revision))
        return [{"dataset": "AggreFact-CNN", "doc": "The cat sat on the mat.", "claim": "A cat sat.", "label": 1},
                {"dataset": "AggreFact-CNN", "doc": "The dog ran.", "claim": "A dog flew.", "label": 0}]

    monkeypatch.setattr(datasets, "load_dataset", hub)
    path = aggrefact.llm_aggrefact_file("test")
    assert calls == [("lytang/LLM-AggreFact", "test", "c0ffee")]  # the resolved commit is what is downloaded
    assert aggrefact.llm_aggrefact_provenance("test") == {"repo": "lytang/LLM-AggreFact", "requested_revision": "main",
                                                          "commit": "c0ffee"}
    assert path.exists()
    from sumjudge.llm import make_llm
    from sumjudge.llm.scripted import ScriptedBackend

    llm = make_llm(ScriptedBackend().add(".", "<label>1</label>"), no_cache=True)
    run(RunConfig(method="zero-shot", dataset="llm-aggrefact-cnn", backend="scripted"), tmp_path / "r", llm=llm,
        progress=False)
    cfg = json.loads((tmp_path / "r" / "config.json").read_text())
    assert cfg["dataset_provenance"]["commit"] == "c0ffee"


def test_aggrefact_sota_split_by_cut_and_origin(raw):
    d = raw / "aggrefact"
    d.mkdir()
    with (d / "aggre_fact_sota.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["", "dataset", "origin", "id", "doc", "summary", "model_name", "label", "cut", "DAE"])
        w.writerow([0, "FRANK", "cnndm", "a", "doc a", "sum a", "BART", 1, "test", 0.9])
        w.writerow([1, "Wang20", "xsum", "b", "doc b", "sum b", "T5", 0, "test", 0.1])
        w.writerow([2, "CLIFF", "xsum", "c", "doc c", "sum c", "Pegasus", 1, "val", 0.5])
    assert [e.meta["group"] for e in registry.load("aggrefact-sota")] == ["FRANK", "Wang20"]
    assert [e.label for e in registry.load("aggrefact-sota-xsum")] == [0]
    assert [e.meta["cut"] for e in registry.load("aggrefact-sota", split="val")] == ["val"]


def test_aggrefact_sota_missing_names_the_download(raw):
    with pytest.raises(DataMissingError, match="Liyan06/AggreFact"):
        registry.load("aggrefact-sota")


def test_generic_file_with_column_mapping(tmp_path):
    p = tmp_path / "mine.csv"
    p.write_text("article,claim,verdict,key\nDoc one.,Sum one.,yes,k1\nDoc two.,Sum two.,no,k2\n")
    spec = f"file:{p}?document=article&summary=claim&label=verdict&id=key"
    exs = registry.load(spec)
    assert [(e.id, e.label, e.document) for e in exs] == [("k1", 1, "Doc one."), ("k2", 0, "Doc two.")]
    j = tmp_path / "mine.jsonl"
    j.write_text(json.dumps({"document": "d", "summary": "s", "label": "ok"}) + "\n")
    assert registry.load(f"file:{j}?labels=ok:1,bad:0")[0].label == 1
    with pytest.raises(DataFormatError, match="mine.jsonl, row 1, field 'label': unknown label 'ok'"):
        registry.load(f"file:{j}")
    with pytest.raises(DataFormatError, match="field 'colour'"):
        user_files.parse_file_spec(f"file:{j}?colour=red")


@pytest.mark.parametrize("content, message", [
    ("document,summary\nd,s\n", "missing column(s) ['label']"),
    ("document,summary,label\nd,,1\n", "row 2, field 'summary': empty"),
    ("document,summary,label\nd,s,1\nd2,s2\n", "row 3: 2 fields for 3 columns"),
    ("document,summary,label\nd,s,maybe\n", "row 2, field 'label': unknown label 'maybe'"),
])
def test_generic_bad_input_names_file_row_field(tmp_path, content, message):
    p = tmp_path / "bad.csv"
    p.write_text(content)
    with pytest.raises(DataFormatError, match=message.replace("[", r"\[").replace("]", r"\]").replace("(", r"\(")
                       .replace(")", r"\)")):
        registry.load(f"file:{p}")


@needs_mirror
def test_tofueval_mediasum_route(raw):
    with pytest.raises(DataMissingError, match="news_dialogue.json"):
        registry.load("tofueval-mediasum")
    import csv as _csv

    from sumjudge.data.sources import resolve

    rows = list(_csv.DictReader(resolve(tofueval.TOFU_CSV.format(domain="mediasum", split="test")).open()))
    ids = sorted({r["doc_id"] for r in rows})
    dump = [{"id": i, "program": "NPR", "utt": [f"Hello from {i}.", "Thanks."], "speaker": ["HOST", "GUEST"]}
            for i in ids] + [{"id": "CNN-0", "utt": ["not needed"], "speaker": ["X"]}]
    d = raw / "mediasum"
    d.mkdir()
    (d / "news_dialogue.json").write_text(json.dumps(dump, indent=1))
    sents = registry.load("tofueval-mediasum", level="sentence")
    assert len(sents) == len(rows) and sents[0].document.startswith("HOST: Hello from")
    assert (d / "tofueval_documents.jsonl").exists()  # extracted once
    (d / "news_dialogue.json").unlink()
    summ = registry.load("tofueval-mediasum")  # the small file alone is enough
    assert sum(len(s.sentences) for s in summ) == len(rows)


@needs_mirror
def test_paper_tables_put_the_papers_numbers_beside_ours():
    from sumjudge.papers.factax import dataset_tables as factax_t
    from sumjudge.papers.madisse import dataset_tables as madisse_t
    from sumjudge.papers.mesa import dataset_tables as mesa_t
    from sumjudge.results import dataset_tables

    t2 = madisse_t.madisse_table2().set_index("statistic")
    assert (t2.loc["annotated_sentences", "paper"], t2.loc["annotated_sentences", "ours"]) == (770, 770)
    assert (t2.loc["ambiguous_sentences", "paper"], t2.loc["ambiguous_sentences", "ours"]) == (131, 131)
    f1 = factax_t.factax_table1().set_index("dataset")
    assert f1.loc["diasumfact", ["paper_doc_len", "ours_doc_len", "paper_summaries", "ours_summaries"]].tolist() == \
        [187.0, 187.0, 475, 475]
    assert f1.loc["summeval", "ours_summaries"] == 1600 and f1.loc["summeval", "ours_pct_unfaithful"] == 18.4
    assert f1.loc["govreport", "paper_summaries"] == 204 and "not here" in f1.loc["govreport", "note"]
    m10 = mesa_t.mesa_table10().set_index("statistic")
    assert m10.loc["auto_summary_words", "ours"] == 116.9 and m10.loc["meetings", "ours"] == 133
    t5 = madisse_t.madisse_table5().set_index("dataset")
    assert t5.loc["tofueval-meetingbank", "ours_sentences"] == 777
    ov = dataset_tables.overview().set_index("dataset")
    assert ov.loc["summeval", "groups"] == 100 and not ov.loc["aggrefact-sota", "present"]


@needs_mirror
def test_data_stats_cli_prints_json(capsys):
    from sumjudge.cli import main as cli

    assert cli.main(["data", "stats", "tofueval-meetingbank"]) == 0
    st = json.loads(capsys.readouterr().out)
    assert (st["examples"], st["unfaithful"], st["sentences"]) == (267, 98, 777)
    assert cli.main(["data", "stats", "summeval"]) == 0
    assert json.loads(capsys.readouterr().out)["aspects"]["coherence"]["max"] == 5.0
