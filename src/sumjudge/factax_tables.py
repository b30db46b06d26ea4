"""FacTax experiment grids and paper-vs-reproduced tables (notebooks 40-42).

Every evaluated cell is one ``sumjudge run`` through ``notebook.Session`` (cached, resumable). Domain
scores follow Section 4.3 / AggreFact: balanced accuracy over the pooled summaries of the domain's
datasets (a "micro average"); MACRO is the mean over the domains present. FacEval is reported per dataset
but belongs to no domain: in the paper it is training data (Training Set I), and its Dialogues domain is
DiaSumFact alone.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from .notebook import run_name
from .report import paper_results, paper_value, read_results
from .run_metrics import parse_columns

DOMAINS: dict[str, str | None] = {
    "qags-cnndm": "CNN/DM", "summeval-consistency": "CNN/DM", "aggrefact-sota-cnndm": "CNN/DM",
    "qags-xsum": "XSum", "aggrefact-sota-xsum": "XSum", "diasumfact": "Dialogues", "faceval": None,
    "govreport": "Reports", "squality": "Stories"}
SCORED = ("govreport", "squality")  # score labels: Pearson (x 100 in the tables, as in Table 2), not BAcc
SCORED_DOMAINS = {DOMAINS[d] for d in SCORED}
PAPER_COLUMN = {"summeval-consistency": "summeval", "qags-xsum": "wang20", "diasumfact": "diasumfact",
                "govreport": "govreport", "squality": "squality"}
DOMAIN_COLUMN = {"CNN/DM": "cnndm_avg", "XSum": "xsum_avg", "Dialogues": "diasumfact", "Reports": "govreport",
                 "Stories": "squality", "MACRO": "macro"}
TABLE3_COLUMN = {"CNN/DM": "cnndm", "XSum": "xsum", "Dialogues": "dialogues", "MACRO": "macro"}
EVALUATORS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("ChatGPT-ZS", "zero-shot", {}), ("ChatGPT-CoT", "cot", {}), ("ChatGPT-Star", "star", {}),
    ("G-Eval", "g-eval-consistency", {}), ("FACTAX", "factax", {}), ("FACTAX-WD", "factax-wd", {}))


def run_cell(session, method: str, dataset: str, settings: dict[str, Any], limit: int | None = None
             ) -> tuple[dict[str, Any], Path]:
    return session.run(method, dataset, settings=settings, name=run_name(method, settings, dataset), limit=limit)


def run_grid(session, datasets: list[str], evaluators=EVALUATORS, limit: int | None = None
             ) -> dict[tuple[str, str], tuple[dict[str, Any], Path]]:
    """(metrics, run folder) per (evaluator label, dataset)."""
    return {(label, ds): run_cell(session, method, ds, dict(extra), limit)
            for label, method, extra in evaluators for ds in datasets}


def labels_of(run_dir: str | Path) -> tuple[list[int], list[int | None]]:
    rows = read_results(run_dir)
    return [r["example"]["label"] for r in rows], [r["judgement"]["label"] for r in rows]


def macro(domain_scores: dict[str, float | None]) -> float | None:
    """Mean over the domains that have a score (a missing domain is left out, not counted as 0)."""
    vals = [v for v in domain_scores.values() if v is not None and v == v]
    return statistics.fmean(vals) if vals else None


def pearson_of(metrics: dict[str, Any]) -> float | None:
    r = (metrics.get("pearson") or {}).get("r")
    return None if r is None or r != r else r


def domain_scores(runs: dict[str, Path]) -> dict[str, float | None]:
    """Domain -> pooled balanced accuracy over the runs (dataset -> run folder) of its datasets; for the
    score-labelled domains (Reports, Stories: one dataset each) the Pearson r of that dataset's run."""
    import json

    from .metrics import pooled_balanced_accuracy

    by_domain: dict[str, list] = {}
    out: dict[str, float | None] = {}
    for ds, run_dir in runs.items():
        dom = DOMAINS.get(ds)
        if dom and ds in SCORED:
            out[dom] = pearson_of(json.loads((Path(run_dir) / "metrics.json").read_text(encoding="utf-8")))
        elif dom:
            by_domain.setdefault(dom, []).append(labels_of(run_dir))
    return {**{d: pooled_balanced_accuracy(parts) for d, parts in by_domain.items()}, **out}


def table2_rows(grid: dict[tuple[str, str], tuple[dict[str, Any], Path]], model: str) -> list[dict[str, Any]]:
    """Per evaluator: BAcc per dataset, per domain (pooled) and MACRO, with Table 2's values."""
    rows = []
    for label in dict.fromkeys(k[0] for k in grid):
        runs = {ds: run for (lab, ds), (_, run) in grid.items() if lab == label}
        for ds in runs:
            m = grid[(label, ds)][0]
            col = PAPER_COLUMN.get(ds)
            value = pearson_of(m) if ds in SCORED else m["bacc"]
            rows.append({"experiment": "Table 2", "evaluator": label, "dataset": ds,
                         "metric": "Pearson x100" if ds in SCORED else "BAcc %",
                         "paper": paper_value("factax", "table2", label, col) if col else None,
                         "reproduced": None if value is None or value != value else 100 * value, "n": m["n"],
                         "unparsed": m["unparsed"], **parse_columns(m), "domain": DOMAINS.get(ds), "model": model,
                         "label_sources": m.get("label_sources")})
        doms = domain_scores(runs)
        for dom, val in {**doms, "MACRO": macro(doms)}.items():
            rows.append({"experiment": "Table 2", "evaluator": label, "dataset": f"[{dom}]",
                         "metric": "Pearson x100" if dom in SCORED_DOMAINS else "BAcc %",
                         "paper": paper_value("factax", "table2", label, DOMAIN_COLUMN[dom]),
                         "reproduced": None if val is None or val != val else 100 * val, "domain": dom, "model": model,
                         "note": ("MACRO over the domains present here (Reports, Stories enter as Pearson x100, as in the paper)"
                                  if dom == "MACRO" else "Pearson of the domain's dataset" if dom in SCORED_DOMAINS
                                  else "pooled over the domain's datasets")})
    return rows


def paper_only_rows() -> list[dict[str, Any]]:
    """Table 2's non-LLM rows and the GPT-4o FacTax row, as printed (not computed here)."""
    t = paper_results("factax")["table2"]
    llm = {label for label, _, _ in EVALUATORS}
    return [{"experiment": "Table 2 (paper only)", "evaluator": name, "dataset": col, "metric": "BAcc %", "paper": v,
             "reproduced": None, "note": "as printed in the paper; not computed here"}
            for name, cells in t["rows"].items() if name not in llm for col, v in cells.items()]


def table3_rows(grid, model: str, evaluator: str = "FACTAX") -> list[dict[str, Any]]:
    """Table 3: FacTax's domain scores and MACRO with the profile's model, beside the paper's models."""
    runs = {ds: run for (lab, ds), (_, run) in grid.items() if lab == evaluator}
    doms = domain_scores(runs)
    doms = {d: v for d, v in doms.items() if d in TABLE3_COLUMN}
    doms["MACRO"] = macro(doms)
    rows = []
    for name, cells in paper_results("factax")["table3"]["rows"].items():
        for dom, col in TABLE3_COLUMN.items():
            rows.append({"experiment": "Table 3", "evaluator": name, "dataset": dom, "metric": "BAcc %",
                         "paper": cells.get(col), "reproduced": None, "note": "the paper's model"})
    for dom, v in doms.items():
        rows.append({"experiment": "Table 3", "evaluator": f"FacTax ({model})", "dataset": dom, "metric": "BAcc %",
                     "paper": None, "reproduced": None if v is None or v != v else 100 * v, "model": model})
    return rows


def window_rows(session, dataset: str, sizes: list[Any], limit: int | None = None) -> list[dict[str, Any]]:
    """Window-size ablation: FacTax-WD with each ``window_words`` (0 = one sentence, None = whole summary)."""
    rows = []
    for ww in sizes:
        m, run = run_cell(session, "factax-wd", dataset, {"window_words": ww}, limit)
        res = read_results(run)
        rows.append({"experiment": "window size", "dataset": dataset,
                     "window": "1 sentence" if ww == 0 else ("whole summary" if ww is None else f"{ww} words"),
                     "metric": "BAcc %", "paper": None, "reproduced": 100 * m["bacc"] if m["bacc"] == m["bacc"] else None,
                     "mean_windows": statistics.fmean(r["judgement"]["details"]["n_windows"] for r in res) if res else None,
                     "n": m["n"], "unparsed": m["unparsed"], **parse_columns(m), "calls": m["cost"]["calls_total"]})
    return rows


def length_rows(runs: dict[str, Path], edges: list[int]) -> list[dict[str, Any]]:
    """Figure 2: accuracy per summary length (words) bucket, per method (label -> run folder)."""
    from .metrics import length_buckets

    rows = []
    for label, run in runs.items():
        res = read_results(run)
        lengths = [len(r["example"]["summary"].split()) for r in res]
        for b in length_buckets(lengths, [r["example"]["label"] for r in res], [r["judgement"]["label"] for r in res],
                                edges):
            rows.append({"method": label, **b})
    return rows


def length_figure(rows: list[dict[str, Any]]):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.4))
    for method in dict.fromkeys(r["method"] for r in rows):
        pts = [r for r in rows if r["method"] == method]
        ax.plot([r["bucket"] for r in pts], [r["accuracy"] for r in pts], marker="o", label=method)
    ax.set_xlabel("summary length (words)")
    ax.set_ylabel("accuracy")
    ax.legend()
    fig.tight_layout()
    return fig


def error_type_rows(grid, model: str, dataset: str = "diasumfact") -> list[dict[str, Any]]:
    """Tables 6 (per-type F1) and 7 (four criteria) for the methods that predict error types."""
    rows = []
    for (label, ds), (m, _) in grid.items():
        et = m.get("error_types")
        if ds != dataset or not et:
            continue
        paper_row = "ChatGPT"  # the paper's zero-shot FacTax row with its main LLM
        for t, v in et["f1"].items():
            rows.append({"experiment": "Table 6", "evaluator": label, "aspect": t, "metric": "F1 %",
                         "paper": paper_value("factax", "table6", paper_row, t) if label == "FACTAX" else None,
                         "reproduced": None if v["f1"] != v["f1"] else 100 * v["f1"], "support": v["support"],
                         "predicted": v["predicted"], "n": et["n"], "model": model})
        for crit in ("exact", "subset", "overlap", "superset"):
            v = et["criteria"][crit]
            rows.append({"experiment": "Table 7", "evaluator": label, "aspect": crit, "metric": "%",
                         "paper": paper_value("factax", "table7", paper_row, crit) if label == "FACTAX" else None,
                         "reproduced": None if v != v else v, "n": et["criteria"]["n"], "model": model})
    return rows


def present(datasets: list[str]) -> list[str]:
    """The datasets among ``datasets`` whose files are here (no download is tried)."""
    from .data import registry

    return [d for d in datasets if registry.is_present(d)]
