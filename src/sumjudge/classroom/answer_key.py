"""The lab's answers (``docs/lab-answers.md``, which a teacher may withhold), computed by code: the papers' judges
from the replay of notebook 50's recorded answers (``lab.replay_arena``), the lab's own judge from a replay of the
lab notebook itself against its recorded answers (its tables regenerated, as ``make check-page`` does). A test
keeps the committed file equal to what this module writes.

``python -m sumjudge.classroom.answer_key`` prints it; ``--write`` rewrites ``docs/lab-answers.md``.
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path
from typing import Any

import numpy as np

from sumjudge.arena import pareto_front
from sumjudge.classroom import lab
from sumjudge.paths import project_root
from sumjudge.report import markdown_rows
from sumjudge.reproduce.check import replay_notebooks
from sumjudge.run.metrics import SAID_COLUMN
from sumjudge.run.notebooks import notebook_defaults

LAB_NOTEBOOK = "02_lab_llm_judges"
OWN_JUDGE = "my-judge"  # the name the lab's example judge has in its tables
ANSWERS_DOC = Path("docs") / "lab-answers.md"


def replay_lab(profile: str = "smoke", page: Path | None = None) -> dict[str, list[dict[str, str]]]:
    """The lab notebook executed against its recorded answers (no model): its saved tables, by name."""

    page = page or lab.results_page(profile)
    nb = lab.notebook_path(LAB_NOTEBOOK)
    out = project_root() / "build" / "lab-answers" / "figures"
    status = replay_notebooks([nb], profile, page, out, jobs=1)[LAB_NOTEBOOK]
    if status != "ok":
        raise RuntimeError(f"the lab's replay stopped: {status} (its page is stale: make check-page says why)")
    tables = {}
    for f in sorted((out / LAB_NOTEBOOK).glob("*.csv")):
        with f.open(newline="", encoding="utf-8") as fh:
            tables[f.stem] = list(csv.DictReader(fh))
    return tables


def _points(v: Any, scale: float = 1.0) -> str:
    """A number in percent to a tenth: the arena's BAcc as it is, a share (0-1) with ``scale`` 100 (``_pct``)."""
    return "-" if v in (None, "") else f"{scale * float(v):.1f}"


def _pct(v: Any) -> str:
    """A share (0-1) in percent."""
    return _points(v, 100)


def _interval(row: dict[str, Any]) -> str:
    lo, hi = row.get("bacc_ci_low"), row.get("bacc_ci_high")
    return "no interval" if lo in (None, "") else f"[{_points(lo)}, {_points(hi)}]"


def chance_words(row: dict[str, Any]) -> str:
    """Whether the judge of an arena row is shown to be better than chance on its examples (its BAcc interval above
    50%), said in words; '' for a row without an interval."""
    lo, hi = row.get("bacc_ci_low"), row.get("bacc_ci_high")
    if lo in (None, "") or hi in (None, ""):
        return ""
    where = f"On {row.get('dataset')} (n = {row.get('n')})"
    if float(lo) > 50:
        return f"{where}, its interval lies above 50: the example judge is shown better than chance on these examples."
    return (f"{where}, its interval {_interval(row)} contains 50 or lies under it: the example judge as given is not "
            "shown better than a coin on these examples. That is the starting point: read its skeptic's lists for a "
            "few examples (what did it list, and was it in the document?) before changing a prompt.")


def by_hand_bootstrap(gold: list[int], label: list[int], resamples: int = 1000, seed: int = 0
                      ) -> tuple[float, float, float]:
    """BAcc and a 95% percentile interval, written out as exercise 3 asks: the recall of each gold class, their mean;
    resampled with replacement within each gold class."""

    g, y = np.asarray(gold), np.asarray(label)

    def bacc(gs, ys):
        return (np.mean(ys[gs == 1] == 1) + np.mean(ys[gs == 0] == 0)) / 2

    rng = np.random.default_rng(seed)
    pos, neg = np.flatnonzero(g == 1), np.flatnonzero(g == 0)
    values = []
    for _ in range(resamples):
        idx = np.concatenate([rng.choice(pos, len(pos)), rng.choice(neg, len(neg))])
        values.append(bacc(g[idx], y[idx]))
    return float(bacc(g, y)), float(np.percentile(values, 2.5)), float(np.percentile(values, 97.5))


def constant_alpha(rivals: lab.ArenaResult, rows: list[dict[str, Any]], one: list[str]) -> list[str]:
    """Why the one-label judges' Krippendorff alpha is below 0 at a BAcc of exactly 50, from their own labels."""
    out = []
    for judge in one:
        cell = [p for p in lab.cell_predictions(rivals, judge, rows[0]["dataset"]) if p["label"] is not None]
        said = cell[0]["label"]
        disagree = sum(p["gold"] != said for p in cell)
        alpha = next(r["k_alpha"] for r in rows if r["judge"] == judge)
        out.append(f"- {judge}: says {said} to all {len(cell)}, {disagree} of them gold {1 - said}: alpha "
                   f"{alpha:.3g} (the table) = 1 − (2n − 1) / (2n − d) = "
                   f"{lab.constant_judge_alpha(len(cell), disagree):.3g} with n = {len(cell)}, d = {disagree}.")
    if not out:
        return []
    return ["Their Krippendorff alpha is below 0 although their BAcc is exactly chance: alpha compares the "
            "disagreement observed (the share of examples where judge and gold differ) with the disagreement "
            "expected of two labels drawn at random from the gold's and the judge's labels pooled. A one-label "
            "judge makes that pool lopsided (its n labels all one value), so the disagreement expected by chance is "
            "low, and the judge, wrong on every example of the other gold class, disagrees more than that: alpha "
            "< 0 here means \"less agreement than the pooled labels predict\", not \"worse than a coin\".", "",
            *out]


def is_it_different(paired: list[dict[str, str]]) -> list[str]:
    """Exercise 7's answer from the student's judge's paired tests (``lab.pairs_with``: Holm over its own family)."""
    family = int(paired[0]["family"])
    n = int(paired[0]["n"])
    need = lab.fewest_discordant(family)
    differ = [r for r in paired if r["differ_at_0.05"] == "True"]
    lowest = min(paired, key=lambda r: float(r["p"]))

    def pair(r):
        return (f"{r['judge_b']} (only the example judge right on {r['only_a_right']}, only {r['judge_b']} on "
                f"{r['only_b_right']}: p = {float(r['p']):.3g}, {float(r['p_holm']):.3g} after Holm)")

    out = [f"The family is the example judge against each of the {family} paper judges on the dataset "
           f"({family} tests; Holm multiplies the smallest p by {family}). With n = {n}, a pair survives Holm only "
           f"if its discordant examples (one judge right, the other wrong) go one way by a wide margin: at the "
           f"least {need}, all one way (p = 2 / 2^{need} = {2 * 0.5 ** need:.3g}, below 0.05 / {family})."]
    if differ:
        out += ["", f"{len(differ)} of {family} pairs differ after Holm's correction: "
                + "; ".join(pair(r) for r in differ) + "."]
    elif float(lowest["p"]) < 1:
        out += ["", f"None of the {family} pairs differs after Holm's correction at n = {n}. The closest is "
                + pair(lowest) + (": the raw p alone, as if it were the only comparison, would be called "
                                  "significant; the family of tests asks more of each one."
                                  if float(lowest["p"]) < 0.05 else ".")]
    else:
        widest = max(abs(int(r["only_a_right"]) - int(r["only_b_right"])) for r in paired)
        out += ["", f"None of the {family} pairs differs after Holm's correction at n = {n}, and none has a raw p "
                f"below 1: wherever the example judge and a paper's judge disagree, each is right about as often as "
                f"the other (the discordant counts differ by {widest} at most), so no correction is needed to see "
                "that nothing is told apart. Every judge here is near chance on these examples (exercise 1); "
                "exercise 10 says how many examples a real difference would need."]
    if differ and float(lowest["p"]) < 0.05:
        out += ["", f"The smallest raw p is against {lowest['judge_b']}: {float(lowest['p']):.3g} if it were the "
                "only comparison made."]
    return out


def how_many(rivals: lab.ArenaResult, paired: list[dict[str, str]], rival: str) -> list[str]:
    """Exercise 10's answer: Connor's n for 5 points of accuracy at the ψ of the example judge and ``rival``."""
    row = next((r for r in paired if r["judge_b"] == rival), None)
    if row is None:
        return [f"No paired test of the example judge and {rival}."]
    b, c, n = int(row["only_a_right"]), int(row["only_b_right"]), int(row["n"])
    psi, delta = (b + c) / n, 0.05
    gold = [p["gold"] for p in rivals.predictions if p["judge"] == rival]
    head = (f"The 5 points are of accuracy (the share of the n examples a judge labels right, an unreadable label "
            f"wrong), the quantity McNemar's test and Connor's formula are about, not BAcc; with "
            f"{gold.count(1)} gold 1 and {gold.count(0)} gold 0 here, the two coincide for a judge without "
            f"unreadable labels. The pair is the example judge and {rival}: ψ = (b + c) / n = ({b} + {c}) / {n} "
            f"= {psi:.2f}, their own share of discordant examples (an average over all pairs would mix in pairs of "
            "one-label judges, which disagree on nothing or on everything).")
    if psi < delta:
        return [head + f" Two judges cannot differ by {delta:.0%} of the examples when they disagree on fewer."]
    need = lab.mcnemar_sample_size(delta, psi)
    return [head + f" Connor's formula with δ = {delta}, α = 0.05 and 80% power: n = (1.96 √ψ + 0.84 √(ψ − δ²))² / δ² "
            f"= {need} examples; the exact McNemar test on simulated judges at that n detects the difference "
            f"{lab.simulated_power(need, delta, psi):.0%} of the time (the exact test is conservative), and at "
            f"n = {rivals.n} {lab.simulated_power(rivals.n, delta, psi):.0%}. Every table of the lab rests on "
            f"{rivals.n}."]


def lab_parameters() -> dict[str, Any]:
    """The lab notebook's parameters (which judges and prompts its exercises read)."""

    return notebook_defaults(lab.notebook_path(LAB_NOTEBOOK))


def render(rivals: lab.ArenaResult, tables: dict[str, list[dict[str, str]]]) -> str:
    """The answers, from the replayed arena (``rivals``) and the lab's replayed tables."""

    params = lab_parameters()
    bacc_judge = params["bacc_judge"]

    ds = rivals.datasets[0]
    rows = [r for r in rivals.table if r["dataset"] == ds]
    out = ["# Lab answers (notebook 02)", "",
           "For the teacher: the answers to [notebook 02](../notebooks/02_lab_llm_judges.ipynb)'s exercises, computed "
           "by `python -m sumjudge.classroom.answer_key --write` from the committed results page (notebook 50's recorded "
           "answers, replayed, and the lab's own recorded run of its example judge, replayed); a test keeps this "
           "file equal to what that command writes. Hand the handout ([lab.md](lab.md)) out, not this file.", "",
           f"Every number rests on the replayed arena: {rivals.model}, {ds}, n = {rivals.n} examples per judge, "
           f"seed {rivals.seed}.", ""]
    judges = lab.arena_judges(rivals)
    held = [r["judge"] for r in judges if r["in_this_arena"]]
    lacks = [f"{r['judge']} ({r['paper']})" for r in judges if not r["in_this_arena"]]
    out += [f"The replayed arena holds {len(held)} judges: {', '.join(held)}. Notebook 50 in the paper setting "
            f"also runs {len(lacks)} that this profile leaves out: {', '.join(lacks)} (why: the notebook's Part A "
            "and the handout).", ""]

    # 1
    chance = [r["judge"] for r in rows if r["bacc_ci_low"] is None or r["bacc_ci_low"] <= 50 <= r["bacc_ci_high"]]
    ivs = [(r["bacc_ci_low"], r["bacc_ci_high"]) for r in rows if r["bacc_ci_low"] is not None]
    disjoint = sum(1 for i, a in enumerate(ivs) for b in ivs[i + 1:] if a[1] < b[0] or b[1] < a[0])
    out += ["## Exercise 1 · What the table can tell", "",
            f"{len(chance)} of {len(rows)} judges have an interval containing 50 (or none at all): "
            f"{', '.join(chance)}. Of the {len(ivs) * (len(ivs) - 1) // 2} pairs of intervals, {disjoint} are disjoint: "
            f"{'no two judges are told apart by their intervals alone' if not disjoint else 'only those pairs are'}. "
            f"With n = {rivals.n}, an interval spans roughly ±{100 / rivals.n ** 0.5:.0f} points.", "",
            *markdown_rows([{"judge": r["judge"], "BAcc": _points(r["bacc"]), "95% interval": _interval(r)} for r in rows],
                       ["judge", "BAcc", "95% interval"]), ""]

    # 2
    counts = [c for c in lab.label_counts(rivals.predictions) if c["dataset"] == ds]
    one = [c["judge"] for c in counts if c["one_label_to_all"]]
    out += ["## Exercise 2 · The judge that says one thing", "",
            f"Judges that gave one label to every readable example: {', '.join(one) or 'none'}. Their BAcc is 50 by "
            "construction: those rows say nothing about what the judge read.", "",
            *markdown_rows(counts, ["judge", "said_1", "said_0", "unreadable", "one_label_to_all"]), "",
            *constant_alpha(rivals, rows, one), ""]

    # 3
    cell = [p for p in lab.cell_predictions(rivals, bacc_judge, ds) if p["label"] is not None]
    gold, label = [p["gold"] for p in cell], [p["label"] for p in cell]
    rec1 = sum(1 for g, y in zip(gold, label) if g == y == 1) / max(1, gold.count(1))
    rec0 = sum(1 for g, y in zip(gold, label) if g == y == 0) / max(1, gold.count(0))
    b, lo, hi = by_hand_bootstrap(gold, label)
    row = next(r for r in rows if r["judge"] == bacc_judge)
    out += ["## Exercise 3 · A balanced accuracy and its interval by hand", "",
            f"{bacc_judge}: {len(cell)} readable labels ({gold.count(1)} gold 1, {gold.count(0)} gold 0). Recall "
            f"on gold 1 = {_pct(rec1)}%, on gold 0 = {_pct(rec0)}%, BAcc = their mean = {_pct((rec1 + rec0) / 2)} "
            f"(the table: {_points(row['bacc'])}). A stratified bootstrap of 1,000 resamples with "
            f"`np.random.default_rng(0)` gives [{_pct(lo)}, {_pct(hi)}] (BAcc {_pct(b)}); the table's "
            f"`metrics.readable_bacc_ci` gives {_interval(row)}. They differ a little because the table draws each "
            "class's count of right labels (a binomial draw, the same distribution as resampling the examples) from "
            "another random stream: a bootstrap interval is itself an estimate.", ""]

    # 4
    t = lab.debate_transcript(rivals, params["debate_judge"], ds)
    said = "; ".join(f"the {x.speaker} " + (f"scored {x.score:g}" if x.score is not None else "raised no issue"
                                             if "NO_ISSUE" in x.text else "argued") for x in t.turns)
    out += ["## Exercise 4 · Read one debate", "",
            f"Example {t.example} (gold {t.gold}, unfaithful when 0): the debate ran {len(t.turns)} turns ({said}); "
            f"its final score {t.score:g} became label {t.label} by `{t.label_source}` (the threshold chosen on "
            "held-out examples). What to look for: whether the Scorer's rationale quotes the document or restates "
            "the summary, whether the Critic challenged anything (a devil's advocate that answers NO_ISSUES adds "
            "nothing), and that a score near the threshold turns a small disagreement into a wrong label.", ""]

    # 5
    pair = lab.prompt_difference(*params["prompt_pair"])
    fid = rivals.fidelity[0] if rivals.fidelity else None
    by_judge = {c["judge"]: c for c in counts}
    out += ["## Exercise 5 · A prompt as run and as printed", "",
            f"Words only in the prompt as run: {' / '.join(repr(w) for w in pair['only_as_run']) or 'none'}; only "
            f"as printed: {' / '.join(repr(w) for w in pair['only_as_printed']) or 'none'}."]
    if fid:
        a, p = by_judge.get(fid["as_run"]), by_judge.get(fid["as_printed"])
        out += ["", f"On these {fid['n']} examples: BAcc {_points(fid['bacc_as_run'])} as run against "
                f"{_points(fid['bacc_as_printed'])} as printed; only as run right on {fid['only_as_run_right']}, only as "
                f"printed on {fid['only_as_printed_right']}, p = {fid['p']:.3g} (Holm {fid['p_holm']:.3g})."
                + (f" Labels: as run {a['said_1']} × 1 and {a['said_0']} × 0, as printed {p['said_1']} × 1 and "
                   f"{p['said_0']} × 0: the same BAcc can come from different judges." if a and p else "")]
    out += [""]

    # 6, 7
    mine = [r for r in tables.get("arena_with_my_judge", []) if r["judge"] == OWN_JUDGE]
    paired = [r for r in tables.get("paired_tests", []) if r["judge_a"] == OWN_JUDGE]
    out += ["## Exercise 6 · Write a judge", "",
            "Any judge that runs is an answer. The notebook's own two-agent judge (a skeptic lists the summary's "
            "names, numbers, dates and places the document does not mention, or NONE; a summary with nothing "
            "listed is judged faithful, the others go to a judge that reads the list and states the label), as the "
            "lab's recorded run answered it:", "",
            *markdown_rows([{**r, "bacc": _points(r["bacc"]), "interval": _interval(r)} for r in mine],
                       ["dataset", "judge", "model", "n", "bacc", "interval", SAID_COLUMN, "roc_auc", "threshold",
                        "unreadable_share", "calls_per_example"]), "",
            *[line for r in mine if (said := chance_words(r)) for line in (said, "")],
            "## Exercise 7 · Is it different?", ""]
    if paired:
        out += [*is_it_different(paired), "",
                *markdown_rows(paired, ["judge_a", "judge_b", "n", "only_a_right", "only_b_right", "p", "p_holm",
                                    "differ_at_0.05"]), ""]

    # 8
    rerun = tables.get("cache_after_one_word", [])
    out += ["## Exercise 8 · The cache", "",
            "Only the requests whose rendered prompt changed are new: the verdict prompt changed, so every verdict "
            "request (one per example the skeptic listed something for) is new, and every skeptic request (same "
            "prompt, same key) is answered by the cache. The lab's recorded run:", "",
            *markdown_rows(rerun, ["role", "requests", "asked_before", "new"]), "",
            "How long the model calls of exercises 6 and 8 took is the `model time` table of the lab's results page "
            "([02_lab_llm_judges.md](../figures/results-smoke/02_lab_llm_judges.md), measured by the recording on "
            "the machine its banner names; a replay measures nothing).", ""]

    # 9
    table = tables.get("arena_with_my_judge", [])
    pts = [(float(r["prompt_tokens_per_example"]) + float(r["completion_tokens_per_example"]), float(r["bacc"]))
           for r in table if r["bacc"] not in ("", None)]
    named = [r["judge"] for r in table if r["bacc"] not in ("", None)]
    if pts:
        front = [named[i] for i in pareto_front(pts)]
        said_one = {r["judge"] for r in table if r["bacc"] not in ("", None)
                    and min(int(x.split(" × ")[0]) for x in r[SAID_COLUMN].split(", ")) == 0}
        dear = max(range(len(pts)), key=lambda i: pts[i][0])
        best = max(range(len(pts)), key=lambda i: pts[i][1])
        on_line_one = [j for j in front if j in said_one]
        out += ["## Exercise 9 · Cost against accuracy", "",
                f"On the dashed line (no judge cheaper and as accurate): {', '.join(front)}"
                + (f"; of them {', '.join(on_line_one)} said one label to everything (exercise 2): "
                   "on the line for being cheap, at a BAcc of 50 by construction, so the line's cheap end says "
                   "nothing about what a judge can read" if on_line_one else "")
                + f". The most expensive judge is {named[dear]} ({pts[dear][0]:,.0f} tokens an example, BAcc "
                f"{_points(pts[dear][1])}); the most accurate is {named[best]} (BAcc {_points(pts[best][1])}). The figure "
                "shows no paired test: whether a gap between two points is real is exercise 7's question.", ""]

    # 10
    out += ["## Exercise 10 · How many examples?", "", *how_many(rivals, paired, params["power_rival"]), ""]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m sumjudge.classroom.answer_key", description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", default="smoke")
    ap.add_argument("--write", action="store_true", help=f"rewrite {ANSWERS_DOC}")
    a = ap.parse_args(argv)

    text = render(lab.replay_arena(a.profile), replay_lab(a.profile))
    if a.write:
        (project_root() / ANSWERS_DOC).write_text(text, encoding="utf-8")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
