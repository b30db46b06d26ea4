"""DEBATE experiment grids, paper-vs-reproduced tables and the debate viewer (notebooks 20 and 21).

Every row is one ``sumjudge run`` through ``notebook.Session`` (cached, resumable). Runs that share
calls share them through the cache: MultiAgent is DEBATE with the Plain Critic, and a debate capped at
n iterations repeats, call for call, the first n-1 iterations of a longer one (greedy decoding).
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from sumjudge import plots
from sumjudge.data import registry
from sumjudge.errors import ConfigError
from sumjudge.judges.aspects import aspects_for
from sumjudge.judges.base import Judgement
from sumjudge.judges.settings import make_config
from sumjudge.llm.engine import run_sync
from sumjudge.metrics import wilson_ci
from sumjudge.prompts import load as load_template
from sumjudge.report import ci_text, paper_results, paper_value, read_results
from sumjudge.run.folder import run_name
from sumjudge.run.methods import get_method
from sumjudge.run.metrics import parse_columns, rated_metrics

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


def run_spec(method: str, dataset: str, settings: dict[str, Any], limit: int | None = None) -> dict[str, Any]:
    """``run_method``'s run as ``Session.run_many`` takes it."""
    return {"method": method, "dataset": dataset, "settings": settings, "name": run_name(method, settings, dataset),
            "limit": limit}


def run_evaluators(session, dataset: str, aspects: list[str], iterations: int = 3, limit: int | None = None,
                   evaluators=EVALUATORS) -> dict[str, tuple[dict[str, Any], Path]]:
    """(metrics, run folder) per Table 1 evaluator on ``dataset``, scoring ``aspects``."""
    specs = []
    for label, method, extra in evaluators:
        settings = {"aspects": list(aspects), **extra}
        if method != "g-eval":
            settings["iterations"] = iterations
        specs.append(run_spec(method, dataset, settings, limit))
    return dict(zip([label for label, _, _ in evaluators], session.run_many(specs)))  # submitted together


def geval_protocol_rows(session, dataset: str, aspects: list[str], *, samples: int, protocols: list[str],
                        limit: int | None = None) -> list[dict[str, Any]]:
    """G-Eval's sampling estimate under each protocol (``paper``: temperature 1, the prompt as the user
    message, unreadable answers left out; ``repository``: temperature 2, system message, 5 tokens,
    unreadable scored 0), on the same examples: the correlations, and how many samples could not be read."""
    rows = []
    for protocol in protocols:
        m, run_dir = run_method(session, "g-eval", dataset, {"aspects": list(aspects), "mode": "samples",
                                                             "samples": samples, "protocol": protocol}, limit)
        res = read_results(run_dir)
        bad = sum(d.get("unparsed_samples", 0) for r in res for d in r["judgement"]["details"]["aspects"].values())
        total = sum(len(d.get("samples") or []) for r in res for d in r["judgement"]["details"]["aspects"].values())
        for r in correlation_rows(f"G-Eval ({protocol} protocol)", m, experiment="G-Eval protocols",
                                  model=session.llm.info.model):
            rows.append({**r, "protocol": protocol, "samples_per_score": samples,
                         "unreadable_samples": f"{bad}/{total}"})
    return rows


def repeatability_rows(session, dataset: str, aspect: str, *, examples: int, repeats: int,
                       iterations: int = 3) -> list[dict[str, Any]]:
    """Appendix E.1's due-diligence check: DEBATE on ``examples`` texts, ``repeats`` times each, at temperature 0,
    every repeat computed by the backend (the response cache is bypassed: a cached repeat proves nothing).
    Per text: the distinct final scores and whether every transcript was identical."""

    spec = get_method("debate")
    cfg = make_config(spec.config_cls, session.method_settings("debate", aspects=aspect, iterations=iterations),
                      seed=session.prof.seed)
    exs = registry.load(dataset, limit=examples, seed=session.prof.seed)[:examples]
    rows = []
    for ex in exs:
        finals, transcripts = [], set()
        for _ in range(repeats):
            j = run_sync(spec.judge(ex, session.llm.bypassing_cache().scoped(ex.id), cfg))
            d = j.details["aspects"][aspect]
            finals.append(j.scores[aspect])
            transcripts.add(tuple(t["text"] for t in d["turns"]))
        rows.append({"experiment": "E.1 repeatability", "example": ex.id, "aspect": aspect, "repeats": repeats,
                     "distinct_final_scores": sorted({f for f in finals if f is not None}),
                     "unreadable": sum(f is None for f in finals), "identical_transcripts": len(transcripts) == 1,
                     "paper": "results do not vary (20 repeats of 5 examples, GPT-4, temperature 0)",
                     "model": session.llm.info.model})
    return rows


DATASET_NAME = {"summeval": "SummEval", "topical-chat": "Topical-Chat"}


def printed_cell(paper_table: str, paper_row: str, column: str, dataset: str, symbol: str
                 ) -> tuple[float | None, str | None]:
    """The paper's value for one (dataset, statistic) row, or None and a note naming what the paper printed there:
    a value is set beside a row only when the row has the table's dataset and one of its statistics."""
    table = paper_results("debate")[paper_table]
    stats = table["statistics"]
    if dataset != table["dataset"] or symbol not in stats:
        name = table["caption"].split(":")[0].split(" (")[0]
        return None, (f"the paper's {name} is {DATASET_NAME.get(table['dataset'], table['dataset'])} "
                      f"{'/'.join(stats)}: not compared with {DATASET_NAME.get(dataset, dataset)} {symbol}")
    cell = paper_value("debate", paper_table, paper_row, column)
    return (cell[stats.index(symbol)] if cell else None), None


AVERAGE_ROUNDING = 0.001  # three decimals printed: each aspect and the average within half a unit of the third


def printed_average_note(paper_table: str, paper_row: str, symbol: str) -> str | None:
    """Where the paper's printed Average of a row is not the mean of its printed aspects (beyond what printing to
    three decimals explains): a note saying so, with that mean; None where they agree or the row lacks an aspect."""
    table = paper_results("debate")[paper_table]
    row = table["rows"].get(paper_row) or {}
    i = table["statistics"].index(symbol) if symbol in table["statistics"] else None
    aspects = [c for c in table["columns"] if c != "average"]
    if (i is None or not row.get("average") or row["average"][i] is None
            or not all(row.get(c) and row[c][i] is not None for c in aspects)):
        return None
    mean = sum(row[c][i] for c in aspects) / len(aspects)
    if abs(mean - row["average"][i]) <= AVERAGE_ROUNDING:
        return None
    return (f"the paper's printed average {row['average'][i]:.3f} is not the mean of its {len(aspects)} printed "
            f"aspects ({mean:.3f}): as printed")


def correlation_rows(label: str, metrics: dict[str, Any], *, experiment: str, model: str,
                     paper_table: str | None = None, paper_row: str | None = None) -> list[dict[str, Any]]:
    """One row per (aspect or average, correlation) of a rated run, with the paper's value where the paper printed
    one for the row's dataset and statistic (``printed_cell``; otherwise ``note`` says what it printed)."""
    rows = []
    for col in ["average", *metrics["aspects"]]:
        for m in metrics["correlations"]:
            paper, note = (printed_cell(paper_table, paper_row, col, metrics["dataset"], SYMBOL[m])
                           if paper_table and paper_row else (None, None))
            extra: dict[str, Any] = {}
            if col == "average":
                rep = metrics["average"][m]
                ci = (metrics.get("average_ci") or {}).get(m)  # a bootstrap over the groups (older runs: none)
                each = [metrics["aspects"][a][m] for a in metrics["aspects"]]  # the fewest groups an aspect rests on
                extra = {"ci": tuple(ci) if ci else None, "groups": min((e["n_groups"] for e in each), default=None),
                         "undefined_groups": max((e["undefined_groups"] for e in each), default=None)}
                fewer = average_of_fewer_aspects(metrics["dataset"], list(metrics["aspects"]))
                printed = (printed_average_note(paper_table, paper_row, SYMBOL[m])
                           if paper is not None and paper_table and paper_row else None)
                note = "; ".join(x for x in (note, fewer, printed) if x) or None
            else:
                a = metrics["aspects"][col]
                rep = a[m]["mean"]
                ci = a[m]["ci"]
                extra = {"ci": tuple(ci) if ci else None, "groups": a[m]["n_groups"],  # a bootstrap over the groups
                         "undefined_groups": a[m]["undefined_groups"], "unparsed": a["unparsed"],
                         "scale": f"{a['scale'][0]}-{a['scale'][1]}", **debate_columns(a)}
            rows.append({"experiment": experiment, "evaluator": label, "dataset": metrics["dataset"], "aspect": col,
                         "metric": SYMBOL[m], "paper": paper, "reproduced": rep,
                         "paper_row": paper_row if paper is not None else None, "model": model,
                         "n": metrics["n_examples"], **extra, **parse_columns(metrics),
                         **({"note": note} if note else {})})
    return rows


def average_of_fewer_aspects(dataset: str, rated: list[str]) -> str | None:
    """What an ``average`` row averages where the run rated fewer of the dataset's aspects than the printed average
    (every aspect the paper lists for it): None where it rated them all, or the dataset lists none."""
    try:
        every = [a.name for a in aspects_for(dataset, None)]
    except ConfigError:  # a dataset without registered aspects: nothing to compare with
        return None
    if not every or set(every) <= set(rated):
        return None
    return (f"the average of {len(rated)} of the dataset's {len(every)} aspects ({', '.join(rated)}); the printed "
            f"average is over all {len(every)}")


def debate_columns(aspect_metrics: dict[str, Any]) -> dict[str, Any]:
    """How a debate ended (DEBATE's and MultiAgent's aspects): the share of debates the Critic ended with NO
    ISSUE in percent and the mean number of Critic reviews, beside the correlations; G-Eval's mean coverage. The
    same two columns as a run's ``debate_endings``, over one aspect."""
    d, cov = aspect_metrics.get("debate"), aspect_metrics.get("coverage")
    out: dict[str, Any] = {}
    if d:
        out.update(ending_columns(d["no_issue_share"], d["mean_iterations"]))
    if cov:
        out["mean_coverage"] = round(cov["mean"], 3)
    return out


def table1_rows(results: dict[str, tuple[dict[str, Any], Path]], dataset: str, model: str) -> list[dict[str, Any]]:
    return [r for label, (m, _) in results.items()
            for r in correlation_rows(label, m, experiment="Table 1", model=model, paper_table=PAPER_TABLE[dataset],
                                      paper_row=f"{label} ({PAPER_MODEL})")]


# The setting that reproduces the paper's ROUGE-L row (Table 1, taken from G-Eval's table): summary-level
# ROUGE-L (ROUGE-Lsum: LCS over sentences split at " . ", as ROUGE-1.5.5 scores summaries), Porter stemming,
# F1 averaged over the 11 references of each SummEval document. Measured on all 1600 summaries: coherence
# .129/.100 (paper .128/.099), consistency .114/.091 (.115/.092), fluency .104/.084 (.105/.084), relevance
# .310/.237 (.311/.237). The plain sentence-less ROUGE-L F1 against the one CNN/DM reference gives relevance
# .192/.146: that was this repository's earlier setting (``variant="rougeL-single"``).
ROUGE_VARIANTS = {"rougeLsum-11refs": ("rougeLsum", True, "mean"), "rougeL-single": ("rougeL", False, "single")}


def rouge_l_scores(examples, variant: str = "rougeLsum-11refs") -> list[float]:
    """ROUGE-L F1 of each SummEval summary under ``variant`` (``ROUGE_VARIANTS``)."""
    from rouge_score import rouge_scorer

    if variant not in ROUGE_VARIANTS:
        raise ValueError(f"unknown ROUGE-L variant {variant!r}; known: {', '.join(ROUGE_VARIANTS)}")
    kind, stem, refs = ROUGE_VARIANTS[variant]
    scorer = rouge_scorer.RougeScorer([kind], use_stemmer=stem)
    split = (lambda t: t.replace(" . ", " .\n")) if kind == "rougeLsum" else (lambda t: t)
    out = []
    for ex in examples:
        targets = ex.meta["references"] if refs == "mean" else [ex.meta["reference"]]
        if not targets:
            raise ValueError(f"{ex.id}: no reference summaries")
        fs = [scorer.score(split(r), split(ex.output))[kind].fmeasure for r in targets]
        out.append(sum(fs) / len(fs))
    return out


def rouge_l_metrics(session, dataset: str, aspects: list[str], limit: int | None = None,
                    variant: str = "rougeLsum-11refs") -> dict[str, Any]:
    """ROUGE-L of each SummEval summary (``ROUGE_VARIANTS``; the default reproduces the paper's row),
    correlated with the human scores exactly like the LLM evaluators (same examples: the profile's n and
    seed)."""

    if dataset != "summeval":
        raise ValueError("ROUGE-L needs a reference text: SummEval only (Topical-Chat's reference is one of its "
                         "six rated responses)")
    examples = registry.load(dataset, limit=session.prof.n if limit is None else limit, seed=session.prof.seed)
    js = [Judgement(example_id=ex.id, scores={a: f for a in aspects},  # an F1, on 0-1: not the aspects' 1-5
                    details={"aspects": {a: {"scale": [0, 1]} for a in aspects}})
          for ex, f in zip(examples, rouge_l_scores(examples, variant))]
    return {"method": "rouge-l", "variant": variant, "dataset": dataset, "n_examples": len(examples),
            **rated_metrics(examples, js)}


def paper_only_rows(dataset: str, computed: Iterable[str | dict[str, Any]] = ()) -> list[dict[str, Any]]:
    """The paper's other cells (ROUGE-L, BERTScore, UniEval, ..., ChatEval, other LLMs) as printed, marked as
    not computed here. ``computed``: what the notebook reproduces elsewhere, whole rows by name or the rows of its
    reproduced table (a printed cell is left out when a reproduced row carries it: its ``dataset``, ``paper_row``
    and ``aspect``), so a cell is never both reproduced and listed as the paper's only."""
    computed = list(computed)
    names = {c for c in computed if isinstance(c, str)}
    cells = {(c.get("dataset"), c.get("paper_row"), c.get("aspect")) for c in computed if isinstance(c, dict)}
    table = paper_results("debate")[PAPER_TABLE[dataset]]
    rows = []
    for name, printed in table["rows"].items():
        if name in names:
            continue
        for col, vals in printed.items():
            if (dataset, name, col) in cells:
                continue
            for sym, v in zip(table["statistics"], vals):
                mismatch = printed_average_note(PAPER_TABLE[dataset], name, sym) if col == "average" else None
                rows.append({"experiment": "Table 1 (paper only)", "evaluator": name, "dataset": dataset,
                             "aspect": col, "metric": sym, "paper": v, "reproduced": None,
                             "note": "as printed in the paper; not computed here"
                                     + (f"; {mismatch}" if mismatch else "")})
    return rows


# The scale of every aspect in the paper's Table 2 (SummEval 1-5; Topical-Chat 1-3)
PAPER_SCALE = {"summeval": (1, 5), "topical-chat": (1, 3)}


def distribution_rows(metrics: dict[str, Any], dataset: str, label: str = "DEBATE") -> list[dict[str, Any]]:
    """Table 2: % of scores at each point, human and DEBATE, paper beside reproduced (groundedness is left
    out, as in the paper: another scale), with Wilson's 95% interval of each share over the ``n`` scored texts
    (texts of one source document are not independent, so the interval is, if anything, too narrow). A method's points are compared with the paper's only when the
    method scored the aspect on the paper's scale; otherwise the paper column is left empty and the row says
    so."""
    paper = paper_results("debate")["table2"].get(dataset, {})
    rows = []
    for name, a in metrics["aspects"].items():
        if name == "groundedness":
            continue
        ref = paper.get(name, {})
        same_scale = tuple(a["scale"]) == PAPER_SCALE.get(dataset)
        points = sorted({int(k) for k in a["distribution"]["human"]} | {int(k) for k in a["distribution"]["method"]})
        for p in points:
            for who, key, pkey in (("human", "human", "human"), (label, "method", "debate")):
                vals = ref.get(pkey) if who == "human" or same_scale else None
                share = a["distribution"][key].get(str(p), a["distribution"][key].get(p))
                n = a.get("n_human") if who == "human" else a.get("n")
                rows.append({"experiment": "Table 2", "dataset": dataset, "aspect": name, "score": p, "who": who,
                             "paper": vals[p - 1] if vals and 1 <= p <= len(vals) else None,
                             "reproduced": share, "ci": wilson_ci(share, n), "n": n,
                             "scale": f"{a['scale'][0]}-{a['scale'][1]}" if who != "human" else "human (rounded)",
                             "note": None if who == "human" or same_scale else
                             f"scored {a['scale'][0]}-{a['scale'][1]}, the paper's DEBATE scored "
                             f"{PAPER_SCALE[dataset][0]}-{PAPER_SCALE[dataset][1]}: not compared"})
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
    results = session.run_many([run_spec(method, dataset, {"aspects": list(aspects), **settings}, limit)
                                for _, _, method, settings in grid])  # together; a setting repeated runs once
    return [{"panel": panel, "setting": label, "metrics": metrics, "run_dir": run_dir}
            for (panel, label, _, _), (metrics, run_dir) in zip(grid, results)]


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
                rows.append({**row, "panel": r["panel"], "setting": r["setting"],
                             **{f"setting_{k}": v for k, v in endings.items()}})
    return rows


def debate_endings(run_dir: Path) -> dict[str, Any]:
    """How the debates of a run ended, over all its aspects: the share stopped by NO ISSUE in percent
    (``no_issue_pct``) and the mean number of Critic reviews (``mean_reviews``), as ``debate_columns`` names them
    for one aspect."""

    ds = [d for r in read_results(run_dir) for d in r["judgement"]["details"]["aspects"].values() if "stopped" in d]
    if not ds:  # not a debate (G-Eval)
        return {}
    return ending_columns(sum(d["stopped"] == "no_issue" for d in ds) / len(ds),
                          sum(d["iterations"] for d in ds) / len(ds))


def ending_columns(no_issue_share: float, mean_reviews: float) -> dict[str, float]:
    """``no_issue_pct`` to a tenth (99.9, not 100, where the Critic objected in a few of thousands of debates: 100
    says it never did) and ``mean_reviews``."""
    pct = round(100 * no_issue_share, 1)
    return {"no_issue_pct": 99.9 if pct == 100 and no_issue_share < 1 else pct, "mean_reviews": round(mean_reviews, 2)}


def figure2(rows: list[dict[str, Any]]):
    """Three panels like the paper's Figure 2: average correlation per setting, one bar per metric, each with the 95%
    interval its table shows, the dataset and n in each panel's title, the line of no correlation labelled."""
    import matplotlib.pyplot as plt
    import pandas as pd


    df = pd.DataFrame([r for r in rows if r["experiment"] == "Figure 2" and r["aspect"] == "average"])
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    for ax, panel in zip(axes, ("iterations", "persona", "strategy")):
        sub = df[df["panel"] == panel] if len(df) else df
        ax.set_title(plots.title({"iterations": "max iterations n", "persona": "Critic persona",
                                  "strategy": "debating strategy"}[panel],
                                 sub["dataset"] if len(sub) else [], sub["n"] if len(sub) else [], noun="judged texts"))
        if sub.empty or sub["reproduced"].isna().all():  # every correlation undefined (e.g. constant scores)
            ax.text(0.5, 0.5, "no defined correlation", ha="center", va="center", transform=ax.transAxes)
            continue
        sub = sub.assign(reproduced=sub["reproduced"].astype(float), ci=[ci_text(c) for c in sub.get("ci", [None] * len(sub))])
        plots.bars(ax, sub, category="setting", ci="ci", series="metric")
        plots.chance(ax, 0, "no correlation (0)")
        plt.setp(ax.get_xticklabels(), rotation=20, ha="right", rotation_mode="anchor")
        ax.set_ylabel("average correlation (95% interval)")
    fig.tight_layout()
    plots.figure_legend(fig, axes)
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
                 + "</p><table border=1 cellpadding=4><tr><th>agent</th><th>iteration</th><th>score</th><th>text</th></tr>"
                 # the Commander is the protocol code; its G.1 role text stands for it in the transcript
                 + f"<tr><td>commander</td><td></td><td></td><td>{esc(load_template('debate/g1_commander').body)} "
                   "<i>(relays the task and every message; the scale's template is the task)</i></td></tr>")
    for t in d["turns"]:
        mark = (" <b>[NO ISSUE]</b>" if t["no_issue"] else "") + (" <i>[asked again with a format reminder]</i>"
                                                                  if t.get("reminded") else "")
        parts.append(f"<tr><td>{esc(t['speaker'])}</td><td>{t['iteration']}</td><td>{t['score']}</td>"
                     f"<td>{esc(t['text'][:max_chars])}{mark}</td></tr>")
    parts.append("</table></div>")
    return "".join(parts)
