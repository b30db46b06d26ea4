"""FacTax's dataset tables beside the paper's own (notebook 01_datasets): the paper's value, ours, and a note
where they differ for a known reason."""

from __future__ import annotations

import statistics

from sumjudge.data import registry
from sumjudge.report import paper_results
from sumjudge.results.dataset_tables import paper_rows


def factax_table1():
    """FacTax Table 1 for the datasets here: lengths and counts beside the paper's, plus the label balance
    (share of unfaithful summaries) or, for score-labelled data, the mean human score."""
    import pandas as pd

    paper = paper_rows(paper_results("factax")["table1"])
    parts = {"qags": ["qags-cnndm", "qags-xsum"], "summeval": ["summeval-consistency"], "diasumfact": ["diasumfact"],
             "faceval": ["faceval"], "govreport": ["govreport"], "squality": ["squality"]}
    notes = {"qags": "both QAGS parts (CNN/DM 235 + XSum 239 = 474), as the paper's count implies; words split on "
                     "spaces in UniEval's tokenised text (the paper does not say how it counts)",
             "summeval": "SummEval as packaged by BARTScore (100 x 16 = 1600, tokenised text), consistency binarised as "
                         "AggreFact does (consistent only when all experts gave 5: dataset summeval-consistency); "
                         "the paper's 1698 is AggreFact's copy",
             "diasumfact": "", "faceval": "",
             "govreport": "score labels (share of consistent sentences, Koh et al. 2022): Pearson, not BAcc",
             "squality": "score labels (LongEval FINE score): Pearson, not BAcc"}
    rows = []
    for key, names in parts.items():
        p = paper[key]
        row = {"dataset": key, "domain": p["domain"], "paper_doc_len": p["doc_len"], "paper_summ_len": p["summ_len"],
               "paper_summaries": p["summaries"], "note": notes[key]}
        if not all(registry.is_present(n) for n in names):
            rows.append({**row, "note": "not here (" + ", ".join(names) + "): paper values only"})
            continue
        exs = [e for n in names for e in registry.load(n)]
        docs = [e.document for e in exs]
        unique_docs = list(dict.fromkeys(docs)) if key == "summeval" else docs
        scored = [e.score for e in exs if e.score is not None]
        rows.append({**row, "ours_doc_len": round(statistics.mean(len(d.split()) for d in unique_docs), 1),
                     "ours_summ_len": round(statistics.mean(len(e.summary.split()) for e in exs), 1),
                     "ours_summaries": len(exs),
                     "ours_pct_unfaithful": None if scored else round(100 * sum(e.label == 0 for e in exs) / len(exs), 1),
                     "ours_mean_score": round(statistics.mean(scored), 3) if scored else None})
    return pd.DataFrame(rows)
