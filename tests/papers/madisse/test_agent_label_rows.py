"""The table of where each debate's label came from: stances, final labels, how each was read."""

import json

from sumjudge.papers.madisse.tables import agent_label_rows


def test_each_debate_shows_its_agents_stances_and_carried_labels(tmp_path):
    turn = lambda label, source, attempts=1: {"label": label, "source": source, "attempts": attempts}  # noqa: E731
    result = {"example": {"id": "ex1", "label": 1}, "judgement": {"label": 0, "details": {"sessions": [{
        "stances": ["faithful", "unfaithful"], "label_source": "adjudication", "adjudication": [{"label": 0}],
        "rounds": [[turn(1, "parsed", 2), turn(0, "carried")]]}]}}}
    (tmp_path / "results.jsonl").write_text(json.dumps(result) + "\n")
    rows, counts = agent_label_rows(tmp_path)
    assert rows == [{"example": "ex1", "human": 1, "debate": 0, "reached_by": "adjudication",
                     "agents (stance: final label)": "faithful: 1 (parsed, asked 2x); unfaithful: 0 (carried, asked 1x)",
                     "adjudicators": "0"}]
    assert {"stance": "unfaithful", "final label": 0, "read as": "carried", "agents": 1} in counts
