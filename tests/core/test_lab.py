"""The lab (notebook 02): the replayed arena, a student's judge on the same examples, and what its exercises
compute; its answers file is what ``lab_answers`` writes from the committed page."""

import dataclasses
import json
from pathlib import Path

import nbformat
import pytest
from conftest import needs_mirror

from sumjudge import metrics
from sumjudge.classroom import answer_key as lab_answers
from sumjudge.classroom import lab
from sumjudge.errors import ConfigError
from sumjudge.run.notebooks import notebook_defaults


def _pred(judge, example, gold, label):
    return {"dataset": "d", "judge": judge, "example": example, "gold": gold, "label": label, "score": None,
            "source": "parsed"}


def test_label_counts_name_the_judge_that_says_one_label_to_everything():
    preds = [_pred("same", "a", 1, 0), _pred("same", "b", 0, 0), _pred("same", "c", 1, None),
             _pred("mixed", "a", 1, 1), _pred("mixed", "b", 0, 0), _pred("mixed", "c", 1, None)]
    rows = {r["judge"]: r for r in lab.label_counts(preds)}
    assert rows["same"] == {"dataset": "d", "judge": "same", "said_1": 0, "said_0": 2, "unreadable": 1,
                            "one_label_to_all": True}
    assert rows["mixed"]["one_label_to_all"] is False and rows["mixed"]["said_1"] == 1


def test_the_mcnemar_sample_size_is_connors_formula_and_the_exact_test_confirms_it():
    # (1.95996 * sqrt(.2) + 0.84162 * sqrt(.2 - .05^2))^2 / .05^2 = 625.5
    assert lab.mcnemar_sample_size(0.05, 0.2) == 626
    assert lab.mcnemar_sample_size(0.10, 0.2) < 626 / 3
    assert 0.65 <= lab.simulated_power(626, 0.05, 0.2, trials=300) <= 0.95
    assert lab.simulated_power(20, 0.05, 0.2, trials=300) < 0.2
    with pytest.raises(ConfigError, match="discordant"):
        lab.mcnemar_sample_size(0.3, 0.2)


def test_the_prompt_difference_is_the_words_one_prompt_has_and_the_other_lacks():
    d = lab.prompt_difference("madisse/table26_zero_shot_as_run", "madisse/table26_zero_shot")
    assert d["only_as_run"] == ["Skip the preamble."] and d["only_as_printed"] == []
    assert d["as_run"].endswith("Skip the preamble.\n") or d["as_run"].rstrip().endswith("Skip the preamble.")


def _run(folder: Path, calls):
    folder.mkdir(parents=True)
    (folder / "calls.jsonl").write_text("\n".join(json.dumps(c) for c in [{"event": "process_start"}, *calls]))


def test_requests_compared_counts_per_role_what_the_first_run_already_asked(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    _run(a / "d" / "j-1", [{"event": "chat", "key": "k1", "tag": "ex1/skeptic"},
                           {"event": "chat", "key": "k2", "tag": "ex1/judge"}])
    _run(b / "d" / "j-2", [{"event": "chat", "key": "k1", "tag": "ex1/skeptic"},
                           {"event": "chat", "key": "k3", "tag": "ex1/judge#1"}])
    first = lab.ArenaResult(model="m", n=1, seed=0, level="summary", datasets=["d"], runs=a, table=[], predictions=[])
    second = lab.ArenaResult(model="m", n=1, seed=0, level="summary", datasets=["d"], runs=b, table=[],
                             predictions=[])
    assert lab.requests_compared(first, second) == [
        {"role": "judge", "requests": 1, "asked_before": 0, "new": 1},
        {"role": "skeptic", "requests": 1, "asked_before": 1, "new": 0}]
    # the judge edited once more under the same name: its runs folder now holds both edits' folders, yet each result
    # counts the folders it ran, so the comparison of the first two does not grow
    _run(b / "d" / "j-3", [{"event": "chat", "key": "k4", "tag": "ex1/judge"}])
    second = dataclasses.replace(second, folders=[b / "d" / "j-2"])
    third = dataclasses.replace(second, folders=[b / "d" / "j-3"])
    assert lab.requests_compared(first, second)[0]["requests"] == 1
    assert lab.requests_compared(second, third) == [{"role": "judge", "requests": 1, "asked_before": 0, "new": 1}]
    assert lab.requests_compared(first, dataclasses.replace(second, folders=None))[0]["requests"] == 2  # all of b
    both = lab.combined(dataclasses.replace(first, folders=[a / "d" / "j-1"]), third)  # the rivals and a judge
    assert both.folders == [a / "d" / "j-1", b / "d" / "j-3"] and lab.combined(first, third).folders is None


def test_a_students_judge_runs_on_at_most_twenty_examples():
    rivals = lab.ArenaResult(model="m", n=50, seed=0, level="summary", datasets=["d"], runs=Path("."), table=[],
                             predictions=[])
    with pytest.raises(ConfigError, match="at most 20"):
        lab.run_own("zero-shot", rivals, session=None)


def test_the_by_hand_bootstrap_gives_the_metrics_bacc():
    gold, label = [1, 1, 1, 0, 0, 0, 1, 0], [1, 0, 1, 0, 1, 0, 1, 0]
    b, lo, hi = lab_answers.by_hand_bootstrap(gold, label)
    assert b == pytest.approx(metrics.balanced_accuracy(gold, label)) and lo <= b <= hi


def test_notebook_defaults_are_the_parameters_cells_literals(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("a = 1\nb = ['x', 'y']\nc = len('z')\n",
                                                                   metadata={"tags": ["parameters"]}),
                                         nbformat.v4.new_code_cell("d = 2")])
    path = tmp_path / "x.ipynb"
    nbformat.write(nb, path)
    assert notebook_defaults(path) == {"a": 1, "b": ["x", "y"]}


def test_the_committed_page_is_found_when_the_project_home_has_none(tmp_path, monkeypatch):
    monkeypatch.setenv("SUMJUDGE_HOME", str(tmp_path))
    page = lab.results_page("smoke")
    assert (page / lab.ARENA_NOTEBOOK / "answers.jsonl.xz").is_file() and tmp_path not in page.parents


@needs_mirror
def test_the_replayed_arena_is_notebook_50s_as_the_smoke_profile_runs_it():
    rivals = lab.replay_arena("smoke")
    params = lab.arena_parameters("smoke")
    assert {r["judge"] for r in rivals.table} >= set(params["methods"]) and rivals.n == 20
    assert rivals.model == "qwen2.5-coder-0.5b-instruct"  # the model that answered, not the profile's alias
    assert all(r["n_examples"] == rivals.n and r["n"] <= rivals.n for r in rivals.table) and rivals.fidelity
    t = lab.debate_transcript(rivals, "debate-consistency", rivals.datasets[0])
    assert t.label != t.gold and t.turns and t.turns[0].speaker == "scorer"


@pytest.mark.slow
@needs_mirror
def test_the_answers_file_is_what_the_code_computes_from_the_committed_page():
    from sumjudge.paths import checkout_root

    committed = (checkout_root() / lab_answers.ANSWERS_DOC).read_text(encoding="utf-8")
    assert committed == lab_answers.render(lab.replay_arena("smoke"), lab_answers.replay_lab("smoke"))


def test_the_paper_profiles_arena_has_mesa_and_llm_aggrefacts_judges_on_tofueval_per_sentence():
    params = lab.arena_parameters("paper")
    assert {"mesa-faithfulness", "llm-aggrefact", "llm-aggrefact-p-yes"} <= set(params["methods"])
    assert "tofueval-meetingbank@sentence" in params["datasets"]
    smoke = lab.arena_parameters("smoke")
    assert {"llm-aggrefact", "llm-aggrefact-p-yes"} <= set(smoke["methods"])


def _paired(*rows):
    return [{"dataset": "d", "judge_a": a, "judge_b": b, "n": 20, "unreadable_a": int(a == "mine"),
             "unreadable_b": int(b == "mine"), "only_a_right": x, "only_b_right": y, "p": p} for a, b, x, y, p in rows]


def test_the_student_judges_family_is_its_own_pairs_and_holm_runs_over_them_only():
    paired = _paired(("a", "mine", 1, 9, 0.0215), ("b", "mine", 3, 3, 1.0), ("mine", "c", 0, 9, 0.0039),
                     ("a", "b", 0, 12, 0.0005))  # a pair without the student's judge: not in its family
    result = lab.ArenaResult(model="m", n=20, seed=0, level="summary", datasets=["d"], runs=Path("."), table=[],
                             predictions=[], paired=paired)
    rows = {r["judge_b"]: r for r in lab.pairs_with(result, "mine")}
    assert set(rows) == {"a", "b", "c"} and all(r["judge_a"] == "mine" and r["family"] == 3 for r in rows.values())
    assert (rows["a"]["only_a_right"], rows["a"]["only_b_right"]) == (9, 1)  # turned so that a is the student's
    assert all((r["unreadable_a"], r["unreadable_b"]) == (1, 0) for r in rows.values())  # its unreadable answers too
    assert rows["c"]["p_holm"] == pytest.approx(3 * 0.0039) and rows["a"]["p_holm"] == pytest.approx(2 * 0.0215)
    assert rows["b"]["p_holm"] == 1.0 and rows["c"]["differ_at_0.05"] and rows["a"]["differ_at_0.05"]
    assert rows["a"]["discordant_share"] == pytest.approx(10 / 20) and rows["b"]["discordant_share"] == 0.3
    assert lab.accuracy_difference(rows["a"]) == pytest.approx(8 / 20)
    with pytest.raises(ConfigError, match="no paired test of nobody"):
        lab.pairs_with(result, "nobody")


def test_the_fewest_discordant_examples_a_pair_needs_to_survive_holm():
    assert [lab.fewest_discordant(m) for m in (1, 9, 45)] == [6, 9, 11]
    for m in (1, 9, 45):  # all d discordant examples one way: the exact test's p is 2 / 2^d
        d = lab.fewest_discordant(m)
        correct_a = {str(i): i < d for i in range(20)}
        p = metrics.mcnemar_exact(correct_a, {str(i): False for i in range(20)})["p"]
        assert p * m < 0.05 and 2 * p * m >= 0.05


def test_a_judge_that_says_one_label_has_a_negative_alpha_at_chance_bacc():
    gold = [1] * 10 + [0] * 10
    assert metrics.balanced_accuracy(gold, [0] * 20) == 0.5
    assert metrics.krippendorff_alpha(gold, [0] * 20) == pytest.approx(-0.3)  # the page's constant judges
    assert lab.constant_judge_alpha(20, 10) == pytest.approx(-0.3)
    for gold, said in (([1] * 3 + [0] * 5, 1), ([1] * 1 + [0] * 5, 0), ([1] * 7 + [0] * 13, 0)):
        disagree = sum(g != said for g in gold)
        assert metrics.krippendorff_alpha(gold, [said] * len(gold)) == pytest.approx(
            lab.constant_judge_alpha(len(gold), disagree))


def test_the_arena_judges_list_what_the_replayed_arena_holds_and_lacks():
    result = lab.ArenaResult(model="m", n=20, seed=0, level="summary", datasets=["d"], runs=Path("."),
                             table=[{"judge": "zero-shot"}, {"judge": "zero-shot[prompts=printed]"}], predictions=[])
    rows = {r["judge"]: r for r in lab.arena_judges(result)}
    assert rows["zero-shot"]["in_this_arena"] and rows["zero-shot[prompts=printed]"]["in_this_arena"]
    assert not rows["madisse"]["in_this_arena"] and rows["madisse"]["paper"] == "madisse"
    assert not rows["mesa-faithfulness"]["in_this_arena"] and rows["mesa-faithfulness"]["paper"] == "mesa"
    # a judge's settings in brackets say which reading it is, so that two rows of one method read differently
    assert rows["zero-shot"]["what"].endswith("; as run (the first of: the authors' prompts.py vs MADISSE's printed "
                                              "Table 26)")
    assert "; as printed (the second of: the authors' prompts.py" in rows["zero-shot[prompts=printed]"]["what"]
    assert rows["madisse[sessions=3]"]["what"].endswith("; with sessions=3")
    assert rows["factax"]["what"] == lab.get_method("factax").description


def test_the_answer_key_says_whether_the_example_judge_beats_chance():
    row = {"dataset": "qags-xsum", "n": "20", "bacc_ci_low": "30", "bacc_ci_high": "70"}
    assert "contains 50 or lies under it" in lab_answers.chance_words(row)
    assert "shown better than chance" in lab_answers.chance_words({**row, "bacc_ci_low": "55", "bacc_ci_high": "90"})
    assert lab_answers.chance_words({**row, "bacc_ci_low": ""}) == ""
