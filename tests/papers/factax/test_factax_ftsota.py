"""FacTax Table 2 on AggreFact-FtSota: SOTA-model and cut filters, one column per source, stand-ins pooled
nowhere once the real source is there, QAGS-C apart, a user's dataset entering a domain and MACRO
(hand-worked), cells as the mean of repeated runs, and Luo et al.'s baselines."""

import csv
import json

import pytest
from conftest import needs_mirror

from sumjudge.data import registry
from sumjudge.papers.factax import tables as factax_tables

SOTA_COLUMNS = ["dataset", "origin", "id", "doc", "summary", "model_name", "label", "cut"]


@pytest.fixture
def raw(tmp_path, monkeypatch):
    monkeypatch.setenv("SUMJUDGE_DATA_RAW", str(tmp_path / "raw"))
    (tmp_path / "raw").mkdir()
    return tmp_path / "raw"


def write_sota(raw, name="aggre_fact_sota"):
    """Two summaries per (source, cut), plus an XFORMER model's row that the SOTA filter drops."""
    d = raw / "aggrefact"
    d.mkdir(parents=True, exist_ok=True)
    rows = []
    for ds, origin in (("Polytope", "cnndm"), ("SummEval", "cnndm"), ("FRANK", "cnndm"), ("CLIFF", "cnndm"),
                       ("Wang20", "xsum"), ("CLIFF", "xsum"), ("Goyal21", "xsum"), ("Cao22", "xsum")):
        for cut in ("val", "test"):
            for label in (1, 0):
                rows.append({"dataset": ds, "origin": origin, "id": f"{ds}-{origin}-{cut}", "doc": f"Doc of {ds}.",
                             "summary": f"{ds} {origin} {cut} {label}.", "model_name": "BART", "label": label,
                             "cut": cut})
    rows.append({"dataset": "FRANK", "origin": "cnndm", "id": "old", "doc": "D.", "summary": "Old model.",
                 "model_name": "BertSum", "label": 1, "cut": "test"})
    with (d / f"{name}.csv").open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=SOTA_COLUMNS)
        w.writeheader()
        w.writerows(rows)


@pytest.mark.parametrize("name", ["aggre_fact_sota", "aggre_fact_final"])
def test_ftsota_filters_cut_sota_models_and_sources(raw, name):
    write_sota(raw, name)
    assert registry.is_present("aggrefact-sota")
    test = registry.load("aggrefact-sota")
    assert len(test) == 16 and all(e.meta["cut"] == "test" and e.meta["model_name"] == "BART" for e in test)
    assert len(registry.load("aggrefact-sota", split="val")) == 16
    assert len(registry.load("aggrefact-sota-cnndm")) == 8
    cliff = registry.load("aggrefact-sota-cliff-xsum")
    assert [e.summary for e in cliff] == ["CLIFF xsum test 1.", "CLIFF xsum test 0."]
    assert [e.meta["origin"] for e in registry.load("aggrefact-sota-frank")] == ["cnndm", "cnndm"]  # no BertSum


@needs_mirror
def test_summeval_sota_stand_in_keeps_the_sota_systems():
    exs = registry.load("summeval-consistency-sota")
    assert len(exs) == 300 and {e.meta["model_name"] for e in exs} == {"T5", "BART", "Pegasus"}
    assert {e.meta["system"] for e in exs} == {"M17", "M22", "M23"}


def run_dir(tmp_path, name, pairs, meta=None, metrics=None):
    d = tmp_path / name
    d.mkdir()
    rows = [{"example": {"label": y, "meta": (meta[i] if meta else {})}, "judgement": {"label": p}}
            for i, (y, p) in enumerate(pairs)]
    (d / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (d / "metrics.json").write_text(json.dumps(metrics or {"n": len(pairs), "unparsed": 0, "bacc": None}))
    return d


def metrics_of(d):
    return json.loads((d / "metrics.json").read_text())


def test_pooled_ftsota_run_splits_into_columns_and_stand_ins_are_not_counted_twice(tmp_path):
    # the pooled run: SummEval (cnndm) right on both, Wang20 (xsum) wrong on the faithful one
    meta = [{"group": "SummEval", "origin": "cnndm"}] * 2 + [{"group": "Wang20", "origin": "xsum"}] * 2
    sota = run_dir(tmp_path, "sota", [(1, 1), (0, 0), (1, 0), (0, 0)], meta)
    stand_in = run_dir(tmp_path, "qx", [(1, 1), (0, 1)])  # QAGS-X: would be 0.5 if pooled into XSum
    qc = run_dir(tmp_path, "qc", [(1, 0), (0, 1)])  # QAGS-C: 0.0, shown apart
    grid = {("FACTAX", "aggrefact-sota"): (metrics_of(sota), sota), ("FACTAX", "qags-xsum"): (metrics_of(stand_in),
            stand_in), ("FACTAX", "qags-cnndm"): (metrics_of(qc), qc)}
    rows = {r["dataset"]: r for r in factax_tables.table2_rows(grid, "m")}
    assert rows["aggrefact-sota/summeval"]["reproduced"] == pytest.approx(100.0)
    assert rows["aggrefact-sota/summeval"]["paper"] == 67.43 and rows["aggrefact-sota/summeval"]["domain"] == "CNN/DM"
    assert rows["aggrefact-sota/wang20"]["reproduced"] == pytest.approx(50.0)
    assert rows["aggrefact-sota/wang20"]["paper"] == 74.06
    assert rows["qags-xsum"]["domain"] is None and "not pooled" in rows["qags-xsum"]["note"]
    assert rows["qags-cnndm"]["domain"] is None and rows["qags-cnndm"]["reproduced"] == pytest.approx(0.0)
    assert rows["qags-cnndm"]["gold labels"] == "1 × 1, 1 × 0"  # a rate over one class rests on that class's count
    assert rows["[CNN/DM]"]["reproduced"] == pytest.approx(100.0)  # QAGS-C not in it
    assert rows["[XSum]"]["reproduced"] == pytest.approx(50.0)  # the stand-in not in it
    assert rows["[MACRO]"]["reproduced"] == pytest.approx(75.0)
    # a source met twice (pooled file and its own part) counts once
    part = run_dir(tmp_path, "part", [(1, 0), (0, 1)])
    grid[("FACTAX", "aggrefact-sota-summeval")] = (metrics_of(part), part)
    rows = {r["dataset"]: r for r in factax_tables.table2_rows(grid, "m")}
    assert rows["aggrefact-sota-summeval"]["domain"] is None and "counted once" in rows["aggrefact-sota-summeval"]["note"]
    assert rows["[CNN/DM]"]["reproduced"] == pytest.approx(100.0)


def test_without_ftsota_the_stand_ins_fill_their_domains(tmp_path):
    se = run_dir(tmp_path, "se", [(1, 1), (0, 1), (0, 0), (0, 0)])  # recall 1 and 2/3 -> 5/6
    qx = run_dir(tmp_path, "qx", [(1, 1), (0, 1)])  # 0.5
    grid = {("FACTAX", "summeval-consistency-sota"): (metrics_of(se), se), ("FACTAX", "qags-xsum"): (metrics_of(qx), qx)}
    rows = {r["dataset"]: r for r in factax_tables.table2_rows(grid, "m")}
    assert rows["summeval-consistency-sota"]["paper"] == 67.43 and "stand-in" in rows["summeval-consistency-sota"]["note"]
    assert rows["[CNN/DM]"]["reproduced"] == pytest.approx(100 * 5 / 6)
    assert rows["[XSum]"]["reproduced"] == pytest.approx(50.0)
    assert rows["[MACRO]"]["reproduced"] == pytest.approx((100 * 5 / 6 + 50) / 2)
    assert rows["[MACRO]"]["note"].startswith("MACRO over the 2 domains present here (CNN/DM, XSum); the paper's")


def test_a_users_file_with_domain_enters_the_domain_and_macro_hand_worked(tmp_path):
    """DiaSumFact (Dialogues) 3/4; the user's FRANK-like file in CNN/DM pooled with the SummEval stand-in."""
    f = tmp_path / "mine.csv"
    f.write_text("document,summary,label\nD1,S1,1\nD2,S2,0\n")
    spec = f"file:{f}?domain=CNN/DM&paper=frank"
    mine = run_dir(tmp_path, "mine", [(1, 1), (0, 1)])  # alone: 0.5
    se = run_dir(tmp_path, "se", [(1, 1), (0, 0)])  # alone: 1.0
    dia = run_dir(tmp_path, "dia", [(1, 1), (1, 0), (0, 0), (0, 0)])  # recall 1/2 and 1 -> 0.75
    grid = {("FACTAX", spec): (metrics_of(mine), mine), ("FACTAX", "summeval-consistency-sota"): (metrics_of(se), se),
            ("FACTAX", "diasumfact"): (metrics_of(dia), dia)}
    rows = {r["dataset"]: r for r in factax_tables.table2_rows(grid, "m")}
    assert rows[spec]["domain"] == "CNN/DM" and rows[spec]["paper"] == 62.82 and rows[spec]["reproduced"] == 50.0
    # CNN/DM pooled: y = 1 0 1 0, p = 1 1 1 0 -> recall(1) = 1, recall(0) = 1/2 -> 75
    assert rows["[CNN/DM]"]["reproduced"] == pytest.approx(75.0)
    assert rows["[Dialogues]"]["reproduced"] == pytest.approx(75.0)
    assert rows["[MACRO]"]["reproduced"] == pytest.approx(75.0)
    assert factax_tables.domain_scores({spec: mine}) == {"CNN/DM": pytest.approx(0.5)}


def test_cells_are_the_mean_of_their_runs_with_the_spread(tmp_path):
    runs = [run_dir(tmp_path, f"r{i}", pairs) for i, pairs in
            enumerate([[(1, 1), (0, 0)], [(1, 1), (0, 1)], [(1, 0), (0, 1)]])]  # 100, 50, 0
    grid = {("FACTAX", "diasumfact"): [(metrics_of(r), r) for r in runs]}
    rows = {r["dataset"]: r for r in factax_tables.table2_rows(grid, "m")}
    assert rows["diasumfact"]["reproduced"] == pytest.approx(50.0) and rows["diasumfact"]["runs"] == 3
    assert rows["diasumfact"]["sd"] == pytest.approx(50.0) and (rows["diasumfact"]["min"], rows["diasumfact"]["max"]) == (0, 100)
    assert rows["[MACRO]"]["reproduced"] == pytest.approx(50.0)
    t3 = [r for r in factax_tables.table3_rows(grid, "m") if r["evaluator"] == "FacTax (m)"]
    assert {r["dataset"]: r["reproduced"] for r in t3} == {"Dialogues": pytest.approx(50.0), "MACRO": pytest.approx(50.0)}


def test_repeated_runs_get_seeds_and_greedy_methods_sample():
    assert factax_tables.run_settings("factax", {}, 0, 1, 0, 1.0) == {}
    assert factax_tables.run_settings("factax", {"window_words": 30}, 2, 3, 5, 0.7) == {
        "window_words": 30, "seed": 7, "temperature": 0.7}
    # G-Eval's temperature is its protocol's (None): only the seed changes
    assert factax_tables.run_settings("g-eval-consistency", {}, 1, 3, 0, 1.0) == {"seed": 1}
    labels = [e[0] for e in factax_tables.EVALUATORS]
    assert labels == ["ChatGPT-ZS", "ChatGPT-CoT", "ChatGPT-Star", "G-Eval", "FACTAX", "FACTAX-WD"]
    assert dict((e[0], e[1]) for e in factax_tables.EVALUATORS)["ChatGPT-ZS"] == "chatgpt-zs"


def test_luo_baselines_send_the_papers_prompts_and_read_yes_no():
    from sumjudge.data.records import FaithExample
    from sumjudge.judges.settings import make_config
    from sumjudge.llm import NullCache, run_sync
    from sumjudge.llm.engine import LLM
    from sumjudge.llm.scripted import Rule, ScriptedBackend
    from sumjudge.run.methods import get_method

    backend = ScriptedBackend([Rule(r"Answer \(yes or no\):", "No."),
                               Rule("Explain your reasoning step by step", "The date differs.\nSo the answer is yes?")])
    llm = LLM(backend, cache=NullCache(), parse_retries=1)
    ex = FaithExample(id="e", dataset="t", document="Ann met Bob on Monday.", summary="Ann met Bob.", label=1)
    zs = get_method("chatgpt-zs")
    j = run_sync(zs.judge(ex, llm, make_config(zs.config_cls, {})))
    assert j.label == 0 and j.label_source == "parsed"
    prompt = backend.requests[0].messages[-1]["content"]
    assert prompt == ("Decide if the following summary is consistent with the corresponding article. Note that consistency "
                      "means all information in the summary is supported by the article.\nArticle: Ann met Bob on "
                      "Monday.\nSummary: Ann met Bob.\nAnswer (yes or no):")
    cot = get_method("chatgpt-cot")
    j = run_sync(cot.judge(ex, llm, make_config(cot.config_cls, {})))
    assert j.label is None and j.label_source == "unparsed"  # "yes?" is no statement: retried, then counted
    assert sum("step by step" in r.messages[-1]["content"] for r in backend.requests) == 2


def test_domain_and_macro_rows_carry_their_n_and_an_interval(tmp_path):
    """A domain row rests on its pooled readable examples; MACRO on all of them, its interval a bootstrap of each
    domain on its own, averaged per resample (it brackets the MACRO value and is seeded)."""
    se = run_dir(tmp_path, "se", [(1, 1), (0, 0), (1, 1), (0, 1), (1, 0), (0, 0)] * 3)
    qx = run_dir(tmp_path, "qx", [(1, 1), (0, 1), (1, None), (0, 0)] * 3)
    grid = {("FACTAX", "summeval-consistency-sota"): (metrics_of(se), se), ("FACTAX", "qags-xsum"): (metrics_of(qx), qx)}
    rows = {r["dataset"]: r for r in factax_tables.table2_rows(grid, "m")}
    assert rows["[CNN/DM]"]["n"] == 18 and rows["[XSum]"]["n"] == 9 and rows["[MACRO]"]["n"] == 27
    low, high = rows["[MACRO]"]["ci"]
    assert low < rows["[MACRO]"]["reproduced"] < high
    parts = factax_tables.parts_of({"summeval-consistency-sota": se, "qags-xsum": qx})
    assert factax_tables.macro_interval(parts) == factax_tables.macro_interval(parts)
    t3 = {r["dataset"]: r for r in factax_tables.table3_rows(grid, "m") if r["evaluator"] == "FacTax (m)"}
    assert t3["MACRO"]["n"] == 27 and t3["MACRO"]["ci"] == rows["[MACRO]"]["ci"]  # Table 3: the same domains here
    assert t3["CNN/DM"]["ci"] == rows["[CNN/DM]"]["ci"] and t3["CNN/DM"]["n"] == 18
    one_class = run_dir(tmp_path, "one", [(1, 1), (1, 0), (1, 1), (1, 1)])
    assert factax_tables.macro_interval(factax_tables.parts_of({"qags-xsum": one_class})) is None


def test_a_thresholded_baselines_rows_say_its_fixed_threshold_from_the_runs_own_setting(tmp_path):
    """G-Eval's labels on the zero-shot page are its score against the run's fixed ``threshold`` (the arena chooses
    one on held-out examples instead): the row's note says which, read from the run's config.json."""
    ge = run_dir(tmp_path, "ge", [(1, 0), (0, 0)])
    (ge / "config.json").write_text(json.dumps({"run": {"method": "g-eval-consistency"},
                                                "method_config": {"threshold": 3.5}}))
    star = run_dir(tmp_path, "st", [(1, 1), (0, 0)])
    (star / "config.json").write_text(json.dumps({"run": {"method": "star"}, "method_config": {"threshold": 4}}))
    plain = run_dir(tmp_path, "fx", [(1, 1), (0, 0)])
    (plain / "config.json").write_text(json.dumps({"run": {"method": "factax"}, "method_config": {}}))
    grid = {("G-Eval", "qags-xsum"): (metrics_of(ge), ge), ("ChatGPT-Star", "qags-xsum"): (metrics_of(star), star),
            ("FACTAX", "diasumfact"): (metrics_of(plain), plain)}
    rows = {(r["evaluator"], r["dataset"]): r["note"] for r in factax_tables.table2_rows(grid, "m")}
    assert "label 1 when the score >= 3.5: a fixed threshold" in rows[("G-Eval", "qags-xsum")]
    assert "arena chooses its threshold on held-out examples" in rows[("G-Eval", "qags-xsum")]
    assert rows[("G-Eval", "qags-xsum")].startswith("stand-in for FtSota's Wang'20")  # the dataset's note kept
    star_note = rows[("ChatGPT-Star", "qags-xsum")]
    assert "score >= 4: a fixed threshold" in star_note and "arena" not in star_note
    assert not rows[("FACTAX", "diasumfact")]  # no threshold: the dataset's note alone (none here)
