"""A recording runs a notebook after the notebooks whose requests it shares (its metadata ``sumjudge.after``), so
that their shared requests are cache hits, not sampled twice."""

from __future__ import annotations

from pathlib import Path

from sumjudge.run.notebooks import next_ready, notebook_after, notebooks, recording_order


def test_the_notebooks_that_share_requests_name_the_one_they_follow():
    order = recording_order(notebooks())
    names = set(order)
    assert order["51_your_own_judge"] == ("50_judge_arena",) and order["02_lab_llm_judges"] == ("50_judge_arena",)
    assert order["50_judge_arena"] == ("40_factax_zero_shot",) and order["43_factax_supervised"] == ("40_factax_zero_shot",)
    for nb, deps in order.items():  # each names notebooks that exist, and no chain comes back to itself
        seen, todo = set(), list(deps)
        while todo:
            d = todo.pop()
            assert d in names and d != nb, (nb, d)
            if d not in seen:
                seen.add(d)
                todo += order[d]


def test_a_notebook_waits_for_the_ones_it_follows_only_when_they_are_in_the_run():
    nb = {k: Path(f"{k}.ipynb") for k in ("40_a", "43_b", "50_c", "51_d")}
    after = {"43_b": ("40_a",), "50_c": ("40_a",), "51_d": ("50_c",)}
    queue = [nb["51_d"], nb["50_c"], nb["43_b"], nb["40_a"]]  # longest first puts 51 first
    selected = set(nb)
    assert next_ready(queue, set(), selected, after) == nb["40_a"]
    assert next_ready(queue, {"40_a"}, selected, after) == nb["50_c"]
    assert next_ready(queue, {"40_a", "50_c"}, selected, after) == nb["51_d"]
    assert next_ready([nb["51_d"]], set(), {"51_d"}, after) == nb["51_d"]  # 50 is not recorded in this run
    assert next_ready(queue, set(), selected, {}) == nb["51_d"]  # a replay: no order


def test_a_notebook_without_the_metadata_follows_none(tmp_path):
    plain = tmp_path / "99_x.ipynb"
    plain.write_text('{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}')
    assert notebook_after(plain) == ()
