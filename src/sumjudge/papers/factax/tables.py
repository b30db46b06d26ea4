"""FacTax experiment grids and paper-vs-reproduced tables (notebooks 40-43).

Every evaluated cell is one ``sumjudge run`` through ``notebook.Session`` (cached, resumable); with
``runs`` > 1 a cell is that many runs (seeds ``seed``, ``seed + 1``, ...; greedy methods sampled at
``run_temperature``) and the tables show their mean and spread, as Table 2 does ("averaged scores of three
repeated runs").

Evaluation sets follow Table 2 (AggreFact-FtSota for CNN/DM and XSum): one column per FtSota source
(``aggrefact.SOTA_SOURCES``), whether the grid holds the pooled ``aggrefact-sota`` file, its ``-cnndm`` /
``-xsum`` parts or one ``aggrefact-sota-<source>`` each. Without AggreFact's file, FtSota-like stand-ins take
their column: ``summeval-consistency-sota`` (SummEval's SOTA systems) for SummEval and ``qags-xsum`` for
Wang'20, the table saying how their cut differs; when the real source is in the grid the stand-in is shown
but pooled nowhere, so no source counts twice. QAGS-C, SummEval over all 16 systems and FacEval (training
data in the paper) are shown apart, outside the domains.

Domain scores follow Section 4.3 / AggreFact: balanced accuracy over the pooled summaries of the domain's
datasets (a "micro average"); Reports and Stories are the Pearson r of their one dataset; MACRO is the mean
over the domains present. A user's dataset enters a domain with ``file:...&domain=CNN/DM`` (and its Table 2
column with ``&paper=frank``).
"""

from __future__ import annotations

import json
import re
import statistics
from dataclasses import dataclass, field
from dataclasses import fields as dc_fields
from pathlib import Path
from typing import Any

import numpy as np

from sumjudge import plots
from sumjudge.data import registry
from sumjudge.data.aggrefact import SOTA_SOURCES, sota_source
from sumjudge.metrics import (
    bacc_cell,
    balanced_accuracy_resamples,
    binary_report,
    fisher_ci,
    fisher_resamples,
    labels_said,
    length_buckets,
    percentile_interval,
    pooled_balanced_accuracy,
    readable_bacc_ci,
    readable_pairs,
    wilson_ci,
)
from sumjudge.papers.factax.sft.steps import trained_from
from sumjudge.report import paper_results, paper_value, percent, read_results, scaled_ci
from sumjudge.run.folder import run_name
from sumjudge.run.methods import get_method
from sumjudge.run.metrics import GOLD_COLUMN, SAID_COLUMN, parse_columns, said_column

ORIGIN_DOMAIN = {"cnndm": "CNN/DM", "xsum": "XSum"}
DOMAINS: dict[str, str | None] = {
    "summeval-consistency-sota": "CNN/DM", "qags-xsum": "XSum", "diasumfact": "Dialogues", "govreport": "Reports",
    "squality": "Stories", "qags-cnndm": None, "summeval-consistency": None, "faceval": None,
    **{f"aggrefact-sota-{s}": ORIGIN_DOMAIN[o] for s, (_, o) in SOTA_SOURCES.items()}}
POOLED_SOTA = ("aggrefact-sota", "aggrefact-sota-cnndm", "aggrefact-sota-xsum")  # split into SOTA_SOURCES columns
SCORED = ("govreport", "squality")  # score labels: Pearson (x 100 in the tables, as in Table 2), not BAcc
SCORED_DOMAINS = {DOMAINS[d] for d in SCORED}
PAPER_COLUMN = {"summeval-consistency-sota": "summeval", "qags-xsum": "wang20", "diasumfact": "diasumfact",
                "govreport": "govreport", "squality": "squality",
                **{f"aggrefact-sota-{s}": s.replace("-", "_") for s in SOTA_SOURCES}}
STAND_INS = {"summeval-consistency-sota": "summeval", "qags-xsum": "wang20"}  # dataset -> the FtSota column it stands for
NOTES = {
    "summeval-consistency-sota": "stand-in for FtSota's SummEval: drawn from its SOTA systems T5, BART, Pegasus, 300 summaries "
                                 "over both cuts (FtSota's test cut: 200, with PegasusDynamic, not annotated in "
                                 "SummEval); the row's `n` says how many were judged",
    "qags-xsum": "stand-in for FtSota's Wang'20: drawn from the 239 QAGS-X summaries (FtSota's test cut: 119); the row's "
                 "`n` says how many were judged",
    "qags-cnndm": "QAGS-C: not in Table 2 (its CNN/DM domain is Polytope, SummEval, FRANK, CLIFF); shown apart",
    "summeval-consistency": "all 16 SummEval systems (FtSota keeps the SOTA ones: summeval-consistency-sota); shown apart",
    "faceval": "training data in the paper (Training Set I); in no domain"}
DOMAIN_COLUMN = {"CNN/DM": "cnndm_avg", "XSum": "xsum_avg", "Dialogues": "diasumfact", "Reports": "govreport",
                 "Stories": "squality", "MACRO": "macro"}
TABLE3_COLUMN = {"CNN/DM": "cnndm", "XSum": "xsum", "Dialogues": "dialogues", "MACRO": "macro"}
EVALUATORS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("ChatGPT-ZS", "chatgpt-zs", {}), ("ChatGPT-CoT", "chatgpt-cot", {}), ("ChatGPT-Star", "star", {}),
    ("G-Eval", "g-eval-consistency", {}), ("FACTAX", "factax", {}), ("FACTAX-WD", "factax-wd", {}))
MADISSE_BASELINES = (("MADISSE zero-shot", "zero-shot", {}), ("MADISSE CoT", "cot", {}))  # the other prompts, on request


def run_settings(method: str, settings: dict[str, Any], i: int, runs: int, seed: int, temperature: float
                 ) -> dict[str, Any]:
    """Run ``i`` of ``runs``: a single run keeps the method's settings; repeated runs get seed ``seed + i`` and,
    where the method decodes greedily by default, ``temperature`` (greedy runs would repeat each other)."""
    if runs <= 1:
        return dict(settings)


    defaults = {f.name: f.default for f in dc_fields(get_method(method).config_cls)}
    out = {**settings, "seed": seed + i}
    if defaults.get("temperature") == 0 and "temperature" not in settings:
        out["temperature"] = temperature
    return out


def run_grid(session, datasets: list[str], evaluators=EVALUATORS, limit: int | None = None, runs: int = 1,
             run_temperature: float = 1.0) -> dict[tuple[str, str], list[tuple[dict[str, Any], Path]]]:
    """[(metrics, run folder) per run] per (evaluator label, dataset)."""
    seed = getattr(getattr(session, "prof", None), "seed", 0) or 0
    cells = [((label, ds), method, ds, run_settings(method, extra, i, runs, seed, run_temperature))
             for label, method, extra in evaluators for ds in datasets for i in range(runs)]
    results = session.run_many([{"method": method, "dataset": ds, "settings": settings, "limit": limit,
                                 "name": run_name(method, settings, ds)} for _, method, ds, settings in cells])
    grid: dict[tuple[str, str], list[tuple[dict[str, Any], Path]]] = {}
    for (key, *_), result in zip(cells, results):  # submitted together: every evaluator, dataset and repeat
        grid.setdefault(key, []).append(result)
    return grid


def cell_runs(value) -> list[tuple[dict[str, Any], Path]]:
    """A grid cell as its list of runs (a single (metrics, folder) pair is one run)."""
    return [value] if isinstance(value, tuple) else list(value)


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


@dataclass
class Part:
    """One Table 2 column of a run: a dataset, or one FtSota source of a pooled AggreFact run."""

    name: str  # the row's dataset label
    dataset: str  # the grid's dataset (name is "dataset/source" for a source of a pooled AggreFact run)
    column: str | None  # Table 2 column (None: the paper has none)
    domain: str | None  # the domain it is pooled into (None: shown apart)
    run: Path
    gold: list = field(default_factory=list)
    pred: list = field(default_factory=list)
    pearson: float | None = None  # score-labelled datasets
    pearson_n: int = 0  # the pairs it is computed on
    scored: bool = False  # its labels are scores: Pearson, not balanced accuracy
    note: str = ""

    def value(self) -> float | None:
        return self.pearson if self.scored else binary_report(self.gold, self.pred).bacc  # nan: a class is missing

    def sizes(self, metrics: dict[str, Any] | None = None) -> dict[str, int | None]:
        """``n``: what ``value`` rests on (the readable labels, ``metrics.bacc_cell``; Pearson's pairs), and
        ``n_examples``: the examples judged (``metrics``: the run's, for a score-labelled part's)."""

        if self.scored:
            return {"n": self.pearson_n, "n_examples": (metrics or {}).get("n_examples")}
        cell = bacc_cell(self.gold, self.pred)
        return {"n": cell["n"], "n_examples": cell["n_examples"]}

    def ci(self) -> tuple[float, float] | None:
        """The 95% interval of ``value``: a stratified bootstrap of BAcc (``metrics.bacc_cell``'s), Fisher's z for
        Pearson."""

        if self.scored:
            return fisher_ci(self.pearson, self.pearson_n)
        return bacc_cell(self.gold, self.pred)["ci"]


def dataset_place(dataset: str) -> tuple[str | None, str | None]:
    """(domain, Table 2 column) of a dataset: the built-in table, else what a user's spec says."""
    if dataset in DOMAINS or dataset in PAPER_COLUMN:
        return DOMAINS.get(dataset), PAPER_COLUMN.get(dataset)

    try:
        spec = registry.get(dataset)
    except (KeyError, ValueError):
        return None, None
    return spec.domain, spec.paper_column


def parts_of(runs: dict[str, Path]) -> list[Part]:
    """The Table 2 parts of one run per dataset, each source pooled at most once: a pooled AggreFact run is
    split by source; a stand-in leaves the domains when its real FtSota source is in the grid; a source met
    twice (e.g. ``aggrefact-sota`` and ``aggrefact-sota-summeval``) counts where it is first met."""
    parts: list[Part] = []
    for ds, run_dir in runs.items():
        if ds in POOLED_SOTA:
            rows = read_results(run_dir)
            by_source: dict[str, list] = {}
            for r in rows:
                by_source.setdefault(sota_source(r["example"].get("meta", {})) or "other", []).append(r)
            for src, rs in by_source.items():
                origin = SOTA_SOURCES[src][1] if src in SOTA_SOURCES else None
                parts.append(Part(name=f"{ds}/{src}", dataset=ds, column=src.replace("-", "_") if origin else None,
                                  domain=ORIGIN_DOMAIN.get(origin), run=Path(run_dir),
                                  gold=[r["example"]["label"] for r in rs], pred=[r["judgement"]["label"] for r in rs],
                                  note="" if origin else "not an FtSota source; in no domain"))
            continue
        domain, column = dataset_place(ds)
        if ds in SCORED or domain in SCORED_DOMAINS:
            m = json.loads((Path(run_dir) / "metrics.json").read_text(encoding="utf-8"))
            parts.append(Part(name=ds, dataset=ds, column=column, domain=domain, run=Path(run_dir), pearson=pearson_of(m),
                              pearson_n=(m.get("pearson") or {}).get("n") or 0, scored=True, note=NOTES.get(ds, "")))
            continue
        gold, pred = labels_of(run_dir)
        parts.append(Part(name=ds, dataset=ds, column=column, domain=domain, run=Path(run_dir), gold=gold, pred=pred,
                          note=NOTES.get(ds, "")))
    real = {p.column for p in parts if p.domain and p.dataset not in STAND_INS}
    pooled: dict[str, str] = {}
    for p in parts:
        if not p.domain:
            continue
        if p.name in STAND_INS and STAND_INS[p.name] in real:
            p.domain, p.note = None, f"{p.note}; not pooled: the grid has FtSota's own {STAND_INS[p.name]}"
        elif p.column and p.column in pooled:
            p.domain, p.note = None, f"counted once, in {pooled[p.column]}"
        elif p.column:
            pooled[p.column] = p.name
    return parts


def by_domain(parts: list[Part]) -> tuple[dict[str, list[Part]], dict[str, Part]]:
    """(domain -> its pooled parts, score-labelled domain -> its one part): how Table 2's domain cells are made."""
    pooled: dict[str, list[Part]] = {}
    scored: dict[str, Part] = {}
    for p in parts:
        if p.domain in SCORED_DOMAINS:
            scored[p.domain] = p
        elif p.domain:
            pooled.setdefault(p.domain, []).append(p)
    return pooled, scored


def domains_of(parts: list[Part]) -> dict[str, float | None]:
    """Domain -> pooled balanced accuracy over its parts; for the score-labelled domains (Reports, Stories: one
    dataset each) the Pearson r of that dataset's run."""

    pooled, scored = by_domain(parts)
    return {**{d: pooled_balanced_accuracy([(q.gold, q.pred) for q in ps]) for d, ps in pooled.items()},
            **{d: p.pearson for d, p in scored.items()}}


def domain_intervals(parts: list[Part]) -> dict[str, tuple[float, float] | None]:
    """Domain -> the 95% interval of ``domains_of``'s value: a stratified bootstrap over the domain's pooled
    examples, Fisher's z for a score-labelled domain's Pearson."""

    pooled, scored = by_domain(parts)
    return {**{d: readable_bacc_ci([y for q in ps for y in q.gold], [y for q in ps for y in q.pred])
               for d, ps in pooled.items()}, **{d: p.ci() for d, p in scored.items()}}


def domain_uncertainty(parts: list[Part]) -> tuple[dict[str, Any], dict[str, int]]:
    """(domain -> 95% interval, domain -> n) of one run's domain scores and MACRO: ``domain_intervals`` and
    ``macro_interval``; n the readable examples a domain's value rests on (pooled parts' readable labels; the pairs of
    a score-labelled domain's Pearson), MACRO's their sum."""
    pooled, scored = by_domain(parts)
    sizes = {**{d: sum(x is not None for q in ps for x in q.pred) for d, ps in pooled.items()},
             **{d: p.pearson_n for d, p in scored.items()}}
    return {**domain_intervals(parts), "MACRO": macro_interval(parts)}, {**sizes, "MACRO": sum(sizes.values())}


def domain_examples(parts: list[Part]) -> dict[str, int | None]:
    """Domain -> the examples judged (``domain_uncertainty``'s n counts the readable ones among them): the pooled
    parts' examples; None for a score-labelled domain (its n: the pairs its Pearson rests on), and so for MACRO."""
    pooled, scored = by_domain(parts)
    judged = {**{d: sum(len(q.gold) for q in ps) for d, ps in pooled.items()}, **{d: None for d in scored}}
    return {**judged, "MACRO": None if None in judged.values() else sum(judged.values())}


def macro_interval(parts: list[Part], n_resamples: int = 1000, seed: int = 0) -> tuple[float, float] | None:
    """The 95% interval of MACRO (``macro`` of ``domains_of``): each domain resampled on its own (its pooled examples
    within each gold class; a score-labelled domain's Pearson drawn on Fisher's z), the domains present averaged per
    resample, the percentile interval of those means. None where a domain's value has no interval."""


    pooled, scored = by_domain(parts)
    draws = []
    for k, ps in enumerate(pooled.values()):
        pairs = readable_pairs([y for q in ps for y in q.gold], [y for q in ps for y in q.pred])
        draws.append(None if pairs is None else balanced_accuracy_resamples(*pairs, n_resamples, seed + k))
    draws += [fisher_resamples(p.pearson, p.pearson_n, n_resamples=n_resamples, seed=seed + len(pooled) + k)
              for k, p in enumerate(scored.values())]
    if not draws or any(d is None for d in draws):
        return None
    return percentile_interval(np.mean(draws, axis=0))


def domain_scores(runs: dict[str, Path]) -> dict[str, float | None]:
    """``domains_of`` the parts (``parts_of``) of one run per dataset."""
    return domains_of(parts_of(runs))


def parts_per_run(grid, evaluator: str) -> tuple[dict[str, list], list[list[Part]]]:
    """(the evaluator's cells: dataset -> its runs, the parts of run 0, 1, ...): results are read once."""
    cells = {ds: cell_runs(v) for (lab, ds), v in grid.items() if lab == evaluator}
    n_runs = max((len(v) for v in cells.values()), default=0)
    return cells, [parts_of({ds: runs[i][1] for ds, runs in cells.items() if i < len(runs)}) for i in range(n_runs)]


def _mean_spread(values: list[float | None]) -> dict[str, Any]:
    """The mean of the runs' values (x 100) and their spread (sample s.d.; min and max)."""
    vals = [100 * v for v in values if v is not None and v == v]
    if not vals:
        return {"reproduced": None, "runs": len(values), "runs_scored": 0}
    return {"reproduced": statistics.fmean(vals), "runs": len(values), "runs_scored": len(vals),
            "sd": statistics.stdev(vals) if len(vals) > 1 else None, "min": min(vals), "max": max(vals)}


def table2_rows(grid, model: str, table: str = "table2", paper_rows: dict[str, str] | None = None,
                models: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """Per evaluator: BAcc (Pearson x 100 for score data) per Table 2 column, per domain (pooled) and MACRO,
    each the mean over the cell's runs with its spread, beside the values of the paper's ``table`` (Table 2, or
    Table 4 that has its columns); ``paper_rows``: the paper's row for an evaluator it names otherwise; ``models``:
    the model of an evaluator answered by another than ``model``."""
    rows, experiment = [], f"Table {table.removeprefix('table')}"
    for label in dict.fromkeys(k[0] for k in grid):
        row = (paper_rows or {}).get(label, label)
        model_of = (models or {}).get(label, model)
        cells, per_run = parts_per_run(grid, label)
        thresholds = {ds: threshold_note(runs[0][1]) for ds, runs in cells.items()}
        by_name = [{q.name: q for q in parts} for parts in per_run]
        for p in per_run[0]:
            ds = p.dataset
            m = cells[ds][0][0]
            rows.append({"experiment": experiment, "evaluator": label, "dataset": p.name,
                         "metric": "Pearson x100" if p.scored else "BAcc %",
                         "paper": paper_value("factax", table, row, p.column) if p.column else None,
                         **_mean_spread([run[p.name].value() for run in by_name if p.name in run]),
                         # one run: its interval over the examples; several: their spread (sd, min, max) instead
                         "ci": scaled_ci(p.ci()) if len(by_name) == 1 else None,
                         **p.sizes(m if p.name == ds else None), "unparsed": m["unparsed"] if p.name == ds else
                         sum(x is None for x in p.pred), **said_column(*((None, None) if p.scored else (
                             labels_said(p.pred), labels_said([g for g, x in zip(p.gold, p.pred) if x is not None])))),
                         **parse_columns(m), "domain": p.domain, "column": p.column,
                         "model": model_of, "label_sources": m.get("label_sources"),
                         "note": "; ".join(x for x in (p.note, thresholds[ds]) if x) if thresholds[ds] else p.note})
        doms_per_run = []
        for parts in per_run:
            doms = domains_of(parts)
            doms_per_run.append({**doms, "MACRO": macro(doms)})
        intervals, sizes = domain_uncertainty(per_run[0])
        judged = domain_examples(per_run[0])
        if len(per_run) > 1:  # several runs: their spread instead
            intervals = {}
        same = papers_cells_present(per_run[0], table, row)
        for dom in doms_per_run[0]:
            rows.append({"experiment": experiment, "evaluator": label, "dataset": f"[{dom}]",
                         "metric": "Pearson x100" if dom in SCORED_DOMAINS else "BAcc %",
                         "paper": paper_value("factax", table, row, DOMAIN_COLUMN.get(dom, "")),
                         "paper_same_columns": (same or {}).get(dom),
                         **_mean_spread([d.get(dom) for d in doms_per_run]), "ci": scaled_ci(intervals.get(dom)),
                         "n": sizes.get(dom), "n_examples": judged.get(dom), "domain": dom, "model": model_of,
                         "note": (macro_note([d for d in doms_per_run[0] if d != "MACRO"],
                                             present_columns(per_run[0]) if same else None)
                                  if dom == "MACRO" else "Pearson of the domain's dataset" if dom in SCORED_DOMAINS
                                  else "pooled over the domain's datasets")})
    return rows


def present_columns(parts: list[Part]) -> list[str]:
    """The paper's columns that one run's ``parts`` fill, in domains."""
    return [p.column for p in parts if p.domain and p.column]


def papers_cells_present(parts: list[Part], table: str, row: str) -> dict[str, float] | None:
    """The paper's own cells of the columns present here (``parts``: one run's), averaged per domain, and those
    means averaged as a MACRO (``"MACRO"``): the closest paper numbers to a domain row and a MACRO row that lack
    some of the paper's columns; None where the paper prints no cell for one of them."""
    cells: dict[str, list[float]] = {}
    for p in parts:
        if p.domain and p.column:
            v = paper_value("factax", table, row, p.column)
            if v is None or v != v:
                return None
            cells.setdefault(p.domain, []).append(v)
    if not cells:
        return None
    means = {dom: statistics.fmean(v) for dom, v in cells.items()}
    return {**means, "MACRO": statistics.fmean(means.values())}


def macro_note(domains: list[str], columns: list[str] | None = None) -> str:
    """What a MACRO row averages: the domains present here, where the paper's MACRO averages every domain of its
    table (Reports and Stories as Pearson x100); with ``columns`` (``present_columns``), what its
    ``paper_same_columns`` averages."""
    said = (f"MACRO over the {len(domains)} domain{'s' if len(domains) != 1 else ''} present here "
            f"({', '.join(domains)}); the paper's averages all of its table's domains")
    if columns:
        said += (f"; `paper_same_columns` averages the paper's own cells of the columns present here "
                 f"({', '.join(columns)}) alike: the closest paper number to ours")
    return said


def run_config(run_dir: str | Path) -> dict[str, Any]:
    """A run folder's ``config.json`` ({} where it has none)."""
    p = Path(run_dir) / "config.json"
    return json.loads(p.read_text()) if p.is_file() else {}


def threshold_note(run_dir: str | Path) -> str | None:
    """How a run that thresholds a score turned it into labels, read from the run's ``config.json`` (its method's
    ``threshold`` setting): a fixed threshold, where the judge arena chooses one for a scoring judge on held-out
    examples (so the two label the same answers differently); None for a run without a threshold."""

    cfg = run_config(run_dir)
    threshold = (cfg.get("method_config") or {}).get("threshold")
    if threshold is None:
        return None
    method = (cfg.get("run") or {}).get("method")
    return (f"label 1 when the score >= {threshold:g}: a fixed threshold (the method's threshold setting)"
            + ("; the judge arena chooses its threshold on held-out examples instead" if method and
               get_method(method).scores else ""))


ZERO_SHOT_BASE = "Zero-Shot base model"  # the fine-tuned models' own base with the FacTax prompt
TABLE4_PAPER_ROWS = {ZERO_SHOT_BASE: "Zero-Shot Llama3-8B"}  # the paper's base is Llama3-8B


def table4_rows(grid, model: str) -> list[dict[str, Any]]:
    """Table 4's rows: each trained model (and its base zero-shot, ``ZERO_SHOT_BASE``) per test dataset, per
    domain and MACRO, with n, unparsed answers and the 95% interval, beside the paper's Llama3-8B values; ``model``
    the base where no run names it (``answering_models``)."""
    return table2_rows(grid, model, table="table4", paper_rows=TABLE4_PAPER_ROWS, models=answering_models(grid, model))


def answering_models(grid, base: str) -> dict[str, str]:
    """The model that answered each evaluator's cells, as its runs name it (the engine's model): the base zero-shot
    row's is the base (else ``base``); a fine-tuned model is named as the base plus the adapter (or full
    fine-tune) of its setting, e.g. ``qwen + LoRA adapter I-Binary (sft-I-Binary-lora)``."""

    ran = {label: (cell_runs(v)[0][0].get("engine") or {}).get("model") for (label, _), v in grid.items()}
    base = ran.get(ZERO_SHOT_BASE) or base
    out = {}
    for label, name in ran.items():
        trained = trained_from(name)
        if trained:
            how = "LoRA adapter" if trained[1] == "lora" else f"fine-tune ({trained[1]})"
            out[label] = f"{base} + {how} {trained[0]} ({name})"
        else:
            out[label] = name or base
    return out


def paper_only_rows() -> list[dict[str, Any]]:
    """Table 2's non-LLM rows and the GPT-4o FacTax row, as printed (not computed here)."""
    t = paper_results("factax")["table2"]
    llm = {label for label, _, _ in EVALUATORS}
    return [{"experiment": "Table 2 (paper only)", "evaluator": name, "dataset": col, "metric": "BAcc %", "paper": v,
             "reproduced": None, "note": "as printed in the paper; not computed here"}
            for name, cells in t["rows"].items() if name not in llm for col, v in cells.items()]


def table3_rows(grid, model: str, evaluator: str = "FACTAX") -> list[dict[str, Any]]:
    """Table 3: FacTax's domain scores and MACRO (over Table 3's domains) with the profile's model, beside the
    paper's models; with one run each score has its n and 95% interval (as Table 2's domain rows)."""
    per_run = []
    runs_parts = [[p for p in parts if p.domain in TABLE3_COLUMN] for parts in parts_per_run(grid, evaluator)[1]]
    for parts in runs_parts:
        doms = domains_of(parts)
        per_run.append({**doms, "MACRO": macro(doms)})
    intervals, sizes = domain_uncertainty(runs_parts[0]) if len(runs_parts) == 1 else ({}, {})
    rows = []
    for name, cells in paper_results("factax")["table3"]["rows"].items():
        for dom, col in TABLE3_COLUMN.items():
            rows.append({"experiment": "Table 3", "evaluator": name, "dataset": dom, "metric": "BAcc %",
                         "paper": cells.get(col), "reproduced": None, "note": "the paper's model"})
    for dom in (per_run[0] if per_run else {}):
        rows.append({"experiment": "Table 3", "evaluator": f"FacTax ({model})", "dataset": dom, "metric": "BAcc %",
                     "paper": None, **_mean_spread([d.get(dom) for d in per_run]),
                     "ci": scaled_ci(intervals.get(dom)), "n": sizes.get(dom), "model": model})
    return rows


# The window sizes the paper prints a cell for (Table 2, the dataset's column): 30 words is FACTAX-WD, the whole summary
# (None) FACTAX; the other sizes of the ablation have no printed number
PAPER_WINDOWS: dict[Any, str] = {30: "FACTAX-WD", None: "FACTAX"}


def window_label(ww: Any) -> str:
    """A window size as the tables name it (0: one sentence, None: the whole summary, else its words)."""
    return "1 sentence" if ww == 0 else ("whole summary" if ww is None else f"{ww} words")


def window_rows(session, dataset: str, sizes: list[Any], limit: int | None = None) -> list[dict[str, Any]]:
    """Window-size ablation: FacTax-WD with each ``window_words`` (0 = one sentence, None = whole summary); the
    sizes' runs are submitted together (they share the engine's batches). The paper prints two of these cells
    (Table 2, ``dataset``'s column): 30 words is FACTAX-WD's setting, the whole summary is FACTAX's."""
    column = dataset_place(dataset)[1]
    paper_rows = PAPER_WINDOWS
    rows = []
    cells = session.run_many([{"method": "factax-wd", "dataset": dataset, "settings": {"window_words": ww},
                               "limit": limit, "name": run_name("factax-wd", {"window_words": ww}, dataset)}
                              for ww in sizes])
    for ww, (m, run) in zip(sizes, cells):
        res = read_results(run)
        rows.append({"experiment": "window size", "dataset": dataset,
                     "window": window_label(ww),
                     "metric": "BAcc %", "paper_row": paper_rows.get(ww) if column else None,
                     "paper": paper_value("factax", "table2", paper_rows[ww], column) if column and ww in paper_rows
                     else None, "reproduced": 100 * m["bacc"] if m["bacc"] == m["bacc"] else None,
                     "ci": scaled_ci(m.get("bacc_ci")),
                     "mean_windows": statistics.fmean(r["judgement"]["details"]["n_windows"] for r in res) if res else None,
                     "n": m["n"], "n_examples": m["n_examples"], "unparsed": m["unparsed"],
                     **said_column(m.get("said")), **parse_columns(m), "calls": m["cost"]["calls_total"]})
    return rows


def length_rows(runs: dict[str, Path], edges: list[int]) -> list[dict[str, Any]]:
    """Figure 2: accuracy (%) per summary length (words) bucket, per method (label -> run folder), with Wilson's 95%
    interval over the bucket's readable judgements, and how many of them the method labelled 1 and 0 (``labels
    said``) and the gold labels call 1 and 0 (``gold labels``): a method that says one label to every example scores
    the share of that gold class, whatever the lengths. Each row names its run's dataset (the run's ``config.json``),
    so that the table does not read as the one beside it on another dataset."""

    rows = []
    for label, run in runs.items():
        res = read_results(run)
        dataset = (run_config(run).get("run") or {}).get("dataset")
        lengths = [len(r["example"]["summary"].split()) for r in res]
        gold, pred = [r["example"]["label"] for r in res], [r["judgement"]["label"] for r in res]
        said, golds = (bucket_counts(lengths, labels, pred, edges) for labels in (pred, gold))
        for b, s, g in zip(length_buckets(lengths, gold, pred, edges), said, golds):
            share = b["accuracy"]
            ci = wilson_ci(100 * share, b["n"])
            rows.append({"method": label, "dataset": dataset, **b,
                         "accuracy": percent(share),
                         "ci_low": None if ci is None else ci[0], "ci_high": None if ci is None else ci[1],
                         **said_column(s, g)})
    return rows


def bucket_counts(lengths: list[int], labels: list[int], pred: list[int | None], edges: list[int]
                  ) -> list[dict[str, int]]:
    """Per ``length_buckets`` bucket, how many of the examples with a readable ``pred`` have label 1 and 0 in
    ``labels``: the bucket's accuracy of ``labels`` read as predictions of an all-1 gold is their share of 1s."""

    ones = [1] * len(labels)
    kept = [lab if p is not None else None for lab, p in zip(labels, pred)]
    counts = []
    for b in length_buckets(lengths, ones, kept, edges):
        k = round(b["accuracy"] * b["n"]) if b["n"] else 0
        counts.append({"1": k, "0": b["n"] - k})
    return counts


def _label_counts(rows: list[dict[str, Any]], column: str) -> dict[str, int]:
    """The ``said_column`` cells of ``rows`` summed: {"1": ..., "0": ...}."""

    total = {"1": 0, "0": 0}
    for r in rows:
        m = re.match(r"^(\d+) × 1, (\d+) × 0$", str(r.get(column) or "").strip())
        if m:
            total["1"] += int(m.group(1))
            total["0"] += int(m.group(2))
    return total


def length_figure(rows: list[dict[str, Any]], datasets: list[str] = ()):
    """Accuracy per length bucket (the paper's Figure 2 plots accuracy), one series per method with its 95% interval
    as error bars, the methods set side by side within a bucket (so that equal values do not hide one another), on
    the whole 0-100 scale (%); the datasets and each method's n in the title. The reference is the accuracy of a judge
    that says one label to every example: the share of each gold class in the figure's data, a labelled line each;
    a method that said one label to every readable example says so in the legend."""
    import matplotlib.pyplot as plt


    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    gold = _label_counts(rows, GOLD_COLUMN)
    if sum(gold.values()):
        for label, ls in (("1", "--"), ("0", ":")):
            share = 100 * gold[label] / sum(gold.values())
            plots.chance(ax, share, f"says {label} to all ({share:.3g}%)", ls=ls)
    methods = list(dict.fromkeys(r["method"] for r in rows))
    buckets = list(dict.fromkeys(r["bucket"] for r in rows))
    step = 0.6 / max(len(methods), 1)
    for i, (method, marker) in enumerate(zip(methods, "osD^v<>p*hX" * 3)):
        pts = [r for r in rows if r["method"] == method]
        said = _label_counts(pts, SAID_COLUMN)
        one = [k for k, v in said.items() if v] if sum(said.values()) else []
        xs = [buckets.index(r["bucket"]) + (i - (len(methods) - 1) / 2) * step for r in pts]
        ys = [r["accuracy"] for r in pts]
        # (clipped at 0: an interval's end can round a hair past an accuracy of 0 or 100)
        below = [max(0.0, y - r["ci_low"]) if r.get("ci_low") is not None else 0.0 for y, r in zip(ys, pts)]
        above = [max(0.0, r["ci_high"] - y) if r.get("ci_high") is not None else 0.0 for y, r in zip(ys, pts)]
        ax.errorbar(xs, ys, yerr=[below, above], marker=marker, linestyle="none", capsize=3,
                    label=f"{method} (said {one[0]} to all)" if len(one) == 1 else method)
    ax.set_xticks(range(len(buckets)), [f"{b}\n(n per method: {', '.join(str(r['n']) for r in rows if r['bucket'] == b)})"
                                        for b in buckets], fontsize=8)
    ax.set_xlabel("summary length (words)")
    ax.set_ylabel("accuracy, % (95% interval)")
    ax.set_ylim(0, 102)
    per_method = [sum(r["n"] for r in rows if r["method"] == m) for m in methods]
    ax.set_title(plots.title("accuracy by summary length", datasets, per_method, noun="summaries per method"))
    plots.legend_outside(ax)
    fig.tight_layout()
    return fig


def all_yes_f1(support: int, n: int) -> float | None:
    """F1 (%) of a judge that gives an error type to every one of ``n`` summaries, ``support`` of which have it
    (precision support / n, recall 1): what a type's F1 must beat to show the judge can tell that type."""
    return None if not n else 100 * 2 * support / (support + n)


def error_type_rows(grid, model: str, dataset: str = "diasumfact") -> list[dict[str, Any]]:
    """Tables 6 (per-type F1, a bootstrap interval over summaries) and 7 (four criteria, Wilson's interval) for the
    methods that predict error types."""

    rows = []
    for (label, ds), cell in grid.items():
        m = cell_runs(cell)[0][0]  # the first run (error types of repeated runs are not averaged)
        et = m.get("error_types")
        if ds != dataset or not et:
            continue
        paper_row = "ChatGPT"  # the paper's zero-shot FacTax row with its main LLM
        for t, v in et["f1"].items():
            rows.append({"experiment": "Table 6", "evaluator": label, "aspect": t, "metric": "F1 %",
                         "paper": paper_value("factax", "table6", paper_row, t) if label == "FACTAX" else None,
                         "reproduced": percent(v["f1"]),
                         "ci": scaled_ci(v.get("f1_ci")), "support": v["support"],
                         "predicted": v["predicted"], "all_yes_f1_%": all_yes_f1(v["support"], et["n"]),
                         "n": et["n"], "model": model})
        for crit in ("exact", "subset", "overlap", "superset"):
            v = et["criteria"][crit]
            rows.append({"experiment": "Table 7", "evaluator": label, "aspect": crit, "metric": "%",
                         "paper": paper_value("factax", "table7", paper_row, crit) if label == "FACTAX" else None,
                         "reproduced": None if v != v else v, "ci": wilson_ci(v, et["criteria"]["n"]),
                         "n": et["criteria"]["n"], "model": model})
    return rows


def present(datasets: list[str]) -> list[str]:
    """The datasets among ``datasets`` whose files are here (no download is tried)."""

    return [d for d in datasets if registry.is_present(d)]
