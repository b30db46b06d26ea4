"""DEBATE experiment grids, paper-vs-reproduced tables and the debate viewer (notebooks 20 and 21).

Every row is one ``sumjudge run`` through ``notebook.Session`` (cached, resumable). Runs that share
calls share them through the cache: MultiAgent is DEBATE with the Plain Critic, and a debate capped at
n iterations repeats, call for call, the first n-1 iterations of a longer one (greedy decoding).
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from .notebook import run_name
from .report import paper_results, paper_value
from .run_metrics import parse_columns

EVALUATORS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("G-Eval", "g-eval", {}),
    ("MultiAgent", "multiagent", {}),
    ("DEBATE", "debate", {}),
)
PAPER_TABLE = {"summeval": "table1_summeval", "topical-chat": "table1_topical_chat"}
SYMBOL = {"spearman": "rho", "kendall": "tau", "pearson": "r"}
PAPER_MODEL = "GPT-4"  # the paper's rows our evaluators are set beside (its strongest and main setting)

# Figure 2 panels: (panel, setting label, method, settings)
PERSONAS = (("strictly negative (DEBATE)", "strictly-negative"), ("moderately negative", "moderately-negative"),
            ("weakly negative", "weakly-negative"), ("plain (MultiAgent)", "plain"))
STRATEGIES = (("plain", {"critic": "plain"}), ("tie-breaker", {"critic": "plain", "tie_breaker": True}),
              ("devil's advocate", {}), ("both", {"tie_breaker": True}))


def run_method(session, method: str, dataset: str, settings: dict[str, Any], limit: int | None = None
               ) -> tuple[dict[str, Any], Path]:
    """One run; ``limit`` None = the profile's n (rated data: whole groups, or part of one group)."""
    return session.run(method, dataset, settings=settings, name=run_name(method, settings, dataset), limit=limit)


def run_evaluators(session, dataset: str, aspects: list[str], iterations: int = 3, limit: int | None = None,
                   evaluators=EVALUATORS) -> dict[str, tuple[dict[str, Any], Path]]:
    """(metrics, run folder) per Table 1 evaluator on ``dataset``, scoring ``aspects``."""
    out = {}
    for label, method, extra in evaluators:
        settings = {"aspects": list(aspects), **extra}
        if method != "g-eval":
            settings["iterations"] = iterations
        out[label] = run_method(session, method, dataset, settings, limit)
    return out


def correlation_rows(label: str, metrics: dict[str, Any], *, experiment: str, model: str,
                     paper_table: str | None = None, paper_row: str | None = None) -> list[dict[str, Any]]:
    """One row per (aspect or average, correlation) of a rated run, with the paper's value where given."""
    rows = []
    for col in ["average", *metrics["aspects"]]:
        cell = paper_value("debate", paper_table, paper_row, col) if paper_table and paper_row else None
        for i, m in enumerate(metrics["correlations"]):
            extra: dict[str, Any] = {}
            if col == "average":
                rep = metrics["average"][m]
            else:
                a = metrics["aspects"][col]
                rep = a[m]["mean"]
                ci = a[m]["ci"]
                extra = {"ci95": f"[{ci[0]:.2f}, {ci[1]:.2f}]" if ci else None, "groups": a[m]["n_groups"],
                         "undefined_groups": a[m]["undefined_groups"], "unparsed": a["unparsed"]}
            rows.append({"experiment": experiment, "evaluator": label, "dataset": metrics["dataset"], "aspect": col,
                         "metric": SYMBOL[m], "paper": cell[i] if cell else None, "reproduced": rep,
                         "paper_row": paper_row if cell else None, "model": model, "n": metrics["n_examples"], **extra,
                         **parse_columns(metrics)})
    return rows


def table1_rows(results: dict[str, tuple[dict[str, Any], Path]], dataset: str, model: str) -> list[dict[str, Any]]:
    return [r for label, (m, _) in results.items()
            for r in correlation_rows(label, m, experiment="Table 1", model=model, paper_table=PAPER_TABLE[dataset],
                                      paper_row=f"{label} ({PAPER_MODEL})")]


def rouge_l_metrics(session, dataset: str, aspects: list[str], limit: int | None = None) -> dict[str, Any]:
    """ROUGE-L F1 of each SummEval summary against its CNN/DM reference (``rouge-score``), correlated with the
    human scores exactly like the LLM evaluators (same examples: the profile's n and seed)."""
    from rouge_score import rouge_scorer

    from .data import registry
    from .methods.base import Judgement
    from .run_metrics import rated_metrics

    if dataset != "summeval":
        raise ValueError("ROUGE-L needs a reference text: SummEval only (Topical-Chat's reference is one of its "
                         "six rated responses)")
    examples = registry.load(dataset, limit=session.prof.n if limit is None else limit, seed=session.prof.seed)
    scorer = rouge_scorer.RougeScorer(["rougeL"])
    js = []
    for ex in examples:
        f = scorer.score(ex.meta["reference"], ex.output)["rougeL"].fmeasure
        js.append(Judgement(example_id=ex.id, scores={a: f for a in aspects}))
    return {"method": "rouge-l", "dataset": dataset, "n_examples": len(examples), **rated_metrics(examples, js)}


def paper_only_rows(dataset: str, computed: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """The paper's other rows (ROUGE-L, BERTScore, UniEval, ..., ChatEval, other LLMs) as printed, marked as
    not computed here; ``computed`` names rows that *are* reproduced elsewhere in the notebook."""
    table = paper_results("debate")[PAPER_TABLE[dataset]]
    rows = []
    for name, cells in table["rows"].items():
        if name in computed:
            continue
        for col, vals in cells.items():
            syms = ("rho", "tau") if dataset == "summeval" else ("r", "rho")
            for sym, v in zip(syms, vals):
                rows.append({"experiment": "Table 1 (paper only)", "evaluator": name, "dataset": dataset,
                             "aspect": col, "metric": sym, "paper": v, "reproduced": None,
                             "note": "as printed in the paper; not computed here"})
    return rows


def distribution_rows(metrics: dict[str, Any], dataset: str, label: str = "DEBATE") -> list[dict[str, Any]]:
    """Table 2: % of scores at each point, human and DEBATE, paper beside reproduced (groundedness is left
    out, as in the paper: another scale)."""
    paper = paper_results("debate")["table2"].get(dataset, {})
    rows = []
    for name, a in metrics["aspects"].items():
        if name == "groundedness":
            continue
        ref = paper.get(name, {})
        points = sorted({int(k) for k in a["distribution"]["human"]} | {int(k) for k in a["distribution"]["method"]})
        for p in points:
            for who, key, pkey in (("human", "human", "human"), (label, "method", "debate")):
                vals = ref.get(pkey)
                rows.append({"experiment": "Table 2", "dataset": dataset, "aspect": name, "score": p, "who": who,
                             "paper": vals[p - 1] if vals and 1 <= p <= len(vals) else None,
                             "reproduced": a["distribution"][key].get(str(p), a["distribution"][key].get(p)),
                             "scale": f"{a['scale'][0]}-{a['scale'][1]}" if who != "human" else "human (rounded)"})
    return rows


def ablation_runs(session, dataset: str, aspects: list[str], *, iterations: list[int], base_iterations: int,
                  limit: int | None = None) -> list[dict[str, Any]]:
    """Figure 2 (iterations n, Critic persona, debating strategy) and Table 3 (prompt type): one entry per
    setting with its run's metrics."""
    grid: list[tuple[str, str, str, dict[str, Any]]] = []
    grid += [("iterations", f"n = {n}", "debate", {"iterations": n}) for n in iterations]
    grid += [("persona", label, "debate", {"critic": c, "iterations": base_iterations}) for label, c in PERSONAS]
    grid += [("strategy", label, "debate", {**s, "iterations": base_iterations}) for label, s in STRATEGIES]
    grid += [("prompt type", label, "debate", {"prompt_type": p, "iterations": base_iterations})
             for label, p in (("original", "original"), ("sophisticated", "sophisticated"))]
    out = []
    for panel, label, method, settings in grid:
        metrics, run_dir = run_method(session, method, dataset, {"aspects": list(aspects), **settings}, limit)
        out.append({"panel": panel, "setting": label, "metrics": metrics, "run_dir": run_dir})
    return out


def ablation_rows(runs: list[dict[str, Any]], model: str) -> list[dict[str, Any]]:
    """Average correlations per setting (the quantity Figure 2 plots), plus Table 3 with the paper's values."""
    rows = []
    for r in runs:
        m = r["metrics"]
        paper_row = r["setting"] if r["panel"] == "prompt type" else None
        endings = debate_endings(r["run_dir"])  # read once per run
        for row in correlation_rows(f"{r['panel']}: {r['setting']}", m, experiment="Table 3" if paper_row else
                                    "Figure 2", model=model, paper_table="table3" if paper_row else None,
                                    paper_row=paper_row):
            if row["aspect"] == "average" or paper_row:
                rows.append({**row, "panel": r["panel"], "setting": r["setting"], **endings})
    return rows


def debate_endings(run_dir: Path) -> dict[str, Any]:
    """How the debates of a run ended: share stopped by NO ISSUE, mean Critic reviews."""
    from .report import read_results

    ds = [d for r in read_results(run_dir) for d in r["judgement"]["details"]["aspects"].values() if "stopped" in d]
    if not ds:  # not a debate (G-Eval)
        return {}
    return {"no_issue_share": sum(d["stopped"] == "no_issue" for d in ds) / len(ds),
            "mean_reviews": sum(d["iterations"] for d in ds) / len(ds)}


def figure2(rows: list[dict[str, Any]]):
    """Three panels like the paper's Figure 2: average correlation per setting, one line/bar per metric."""
    import matplotlib.pyplot as plt
    import pandas as pd

    df = pd.DataFrame([r for r in rows if r["experiment"] == "Figure 2" and r["aspect"] == "average"])
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.4))
    for ax, panel in zip(axes, ("iterations", "persona", "strategy")):
        sub = df[df["panel"] == panel]
        piv = sub.assign(reproduced=sub["reproduced"].astype(float)).pivot_table(
            index="setting", columns="metric", values="reproduced", sort=False, dropna=False)
        if piv.empty or piv.isna().all().all():  # every correlation undefined (e.g. constant scores)
            ax.text(0.5, 0.5, "no defined correlation", ha="center", va="center", transform=ax.transAxes)
        elif panel == "iterations":
            piv.plot(ax=ax, marker="o")
        else:
            piv.plot.bar(ax=ax, rot=20)
        ax.set_title({"iterations": "max iterations n", "persona": "Critic persona",
                      "strategy": "debating strategy"}[panel])
        ax.set_xlabel("")
        ax.set_ylabel("average correlation")
        ax.axhline(0, color="grey", lw=0.5)
    fig.tight_layout()
    return fig


def debate_turns_html(result: dict[str, Any], aspect: str, max_chars: int = 900) -> str:
    """One judged example and aspect as HTML (Appendix H style): the text judged, the human score, then each
    Scorer / Critic / Tie-breaker turn with the score read from it, and the final score and where it came from."""
    esc = html.escape
    ex, j = result["example"], result["judgement"]
    d = j["details"]["aspects"][aspect]
    parts = [f"<div style='font-family:sans-serif'><h4>{esc(ex['id'])} &middot; {esc(aspect)}</h4>",
             f"<p><b>Text judged:</b> {esc(str(ex.get('output', ''))[:max_chars])}</p>",
             (f"<p><b>Human score:</b> {ex['scores'].get(aspect)!s:.5} &middot; <b>final score:</b> "
              f"{d.get('final_score', j['scores'].get(aspect))} ({esc(str(d.get('final_source', d.get('source'))))})</p>")]
    if "turns" not in d:  # g-eval: no debate, show the score's basis
        basis = d.get("probs") or d.get("samples")
        parts.append(f"<p>G-Eval {esc(str(d.get('source')))}: {esc(str(basis))}</p></div>")
        return "".join(parts)
    parts.append(f"<p>Critic: {esc(d['critic'])}; {d['iterations']} review(s); stopped: {esc(d['stopped'])}"
                 + (f"; {d['turns_dropped']} old turn(s) left out to fit the context" if d["turns_dropped"] else "")
                 + "</p><table border=1 cellpadding=4><tr><th>agent</th><th>iteration</th><th>score</th><th>text</th></tr>")
    for t in d["turns"]:
        mark = " <b>[NO ISSUE]</b>" if t["no_issue"] else ""
        parts.append(f"<tr><td>{esc(t['speaker'])}</td><td>{t['iteration']}</td><td>{t['score']}</td>"
                     f"<td>{esc(t['text'][:max_chars])}{mark}</td></tr>")
    parts.append("</table></div>")
    return "".join(parts)
