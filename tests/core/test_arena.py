"""The judge arena on the tiny model: every judge of a dataset sees the same examples, each cell has BAcc with a
CI and its cost, every pair of judges gets a paired test, and a rerun costs no call."""

import csv
import json
import sys

import pytest

from sumjudge.arena import Cell, paired_rows, parse_cells
from sumjudge.cli import main as cli


def read(path):
    with path.open(encoding="utf-8") as f:
        return list(csv.DictReader(f))


@pytest.mark.slow
def test_the_arena_command_writes_its_three_tables_and_resumes(tiny_model_dir, tmp_path, capsys):
    args = ["arena", "--methods", "zero-shot:max_new_tokens=8", "cot:max_new_tokens=8",
            "g-eval-consistency:min_coverage=0", "--as-printed",
            "--datasets", "tofueval-meetingbank", "--level", "sentence", "--limit", "3", "--model", tiny_model_dir,
            "--cache", tmp_path / "c.sqlite", "--out", tmp_path / "arena"]
    assert cli.main([str(a) for a in args]) == 0
    arena = read(tmp_path / "arena" / "arena.csv")
    preds = read(tmp_path / "arena" / "predictions.csv")
    paired = read(tmp_path / "arena" / "paired.csv")
    assert [r["judge"] for r in arena] == ["zero-shot[max_new_tokens=8]", "cot[max_new_tokens=8]",
                                           "g-eval-consistency[min_coverage=0]",
                                           "zero-shot[max_new_tokens=8,prompts=printed]",
                                           "cot[max_new_tokens=8,prompts=printed]"]
    assert all(r["n_examples"] == "3" and int(r["n"]) <= 3 and float(r["prompt_tokens_per_example"]) > 0
               for r in arena)  # n: the readable labels BAcc rests on, of the examples judged
    by_judge = {}
    for p in preds:
        by_judge.setdefault(p["judge"], set()).add(p["example"])
    assert len(by_judge) == 5 and len({frozenset(v) for v in by_judge.values()}) == 1  # the same examples
    assert len(paired) == 10 and all(0 <= float(r["p_holm"]) <= 1 and float(r["p"]) <= float(r["p_holm"])
                                    for r in paired)
    geval = arena[2]  # a score judge: thresholded on 3 held-out examples no cell judged, ROC-AUC beside BAcc
    assert geval["held_out_n"] == "3" and geval["roc_auc"] != "" and geval["threshold_from"].startswith("held out")
    (held,) = [f.parent for f in (tmp_path / "arena").glob("*/*/config.json")
               if json.loads(f.read_text())["run"].get("held_out_of") == 3]
    held_ids = {json.loads(x)["example"]["id"] for x in (held / "results.jsonl").read_text().splitlines()}
    assert len(held_ids) == 3 and not held_ids & by_judge["cot[max_new_tokens=8]"]
    fid = read(tmp_path / "arena" / "fidelity.csv")
    assert [(f["as_run"], f["as_printed"]) for f in fid] == [
        ("zero-shot[max_new_tokens=8]", "zero-shot[max_new_tokens=8,prompts=printed]"),
        ("cot[max_new_tokens=8]", "cot[max_new_tokens=8,prompts=printed]")]
    capsys.readouterr()
    assert cli.main([str(a) for a in args]) == 0  # resumed: every cell from the cache
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (summary["cells"], summary["fidelity_pairs"]) == (5, 2)
    metrics = [json.loads(p.read_text()) for p in (tmp_path / "arena").glob("*/*/metrics.json")]
    assert len(metrics) == 6 and all(m["engine"]["backend_calls"] == 0 for m in metrics)

def test_method_settings_and_unknown_kinds():
    cells = parse_cells(["zero-shot", "madisse:sessions=3;rounds=2"], ["a", "b"])
    assert [(c.judge, c.dataset) for c in cells] == [("zero-shot", "a"), ("zero-shot", "b"),
                                                     ("madisse[sessions=3,rounds=2]", "a"),
                                                     ("madisse[sessions=3,rounds=2]", "b")]
    with pytest.raises(Exception, match="expected key=value"):
        parse_cells(["zero-shot:temperature"], ["a"])


def test_paired_rows_compare_judges_on_their_shared_examples_only():
    gold = {"e1": 1, "e2": 0, "e3": 1}
    preds = [{"dataset": "d", "judge": j, "example": e, "gold": g, "label": lab}
             for j, labels in (("A", {"e1": 1, "e2": 0, "e3": 1}), ("B", {"e1": 0, "e2": 1, "e3": None}))
             for (e, g), lab in zip(gold.items(), labels.values())]
    (row,) = paired_rows(preds)
    assert (row["only_a_right"], row["only_b_right"], row["n"]) == (3, 0, 3)  # B's unreadable label is wrong
    assert (row["unreadable_a"], row["unreadable_b"]) == (0, 1)  # and the table says how many it counted so
    assert row["p"] == pytest.approx(2 / 8) and row["p_holm"] == row["p"]
    with pytest.raises(ValueError, match="same examples"):
        paired_rows(preds[:-1])
    assert Cell("m", "d").judge == "m"


def test_ranking_and_pareto_front():
    from sumjudge.arena import pareto_front, ranking

    # (cost, accuracy): 1 beats 3 (cheaper, more accurate); 0, 1, 2 are each best at their cost
    assert pareto_front([(10, 0.6), (20, 0.7), (100, 0.9), (50, 0.65)]) == [0, 1, 2]
    assert pareto_front([(5, 0.5), (5, 0.5)]) == [0, 1]  # ties dominate neither
    row = {"prompt_tokens_per_example": 90.0, "completion_tokens_per_example": 10.0, "n": 4}
    table = [{**row, "judge": "a", "dataset": "x", "bacc": 0.6}, {**row, "judge": "a", "dataset": "y", "bacc": None},
             {**row, "judge": "b", "dataset": "x", "bacc": 0.8}, {**row, "judge": "b", "dataset": "y", "bacc": 0.7}]
    got = ranking(table)
    assert [(r["judge"], round(r["mean_bacc"], 3), r["datasets"], r["of_datasets"]) for r in got] == \
        [("b", 0.75, 2, 2), ("a", 0.6, 1, 2)]
    assert got[0]["tokens_per_example"] == 100.0 and got[0]["n"] == 8
    assert (got[1]["n"], got[1]["n_examples"]) == (4, 8)  # a's mean rests on x alone (y has no BAcc)
    assert got[0]["mean_bacc_ci_low"] is None  # the datasets carry no interval: the mean has none
    ci = {"x": (0.6, 0.99), "y": (0.5, 0.89)}  # each 0.39 wide: standard error 0.0995
    got = ranking([{**r, "bacc_ci_low": ci[r["dataset"]][0], "bacc_ci_high": ci[r["dataset"]][1]} for r in table])
    assert (got[0]["mean_bacc_ci_low"], got[0]["mean_bacc_ci_high"]) == pytest.approx((0.75 - 0.1379, 0.75 + 0.1379),
                                                                                       abs=1e-3)
    assert (got[1]["mean_bacc_ci_low"], got[1]["mean_bacc_ci_high"]) == (0.6, 0.99)  # one dataset: its own


def test_a_score_judge_is_thresholded_on_held_out_examples_none_of_which_any_cell_judges(tmp_path):
    from sumjudge.arena import calibrate, run_configs
    from sumjudge.data import registry

    cells = [Cell("zero-shot", "tofueval-meetingbank"), Cell("g-eval-consistency", "tofueval-meetingbank")]
    jobs = run_configs(cells, tmp_path, limit=6, seed=3, backend="scripted", model="m", base_url=None, held_out=8)
    assert [(rc.method, rc.limit, rc.held_out_of) for rc, _ in jobs] == [
        ("zero-shot", 6, None), ("g-eval-consistency", 6, None), ("g-eval-consistency", 8, 6)]
    assert len({folder for _, folder in jobs}) == 3 and "held_out_of" not in jobs[0][0].to_json()
    judged = {e.id for e in registry.load("tofueval-meetingbank", limit=6, seed=3)}
    held = registry.load("tofueval-meetingbank", limit=8, seed=3, outside=6)
    assert len(held) == 8 and not judged & {e.id for e in held} and {e.label for e in held} == {0, 1}
    with pytest.raises(Exception, match="give --limit"):
        run_configs(cells, tmp_path, limit=None, seed=3, backend="scripted", model="m", base_url=None)

    def p(ex, gold, score):
        return {"dataset": "d", "judge": "g", "example": ex, "gold": gold, "label": None, "score": score,
                "source": "parsed" if score is not None else "unparsed"}

    held_preds = [p("h1", 1, 4.6), p("h2", 1, 4.1), p("h3", 0, 3.2), p("h4", 0, 4.1), p("h5", 0, None)]
    judged_preds = [p("e1", 1, 4.2), p("e2", 0, 3.9), p("e3", 1, None)]
    info = calibrate(judged_preds, held_preds)
    # held out: t=3.2 -> 0.5, t=4.1 -> TPR 1, TNR 1/2 = 0.75, t=4.6 -> TPR 1/2, TNR 1 = 0.75: the lowest, 4.1
    assert (info["threshold"], info["held_out_bacc"], info["held_out_n"]) == (4.1, 0.75, 5)
    assert [x["label"] for x in judged_preds] == [1, 0, None]
    one_class = [p("e1", 1, 4.2)]
    assert calibrate(one_class, [p("h1", 1, 4.0)])["threshold"] is None and one_class[0]["label"] is None


def test_cell_rows_of_a_score_judge_and_the_as_printed_pairs():
    from sumjudge.arena import cell_row, fidelity_cells, fidelity_rows, paired_matrix, printed_twin

    cost = {"calls_per_example": 1.0, "option_calls_per_example": 0.0, "prompt_tokens_per_example": 10.0,
            "completion_tokens_per_example": 2.0}
    preds = [{"dataset": "d", "judge": "g", "example": f"e{i}", "gold": g, "label": lab, "score": s}
             for i, (g, lab, s) in enumerate([(1, 1, 5.0), (1, 0, 3.0), (0, 0, 2.0), (0, 1, 4.0)])]
    row = cell_row(Cell("g-eval-consistency", "d"), {"bacc": 0.1, "k_alpha": 0.1, "cost": cost}, preds,
                   calibration={"threshold": 4.0, "held_out_n": 9, "threshold_from": "held out"})
    # the thresholded labels (1,0,0,1) against gold (1,1,0,0): BAcc 50 (in percent), not the run's own 0.1
    assert row["bacc"] == 50 and row["roc_auc"] == 0.75 and (row["threshold"], row["held_out_n"]) == (4.0, 9)
    assert (row["labels said"], row["gold labels"]) == ("2 × 1, 2 × 0", "2 × 1, 2 × 0")  # gold: of the readable

    cells = fidelity_cells(["d"], ["madisse"])
    assert [c.judge for c in cells] == ["madisse", "madisse[prompts=printed]"]
    what, twin = printed_twin(Cell("g-eval-consistency", "d", (("mode", "samples"), ("protocol", "repository"),
                                                                 ("samples", "4"))))
    assert twin.judge == "g-eval-consistency[mode=samples,protocol=paper,samples=4]" and "G-Eval" in what
    assert printed_twin(Cell("g-eval-consistency", "d")) is None  # probabilities: neither protocol
    assert printed_twin(Cell("zero-shot", "d", (("prompts", "printed"),))) is None  # already as printed
    table = [{"dataset": "d", "judge": "madisse", "bacc": 0.7}, {"dataset": "d", "judge": "madisse[prompts=printed]",
                                                                  "bacc": 0.6}, {"dataset": "d", "judge": "cot", "bacc": 0.5}]
    paired = [{"dataset": "d", "judge_a": "madisse", "judge_b": "madisse[prompts=printed]", "n": 10,
               "only_a_right": 3, "only_b_right": 1, "p": 0.625, "p_holm": 1.0, "differ_at_0.05": False},
              {"dataset": "d", "judge_a": "cot", "judge_b": "madisse", "n": 10, "only_a_right": 0,
               "only_b_right": 2, "p": 0.5, "p_holm": 1.0, "differ_at_0.05": False}]
    (f,) = fidelity_rows(cells + [Cell("cot", "d")], table, paired)
    assert (f["as_run"], f["as_printed"], f["bacc_as_run"], f["bacc_as_printed"]) == (
        "madisse", "madisse[prompts=printed]", 0.7, 0.6)
    assert (f["only_as_run_right"], f["only_as_printed_right"], f["p"]) == (3, 1, 0.625)
    m = paired_matrix(paired, "d")
    assert list(m.index) == ["cot", "madisse", "madisse[prompts=printed]"]
    assert m.loc["madisse", "cot"] == m.loc["cot", "madisse"] == 1.0 and m.isna().loc["cot", "cot"]


def test_a_profile_gives_a_judge_only_the_policy_fields_its_config_has(monkeypatch):
    from dataclasses import dataclass

    from sumjudge.notebook import Session
    from sumjudge.run.methods import METHODS, MethodSpec, register

    @dataclass
    class Mine:
        temperature: float = 0.0
        truncate: str = "error"

    monkeypatch.setitem(METHODS, "mine", None)  # removed again after the test
    register(MethodSpec(name="mine", paper="mine", kind="faithfulness", config_cls=Mine, judge=None,
                        description="a judge of one's own"))
    s = Session("50_judge_arena", profile="smoke")
    assert s.method_settings("mine") == {"truncate": "truncate"}  # no max_new_tokens or fallback field: none given
    assert {"max_new_tokens", "truncate", "fallback"} <= set(s.method_settings("zero-shot"))


def test_a_cells_folder_is_named_by_its_whole_configuration_defaults_included(tmp_path, monkeypatch):
    # a setting a method gains (here: a new field with its default) names a new folder: an older run of the cell
    # is neither refused as "a different configuration" nor mixed with the new one
    import dataclasses

    from sumjudge.arena import run_configs
    from sumjudge.run.methods import METHODS

    cells = [Cell("zero-shot", "tofueval-meetingbank")]
    (_, before), = run_configs(cells, tmp_path, limit=4, seed=0, backend="scripted", model="m", base_url=None)
    spec = METHODS["zero-shot"]
    grown = dataclasses.make_dataclass("Grown", [("new_setting", str, dataclasses.field(default="x"))],
                                       bases=(spec.config_cls,))
    monkeypatch.setitem(METHODS, "zero-shot", dataclasses.replace(spec, config_cls=grown))
    (_, after), = run_configs(cells, tmp_path, limit=4, seed=0, backend="scripted", model="m", base_url=None)
    assert before != after and before.parent == after.parent


def test_the_pareto_figure_shows_intervals_on_the_whole_scale_and_marks_overlapping_points_once():
    """Error bars are each judge's 95% interval, BAcc spans 0-1 with chance drawn, and points that would sit on one
    another share one mark naming both numbers (the key beside the panel lists every judge, one-label judges said, and
    the n of a judge that rests on fewer examples than the panel's most)."""
    import matplotlib

    matplotlib.use("Agg")
    from sumjudge.arena import pareto_figure, point_keys
    from sumjudge.report import figure_data

    assert point_keys([(600, 50), (610, 50), (1400, 45), (1450, 46), (1000, 90), (700, 50)]) == [
        [0, 1], [2, 3], [4], [5]]
    base = {"dataset": "d", "n": 20, "completion_tokens_per_example": 0}
    table = [{**base, "judge": "a", "bacc": 60, "bacc_ci_low": 40, "bacc_ci_high": 80,
              "prompt_tokens_per_example": 100, "labels said": "10 × 1, 10 × 0"},
             {**base, "judge": "b", "bacc": 50, "bacc_ci_low": 50, "bacc_ci_high": 50,
              "prompt_tokens_per_example": 1000, "labels said": "0 × 1, 20 × 0"},
             {**base, "judge": "c", "bacc": 50, "bacc_ci_low": 50, "bacc_ci_high": 50,
              "prompt_tokens_per_example": 1010, "labels said": "20 × 1, 0 × 0"}]
    plot, key = figure_data(pareto_figure(table))
    assert plot["ylim"] == [0, 100] and plot["title"] == "d (n = 20)"
    bars = next(c["segments"] for c in plot["collections"] if "segments" in c)
    assert [[40], [80]] == [[bars[0][0][1]], [bars[0][1][1]]]  # judge a's interval, drawn as its bar
    assert sorted(t["text"] for t in plot["texts"]) == ["1", "2,3"]
    assert [t["text"] for t in key["texts"][:3]] == ["1  a: 60.0 [40.0, 80.0]",
                                                     "2  b: 50.0 [50.0, 50.0] (one label to all)",
                                                     "3  c: 50.0 [50.0, 50.0] (one label to all)"]
    # a judge with an unreadable answer rests on fewer examples: the title gives the range, its key line its n
    plot, key = figure_data(pareto_figure([{**table[0], "n": 19}] + table[1:]))
    assert plot["title"] == "d (n = 19-20)" and key["texts"][0]["text"] == "1  a: 60.0 [40.0, 80.0] (n = 19)"


def test_a_dataset_at_its_own_level_is_its_own_column_of_the_arena(tmp_path):
    from sumjudge.arena import fidelity_cells, run_configs
    from sumjudge.errors import ConfigError

    cells = parse_cells(["zero-shot"], ["tofueval-meetingbank@sentence", "qags-xsum"])
    assert [(c.dataset, c.level, c.where) for c in cells] == [
        ("tofueval-meetingbank", "sentence", "tofueval-meetingbank@sentence"), ("qags-xsum", None, "qags-xsum")]
    jobs = run_configs(cells, tmp_path, limit=4, seed=0, backend="scripted", model="m", base_url=None,
                       level="summary")
    assert [(rc.dataset, rc.level, folder.parent.name) for rc, folder in jobs] == [
        ("tofueval-meetingbank", "sentence", "tofueval-meetingbank@sentence"), ("qags-xsum", "summary", "qags-xsum")]
    twins = fidelity_cells(["tofueval-meetingbank@sentence"], ["zero-shot"])
    assert {c.level for c in twins} == {"sentence"} and len(twins) == 2
    with pytest.raises(ConfigError, match="summary or sentence"):
        parse_cells(["zero-shot"], ["qags-xsum@word"])


def test_the_arena_csv_has_every_rows_columns(tmp_path):
    from sumjudge.arena import write_csv

    write_csv(tmp_path / "a.csv", [{"judge": "a", "bacc": 0.5}, {"judge": "b", "bacc": 0.6, "published": 75.5}])
    assert read(tmp_path / "a.csv") == [{"judge": "a", "bacc": "0.5", "published": ""},
                                        {"judge": "b", "bacc": "0.6", "published": "75.5"}]


@pytest.mark.parametrize("method", ["zero-shot", "g-eval-consistency"])  # a score judge runs twice: judged, held out
def test_an_arena_cell_looks_its_method_and_its_dataset_up_once(method, tmp_path, monkeypatch):
    """The arena resolves a cell's method and dataset at its start (``arena.resolve``) and passes them on: to its
    runs (``runs.Target``), its threshold, its published number and its as-printed pair; a run loads its examples
    from the resolved dataset (``data.registry.load`` given the spec looks nothing up)."""
    from collections import Counter

    from sumjudge import arena
    from sumjudge.data import registry
    from sumjudge.llm import NullCache
    from sumjudge.llm.engine import LLM
    from sumjudge.llm.scripted import ScriptedBackend
    from sumjudge.run import methods

    lookups: Counter = Counter()
    get_method, get_dataset = methods.get_method, registry.get

    def counted_method(name):
        lookups["method", name] += 1
        return get_method(name)

    def counted_dataset(name):
        lookups["dataset", name] += 1
        return get_dataset(name)

    for module in [m for name, m in sys.modules.items() if name.startswith("sumjudge")]:  # where it is imported
        if getattr(module, "get_method", None) is get_method:
            monkeypatch.setattr(module, "get_method", counted_method)
    monkeypatch.setattr(registry, "get", counted_dataset)
    be = ScriptedBackend(options=lambda r: {o: -float(i) for i, o in enumerate(r.options)}).add(lambda r: True, "Yes")
    res = arena.run_arena([Cell(method, "qags-xsum")], tmp_path, backend="scripted", model="rules", limit=4,
                          held_out=4, llm=LLM(be, cache=NullCache()), progress=False)
    assert len(res["arena"]) == 1 and len(res["predictions"]) == 4
    assert lookups == {("method", method): 1, ("dataset", "qags-xsum"): 1}


def test_a_cells_seconds_are_shown_only_where_they_measure_its_judge():
    from sumjudge.arena import model_seconds

    asked = {"wall_s": 6.0, "engine": {"backend_calls": 3, "replayed": False}}
    assert model_seconds(asked, 3) == 2.0
    assert model_seconds({**asked, "engine": {"backend_calls": 0, "cache_hits": 3}}, 3) is None  # the cache's answers
    assert model_seconds({**asked, "engine": {"backend_calls": 3, "replayed": True}}, 3) is None  # a replay's seconds
