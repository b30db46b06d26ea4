"""Helpers the notebooks build their tables and viewers with (madisse_tables, mesa_tables), on recorded runs."""

import json

import pytest

from sumjudge.papers.madisse import tables as madisse_tables
from sumjudge.papers.mesa import tables as mesa_tables


def _row(example_id: str, rounds: int) -> dict:
    turns = [[{"round": r, "agent": a, "label": a % 2, "explanation": f"r{r} a{a}"} for a in range(4)]
             for r in range(1, rounds + 1)]
    return {"example": {"id": example_id, "summary": "s", "label": 1},
            "judgement": {"label": 1, "label_source": "debate", "details": {"sessions": [
                {"index": 0, "stances": [1, 1, 0, 0], "consensus_round": None, "label": 1,
                 "label_source": "debate", "rounds": turns}]}}}


class _RecordedSession:
    """Answers session.run (and run_many) with a finished run folder and records the settings asked for."""

    def __init__(self, run_dir):
        self.run_dir, self.asked = run_dir, []

    def run(self, method, dataset, *, level=None, settings=None, name=None):
        self.asked.append((method, dataset, level, dict(settings), name))
        cost = {"calls_per_example": 4.0, "prompt_tokens_per_example": 10.0, "completion_tokens_per_example": 5.0}
        return {"bacc": 0.5, "k_alpha": 0.0, "cost": cost, "n_examples": 4}, self.run_dir

    def run_many(self, runs):
        return [self.run(**spec) for spec in runs]


def test_longest_debate_reads_the_single_session_cell_and_picks_the_first_longest(tmp_path):
    rows = [_row("a", 1), _row("b", 3), _row("c", 3), _row("d", 2)]
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    session = _RecordedSession(tmp_path)
    got = madisse_tables.longest_debate(session, "tofueval-meetingbank", "summary", rounds=3, adjudicators=1)
    assert got["example"]["id"] == "b"
    (method, dataset, level, settings, name), = session.asked
    assert method == "madisse" and settings == {"rounds": 3, "sessions": 1, "faithful_agents": 2,
                                                "unfaithful_agents": 2, "adjudicators": 1}
    # the same run (name and settings) as the grid's cell, so the viewer reads it back instead of debating again
    grid_session = _RecordedSession(tmp_path)
    grid = madisse_tables.rounds_sessions_grid(grid_session, "tofueval-meetingbank", "summary", max_rounds=3,
                                               max_sessions=1, adjudicators=1)
    assert [r["rounds"] for r in grid] == [1, 2, 3] and grid_session.asked[-1] == session.asked[0]


def test_longest_debate_without_debates_is_none(tmp_path):
    (tmp_path / "results.jsonl").write_text(json.dumps({"example": {"id": "x"}, "judgement": {"details": {}}}) + "\n")
    assert madisse_tables.longest_debate(_RecordedSession(tmp_path), "d", "summary", rounds=2) is None


def test_variance_rows_without_runs_keep_the_paper_values_beside_empty_cells():
    rows = mesa_tables.variance_rows({"single": [], "MADP-S": []}, "m", types=["RED"])
    assert {(r["evaluator"], r["metric"]) for r in rows} == {
        (s, m) for s in ("single", "MADP-S") for m in ("mean Likert", "sd across runs")}
    assert all(r["reproduced"] is None and r["runs"] == 0 and r["aspect"] == "RED" for r in rows)
    assert any(r["paper"] is not None for r in rows)
    run = {"types": {"RED": {"mean_rating": 2.0}}}
    two = mesa_tables.variance_rows({"single": [run, {"types": {"RED": {"mean_rating": 4.0}}}]}, "m")
    assert [r["reproduced"] for r in two] == [3.0, 2 ** 0.5]
    mean_ci, sd_ci = two[0]["ci"], two[1]["ci"]  # two runs: t with 1 degree of freedom, chi-square with 1
    assert mean_ci == pytest.approx((3 - 12.706 * 1, 3 + 12.706 * 1), abs=1e-3)
    assert sd_ci[0] < 2 ** 0.5 < sd_ci[1] and sd_ci[1] == pytest.approx(2 ** 0.5 / 0.031338, rel=1e-3)
    assert all(r["ci"] is None for r in rows)  # no runs, no interval


def test_every_madisse_cell_carries_its_interval():
    """Tables 3 / 35 rows: K-alpha with its bootstrap interval, FPR and FNR with Wilson's (in %), beside BAcc's."""
    m = {"bacc": 0.6, "bacc_ci": [0.4, 0.8], "k_alpha": 0.2, "k_alpha_ci": [-0.1, 0.5], "fpr": 0.25,
         "fpr_ci": [0.05, 0.7], "fnr": 0.5, "fnr_ci": [0.2, 0.8], "n_examples": 12, "cost": {"calls_per_example": 9.0}}
    rows = madisse_tables.comparison_rows({"madisse": m}, "tofueval-meetingbank", "summary", "m")
    assert {r["metric"]: r["ci"] for r in rows} == {"BAcc (%)": (40.0, 80.0), "K-alpha": [-0.1, 0.5],
                                                    "FPR (%)": (5.0, 70.0), "FNR (%)": (20.0, 80.0)}


def test_the_window_ablation_puts_the_papers_two_printed_cells_beside_ours(tmp_path):
    """FacTax prints two cells of the window ablation (Table 2, the dataset's column): 30 words (FACTAX-WD) and the
    whole summary (FACTAX); the other sizes have no paper number."""
    from sumjudge.papers.factax import tables as factax_tables
    from sumjudge.report import paper_value

    (tmp_path / "results.jsonl").write_text(json.dumps({"judgement": {"details": {"n_windows": 2}}}) + "\n")

    class Session:
        def run_many(self, runs):
            return [({"bacc": 0.5, "bacc_ci": [0.3, 0.7], "n": 1, "n_examples": 1, "unparsed": 0, "cost": {"calls_total": 2}}, tmp_path)
                    for _ in runs]

    rows = factax_tables.window_rows(Session(), "diasumfact", [0, 30, None])
    assert [(r["window"], r["paper_row"]) for r in rows] == [("1 sentence", None), ("30 words", "FACTAX-WD"),
                                                             ("whole summary", "FACTAX")]
    assert rows[0]["paper"] is None
    assert rows[1]["paper"] == paper_value("factax", "table2", "FACTAX-WD", "diasumfact") == 64.15
    assert rows[2]["paper"] == paper_value("factax", "table2", "FACTAX", "diasumfact") == 62.76
    assert all(r["paper"] is None for r in factax_tables.window_rows(Session(), "a-dataset-of-ones-own", [30]))


def test_the_rounds_and_sessions_grid_names_the_three_cells_the_paper_prints(tmp_path):
    """Table 3's MADISSE rows are the grid's 3-round cells with one and three sessions in the paper's setting (2 + 2
    agents, 3 adjudicators); no other cell, and no cell of another setting, gets a paper number."""
    from sumjudge.report import paper_value

    class Session(_RecordedSession):
        def run(self, method, dataset, *, level=None, settings=None, name=None):
            metrics, run_dir = super().run(method, dataset, level=level, settings=settings, name=name)
            one = {"bacc": 0.5, "k_alpha": 0.0}
            return {**metrics, "variants": {"agents_vote": one, "debates_vote": one}}, run_dir

    grid = madisse_tables.rounds_sessions_grid(Session(tmp_path), "tofueval-meetingbank", "summary", max_rounds=3,
                                               max_sessions=3, adjudicators=3)
    printed = {(r["rounds"], r["sessions"], r["vote"]): (r["paper_row"], r["paper_bacc"], r["paper_k_alpha"])
               for r in grid if r["paper_row"]}
    assert printed == {(3, 1, "single"): ("madisse", *paper_value("madisse", "table3", "madisse", "meetingbank")),
                       (3, 3, "agents_vote"): ("madisse-agents-vote",
                                               *paper_value("madisse", "table3", "madisse-agents-vote", "meetingbank")),
                       (3, 3, "debates_vote"): ("madisse-debates-vote",
                                                *paper_value("madisse", "table3", "madisse-debates-vote", "meetingbank"))}
    other = madisse_tables.rounds_sessions_grid(Session(tmp_path), "tofueval-meetingbank", "summary", max_rounds=3,
                                                max_sessions=3, adjudicators=1)
    assert not any(r["paper_row"] or r["paper_bacc"] for r in other)
