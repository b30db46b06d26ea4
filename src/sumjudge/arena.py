"""The judge arena: judges of every paper on the same examples of the same binary faithfulness datasets, each
cell with BAcc (bootstrap CI), Krippendorff's alpha, the unreadable share and its cost; every pair of judges on a
dataset compared by an exact McNemar test with Holm's correction.

Every cell is an ordinary run (its own folder under ``out/<dataset>/``) and all of them are submitted together
(``runs.run_many``): their requests share the engine's batches, a cell already in the cache costs no call, and an
interrupted arena resumes. ``arena.csv`` has one row per judge x dataset, ``predictions.csv`` one row per example
and judge (for re-analysis), ``paired.csv`` one row per pair of judges and dataset, ``fidelity.csv`` one row per
as-printed / as-run pair that ran.

Score judges (``MethodSpec.scores``: G-Eval consistency, a debate adapted to faithfulness) grade consistency; their
label is ``score >= t``, t chosen where BAcc is highest on a held-out set: examples of the same split that the
arena's cells never judge (a seeded draw from the rest, ``RunConfig.held_out_of``), ``held_out`` of them. Their
cells also report ROC-AUC over the judged examples (any judge whose judgements carry a score gets it).

An unreadable label counts as a wrong one in the paired test (a judge that cannot answer pays for it) and is
left out of BAcc (as in every paper table), where the unreadable share is reported beside it.

As printed vs as run (``MethodSpec.as_printed``): where a paper's default follows the authors' code rather than
the printed paper, the same judge with the printed reading is a cell of its own, and ``fidelity_rows`` gives the
pair's paired test: what fidelity to the code changes.
"""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import itertools
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sumjudge.data import registry
from sumjudge.errors import ConfigError
from sumjudge.judges.settings import make_config
from sumjudge.llm import make_llm
from sumjudge.metrics import (
    bacc_cell,
    best_threshold,
    binary_alpha_ci,
    holm,
    krippendorff_alpha,
    labels_said,
    mcnemar_exact,
    roc_auc,
)
from sumjudge.run.folder import RunConfig
from sumjudge.run.methods import get_method
from sumjudge.run.methods import methods as all_methods
from sumjudge.run.metrics import SAID_COLUMN, one_label_said, said_column
from sumjudge.run.runs import Target, run_many


@dataclass(frozen=True)
class Cell:
    method: str
    dataset: str
    settings: tuple[tuple[str, Any], ...] = ()
    level: str | None = None  # the dataset's unit for this cell (``dataset@sentence``); None: the arena's level

    @property
    def where(self) -> str:
        """The dataset as the tables name it: ``dataset@level`` when the cell sets its own level."""
        return f"{self.dataset}@{self.level}" if self.level else self.dataset

    @property
    def judge(self) -> str:
        """The judge's name in the tables: the method, and its settings when it has any."""
        extra = ",".join(f"{k}={v}" for k, v in self.settings)
        return f"{self.method}[{extra}]" if extra else self.method


def resolve(cells: list[Cell]) -> list[Any]:
    """Each cell's method and dataset, looked up once (a ``runs.Target`` per cell, in order) and checked: the arena
    compares binary faithfulness judges on binary faithfulness data. Everything after (the runs, the thresholds, the
    published numbers, the as-printed pairs) is given the cell's target instead of looking its names up again."""

    targets = []
    for c in cells:
        spec = get_method(c.method)
        if spec.kind != "faithfulness":
            judges = sorted(n for n, m in all_methods().items() if m.kind == "faithfulness")
            raise ConfigError(f"arena: {c.method} is a {spec.kind} judge; the arena compares binary faithfulness "
                              f"judges: {', '.join(judges)}")
        ds = registry.get(c.dataset)
        if ds.kind != "faithfulness":
            raise ConfigError(f"arena: dataset {c.dataset} is not a binary faithfulness dataset")
        targets.append(Target(spec, ds))
    return targets


def run_configs(cells: list[Cell], out: Path, *, limit: int | None, seed: int, backend: str, model: str,
         base_url: str | None, level: str | None = None, settings_for=None, held_out: int | None = None
         ) -> list[tuple[Any, Path]]:
    """(run config, folder) per cell; every judge of a dataset gets the same examples (same limit and seed).
    ``settings_for(method)`` gives settings every cell of that method starts from (a profile's answer caps and
    truncation), under the cell's own. A score judge's cell is followed by its held-out run (``held_out``
    examples, default ``limit``, none of them judged by any cell)."""
    return [job for c, t in zip(cells, resolve(cells))
            for job in cell_configs(c, t, out, limit=limit, seed=seed, backend=backend, model=model, base_url=base_url,
                                    level=level, settings_for=settings_for, held_out=held_out)]


def cell_configs(c: Cell, target, out: Path, *, limit: int | None, seed: int, backend: str, model: str,
                 base_url: str | None, level: str | None = None, settings_for=None, held_out: int | None = None
                 ) -> list[tuple[Any, Path]]:
    """One cell's (run config, folder): its run, and a score judge's held-out run after it (``run_configs``).
    ``target``: the cell's method and dataset (``resolve``)."""

    spec = target.method
    settings = {**(settings_for(c.method) if settings_for else {}), **dict(c.settings)}
    rc = RunConfig(method=c.method, dataset=c.dataset, level=c.level or level, limit=limit, seed=seed, backend=backend,
                   model=model, base_url=base_url, settings=settings)
    variants = [rc]
    if spec.scores:
        if limit is None:
            raise ConfigError(f"arena: {c.method} is a score judge: its threshold is chosen on held-out examples, "
                              "so give --limit below the dataset's size")
        variants.append(dataclasses.replace(rc, limit=held_out or limit, held_out_of=limit))
    jobs = []
    for v in variants:
        # the whole configuration, the method's defaults included (as a notebook's run folders): a setting the
        # method gains later names a new folder instead of refusing the old one
        key = [v.to_json(), dataclasses.asdict(make_config(spec.config_cls, v.settings, seed=v.seed))]
        digest = hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()[:8]
        jobs.append((v, out / c.where / f"{c.method}-{digest}"))
    return jobs


def predictions(cell: Cell, folder: Path) -> list[dict[str, Any]]:
    rows = [json.loads(x) for x in (folder / "results.jsonl").read_text(encoding="utf-8").splitlines() if x.strip()]
    return [{"dataset": cell.where, "judge": cell.judge, "example": r["example"]["id"],
             "gold": r["example"]["label"], "label": r["judgement"]["label"], "score": r["judgement"].get("score"),
             "source": r["judgement"].get("label_source", "")} for r in rows]


def calibrate(preds: list[dict[str, Any]], held_out: list[dict[str, Any]]) -> dict[str, Any]:
    """A score judge's threshold from its held-out predictions (highest BAcc, ``metrics.best_threshold``), applied to
    its judged ones: ``preds`` get ``label = int(score >= t)`` (None where the score is unreadable). With one class
    or no readable score held out, no threshold can be chosen: the judge's own labels stay, and the record says so."""

    readable = [(p["gold"], p["score"]) for p in held_out if p["score"] is not None]
    best = best_threshold([g for g, _ in readable], [s for _, s in readable]) if readable else None
    info = {"threshold": None, "held_out_n": len(held_out), "held_out_bacc": None,
            "threshold_from": "held out: one class or no readable score; the judge's own threshold"}
    if best is not None:
        info.update(threshold=best[0], held_out_bacc=best[1],
                    threshold_from=f"held out: {len(held_out)} examples of the same split, none judged here")
        for p in preds:
            p["label"] = None if p["score"] is None else int(p["score"] >= best[0])
            p["source"] = f"score >= {best[0]:g}" if p["score"] is not None else p["source"]
    return info


def cell_row(cell: Cell, metrics: dict[str, Any], preds: list[dict[str, Any]], *,
             calibration: dict[str, Any] | None = None) -> dict[str, Any]:
    """One judge on one dataset: BAcc in percent, as the papers and the leaderboard print it, with a 95% bootstrap
    CI (``metrics.bacc_cell``, scaled: over the examples with a
    readable label, ``n`` of the ``n_examples`` judged), alpha, ROC-AUC where the judgements carry graded scores,
    the unreadable share, and what it cost per example (a score judge's held-out run apart). ``calibration``: a
    score judge's threshold (``calibrate``): BAcc and alpha are then those of the thresholded labels."""

    gold, labels = [p["gold"] for p in preds], [p["label"] for p in preds]
    scored = [(p["gold"], p["score"]) for p in preds if p.get("score") is not None]
    graded = bool(scored) and any(v not in (0, 1) for _, v in scored)  # a 0/1 score is the label: AUC = BAcc
    metrics = dict(metrics)
    if calibration and calibration["threshold"] is not None:
        metrics["k_alpha"] = krippendorff_alpha(gold, labels)
    bacc = bacc_cell(gold, labels)
    ci = tuple(100 * v for v in bacc["ci"]) if bacc["ci"] else (None, None)  # in percent, as the papers print it
    alpha_ci = binary_alpha_ci(gold, labels) or (None, None)
    n = max(1, len(preds))
    cost = metrics["cost"]
    return {"dataset": cell.where, "judge": cell.judge, "n": bacc["n"], "n_examples": bacc["n_examples"],
            "bacc": 100 * bacc["bacc"] if bacc["n"] else None, "bacc_ci_low": ci[0], "bacc_ci_high": ci[1],
            **said_column(labels_said(labels), labels_said([g for g, y in zip(gold, labels) if y is not None])),
            "k_alpha": metrics.get("k_alpha"), "k_alpha_ci_low": alpha_ci[0], "k_alpha_ci_high": alpha_ci[1],
            "roc_auc": roc_auc([g for g, _ in scored], [v for _, v in scored]) if graded else None,
            **{k: (calibration or {}).get(k) for k in ("threshold", "held_out_n", "threshold_from")},
            "unreadable_share": sum(p["label"] is None for p in preds) / n,
            "calls_per_example": cost["calls_per_example"], "option_calls_per_example": cost["option_calls_per_example"],
            # chat prompts and option-scoring prompts (G-Eval's probabilities) alike
            "prompt_tokens_per_example": (cost["prompt_tokens_per_example"]
                                          + cost.get("option_prompt_tokens_per_example", 0)),
            "completion_tokens_per_example": cost["completion_tokens_per_example"],
            "wall_s_per_example": model_seconds(metrics, n)}


def model_seconds(metrics: dict[str, Any], n: int) -> float | None:
    """A cell's wall seconds per example where they measure its judge: None where no call reached a model (every
    answer from the response cache: an earlier run paid for them) or its answers were replayed from a recording
    (the seconds are the replay's). A page then shows no time rather than one that measures nothing."""
    engine = metrics.get("engine") or {}
    if engine.get("replayed") or not engine.get("backend_calls", 1):
        return None
    return metrics.get("wall_s", 0.0) / n


def published_columns(cell: Cell, model: str, level: str | None, spec=None) -> dict[str, Any]:
    """A judge's published number where a public leaderboard lists the same judge, model and dataset
    (``MethodSpec.published``): ``published`` (BAcc in percent, blank otherwise), ``published_source`` (the
    leaderboard's data file, pinned) or ``published_note`` (why it is blank); nothing for other judges. ``spec``:
    the cell's method (``resolve``), looked up where not given."""

    lookup = (spec or get_method(cell.method)).published
    if lookup is None:
        return {}
    found = lookup(model, cell.dataset, cell.level or level)
    if isinstance(found, str):
        return {"published": None, "published_source": None, "published_note": found}
    return {"published": found.bacc, "published_source": found.source,
            "published_note": f"{found.model} on {found.dataset}, as the leaderboard lists it"}


# The words below a paired-tests table (``report.save_table``'s ``key``): why its n can exceed the arena's
PAIRED_KEY = ("*How to read `n`:* every example both judges judged. An unreadable answer counts here as a wrong one "
              "(`unreadable_a`, `unreadable_b`: how many each judge gave), so that a judge that cannot answer pays for "
              "it; the arena's BAcc leaves unreadable answers out, so there the same judge's `n` is smaller by its "
              "unreadable answers.")


def paired_rows(preds: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every pair of judges of each dataset: exact McNemar on correctness (unreadable = wrong: ``unreadable_a``,
    ``unreadable_b`` count those of each judge), Holm-adjusted over the dataset's pairs."""

    rows = []
    for dataset in sorted({p["dataset"] for p in preds}):
        correct: dict[str, dict[str, bool]] = {}
        unreadable: dict[str, int] = {}
        for p in preds:
            if p["dataset"] == dataset:
                correct.setdefault(p["judge"], {})[p["example"]] = p["label"] is not None and p["label"] == p["gold"]
                unreadable[p["judge"]] = unreadable.get(p["judge"], 0) + (p["label"] is None)
        pairs = list(itertools.combinations(sorted(correct), 2))
        tests = [mcnemar_exact(correct[a], correct[b]) for a, b in pairs]
        for (a, b), t, adj in zip(pairs, tests, holm([t["p"] for t in tests])):
            rows.append({"dataset": dataset, "judge_a": a, "judge_b": b, "n": t["n"],
                         "unreadable_a": unreadable[a], "unreadable_b": unreadable[b], "only_a_right": t["b"],
                         "only_b_right": t["c"], "p": t["p"], "p_holm": adj, "differ_at_0.05": adj < 0.05})
    return rows


def printed_twin(cell: Cell, spec=None) -> tuple[str, Cell] | None:
    """(what differs, the same judge as the paper prints it) when ``cell`` runs a method the authors' way where the
    paper reads otherwise (``MethodSpec.as_printed``: its settings hold the as-run ones; its other settings are
    kept); None otherwise. ``spec``: the cell's method (``resolve``), looked up where not given."""

    s = dict(cell.settings)
    for pair in (spec or get_method(cell.method)).as_printed:
        if all(s.get(k) == v for k, v in pair.as_run) and not all(s.get(k) == v for k, v in pair.as_printed):
            return pair.what, Cell(cell.method, cell.dataset, tuple({**s, **dict(pair.as_printed)}.items()), cell.level)
    return None


def fidelity_cells(datasets: list[str], methods: list[str]) -> list[Cell]:
    """Both cells of every as-printed pair of ``methods`` on every dataset."""

    return [c for m in methods for pair in get_method(m).as_printed for ds, level in map(split_level, datasets)
            for c in (Cell(m, ds, pair.as_run, level), printed_twin(Cell(m, ds, pair.as_run, level))[1])]


def fidelity_rows(cells: list[Cell], table: list[dict[str, Any]], paired: list[dict[str, Any]],
                  specs: list[Any] | None = None) -> list[dict[str, Any]]:
    """Every cell whose printed twin (``printed_twin``) also ran: both BAcc values and the pair's paired test
    (Holm over the dataset's pairs, as in ``paired.csv``). ``specs``: the cells' methods, in order (``resolve``),
    looked up where not given."""
    bacc = {(r["dataset"], r["judge"]): r["bacc"] for r in table}
    tests = {(r["dataset"], r["judge_a"], r["judge_b"]): r for r in paired}
    rows = []
    for c, spec in zip(cells, specs or [None] * len(cells)):
        twin = printed_twin(c, spec)
        if twin is None or twin[1] not in cells:
            continue
        a, b = c.judge, twin[1].judge
        t = tests.get((c.where, a, b)) or tests.get((c.where, b, a))
        run_right, printed_right = ((t["only_a_right"], t["only_b_right"]) if t["judge_a"] == a
                                    else (t["only_b_right"], t["only_a_right"]))
        rows.append({"what": twin[0], "dataset": c.where, "as_run": a, "as_printed": b, "n": t["n"],
                     "bacc_as_run": bacc[(c.where, a)], "bacc_as_printed": bacc[(c.where, b)],
                     "only_as_run_right": run_right, "only_as_printed_right": printed_right, "p": t["p"],
                     "p_holm": t["p_holm"], "differ_at_0.05": t["differ_at_0.05"]})
    return rows


def paired_matrix(paired: list[dict[str, Any]], dataset: str):
    """Holm-adjusted p-values of ``dataset``'s pairs as a symmetric judge x judge DataFrame (empty diagonal)."""
    import pandas as pd

    rows = [r for r in paired if r["dataset"] == dataset]
    judges = sorted({r["judge_a"] for r in rows} | {r["judge_b"] for r in rows})
    m = pd.DataFrame(float("nan"), index=judges, columns=judges)
    for r in rows:
        m.loc[r["judge_a"], r["judge_b"]] = m.loc[r["judge_b"], r["judge_a"]] = r["p_holm"]
    return m


def write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as f:
        if not rows:
            return
        # every row's columns, in the order first seen (a leaderboard's judge adds its published columns)
        w = csv.DictWriter(f, fieldnames=list(dict.fromkeys(k for r in rows for k in r)))
        w.writeheader()
        w.writerows(rows)


def run_arena(cells: list[Cell], out: str | Path, *, backend: str, model: str, base_url: str | None = None,
              limit: int | None, seed: int = 0, level: str | None = None, llm=None, cache: str | Path | None = None,
              backend_options: dict | None = None, settings_for=None, progress: bool = True,
              held_out: int | None = None, budget=None) -> dict[str, list[Any]]:
    """Run every cell on one engine (together; score judges' held-out runs with them), then write ``arena.csv``,
    ``predictions.csv`` and ``paired.csv``; returns those tables and ``folders``, the run folders this arena ran
    (``out`` may hold others: earlier arenas with other settings). ``budget`` (an ``llm.budget.Budget``) caps the
    backend calls and tokens of all cells together."""

    out = Path(out)
    targets = resolve(cells)  # each cell's method and dataset, looked up once here and passed on
    jobs = [(rc, folder, t) for c, t in zip(cells, targets)
            for rc, folder in cell_configs(c, t, out, limit=limit, seed=seed, backend=backend, model=model,
                                           base_url=base_url, level=level, settings_for=settings_for,
                                           held_out=held_out)]
    if llm is None:
        llm = make_llm(backend, model, base_url=base_url, cache=cache, **(backend_options or {}))
    if budget is not None:
        llm.budget = budget
    results = iter(zip(jobs, run_many([(rc, folder, llm, t) for rc, folder, t in jobs], progress=progress)))
    table, preds = [], []
    for cell, t in zip(cells, targets):
        (_, folder, _), metrics = next(results)
        p = predictions(cell, folder)
        calibration = calibrate(p, predictions(cell, next(results)[0][1])) if t.method.scores else None
        preds += p
        table.append({**cell_row(cell, metrics, p, calibration=calibration),
                      **published_columns(cell, model, level, t.method)})
    paired = paired_rows(preds)
    fidelity = fidelity_rows(cells, table, paired, [t.method for t in targets])
    write_csv(out / "arena.csv", table)
    write_csv(out / "predictions.csv", preds)
    write_csv(out / "paired.csv", paired)
    write_csv(out / "fidelity.csv", fidelity)
    return {"arena": table, "predictions": preds, "paired": paired, "fidelity": fidelity,
            "folders": [folder for _, folder, _ in jobs]}


def split_names(items: list[str]) -> list[str]:
    """Names given with spaces or commas (``zero-shot cot`` or ``zero-shot,cot``, as lm-evaluation-harness's
    ``--tasks``): an item is split at the commas before its first ``:``, so a judge's settings keep theirs
    (``zero-shot,cot:temperature=0.7``; a judge with settings stands last in its item)."""
    out = []
    for item in items:
        names, colon, settings = item.partition(":")
        parts = [p.strip() for p in names.split(",")]
        parts[-1] += colon + settings
        out += [p for p in parts if p]
    return out


def parse_cells(methods: list[str], datasets: list[str]) -> list[Cell]:
    """``method`` or ``method:key=value;key=value`` (the method's settings, checked by its config) x every
    dataset; either list may be written with commas (``split_names``)."""
    cells = []
    methods, datasets = split_names(methods), split_names(datasets)
    for spec in methods:
        name, _, rest = spec.partition(":")
        settings = []
        for item in filter(None, rest.split(";")):
            key, eq, value = item.partition("=")
            if not eq:
                raise ConfigError(f"arena: method setting {item!r} in {spec!r}: expected key=value")
            settings.append((key.strip(), value.strip()))
        cells += [Cell(name.strip(), d, tuple(settings), level) for d, level in map(split_level, datasets)]
    return cells


def split_level(dataset: str) -> tuple[str, str | None]:
    """``dataset@level`` -> (dataset, level): a dataset judged at its own unit in an arena of another (e.g.
    ``tofueval-meetingbank@sentence``, one claim per summary sentence, as LLM-AggreFact scores it); a plain name
    keeps the arena's level (None)."""
    name, at, level = dataset.partition("@")
    if at and level not in ("summary", "sentence"):
        raise ConfigError(f"arena: dataset {dataset!r}: the level after @ is summary or sentence")
    return name, (level or None)


def ranking(table: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Judges by mean BAcc over the datasets where it is defined (the LLM-AggreFact leaderboard's average), with
    its 95% interval, how many datasets that mean covers (``n``: the readable labels it rests on; ``n_examples``:
    the examples judged) and the mean prompt + completion tokens per example. The
    interval: one dataset's own; over several (independent examples), the mean's normal interval from each
    dataset's standard error read off its interval (width / 3.92); none where a dataset has no interval."""

    judges: dict[str, list[dict[str, Any]]] = {}
    for row in table:
        judges.setdefault(row["judge"], []).append(row)
    out = []
    for judge, rows in judges.items():
        scored = [r for r in rows if r["bacc"] is not None and r["bacc"] == r["bacc"]]
        baccs = [r["bacc"] for r in scored]
        tokens = [r["prompt_tokens_per_example"] + r["completion_tokens_per_example"] for r in rows]
        mean = sum(baccs) / len(baccs) if baccs else None
        cis = [(r.get("bacc_ci_low"), r.get("bacc_ci_high")) for r in scored]
        ci: tuple[float | None, float | None] = (None, None)
        if cis and all(lo is not None and hi is not None and lo == lo and hi == hi for lo, hi in cis):
            half = 1.96 * math.sqrt(sum(((hi - lo) / 3.92) ** 2 for lo, hi in cis)) / len(cis)
            ci = cis[0] if len(cis) == 1 else (mean - half, mean + half)
        out.append({"judge": judge, "mean_bacc": mean, "mean_bacc_ci_low": ci[0], "mean_bacc_ci_high": ci[1],
                    "datasets": len(baccs), "of_datasets": len(rows), "n": sum(r["n"] for r in scored),
                    "n_examples": sum(r.get("n_examples", r["n"]) for r in rows),
                    "tokens_per_example": sum(tokens) / len(tokens)})
    return sorted(out, key=lambda r: (r["mean_bacc"] is None, -(r["mean_bacc"] or 0)))


def pareto_front(points: list[tuple[float, float]]) -> list[int]:
    """Indices of the points (cost, accuracy) no other point beats: as cheap or cheaper and as accurate or more,
    better in one; in order of cost."""
    front = [i for i, (c, a) in enumerate(points)
             if not any((c2 <= c and a2 >= a) and (c2 < c or a2 > a) for j, (c2, a2) in enumerate(points) if j != i)]
    return sorted(front, key=lambda i: points[i][0])


PARETO_MARGIN = 1.5  # the Pareto figure's x axis reaches this factor beyond the cheapest and the dearest judge


def point_keys(points: list[tuple[float, float]], *, near: float = 0.04, y_span: float = 100.0) -> list[list[int]]:
    """Points (x on a log axis, y from 0 to ``y_span``: BAcc in percent) grouped where they would overlap on the
    plot (closer than ``near`` of the axes' span; the x axis spans the points' decades and ``PARETO_MARGIN`` each
    side): each group is marked once, with all its numbers, so that no number is drawn over another."""

    xs = [math.log10(max(x, 1e-9)) for x, _ in points]
    span = max(xs, default=0) - min(xs, default=0) + 2 * math.log10(PARETO_MARGIN)
    groups: list[list[int]] = []
    for i, (x, (_, y)) in enumerate(zip(xs, points)):
        for g in groups:
            j = g[0]
            if math.hypot((x - xs[j]) / span, (y - points[j][1]) / y_span) < near:
                g.append(i)
                break
        else:
            groups.append([i])
    return groups


def pareto_figure(table: list[dict[str, Any]], highlight: tuple[str, ...] = ()):
    """Tokens per example (log axis) against BAcc on its whole 0-100 scale with chance (50) marked, one panel per
    dataset: each judge a numbered point with its 95% interval as an error bar, the Pareto front drawn, and beside
    the panel the key (number, judge, BAcc and interval; judges whose name starts with one of ``highlight`` in their
    own colour). Points that would overlap share one mark naming all their numbers."""
    import matplotlib.pyplot as plt


    datasets = sorted({r["dataset"] for r in table})
    fig, axes = plt.subplots(1, 2 * len(datasets), figsize=(8.5 * len(datasets), 4.2), squeeze=False,
                             gridspec_kw={"width_ratios": [1.45, 1] * len(datasets)})
    for k, ds in enumerate(datasets):
        ax, key = axes[0][2 * k], axes[0][2 * k + 1]
        rows = [r for r in table if r["dataset"] == ds and r["bacc"] is not None and r["bacc"] == r["bacc"]]
        rows.sort(key=lambda r: -r["bacc"])
        pts = [(max(1e-9, r["prompt_tokens_per_example"] + r["completion_tokens_per_example"]), r["bacc"])
               for r in rows]
        mine = [r["judge"].startswith(tuple(highlight)) if highlight else False for r in rows]
        colour = ["#c33" if m else "#36a" for m in mine]
        low = [a - (r.get("bacc_ci_low") if r.get("bacc_ci_low") is not None else a) for (_, a), r in zip(pts, rows)]
        high = [(r.get("bacc_ci_high") if r.get("bacc_ci_high") is not None else a) - a for (_, a), r in zip(pts, rows)]
        ax.axhline(50, color="#bbb", lw=0.8, zorder=0)
        ax.errorbar([c for c, _ in pts], [a for _, a in pts], yerr=[low, high], fmt="none", ecolor="#999",
                    elinewidth=1, capsize=2, zorder=1)
        ax.scatter([c for c, _ in pts], [a for _, a in pts], c=colour, zorder=2)
        for group in point_keys(pts):
            c, a = pts[group[0]]
            ax.annotate(",".join(str(i + 1) for i in group), (c, a), fontsize=7, xytext=(4, 3),
                        textcoords="offset points", color=colour[group[0]])
        front = pareto_front(pts)
        ax.plot([pts[i][0] for i in front], [pts[i][1] for i in front], "--", color="grey", label="Pareto front")
        ax.set_xscale("log")
        lo, hi = min((c for c, _ in pts), default=1), max((c for c, _ in pts), default=10)
        ax.set_xlim(lo / PARETO_MARGIN, hi * PARETO_MARGIN)
        ax.set_ylim(0, 100)
        ns = sorted({r["n"] for r in rows}) or [0]
        most = ns[-1]  # a judge with unreadable answers rests on fewer: its key line says how many
        ax.set(title=f"{ds} (n = {ns[0] if len(ns) == 1 else f'{ns[0]}-{most}'})",
               xlabel="tokens per example (prompt + completion)", ylabel="BAcc, % (bars: 95% CI; grey line: chance)")
        key.axis("off")
        lines = [f"{i + 1}  {r['judge']}: {r['bacc']:.1f} "
                 + (f"[{r['bacc_ci_low']:.1f}, {r['bacc_ci_high']:.1f}]" if r.get("bacc_ci_low") is not None else "")
                 + (f" (n = {r['n']})" if r["n"] != most else "")
                 + (" (one label to all)" if one_label_said(r.get(SAID_COLUMN)) else "") for i, r in enumerate(rows)]
        for i, (line, m) in enumerate(zip(lines, mine)):
            key.text(0, 1 - 0.065 * i, line, fontsize=7.5, va="top", transform=key.transAxes,
                     color="#c33" if m else "black", weight="bold" if m else "normal")
        key.text(0, 1 - 0.065 * (len(lines) + 0.5), "- - Pareto front: no judge cheaper and better",
                 fontsize=7.5, va="top", color="grey", transform=key.transAxes)
    fig.tight_layout()
    return fig
