"""A paper value is set only beside a row of the paper table's own dataset and statistic: DEBATE's Table 3 is
SummEval rho/tau, so a Topical-Chat run (r, rho) gets an empty paper column and a note naming what was printed."""

import pytest

from sumjudge.papers.debate.tables import SYMBOL, correlation_rows, printed_cell
from sumjudge.report import paper_results

CORRELATIONS = {"summeval": ["spearman", "kendall"], "topical-chat": ["pearson", "spearman"]}


def metrics(dataset, correlations, aspects=("coherence",)):
    agg = {c: 0.1 for c in correlations}
    aspect = {**{c: {"mean": 0.1, "ci": None, "n_groups": 4, "undefined_groups": 0} for c in correlations},
              "unparsed": 0, "scale": [1, 5]}
    return {"dataset": dataset, "n_examples": 8, "correlations": list(correlations), "average": agg,
            "aspects": {a: aspect for a in aspects}}


def tables():
    return [(name, t) for name, t in paper_results("debate").items() if isinstance(t, dict) and "statistics" in t]


@pytest.mark.parametrize("dataset", list(CORRELATIONS))
@pytest.mark.parametrize("order", [1, -1])  # the run's order of correlations does not pick the printed value
def test_a_paper_value_is_never_beside_a_row_of_another_dataset_or_statistic(dataset, order):
    assert {"table1_summeval", "table1_topical_chat", "table3"} <= {name for name, _ in tables()}
    for name, table in tables():
        for paper_row in table["rows"]:
            m = metrics(dataset, CORRELATIONS[dataset][::order])
            for r in correlation_rows("x", m, experiment="t", model="m", paper_table=name, paper_row=paper_row):
                if r["paper"] is None:
                    continue
                assert r["dataset"] == table["dataset"] and r["metric"] in table["statistics"]
                assert r["paper"] == table["rows"][paper_row][r["aspect"]][table["statistics"].index(r["metric"])]


def test_table3_on_topical_chat_is_blank_with_a_note_and_on_summeval_is_printed():
    tc = correlation_rows("x", metrics("topical-chat", CORRELATIONS["topical-chat"]), experiment="Table 3",
                          model="m", paper_table="table3", paper_row="original")
    assert tc and all(r["paper"] is None and r["paper_row"] is None for r in tc)
    assert all(r["note"].startswith("the paper's Table 3 is SummEval rho/tau") for r in tc)
    se = correlation_rows("x", metrics("summeval", ["kendall", "spearman"]), experiment="Table 3", model="m",
                          paper_table="table3", paper_row="original")
    got = {(r["aspect"], r["metric"]): r["paper"] for r in se}
    assert got[("average", "rho")] == 0.597 and got[("average", "tau")] == 0.575
    assert got[("coherence", "tau")] == 0.588 and all("note" not in r for r in se if r["aspect"] != "average")
    # an average of fewer aspects than the printed one says so, and the fewest groups an aspect rests on
    average = [r for r in se if r["aspect"] == "average"]
    assert all(r["note"] == "the average of 1 of the dataset's 4 aspects (coherence); the printed average is over all 4"
               and r["groups"] == 4 for r in average)
    every = metrics("summeval", ["kendall"], aspects=("coherence", "consistency", "fluency", "relevance"))
    assert all("note" not in r for r in correlation_rows("x", every, experiment="t", model="m"))


def test_a_statistic_the_table_did_not_print_stays_blank():
    assert printed_cell("table1_summeval", "DEBATE (GPT-4)", "average", "summeval", SYMBOL["pearson"])[0] is None
