"""The lab on LLM judges (notebook 02, ``docs/lab.md``): the papers' judges as the committed results page recorded
them, replayed (no weights loaded, no model call), a student's own judge run on exactly the same examples, and what
the lab's exercises compute from them. ``lab_answers`` writes the answers a teacher may withhold from the same code.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from statistics import NormalDist
from typing import Any

import numpy as np

from sumjudge import arena, profiles, prompts
from sumjudge.errors import ConfigError
from sumjudge.metrics import holm, labels_said, mcnemar_exact
from sumjudge.notebook import Session, slug
from sumjudge.paths import checkout_root, project_root
from sumjudge.report import read_calls, read_results
from sumjudge.run.folder import check_run_folder
from sumjudge.run.methods import get_method
from sumjudge.run.notebooks import notebook_defaults

ARENA_NOTEBOOK = "50_judge_arena"  # the notebook whose recorded arena the lab replays
MAX_OWN_EXAMPLES = 20  # a student's judge calls the model on at most this many examples per dataset


@dataclass
class ArenaResult:
    """An arena's tables (``arena.run_arena``'s), the model that answered and where its run folders are."""

    model: str
    n: int
    seed: int
    level: str
    datasets: list[str]
    runs: Path
    table: list[dict[str, Any]]
    predictions: list[dict[str, Any]]
    paired: list[dict[str, Any]] = field(default_factory=list)
    fidelity: list[dict[str, Any]] = field(default_factory=list)
    held_out: int | None = None  # held-out examples per dataset where a score judge's threshold is chosen
    wall_s: float | None = None  # a run's measured time (its model calls), None for a replay
    requests: int | None = None  # the requests a run asked its engine (the cache's answers included)
    folders: list[Path] | None = None  # the run folders it ran (``runs`` may hold others); None: all under ``runs``


def _candidates(relative: str) -> list[Path]:
    """``relative`` under the project (``SUMJUDGE_HOME``), then under the checkout the package runs from."""

    return [root / relative for root in (project_root(), checkout_root()) if root]


def results_page(profile: str = "smoke") -> Path:
    """The results page of ``profile`` (``figures/results-<profile>``): the project's, else the one committed in the
    checkout the package runs from."""
    pages = _candidates(f"figures/results-{profile}")
    return next((p for p in pages if (p / ARENA_NOTEBOOK).is_dir()), pages[0])


def notebook_path(notebook: str) -> Path:
    """``notebooks/<notebook>.ipynb`` of the project, else of the checkout the package runs from."""
    found = [p for p in _candidates(f"notebooks/{notebook}.ipynb") if p.is_file()]
    if not found:
        raise ConfigError(f"lab: no notebooks/{notebook}.ipynb in the project or the checkout")
    return found[0]


def arena_parameters(profile: str = "smoke", notebook: str = ARENA_NOTEBOOK) -> dict[str, Any]:
    """The parameters ``notebook`` runs with under ``profile``: its parameters cell's values, then the profile's
    (as ``make reproduce`` injects them)."""

    defaults = notebook_defaults(notebook_path(notebook))
    preset = profiles.load(profile, notebook=notebook).parameters
    return {**defaults, **{k: v for k, v in preset.items() if k in defaults}}


def replay_arena(profile: str = "smoke", page: str | Path | None = None) -> ArenaResult:
    """Notebook 50's arena as ``page`` (default: ``profile``'s committed results page) recorded it: the same cells,
    examples and settings, every answer read from the page's recorded answers. A request the recording does not
    hold stops with ``ReplayMiss`` naming it (the page is then stale: ``make check-page`` says the same)."""

    page = Path(page) if page else results_page(profile)
    if not (page / ARENA_NOTEBOOK / "answers.jsonl.xz").is_file():
        raise ConfigError(f"lab: {page / ARENA_NOTEBOOK / 'answers.jsonl.xz'} is missing: the lab replays notebook "
                          f"50's recorded answers (make reproduce PROFILE={profile} NOTEBOOKS=50 records them)")
    params = arena_parameters(profile)
    session = Session(ARENA_NOTEBOOK, profile=profile, replay=page)
    p = session.prof
    cells = arena.parse_cells(params["methods"], params["datasets"])
    cells += [c for c in arena.fidelity_cells(params["datasets"], params["as_printed"]) if c not in cells]
    runs = session.runs_dir() / "arena-replayed-by-the-lab"  # not notebook 50's own folders: both replay at once
    res = arena.run_arena(cells, runs, backend=p.backend, model=p.model, base_url=p.base_url, limit=p.n,
                          seed=p.seed, level=params["level"], llm=session.llm, settings_for=session.method_settings,
                          held_out=params["held_out"], progress=False)
    return ArenaResult(model=session.llm.info.model, n=p.n, seed=p.seed, level=params["level"], datasets=list(params["datasets"]),
                       runs=runs, table=res["arena"], predictions=res["predictions"], paired=res["paired"],
                       fidelity=res["fidelity"], held_out=params["held_out"], folders=res["folders"])


def run_own(method: str, rivals: ArenaResult, session, *, settings: dict[str, Any] | None = None,
            name: str | None = None) -> ArenaResult:
    """``method`` (a registered judge: the student's) on exactly ``rivals``' examples (its datasets, n and seed,
    at most ``MAX_OWN_EXAMPLES`` each), on ``session``'s engine, its run folders under the session's
    (``own/<name>``). ``settings`` go to the judge's config; ``name`` is what the tables call it (default: the
    method). A score judge (``MethodSpec.scores``) gets its threshold on the rivals' held-out examples, as the
    arena's score judges did. The result keeps the run's measured time and the requests it asked."""


    if rivals.n is None or rivals.n > MAX_OWN_EXAMPLES:
        raise ConfigError(f"lab: the replayed arena rests on n = {rivals.n} examples per dataset; a student's judge "
                          f"runs on at most {MAX_OWN_EXAMPLES} (the same examples as its rivals)")

    p = session.prof
    label = name or method
    cells = [dataclasses.replace(c, settings=tuple(sorted((settings or {}).items())))
             for c in arena.parse_cells([method], rivals.datasets)]
    runs = session.runs_dir() / "own" / slug(label)  # each named run its own folders (``requests_compared``)
    calls, start = session.llm.time_profile()["calls"], time.perf_counter()
    res = arena.run_arena(cells, runs, backend=p.backend, model=p.model, base_url=p.base_url, limit=rivals.n,
                          seed=rivals.seed, level=rivals.level, llm=session.llm, settings_for=session.method_settings,
                          held_out=rivals.held_out, progress=False)
    wall_s, requests = time.perf_counter() - start, session.llm.time_profile()["calls"] - calls
    session.write_time_profile()  # where the time went, and the answers so far (a recording keeps them)
    for row in [*res["arena"], *res["predictions"]]:
        row["judge"] = label
    for row in res["arena"]:
        row["model"] = session.llm.info.model  # the model that answered (the profile's name may be an alias)
    return ArenaResult(model=session.llm.info.model, n=rivals.n, seed=rivals.seed, level=rivals.level, datasets=rivals.datasets,
                       runs=runs, table=res["arena"], predictions=res["predictions"], held_out=rivals.held_out,
                       wall_s=wall_s, requests=requests, folders=res["folders"])


def combined(rivals: ArenaResult, *own: ArenaResult) -> ArenaResult:
    """The rivals' arena with the student's judges added: every table row (the model that answered in ``model``),
    every prediction, and the paired tests (exact McNemar, Holm over each dataset's pairs) redone over all judges."""

    table = [{**r, "model": r.get("model", rivals.model)} for r in rivals.table]
    preds = list(rivals.predictions)
    for o in own:
        table = [*o.table, *table]
        preds += o.predictions
    return ArenaResult(model=rivals.model, n=rivals.n, seed=rivals.seed, level=rivals.level,
                       datasets=rivals.datasets, runs=rivals.runs, table=table, predictions=preds,
                       paired=arena.paired_rows(preds), fidelity=rivals.fidelity, held_out=rivals.held_out,
                       folders=None if any(r.folders is None for r in (rivals, *own))
                       else [f for r in (rivals, *own) for f in r.folders or []])


def label_counts(predictions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per judge and dataset: how many examples it labelled 1, 0, and not at all (unreadable), and whether every
    readable label was the same one (its BAcc is then 50 by construction)."""

    labels: dict[tuple[str, str], list[int | None]] = {}
    for p in predictions:
        labels.setdefault((p["dataset"], p["judge"]), []).append(p["label"])
    rows = []
    for (dataset, judge), said in labels.items():
        n = labels_said(said)
        rows.append({"dataset": dataset, "judge": judge, "said_1": n["1"], "said_0": n["0"],
                     "unreadable": len(said) - n["1"] - n["0"], "one_label_to_all": (n["1"] == 0) != (n["0"] == 0)})
    return rows


def cell_predictions(result: ArenaResult, judge: str, dataset: str) -> list[dict[str, Any]]:
    """One cell's predictions (gold and judged label per example)."""
    rows = [p for p in result.predictions if p["judge"] == judge and p["dataset"] == dataset]
    if not rows:
        raise ConfigError(f"lab: no predictions of {judge} on {dataset}; judges: "
                          f"{', '.join(sorted({p['judge'] for p in result.predictions}))}")
    return rows


def run_folder(result: ArenaResult, method: str, dataset: str) -> Path:
    """The run folder of ``method`` on ``dataset`` in ``result`` (the judged run, not a score judge's held-out one)."""

    for folder in sorted((result.runs / dataset).glob(f"{method}-*")):
        config = (check_run_folder(folder) or {}).get("run", {})
        if config.get("method") == method and not config.get("held_out_of"):
            return folder
    raise ConfigError(f"lab: no run of {method} on {dataset} under {result.runs}")


@dataclass
class Turn:
    speaker: str
    text: str
    score: float | None


@dataclass
class Transcript:
    """One example's debate as a judge ran it: the turns, the score and label it ended with, and the gold label."""

    example: str
    summary: str
    gold: int
    score: float | None
    label: int | None
    label_source: str
    turns: list[Turn]


def debate_transcript(result: ArenaResult, method: str, dataset: str, *, wrong: bool = True) -> Transcript:
    """The first example (in the run's order) that ``method`` judged wrongly (``wrong``; else the first example):
    its debate turns as recorded in the run's results (``details['aspects'][aspect]['turns']``)."""
    folder = run_folder(result, method, dataset)
    preds = {p["example"]: p for p in cell_predictions(result, method, dataset)}

    for r in read_results(folder):
        pred = preds[r["example"]["id"]]
        if wrong and pred["label"] == pred["gold"]:
            continue
        aspects = r["judgement"]["details"].get("aspects") or {}
        turns = [Turn(t["speaker"], t["text"], t.get("score")) for a in aspects.values() for t in a.get("turns", [])]
        return Transcript(example=pred["example"], summary=r["example"]["summary"], gold=pred["gold"],
                          score=pred["score"], label=pred["label"], label_source=pred["source"], turns=turns)
    raise ConfigError(f"lab: {method} on {dataset} judged every example right: no wrong debate to read")


def prompt_difference(as_run: str, as_printed: str) -> dict[str, Any]:
    """Two prompt templates' texts and the words one has that the other lacks (``difflib`` over words)."""

    a, b = prompts.load(as_run).body, prompts.load(as_printed).body
    wa, wb = a.split(), b.split()
    only_run, only_printed = [], []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=wa, b=wb, autojunk=False).get_opcodes():
        if tag in ("replace", "delete"):
            only_run.append(" ".join(wa[i1:i2]))
        if tag in ("replace", "insert"):
            only_printed.append(" ".join(wb[j1:j2]))
    return {"as_run": a, "as_printed": b, "only_as_run": only_run, "only_as_printed": only_printed}


def requests_compared(first: ArenaResult, second: ArenaResult) -> list[dict[str, Any]]:
    """Per agent role (a call's tag after the example id), how many of ``second``'s requests ``first`` had
    already asked (same cache key: the cache answers them) and how many are new (the model answers them). Each
    result's own run folders are read (``folders``), not every folder under its ``runs``: a judge run again after an
    edit leaves its earlier folders there."""

    def keys(result: ArenaResult) -> dict[str, str]:
        out = {}
        for folder in sorted(result.runs.glob("*/*") if result.folders is None else result.folders):
            for c in read_calls(folder):
                if c.get("event") in ("chat", "options"):
                    out[c["key"]] = (c.get("tag") or "").split("/", 1)[-1].split("#")[0] or c["event"]
        return out

    before, after = keys(first), keys(second)
    rows: dict[str, dict[str, Any]] = {}
    for key, role in after.items():
        r = rows.setdefault(role, {"role": role, "requests": 0, "asked_before": 0, "new": 0})
        r["requests"] += 1
        r["asked_before" if key in before else "new"] += 1
    return sorted(rows.values(), key=lambda r: r["role"])


def pairs_with(result: ArenaResult, judge: str) -> list[dict[str, Any]]:
    """``judge`` against every other judge of each dataset (exercise 7's family: one test per rival): the exact
    McNemar test of the arena's paired table (an unreadable label counts as wrong), ``judge`` as ``judge_a``, the
    pair's own discordant share (``discordant_share``), and Holm's correction over these tests only (``p_holm``: the
    family is the rivals of ``judge`` on the dataset, not every pair of the arena)."""

    rows = []
    for dataset in result.datasets:
        mine = []
        for r in result.paired:
            if r["dataset"] == dataset and judge in (r["judge_a"], r["judge_b"]):
                flip = r["judge_b"] == judge
                mine.append({"dataset": dataset, "judge_a": judge, "judge_b": r["judge_a"] if flip else r["judge_b"],
                             "n": r["n"], "unreadable_a": r.get("unreadable_b" if flip else "unreadable_a"),
                             "unreadable_b": r.get("unreadable_a" if flip else "unreadable_b"),
                             "only_a_right": r["only_b_right"] if flip else r["only_a_right"],
                             "only_b_right": r["only_a_right"] if flip else r["only_b_right"], "p": r["p"]})
        for r, adjusted in zip(mine, holm([r["p"] for r in mine])):
            rows.append({**r, "discordant_share": discordant_share(r), "family": len(mine), "p_holm": adjusted,
                         "differ_at_0.05": adjusted < 0.05})
    if not rows:
        raise ConfigError(f"lab: no paired test of {judge}; judges: "
                          f"{', '.join(sorted({p['judge'] for p in result.predictions}))}")
    return rows


def discordant_share(pair: dict[str, Any]) -> float:
    """ψ of one pair of judges (a paired table's row): the share of its ``n`` examples on which one judge is right
    and the other wrong (McNemar's discordant examples), the ψ a sample size for that pair needs."""
    return (pair["only_a_right"] + pair["only_b_right"]) / pair["n"]


def accuracy_difference(pair: dict[str, Any]) -> float:
    """A pair's difference of accuracy (judge A's minus judge B's share of the ``n`` examples judged right, an
    unreadable label wrong): what the McNemar test is about, (b - c) / n."""
    return (pair["only_a_right"] - pair["only_b_right"]) / pair["n"]


def fewest_discordant(family: int, alpha: float = 0.05) -> int:
    """The fewest discordant examples a pair needs, all going one way, for its exact McNemar p (2 / 2^d) to stay
    below ``alpha`` after Holm's correction as the smallest p of ``family`` tests (p x family < alpha): however the
    judges differ, a pair with fewer cannot be told apart."""
    d = 1
    while 2 * 0.5 ** d * family >= alpha:
        d += 1
    return d


def constant_judge_alpha(n_examples: int, disagree: int) -> float:
    """Krippendorff's alpha of a judge that says one label to all ``n_examples``, against gold labels of which
    ``disagree`` are the other label: 1 - D_o / D_e, the observed disagreement D_o = disagree / n over the
    disagreement D_e = 2 disagree (2n - disagree) / (2n (2n - 1)) expected of two labels drawn from the 2n labels
    pooled (the gold's and the judge's together: the judge's one label makes the pool lopsided, so chance agreement
    is high): 1 - (2n - 1) / (2n - disagree), below 0 whenever disagree > 1, although its BAcc is exactly 50 (0.5 as a share)."""
    n = n_examples
    return 1 - (2 * n - 1) / (2 * n - disagree)


def reading_of(cell: arena.Cell) -> str:
    """What a judge's settings in brackets make of its method, as words after its description: the reading of an
    as-printed pair it is (``MethodSpec.as_printed``: "A vs B", A the authors' code, B the paper's text), else its
    settings; "" for the method as registered where it has no such pair."""
    s = dict(cell.settings)
    for pair in get_method(cell.method).as_printed:
        if pair.as_printed and s == {**dict(pair.as_run), **dict(pair.as_printed)}:
            return f"; as printed (the second of: {pair.what})"
        if s == dict(pair.as_run):
            return f"; as run (the first of: {pair.what})"
    return "; with " + ", ".join(f"{k}={v}" for k, v in sorted(s.items())) if s else ""


def arena_judges(result: ArenaResult) -> list[dict[str, Any]]:
    """The judges of notebook 50's arena (its parameters cell: the paper setting) and of ``result`` (the profile's
    arena, replayed), one row each: its paper, what it is, and whether ``result`` holds it (``in_this_arena``)."""

    full = notebook_defaults(notebook_path(ARENA_NOTEBOOK))
    datasets = list(full["datasets"])[:1]
    cells = arena.parse_cells(list(full["methods"]), datasets)
    cells += [c for c in arena.fidelity_cells(datasets, list(full["as_printed"])) if c not in cells]
    here = {r["judge"] for r in result.table}
    rows = [{"judge": c.judge, "paper": get_method(c.method).paper,
             "what": get_method(c.method).description + reading_of(c), "in_this_arena": c.judge in here} for c in cells]
    rows += [{"judge": j, "paper": "", "what": "", "in_this_arena": True} for j in sorted(here - {c.judge for c in cells})]
    return rows


def model_time(**runs: ArenaResult) -> list[dict[str, Any]]:
    """One row per run of a judge this notebook made (by the name given): the requests it asked its engine and the
    seconds they took, as measured where it ran (``run_own``)."""
    return [{"run": name, "judge": r.table[0]["judge"] if r.table else "", "examples": r.n,
             "requests": r.requests, "wall_s": None if r.wall_s is None else round(r.wall_s, 1)}
            for name, r in runs.items()]


def mcnemar_sample_size(difference: float, discordant: float, *, alpha: float = 0.05, power: float = 0.8) -> int:
    """Examples needed for a two-sided McNemar test at ``alpha`` to detect, with probability ``power``, two judges
    whose accuracies differ by ``difference`` when they disagree on a ``discordant`` share of examples (Connor 1987:
    n = (z_{1-alpha/2} sqrt(psi) + z_power sqrt(psi - delta^2))^2 / delta^2)."""

    if not 0 < difference <= discordant <= 1:
        raise ConfigError(f"lab: the accuracy difference ({difference}) must be above 0 and at most the discordant "
                          f"share ({discordant}): two judges cannot differ on more examples than they disagree on")
    z = NormalDist().inv_cdf
    num = z(1 - alpha / 2) * math.sqrt(discordant) + z(power) * math.sqrt(discordant - difference ** 2)
    return math.ceil(num ** 2 / difference ** 2)


def simulated_power(n: int, difference: float, discordant: float, *, alpha: float = 0.05, trials: int = 400,
                    seed: int = 0) -> float:
    """The share of ``trials`` simulated pairs of judges (``n`` examples; each example: only A right with
    probability (psi + delta) / 2, only B right with (psi - delta) / 2, else both alike) whose exact McNemar
    p-value is below ``alpha``: a check of ``mcnemar_sample_size`` with the test the arena runs."""


    rng = np.random.default_rng(seed)
    probs = [(discordant + difference) / 2, (discordant - difference) / 2, 1 - discordant]
    hits = 0
    for _ in range(trials):
        kind = rng.choice(3, size=n, p=probs)
        a = {str(i): bool(k == 0) for i, k in enumerate(kind)}
        b = {str(i): bool(k == 1) for i, k in enumerate(kind)}
        hits += mcnemar_exact(a, b)["p"] < alpha
    return hits / trials
