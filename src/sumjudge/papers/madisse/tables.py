"""MADISSE experiment grids for the notebooks: the seven evaluator rows of Tables 3 / 33 / 35.

Each row is one ``sumjudge run`` (through ``notebook.Session``); the two simultaneous-debate rows come
out of one run (agents vote and debates vote). Session 0 of that run uses the same seeds as the
single-session MADISSE run, so its calls are cache hits.
"""

from __future__ import annotations

import html
import json
import random
from typing import Any

import numpy as np

from sumjudge.data import registry
from sumjudge.metrics import binary_report, labels_said, percentile_interval, stratified_resamples
from sumjudge.report import ci_text, paper_results, paper_value, read_results, scaled_ci, shown_number
from sumjudge.run.folder import run_name
from sumjudge.run.metrics import binary_scores, cell_sizes, parse_columns, said_column

# (paper row, method, settings, variant of the run's metrics or None)
EVALUATORS: tuple[tuple[str, str, dict[str, Any], str | None], ...] = (
    ("zero-shot", "zero-shot", {}, None),
    ("cot", "cot", {}, None),
    ("self-consistency", "self-consistency", {}, None),
    ("madisse-no-init", "madisse", {"init": "none"}, None),
    ("madisse", "madisse", {}, None),
    ("madisse-agents-vote", "madisse", {"sessions": "SESSIONS"}, "agents_vote"),
    ("madisse-debates-vote", "madisse", {"sessions": "SESSIONS"}, "debates_vote"),
)
ROW_NAMES = {"zero-shot": "Zero-shot single LLM", "cot": "Zero-shot Chain of Thought",
             "self-consistency": "Self-consistency", "madisse-no-init": "MADISSE wo initialization",
             "madisse": "MADISSE", "madisse-agents-vote": "MADISSE w. simul. debates (agents vote)",
             "madisse-debates-vote": "MADISSE w. simul. debates (debates vote)"}


def run_evaluators(session, dataset: str, level: str, *, rounds: int = 3, faithful_agents: int = 2,
                   unfaithful_agents: int = 2, sessions: int = 3, adjudicators: int = 3,
                   samples: int = 41, rows: list[str] | None = None,
                   prompts: str = "code") -> dict[str, dict[str, Any]]:
    """Metrics per paper row (the run folder under ``'run_dir'``); ``rows`` picks some (default: all seven);
    ``prompts`` the prompt source (code: the authors' prompts.py, the default; printed: the paper's tables)."""
    unknown = set(rows or []) - {r for r, *_ in EVALUATORS}
    if unknown:
        raise ValueError(f"evaluators: unknown row(s) {', '.join(sorted(unknown))}; known: "
                         f"{', '.join(r for r, *_ in EVALUATORS)}")
    debate = {"rounds": rounds, "faithful_agents": faithful_agents, "unfaithful_agents": unfaithful_agents,
              "adjudicators": adjudicators}
    wanted: list[tuple[str, str, str | None]] = []  # (row, run name, variant)
    specs: dict[str, dict[str, Any]] = {}  # one run per distinct configuration, all submitted together
    for row, method, settings, variant in EVALUATORS:
        if rows is not None and row not in rows:
            continue
        cfg = {k: (sessions if v == "SESSIONS" else v) for k, v in settings.items()}
        if prompts != "code":
            cfg["prompts"] = prompts
        if method == "madisse":
            cfg = {**debate, **cfg}
        if method == "self-consistency":
            cfg["samples"] = samples
        name = run_name(method, cfg, dataset, level)
        specs.setdefault(name, {"method": method, "dataset": dataset, "level": level, "settings": cfg, "name": name})
        wanted.append((row, name, variant))
    done = dict(zip(specs, session.run_many(list(specs.values()))))
    out: dict[str, dict[str, Any]] = {}
    for row, name, variant in wanted:
        metrics, run_dir = done[name]
        m = metrics["variants"][variant] if variant else metrics
        out[row] = {**m, "run_dir": run_dir, "n_examples": metrics["n_examples"], "cost": metrics["cost"]}
    return out


def rates_disagree(row: str, bacc: float | None, rates: list[float | None]) -> str | None:
    """Where the paper's Table 35 FPR and FNR of a row do not give its printed BAcc (BAcc = 100 - (FPR + FNR) / 2,
    beyond the rounding of printed numbers), the note that says so, both numbers the paper's; else None."""
    fpr, fnr = (rates + [None, None])[:2]
    if bacc is None or fpr is None or fnr is None:
        return None
    implied = 100 - (fpr + fnr) / 2
    if abs(implied - bacc) <= 0.2:
        return None
    return (f"the paper disagrees with itself: its Table 35 rates for {row} give BAcc {shown_number(implied)}, "
            f"its BAcc is {shown_number(bacc)}")


def comparison_rows(results: dict[str, dict[str, Any]], dataset: str, level: str, model: str) -> list[dict]:
    """BAcc / K-alpha rows (Table 3 at summary level, Table 33 at sentence level) and FPR / FNR rows
    (Table 35, summary level), each with the paper's value."""
    col = MADISSE_DATASET_COLUMNS.get(dataset, dataset)
    table = "table33_sentence" if level == "sentence" else "table3"
    note = (paper_results("madisse")[table].get("notes") or {}).get(col)
    rows = []
    for row, m in results.items():
        cell = paper_value("madisse", table, row, col) or [None, None]
        rates = (paper_value("madisse", "table35", row, col) if level == "summary" else None) or [None, None]
        common = {"evaluator": ROW_NAMES[row], "dataset": dataset, "level": level, "model": model,
                  **cell_sizes(m, m["n_examples"]), "unparsed": m.get("unparsed"),
                  **said_column(m.get("said"), m.get("gold")), **parse_columns(m),
                  "calls_per_example": round(m["cost"]["calls_per_example"], 1),
                  "note": note if row.startswith("madisse") and row != "madisse-no-init" else None}
        pct = (lambda v: None if v is None else 100 * v)
        own = rates_disagree(ROW_NAMES[row], cell[0], rates)
        rows += [{**common, "metric": "BAcc (%)", "paper": cell[0], "reproduced": pct(m.get("bacc")),
                  "ci": scaled_ci(m.get("bacc_ci")), "note": "; ".join(x for x in (common["note"], own) if x) or None},
                 {**common, "metric": "K-alpha", "paper": cell[1], "reproduced": m.get("k_alpha"),
                  "ci": m.get("k_alpha_ci")},
                 {**common, "metric": "FPR (%)", "paper": rates[0], "reproduced": pct(m.get("fpr")),
                  "ci": scaled_ci(m.get("fpr_ci"))},
                 {**common, "metric": "FNR (%)", "paper": rates[1], "reproduced": pct(m.get("fnr")),
                  "ci": scaled_ci(m.get("fnr_ci"))}]
    return rows


def printed_vs_run_rows(as_run: dict[str, dict[str, Any]], printed: dict[str, dict[str, Any]], dataset: str,
                        level: str, model: str) -> list[dict]:
    """The same evaluators on the same examples with the prompts the authors' code sends (the default) and with
    the paper's printed tables (prompts=printed): BAcc, K-alpha and how often the answers could be read."""
    col = MADISSE_DATASET_COLUMNS.get(dataset, dataset)
    table = "table33_sentence" if level == "sentence" else "table3"
    rows = []
    for row in printed:
        cell = paper_value("madisse", table, row, col) or [None, None]  # the paper's numbers are the code's run
        for source, m in (("as run (prompts=code)", as_run[row]), ("as printed (prompts=printed)", printed[row])):
            rows.append({"evaluator": ROW_NAMES[row], "prompts": source, "dataset": dataset, "level": level,
                         "paper_bacc": cell[0], "bacc": None if m.get("bacc") is None else 100 * m["bacc"],
                         "bacc_95%_ci": ci_text(scaled_ci(m.get("bacc_ci"))),
                         "paper_k_alpha": cell[1], "k_alpha": m.get("k_alpha"),
                         **cell_sizes(m, m["n_examples"]), "unparsed": m.get("unparsed"),
                         **said_column(m.get("said"), m.get("gold")), **parse_columns(m), "model": model})
    return rows


AMBIGUITY_DETECTORS = (
    ("random", None, None),
    ("self-consistency variation", "ambiguity-sc", None),
    ("baseline w ambiguity taxonomy", "ambiguity-taxonomy", None),
    ("debate disagreement", "ambiguity-debate", "disagreement"),
    ("debate arguments", "ambiguity-debate", "arguments"),
)
# what label 1 stands for in Table 4's label counts (``report.save_table``'s ``label_one``): the detectors' own labels
AMBIGUOUS = "ambiguous (the sentence's faithfulness can be read more than one way), 0 = not ambiguous"
TABLE4 = {"random": 50.0, "self-consistency variation": 52.0, "baseline w ambiguity taxonomy": 59.3,
          "debate disagreement": 66.1, "debate arguments": 71.4}


def coin_bacc_ci(y: list[int], seed: int, n_resamples: int = 1000) -> tuple[float, float] | None:
    """95% interval of a fair coin's BAcc on examples like ``y``: each bootstrap resample draws the examples within
    each gold class (as ``metrics.balanced_accuracy_ci``) and a fresh coin for each, so the interval covers the
    coin's own variance too, not only the examples' (a bootstrap of one draw conditions on that draw and can exclude
    chance, the coin's expectation). Seeded: the same interval on every run; None with one gold class."""


    rng = np.random.default_rng(seed)
    drawn = stratified_resamples(np.asarray(y), n_resamples, rng)
    if drawn is None:
        return None
    pos, neg = drawn
    said_1 = (lambda idx: rng.integers(0, 2, idx.shape) == 1)
    return percentile_interval((said_1(pos).mean(axis=1) + (~said_1(neg)).mean(axis=1)) / 2)


def run_ambiguity_detectors(session, *, sc_samples: int = 41, threshold: float = 20.0, rounds: int = 3,
                            faithful_agents: int = 2, unfaithful_agents: int = 2, adjudicators: int = 3) -> list[dict]:
    """Table 4 rows on meetingbank-ambiguity: BAcc (%) of each detector, paper beside ours. The random
    baseline is a seeded coin per sentence (the paper reports its expectation, 50); its interval is a coin's, not
    this one draw's (``coin_bacc_ci``)."""


    debate = {"rounds": rounds, "faithful_agents": faithful_agents, "unfaithful_agents": unfaithful_agents,
              "adjudicators": adjudicators}
    settings = {"ambiguity-sc": {"samples": sc_samples, "threshold": threshold}, "ambiguity-taxonomy": {},
                "ambiguity-debate": debate}
    methods = list(dict.fromkeys(m for _, m, _ in AMBIGUITY_DETECTORS if m is not None))
    # the detectors run together: their requests share the engine's batches
    done = session.run_many([{"method": m, "dataset": "meetingbank-ambiguity", "settings": settings[m],
                              "name": f"{m}-meetingbank-ambiguity"} for m in methods])
    runs = dict(zip(methods, done))
    rows = []
    for name, method, variant in AMBIGUITY_DETECTORS:
        if method is None:
            exs = registry.load("meetingbank-ambiguity", limit=session.prof.n, seed=session.prof.seed)
            rng = random.Random(session.prof.seed)
            y = [0 if e.ambiguity.ambiguous else 1 for e in exs]  # flipped: positive (0) = ambiguous
            coin = [rng.randint(0, 1) for _ in exs]
            rows.append({"detector": name, "paper": TABLE4[name], "reproduced": 100 * binary_report(y, coin).bacc,
                         "ci": scaled_ci(coin_bacc_ci(y, seed=session.prof.seed)), "n": len(exs), "n_examples": len(exs),
                         "unparsed": 0,  # the counts in the detectors' own labels, as the other rows (1 = ambiguous)
                         **said_column(labels_said([1 - c for c in coin]), labels_said([1 - v for v in y]))})
            continue
        metrics, _ = runs[method]
        m = metrics["variants"][variant] if variant else metrics
        rows.append({"detector": name, "paper": TABLE4[name],
                     "reproduced": None if m["bacc"] is None else 100 * m["bacc"],
                     "ci": scaled_ci(m.get("bacc_ci")), **cell_sizes(m, metrics["n_examples"]),
                     "unparsed": m["unparsed"],
                     **said_column(m.get("said"), m.get("gold"))})
    return rows


def filtering_rows(results: dict[str, dict[str, Any]]) -> list[dict]:
    """Figure 3 / 6: each evaluator's BAcc, K-alpha, FPR, FNR on all sentences and on those the human
    annotators did not mark ambiguous (the same run, re-scored)."""

    rows = []
    for row, m in results.items():
        res = read_results(m["run_dir"])
        for subset, keep in (("all", lambda r: True),
                             ("non-ambiguous", lambda r: not (r["example"].get("ambiguity") or {}).get("ambiguous"))):
            sel = [r for r in res if keep(r)]
            y = [r["example"]["label"] for r in sel]
            variant = {"madisse-agents-vote": "agents_vote", "madisse-debates-vote": "debates_vote"}.get(row)
            p = [r["judgement"]["scores"].get(variant) if variant else r["judgement"]["label"] for r in sel]
            b = binary_scores(y, p)
            rows.append({"evaluator": ROW_NAMES[row], "subset": subset, **cell_sizes(b, len(sel)), "bacc": 100 * b["bacc"],
                         "bacc_95%_ci": ci_text(scaled_ci(b["bacc_ci"])),
                         "k_alpha": b["k_alpha"], "k_alpha_95%_ci": ci_text(b["k_alpha_ci"]),
                         "fpr": 100 * b["fpr"], "fpr_95%_ci": ci_text(scaled_ci(b["fpr_ci"])),
                         "fnr": 100 * b["fnr"], "fnr_95%_ci": ci_text(scaled_ci(b["fnr_ci"])),
                         **said_column(b["said"], b["gold"])})
    return rows


def stance_ratio_rows(session, dataset: str, level: str, *, ratios: list[str], rounds: int = 3,
                      sessions: int = 3, adjudicators: int = 3) -> list[dict]:
    """Table 34: MADISSE without initialisation, single-session 2+2, and simultaneous debates (agents
    vote, as in the paper's table) for each 'F+U' stance ratio. Paper values are MediaSum's."""
    col = MADISSE_DATASET_COLUMNS.get(dataset, dataset)
    configs = [("no-init", {"init": "none", "sessions": 1}), ("2+2 single", {"faithful_agents": 2,
                                                                               "unfaithful_agents": 2, "sessions": 1})]
    for r in ratios:
        f, u = (int(x) for x in r.split("+"))
        configs.append((r, {"faithful_agents": f, "unfaithful_agents": u, "sessions": sessions}))
    settings = []
    for name, cfg in configs:
        cfg = {"rounds": rounds, "adjudicators": adjudicators, **cfg}
        if cfg.get("init") == "none":
            cfg.update(faithful_agents=2, unfaithful_agents=2)
        settings.append(cfg)
    results = session.run_many([{"method": "madisse", "dataset": dataset, "level": level, "settings": cfg,
                                 "name": run_name("madisse", cfg, dataset, level)} for cfg in settings])
    rows = []
    for (name, _), cfg, (metrics, _) in zip(configs, settings, results):
        m = metrics["variants"]["agents_vote"] if cfg["sessions"] > 1 else metrics
        paper = paper_value("madisse", "table34", name, "mediasum") or [None] * 4
        pct = (lambda v: None if v is None else 100 * v)
        rows.append({"stances": name, "dataset": dataset, "level": level, "paper_dataset": "mediasum",
                     "paper_bacc": paper[0], "bacc": pct(m["bacc"]), "bacc_95%_ci": ci_text(scaled_ci(m.get("bacc_ci"))),
                     "paper_k_alpha": paper[1], "k_alpha": m["k_alpha"], "k_alpha_95%_ci": ci_text(m.get("k_alpha_ci")),
                     "paper_fpr": paper[2], "fpr": pct(m["fpr"]), "fpr_95%_ci": ci_text(scaled_ci(m.get("fpr_ci"))),
                     "paper_fnr": paper[3], "fnr": pct(m["fnr"]), "fnr_95%_ci": ci_text(scaled_ci(m.get("fnr_ci"))),
                     **cell_sizes(m, metrics["n_examples"]), **said_column(m.get("said"), m.get("gold")),
                     "calls_per_example": metrics["cost"]["calls_per_example"], "same_dataset_as_paper": col == "mediasum"})
    return rows


def _grid_spec(dataset: str, level: str, rounds: int, sessions: int, faithful_agents: int,
               unfaithful_agents: int, adjudicators: int) -> dict[str, Any]:
    cfg = {"rounds": rounds, "sessions": sessions, "faithful_agents": faithful_agents,
           "unfaithful_agents": unfaithful_agents, "adjudicators": adjudicators}
    return {"method": "madisse", "dataset": dataset, "level": level, "settings": cfg,
            "name": run_name("madisse", cfg, dataset, level)}


def longest_debate(session, dataset: str, level: str, *, rounds: int, faithful_agents: int = 2,
                   unfaithful_agents: int = 2, adjudicators: int = 3) -> dict | None:
    """The results row of the grid's single-session cell with ``rounds`` rounds (a finished run: read back,
    nothing asked again) whose debate lasted longest: the first example with the most rounds played, so
    a viewer shows agents answering each other's arguments whenever any debate went past round 1."""
    _, run_dir = session.run(**_grid_spec(dataset, level, rounds, 1, faithful_agents, unfaithful_agents,
                                          adjudicators))
    rows = [r for r in read_results(run_dir) if r["judgement"]["details"].get("sessions")]
    played = (lambda r: len(r["judgement"]["details"]["sessions"][0]["rounds"]))
    return max(rows, key=played) if rows else None


def rounds_sessions_grid(session, dataset: str, level: str, *, max_rounds: int, max_sessions: int,
                         faithful_agents: int = 2, unfaithful_agents: int = 2, adjudicators: int = 3) -> list[dict]:
    """BAcc, K-alpha and cost for every (rounds, sessions) pair. Session k of a larger run repeats the
    seeds of the smaller one, so the grid costs little more than its largest cells. The paper prints three of its
    cells (Table 3 / 33, the dataset's column): the paper's setting (``PAPER_DEBATE``) with one session (MADISSE)
    and with three (simultaneous debates, agents vote and debates vote); the others have no paper number."""
    cells = [(r, m) for r in range(1, max_rounds + 1) for m in range(1, max_sessions + 1)]
    paper_setting = {"faithful_agents": faithful_agents, "unfaithful_agents": unfaithful_agents,
                     "adjudicators": adjudicators} == {k: v for k, v in PAPER_DEBATE.items() if k != "rounds"}
    results = session.run_many([_grid_spec(dataset, level, r, m, faithful_agents, unfaithful_agents, adjudicators)
                                for r, m in cells])  # submitted together: identical calls are asked once
    rows = []
    for (r, m), (metrics, _) in zip(cells, results):
        for vote in (["debates_vote", "agents_vote"] if m > 1 else ["single"]):
            v = metrics["variants"][vote] if m > 1 else metrics
            paper_row = PAPER_GRID_ROWS.get((m, vote)) if paper_setting and r == PAPER_DEBATE["rounds"] else None
            paper = (madisse_reported(paper_row, dataset, level) if paper_row else None) or (None, None)
            rows.append({"rounds": r, "sessions": m, "vote": vote, "paper_row": paper_row, "paper_bacc": paper[0],
                         "bacc": None if v["bacc"] is None else 100 * v["bacc"],
                         "bacc_95%_ci": ci_text(scaled_ci(v.get("bacc_ci"))), "k_alpha": v["k_alpha"],
                         "paper_k_alpha": paper[1], "k_alpha_95%_ci": ci_text(v.get("k_alpha_ci")),
                         "calls_per_example": metrics["cost"]["calls_per_example"],
                         "tokens_per_example": metrics["cost"]["prompt_tokens_per_example"]
                         + metrics["cost"]["completion_tokens_per_example"], **cell_sizes(v, metrics["n_examples"]),
                         **said_column(v.get("said"), v.get("gold"))})
    return rows


# The debate setting of the paper's Table 3 rows (Section 5.2: 4 agents, 2 + 2 stances, at most 3 rounds; three
# sessions for the simultaneous debates; 3 adjudicators, the authors' code), and the grid cells (sessions, vote)
# those rows are.
PAPER_DEBATE = {"rounds": 3, "faithful_agents": 2, "unfaithful_agents": 2, "adjudicators": 3}
PAPER_GRID_ROWS = {(1, "single"): "madisse", (3, "agents_vote"): "madisse-agents-vote",
                   (3, "debates_vote"): "madisse-debates-vote"}

# The paper's columns are LLM-AggreFact's subsets (AggreFact-CNN/-XSum are AggreFact-FtSota's, not QAGS-C/X,
# which have no MADISSE values); TofuEval MeetingBank/MediaSum are the same data as LLM-AggreFact's TofuEval parts.
MADISSE_DATASET_COLUMNS = {"tofueval-meetingbank": "meetingbank", "tofueval-mediasum": "mediasum",
                           "llm-aggrefact-meetingbank": "meetingbank", "llm-aggrefact-mediasum": "mediasum",
                           "llm-aggrefact-cnn": "cnn", "llm-aggrefact-xsum": "xsum"}


def madisse_reported(method: str, dataset: str, level: str) -> tuple[float | None, float | None]:
    """(BAcc %, Krippendorff alpha) the MADISSE paper reports for ``method`` (Llama-3-70B): Table 3 at
    summary level / AggreFact, Table 33 at sentence level. (None, None) where the paper has no cell."""
    table = "table33_sentence" if level == "sentence" else "table3"
    cell = paper_value("madisse", table, method, MADISSE_DATASET_COLUMNS.get(dataset, dataset))
    return (cell[0], cell[1]) if cell else (None, None)


def faithfulness_rows(experiment: str, method: str, metrics: dict[str, Any], **context: Any) -> list[dict[str, Any]]:
    """Two comparison rows (BAcc in %, K-alpha) for a faithfulness run's metrics.json, with the paper's values."""
    p_bacc, p_alpha = madisse_reported(method, metrics["dataset"], metrics["level"])
    bacc = metrics.get("bacc")
    common = {"experiment": experiment, "dataset": metrics["dataset"], "level": metrics["level"], **context,
              **cell_sizes(metrics, metrics["n_examples"]), "unparsed": metrics.get("unparsed"),
              **said_column(metrics.get("said"), metrics.get("gold"))}
    return [{**common, "metric": "BAcc (%)", "paper": p_bacc, "reproduced": None if bacc is None else 100 * bacc,
             "ci": scaled_ci(metrics.get("bacc_ci"))},
            {**common, "metric": "K-alpha", "paper": p_alpha, "reproduced": metrics.get("k_alpha"),
             "ci": metrics.get("k_alpha_ci")}]


def debate_html(result: dict[str, Any], max_chars: int = 600) -> str:
    """One MADISSE judgement (a results.jsonl row) as HTML: per session the stances, each round's
    labels and explanations, the adjudicators (order seen, label) and the final label beside the human one."""
    esc = html.escape
    ex, j = result["example"], result["judgement"]
    parts = [f"<div style='font-family:sans-serif'><h4>{esc(ex['id'])}</h4>",
             f"<p><b>Summary:</b> {esc(ex['summary'][:max_chars])}</p>",
             f"<p><b>Human label:</b> {ex['label']} &middot; <b>MADISSE:</b> {j['label']} ({esc(j['label_source'])})"
             + (f" &middot; votes {esc(json.dumps(j['scores']))}" if j.get("scores") else "") + "</p>"]
    for s in j["details"].get("sessions", []):
        parts.append(f"<h5>Session {s['index']}: stances {esc(str(s['stances']))}; "
                     f"{'consensus in round %d' % s['consensus_round'] if s['consensus_round'] else 'no consensus'}"
                     f" &rarr; {s['label']} ({esc(s['label_source'])})</h5><table border=1 cellpadding=4>"
                     "<tr><th>round</th><th>agent</th><th>label</th><th>explanation</th></tr>")
        for rnd in s["rounds"]:
            for t in rnd:
                parts.append(f"<tr><td>{t['round']}</td><td>{t['agent']}</td><td>{t['label']}</td>"
                             f"<td>{esc(t['explanation'][:max_chars])}</td></tr>")
        parts.append("</table>")
        for a in s.get("adjudication", []):
            parts.append(f"<p>Adjudicator {a['adjudicator']} (order {a['order']}): <b>{a['label']}</b> "
                         f"{esc(a['explanation'][:max_chars])}</p>")
    parts.append("</div>")
    return "".join(parts)


def agent_label_rows(run_dir) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Where each debate's label came from (the first session of each example): the human label, the debate's,
    how it was reached (consensus, majority, adjudication), and each agent's imposed stance with its final label, how
    that label was read (``parsed``; ``carried``: unreadable, so the agent keeps its previous one, its stance after
    round 1) and how often it was asked (2: its first answer contradicted its stance); then the counts of final
    labels by stance and source. A debate whose labels are its stances carried over says nothing about the summary."""

    rows, counts = [], {}
    for r in read_results(run_dir):
        j = r["judgement"]
        sessions = (j.get("details") or {}).get("sessions") or []
        if not sessions:
            continue
        s = sessions[0]
        final = s["rounds"][-1] if s.get("rounds") else []
        agents = []
        for stance, t in zip(s.get("stances") or [None] * len(final), final):
            agents.append(f"{stance or 'none'}: {t.get('label')} ({t.get('source')}, asked {t.get('attempts', 1)}x)")
            key = (stance or "none", t.get("label"), t.get("source"))
            counts[key] = counts.get(key, 0) + 1
        rows.append({"example": r["example"]["id"], "human": r["example"]["label"], "debate": j.get("label"),
                     "reached_by": s.get("label_source"), "agents (stance: final label)": "; ".join(agents),
                     "adjudicators": ", ".join(str(a.get("label")) for a in s.get("adjudication") or []) or "-"})
    summary = [{"stance": k[0], "final label": k[1], "read as": k[2], "agents": v}
               for k, v in sorted(counts.items(), key=lambda kv: tuple(str(x) for x in kv[0]))]
    return rows, summary
