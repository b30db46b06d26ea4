"""MADISSE's dataset tables beside the paper's own (notebook 01_datasets): the paper's value, ours, and a note
where they differ for a known reason."""

from __future__ import annotations

from sumjudge.data import registry
from sumjudge.data.ambiguity_taxonomy import TAXONOMY
from sumjudge.data.stats import dataset_stats
from sumjudge.report import paper_results
from sumjudge.results.dataset_tables import paper_rows, stats_if_present


def madisse_table2():
    import pandas as pd

    paper = paper_rows(paper_results("madisse")["table2"])
    st = dataset_stats("meetingbank-ambiguity")
    pct = st["ambiguity_category_pct"]
    ours = {"annotated_sentences": st["examples"], "ambiguous_sentences": st["ambiguous"],
            "pct_implicit_reasoning": pct.get("implicit_reasoning"), "pct_meaning": pct.get("meaning"),
            "pct_context": pct.get("context"), "pct_other": pct.get("other")}
    note = (f"shares of the {st['ambiguity_category_mentions']} category mentions of the {st['ambiguous']} ambiguous "
            "sentences (a sentence with two categories counts in both), which gives the paper's percentages")
    for m in st.get("ambiguity_type_outside_category", []):  # why Table 24's types add up differently per category
        note += (f"; one sentence is annotated {m['category']} with the type {m['type']} ({m['type_category']}): "
                 f"counted here under {m['category']}, in Table 24 under its type")
    return pd.DataFrame([{"statistic": k, "paper": paper[k], "ours": ours[k], "note": note if k.startswith("pct") else ""}
                         for k in paper])


def madisse_table24():
    import pandas as pd

    paper = paper_rows(paper_results("madisse")["table24"])
    types = dataset_stats("meetingbank-ambiguity")["ambiguity_subtypes"]
    total_paper, total_ours = sum(paper[t] for _, t in TAXONOMY), sum(types.get(t, 0) for _, t in TAXONOMY)
    differs = ("the released file differs from Table 24's count" + (
        f" (Table 24's types add up to {total_paper} mentions, the file's to {total_ours}, and the paper's category "
        "percentages in the table above are the file's: Table 24 disagrees with them)" if total_paper != total_ours else ""))
    rows = []
    for cat, t in TAXONOMY:
        ours = types.get(t, 0)
        rows.append({"category": cat, "type": t, "paper": paper[t], "ours": ours,
                     "note": "" if ours == paper[t] else differs})
    return pd.DataFrame(rows)


def madisse_table5():
    import pandas as pd

    paper = paper_rows(paper_results("madisse")["table5"])
    ours_name = {"tofueval-meetingbank": "tofueval-meetingbank", "tofueval-mediasum": "tofueval-mediasum",
                 "aggrefact-cnn": "llm-aggrefact-cnn", "aggrefact-xsum": "llm-aggrefact-xsum"}
    rows = []
    for key, p in paper.items():
        name = ours_name[key]
        row = {"dataset": key, "loader": name, "paper_sentences": p["sentences"], "paper_summaries": p["summaries"],
               "paper_pct_unfaithful": p["pct_unfaithful"]}
        summ = stats_if_present(name)
        if summ is None:
            row["note"] = "not present here (see `sumjudge data list`)"
        else:
            row.update(ours_summaries=summ["examples"], ours_pct_unfaithful=summ["pct_unfaithful"])
            if "sentence" in registry.get(name).levels:
                row["ours_sentences"] = dataset_stats(name, level="sentence")["examples"]
        rows.append(row)
    df = pd.DataFrame(rows)
    if "ours_sentences" in df:
        mb = df["dataset"] == "tofueval-meetingbank"
        df.loc[mb, "note"] = ("the TofuEval CSV has 777 sentence rows in 267 summaries; the paper counts 772 / 266 "
                              "(it does not say which rows it left out, so none are dropped here)")
    return df
