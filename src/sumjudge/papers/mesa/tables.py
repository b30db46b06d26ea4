"""MESA experiment grid, paper-vs-reproduced tables and the assessment viewer (notebook 30).

Every evaluated row is one ``sumjudge run`` through ``notebook.Session`` (cached, resumable) on the
``test`` split of ``meeting-errors``; self-training learns its reports on the ``train`` split (other
meetings). Row names follow the paper: Single-n / Multi-n = MESA (single-aspect, three-step) without / with
MADP after n self-training iterations; "single" / "three" in Table 1 = single-step / three-step.
"""

from __future__ import annotations

import asyncio
import hashlib
import html
import json
import statistics
from pathlib import Path
from typing import Any

from sumjudge.data import registry
from sumjudge.judges.settings import make_config
from sumjudge.llm import CallLog
from sumjudge.llm.engine import RunContext, run_sync
from sumjudge.metrics import fisher_ci, point_biserial, sd_interval, t_interval
from sumjudge.papers.mesa.feedback import save, self_train
from sumjudge.papers.mesa.metrics import transcript_columns
from sumjudge.papers.mesa.protocol import transcript_budget
from sumjudge.report import paper_value, percent, read_results, scaled_ci
from sumjudge.run.folder import run_name
from sumjudge.run.methods import get_method
from sumjudge.run.metrics import parse_columns, said_column

# what label 1 stands for in the label counts of an error type's rows (``report.save_table``'s ``label_one``)
ERROR_FOUND = "an error of this type in the summary (as the judge said, or as the annotators marked it), 0 = none"
# why a cell is empty: a correlation no scored summaries define; a paper cell its source text does not give
UNDEFINED_R = "undefined: the scored summaries hold one class only, or their scores are all equal (or fewer than 3)"
# (worded without "paper": a note naming the paper marks a row the paper prints and this run skips, results.notes)
GARBLED = "the printed value is unreadable in its source text (fewer values than rows): left empty, not guessed"
PAPER_CODE = {"RED": "REP"}  # sumjudge's code -> the paper's table column
SETUPS = {"Single": {}, "Multi": {"madp": True}}


def paper_code(code: str) -> str:
    return PAPER_CODE.get(code, code)


def mesa_run_spec(settings: dict[str, Any], *, split: str = "test", limit: int | None = None, method: str = "mesa",
                  dataset: str = "meeting-errors") -> dict[str, Any]:
    """``session.run``'s arguments for one MESA run (named after its settings; a trained variant ends in -feedback)."""
    return {"method": method, "dataset": dataset, "split": split, "limit": limit, "settings": settings,
            "name": run_name(method, {k: v for k, v in settings.items() if k != "feedback"}, dataset, split)
            + ("-feedback" if settings.get("feedback") else "")}


def run_mesa(session, settings: dict[str, Any], *, split: str = "test", limit: int | None = None,
             method: str = "mesa", dataset: str = "meeting-errors") -> tuple[dict[str, Any], Path]:
    spec = mesa_run_spec(settings, split=split, limit=limit, method=method, dataset=dataset)
    return session.run(spec.pop("method"), spec.pop("dataset"), **spec)


REPORT_ROOM = 600  # tokens kept for the self-training report appended to a trained variant's prompts


def shared_transcript_tokens(session, variants: list[tuple[dict[str, Any], bool]], *, dataset: str = "meeting-errors",
                             split: str = "test", limit: int | None = None) -> int | None:
    """The transcript budget of a comparison: the least, over its MESA variants ((settings, trained) pairs) and
    its examples, of the transcript tokens every prompt leaves room for. Run with it (``transcript_tokens``), every
    variant (and G-Eval-4) reads the same transcript text, cut once; None when the engine cannot count tokens
    or has no context length (nothing is cut then)."""

    llm = session.llm_for("mesa")
    if not llm.context_length or not llm.counts_tokens:
        return None
    examples = registry.load(dataset, split=split, limit=limit if limit is not None else session.prof.n,
                             seed=session.prof.seed)
    budgets = []
    for settings, trained in variants:
        cfg = make_config(get_method("mesa").config_cls, session.method_settings("mesa", **settings),
                          seed=session.prof.seed)
        reports = {t.code: "x " * REPORT_ROOM for t in cfg.selected()} if trained else {}

        async def of_all(cfg=cfg, reports=reports) -> list[int | None]:
            return list(await asyncio.gather(*(transcript_budget(ex, llm, cfg, reports) for ex in examples)))

        budgets += run_sync(of_all())
    return min(b for b in budgets if b is not None) if budgets else None


class FeedbackJob:
    """Self-training (Section 2.5) on the ``train`` split, as a job: ``await job()`` learns the feedback (or reads
    it back from its folder) and keeps it in ``feedback``. A job can run alongside other runs (``run_many``'s
    ``alongside``): its requests then share their batches."""

    def __init__(self, session, settings: dict[str, Any], iterations: int, *, limit: int | None = None,
                 dataset: str = "meeting-errors"):
        self.session, self.iterations = session, iterations
        self.cfg = make_config(get_method("mesa").config_cls, session.method_settings("mesa", **settings),
                               seed=session.prof.seed)
        self.train = registry.load(dataset, split="train", limit=limit, seed=session.prof.seed)
        digest = hashlib.sha256(json.dumps([repr(self.cfg), [e.id for e in self.train], iterations]).encode()
                                ).hexdigest()[:8]
        self.out = session.runs_dir() / f"self-training-{run_name('mesa', settings, dataset)}-it{iterations}-{digest}"
        self.feedback: dict[str, Any] | None = None

    async def __call__(self) -> dict[str, Any]:
        if (self.out / "feedback.json").exists():
            self.feedback = json.loads((self.out / "feedback.json").read_text(encoding="utf-8"))
            return self.feedback
        self.out.mkdir(parents=True, exist_ok=True)
        log = CallLog(self.out / "calls.jsonl")
        try:
            fb = await self_train(self.train, self.session.llm_for("mesa").for_run(RunContext(log=log)), self.cfg,
                                  self.iterations)
        finally:
            log.close()
        save(fb, self.out / "feedback.json")
        self.feedback = fb
        return fb


def learn_feedback(session, settings: dict[str, Any], iterations: int, *, limit: int | None = None,
                   dataset: str = "meeting-errors") -> dict[str, Any]:
    """Self-training (Section 2.5) on the ``train`` split with ``settings``; the feedback mapping for
    ``MesaConfig.feedback`` ({} for 0 iterations). Calls are logged under the notebook's run folder."""
    if iterations <= 0:
        return {}
    return run_sync(FeedbackJob(session, settings, iterations, limit=limit, dataset=dataset)())


def notebook_transcript_tokens(session, types: list[str], *, iterations: int, trained: list[str] | tuple[str, ...],
                               dataset: str = "meeting-errors", limit: int | None = None) -> int | None:
    """One transcript budget for every MESA run of notebook 30 (single- and three-step, single- and
    multi-aspect, with and without MADP, with a self-training report where trained): every table then compares
    evaluators that read the same transcripts."""
    variants = [({"types": list(types), "steps": 1}, False), ({"types": list(types), "steps": 1,
                                                                "aspect_mode": "multi"}, False)]
    variants += [({"types": list(types), **extra}, iterations > 0 and setup in trained) for setup, extra in SETUPS.items()]
    return shared_transcript_tokens(session, variants, dataset=dataset, limit=limit)


def evaluate_rows(session, types: list[str], *, iterations: int = 1, limit: int | None = None,
                  train_limit: int | None = None, g_eval: bool = True, dataset: str = "meeting-errors",
                  trained: tuple[str, ...] | list[str] = tuple(SETUPS),
                  transcript_tokens: int | None = None) -> dict[str, tuple[dict[str, Any], Path]]:
    """(metrics, run folder) per Table 3 row: G-Eval-4, Single-0, Single-n, Multi-0, Multi-n (n = ``iterations``).
    Self-training runs for the setups named in ``trained`` (default both); the others get only their -0 row."""
    return evaluate_rows_with(session, [], types, iterations=iterations, limit=limit, train_limit=train_limit,
                              g_eval=g_eval, dataset=dataset, trained=trained, transcript_tokens=transcript_tokens)[0]


def evaluate_rows_with(session, together: list[dict[str, Any]], types: list[str], *, iterations: int = 1,
                       limit: int | None = None, train_limit: int | None = None, g_eval: bool = True,
                       dataset: str = "meeting-errors", trained: tuple[str, ...] | list[str] = tuple(SETUPS),
                       transcript_tokens: int | None = None
                       ) -> tuple[dict[str, tuple[dict[str, Any], Path]], list[tuple[dict[str, Any], Path]]]:
    """``evaluate_rows``, and the runs ``together`` (``mesa_run_spec``s, e.g. Table 1's single-step runs) in the same
    batches: every run that needs no training and the self-training itself share the engine, then the trained rows.
    Returns (rows, the ``together`` runs' (metrics, folder) in order)."""
    unknown = set(trained) - set(SETUPS)
    if unknown:
        raise ValueError(f"unknown MESA setup(s) {sorted(unknown)}; known: {list(SETUPS)}")
    out: dict[str, tuple[dict[str, Any], Path]] = {}
    # every row reads the same transcript: cut once, to the tightest budget of the rows (MADP's, with a report)
    cap = transcript_tokens if transcript_tokens is not None else shared_transcript_tokens(
        session, [({"types": list(types), **extra}, iterations > 0 and setup in trained) for setup, extra in SETUPS.items()],
        dataset=dataset, limit=limit)
    shared = {"transcript_tokens": cap} if cap is not None else {}
    bases = {setup: {"types": list(types), **extra, **shared} for setup, extra in SETUPS.items()}
    # the rows that need no training, the runs asked together and the self-training run at once (their requests
    # share the engine's batches); each trained row starts as soon as its feedback is learned, in the same batches
    untrained = {f"{setup}-0": mesa_run_spec(base, limit=limit, dataset=dataset) for setup, base in bases.items()}
    if g_eval:
        untrained = {"G-Eval-4": mesa_run_spec({"types": list(types), **shared}, limit=limit, method="mesa-g-eval",
                                               dataset=dataset), **untrained}
    jobs = {setup: FeedbackJob(session, base, iterations, limit=train_limit, dataset=dataset)
            for setup, base in bases.items() if iterations > 0 and setup in trained}
    trained_rows: dict[str, tuple[dict[str, Any], Path]] = {}

    def then_trained(setup: str, job: FeedbackJob):
        async def learn_then_run() -> None:
            fb = await job()
            used = {k: fb[k] for k in ("iteration", "reports", "train_meetings")}  # the history stays in its file
            spec = mesa_run_spec({**bases[setup], "feedback": used}, limit=limit, dataset=dataset)
            trained_rows[f"{setup}-{iterations}"] = (await session.run_many_async([spec]))[0]
        return learn_then_run

    done = session.run_many(list(untrained.values()) + list(together),
                            alongside=[then_trained(setup, job) for setup, job in jobs.items()])
    out.update(zip(untrained, done))
    out.update(trained_rows)
    order = ["G-Eval-4"] + [f"{setup}-{i}" for setup in SETUPS for i in (0, iterations)]
    return {row: out[row] for row in order if row in out}, done[len(untrained):]


def variance_runs(session, types: list[str], seeds: list[int], *, temperature: float, limit: int | None = None,
                  challenger_models: list[str] | None = None, dataset: str = "meeting-errors",
                  transcript_tokens: int | None = None) -> dict[str, list[dict[str, Any]]]:
    """Table 2's repeated runs: per setup (single, MADP-S, and MADP-M when ``challenger_models`` are given),
    one run per seed at ``temperature`` on the same summaries; metrics per run."""
    setups: dict[str, dict[str, Any]] = {"single": {}, "MADP-S": {"madp": True}}
    if challenger_models:
        setups["MADP-M"] = {"madp": True, "challenger_models": list(challenger_models)}
    shared = {"transcript_tokens": transcript_tokens} if transcript_tokens is not None else {}
    return {name: [run_mesa(session, {"types": list(types), **extra, **shared, "seed": s, "temperature": temperature},
                            limit=limit, dataset=dataset)[0] for s in seeds]
            for name, extra in setups.items()}


def _p(p: float | None) -> str | None:
    return None if p is None or p != p else f"{p:.3f}"


def table1_rows(single: dict[str, Any], three: dict[str, Any], model: str) -> list[dict[str, Any]]:
    """Balanced accuracy (%) of error-type identification, single-step vs three-step."""
    rows = []
    for label, m in (("single", single), ("three", three)):
        for code, t in m["types"].items():
            rows.append({"experiment": "Table 1", "evaluator": label, "aspect": code, "metric": "BAcc %",
                         "paper": paper_value("mesa", "table1", label, paper_code(code)),
                         "reproduced": percent(t.get("bacc")),
                         "ci": scaled_ci(t.get("bacc_ci")), "n": t.get("detected_n"), "n_examples": t.get("n"),
                         "errors": t.get("errors"),
                         **said_column(t.get("said"), t.get("gold")), **parse_columns(m), **transcript_columns(m),
                         "model": model,
                         "note": None if t.get("available") else t.get("reason")})
    return rows


def table3_rows(results: dict[str, tuple[dict[str, Any], Path]], model: str) -> list[dict[str, Any]]:
    """Point-biserial r between the score (5 - impact) and error presence, per row and error type."""
    rows = []
    for label, (m, _) in results.items():
        for code, t in m["types"].items():
            pb = t.get("point_biserial", {})
            rows.append({"experiment": "Table 3", "evaluator": label, "aspect": code, "metric": "r_pb",
                         "paper": paper_value("mesa", "table3", label, paper_code(code)), "reproduced": pb.get("r"),
                         "ci": fisher_ci(pb.get("r"), pb.get("n")), "p": _p(pb.get("p")), "n": pb.get("n"),
                         "unscored": t.get("unscored"), **parse_columns(m), **transcript_columns(m), "model": model,
                         "note": (t.get("reason") if not t.get("available") else
                                  None if pb.get("r") is not None and pb["r"] == pb["r"] else UNDEFINED_R)})
    return rows


def likert_rows(results: dict[str, tuple[dict[str, Any], Path]], model: str) -> list[dict[str, Any]]:
    """Tables 4 (Spearman, Kendall vs human impact) and 5 (mean Likert gap); the reproduced side is empty,
    with the reason, where the dataset has no human Likert scores."""
    rows = []
    for label, (m, _) in results.items():
        for code, t in m["types"].items():
            lk = t.get("likert", {})
            note = None if lk.get("available") else lk.get("reason")
            p4 = paper_value("mesa", "table4", label, paper_code(code)) or [None, None]
            for i, sym in enumerate(("spearman", "kendall")):
                rep = lk.get(sym, {})
                rows.append({"experiment": "Table 4", "evaluator": label, "aspect": code, "metric": sym,
                             "paper": p4[i], "reproduced": rep.get("r"), "ci": fisher_ci(rep.get("r"), rep.get("n"), sym),
                             "p": _p(rep.get("p")), "n": rep.get("n"), "model": model,
                             "note": "; ".join(x for x in (note, None if p4[i] is not None else GARBLED) if x) or None})
            rows.append({"experiment": "Table 5", "evaluator": label, "aspect": code, "metric": "Likert gap",
                         "paper": paper_value("mesa", "table5", label, paper_code(code)), "reproduced": lk.get("gap"),
                         "ci": lk.get("gap_ci"), "llm_mean_rating": t.get("mean_rating"), "n": lk.get("n"), "model": model,
                         "note": note})
    return rows


def rouge_rows(session, types: list[str], *, limit: int | None = None, split: str = "test",
               dataset: str = "meeting-errors") -> list[dict[str, Any]]:
    """Table 3's ROUGE rows, computed (``rouge-score``): F1 of each summary against its QMSum gold summary,
    point-biserial r with error presence (a positive-is-better score, like the paper's). Summaries without
    a gold summary (your own files without one) are left out."""
    from rouge_score import rouge_scorer


    examples = [ex for ex in registry.load(dataset, split=split, limit=session.prof.n if limit is None else limit,
                                           seed=session.prof.seed) if ex.meta.get("gold")]
    names = {"ROUGE-1": "rouge1", "ROUGE-2": "rouge2", "ROUGE-LS": "rougeLsum"}
    scorer = rouge_scorer.RougeScorer(list(names.values()), use_stemmer=True)
    scores = [scorer.score(ex.meta["gold"], ex.summary) for ex in examples]
    rows = []
    for label, key in names.items():
        for code in types:
            pairs = [(ex.labels.get(code), s[key].fmeasure) for ex, s in zip(examples, scores)
                     if ex.labels.get(code) is not None]
            r, p, n = point_biserial([y for y, _ in pairs], [f for _, f in pairs])
            rows.append({"experiment": "Table 3", "evaluator": label, "aspect": code, "metric": "r_pb",
                         "paper": paper_value("mesa", "table3", label, paper_code(code)), "reproduced": r if pairs else None,
                         "ci": fisher_ci(r, n) if pairs else None, "p": _p(p), "n": n, "model": "rouge-score",
                         "note": None if pairs else "the dataset has no human label for this error type"})
    return rows


def paper_only_rows(types: list[str]) -> list[dict[str, Any]]:
    return [{"experiment": "Table 3", "evaluator": "BERTScore", "aspect": c, "metric": "r_pb",
             "paper": paper_value("mesa", "table3", "BERTScore", paper_code(c)), "reproduced": None,
             "note": "as printed in the paper; not computed here (needs a RoBERTa-large download)"} for c in types]


def variance_rows(runs: dict[str, list[dict[str, Any]]], model: str,
                  types: list[str] | None = None) -> list[dict[str, Any]]:
    """Table 2: per setup and error type, the mean over repeated runs (seeds) of the mean impact rating, and
    the standard deviation of those means across runs, each with its 95% interval over the runs (Student's t for
    the mean, chi-square for the standard deviation: with the paper's three runs both are wide). A setup with no runs (no seeds) keeps its rows for
    ``types``, with the paper's values beside an empty reproduced cell and ``runs`` 0."""
    rows = []
    for setup, ms in runs.items():
        for code in (ms[0]["types"] if ms else types or []):
            means = [m["types"][code]["mean_rating"] for m in ms if m["types"][code]["mean_rating"] is not None]
            paper = paper_value("mesa", "table2", setup, paper_code(code)) or [None, None]
            mean = statistics.fmean(means) if means else None
            sd = statistics.stdev(means) if len(means) > 1 else None
            for i, (metric, val, ci) in enumerate((("mean Likert", mean, t_interval(means)),
                                                   ("sd across runs", sd, sd_interval(means)))):
                rows.append({"experiment": "Table 2", "evaluator": setup, "aspect": code, "metric": metric,
                             "paper": paper[i], "reproduced": val, "ci": ci, "runs": len(ms),
                             "scored_runs": len(means), "model": model})
    return rows


def aspect_rows(single: dict[str, Any], multi: dict[str, Any], model: str) -> list[dict[str, Any]]:
    """Section 2.2 (no table in the paper): single- vs multi-aspect (both single-step, as the paper's §2.2 and
    the authors' MODE 0/1 compare them), per type: mean rating, BAcc in percent (as Table 1 prints it), r_pb, and
    the transcript share read."""
    rows = []
    for label, m in (("single-aspect", single), ("multi-aspect", multi)):
        for code, t in m["types"].items():
            pb = t.get("point_biserial", {})
            for metric, val, ci in (("mean rating", t.get("mean_rating"), t.get("mean_rating_ci")),
                                    ("BAcc %", percent(t.get("bacc")), scaled_ci(t.get("bacc_ci"))),
                                    ("r_pb", pb.get("r"), fisher_ci(pb.get("r"), pb.get("n")))):
                rows.append({"experiment": "Section 2.2", "evaluator": label, "aspect": code, "metric": metric,
                             "paper": None, "reproduced": val, "ci": ci, "model": model, "n": t.get("scored"),
                             **said_column(t.get("said") if metric == "BAcc %" else None), **transcript_columns(m)})
    return rows


def assessment_html(run_dir: str | Path, example_id: str | None = None, code: str | None = None,
                    max_chars: int = 700) -> str:
    """One summary and one error type: instances (step 1), ratings (step 2), the MADP discussion where
    there was one, and the final score (step 3)."""
    results = read_results(run_dir)
    row = next((r for r in results if example_id in (None, r["example"]["id"])), None)
    if row is None:
        return f"<p>no result for {html.escape(str(example_id))}</p>"
    types = row["judgement"]["details"]["types"]
    code = code or next(iter(types))
    t = types[code]
    esc = lambda s: html.escape(str(s)[:max_chars])  # noqa: E731
    ex = row["example"]
    parts = [f"<h4>{esc(ex['id'])} · {esc(code)} · {esc(row['judgement']['details'].get('variant', ''))}</h4>",
             f"<p><b>Summary:</b> {esc(ex['summary'])}</p>",
             f"<p><b>Human label:</b> {ex['labels'].get(code)}</p>"]
    rated = {x.get("instance"): x for x in t.get("rated", [])}
    items = "".join(f"<li>{esc(x.get('instance'))} <i>(certainty {esc(x.get('certainty'))})</i>"
                    + (f" → error: {rated[x.get('instance')]['error_exists']}, severity "
                       f"{rated[x.get('instance')].get('severity')}" if x.get("instance") in rated else "")
                    + "</li>" for x in t.get("instances", []))
    parts.append(f"<p><b>Instances (step 1) and ratings (step 2):</b></p><ul>{items or '<li>none</li>'}</ul>")
    for step, log in t.get("discussion", {}).items():
        turns = "".join(f"<li><b>{esc(d['role'])}</b> ({esc(d.get('model', ''))}): {esc(d['text'])}</li>" for d in log)
        parts.append(f"<p><b>MADP discussion, {esc(step)}:</b></p><ol>{turns}</ol>")
    parts.append(f"<p><b>Score (step 3):</b> impact {t.get('rating')} / 5, confidence {t.get('confidence')} / 10 "
                 f"({esc(t.get('score_source'))}); reasoning: {esc(t.get('reasoning'))}</p>")
    return "\n".join(parts)


def feedback_summary(feedback: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per self-training round: compared samples, score-difference labels (the rating gap rule), the
    reasoning comparisons and their mean quality (0-100)."""
    return [{k: v for k, v in h.items() if k != "samples"} for h in feedback.get("history", [])]
