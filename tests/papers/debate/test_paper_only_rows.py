"""Notebook 20's appendix of the paper's rows lists only printed cells the notebook does not reproduce: a cell the
reproduced table carries (its dataset, paper row and aspect) is not also marked "(paper only)"."""

from sumjudge.papers.debate.tables import PAPER_MODEL, paper_only_rows


def reproduced(dataset, label, aspects):
    return [{"experiment": "Table 1", "dataset": dataset, "paper_row": f"{label} ({PAPER_MODEL})", "aspect": a}
            for a in ("average", *aspects)]


def test_a_reproduced_cell_is_not_listed_as_the_papers_only():
    done = (reproduced("summeval", "DEBATE", ["coherence"]) + reproduced("topical-chat", "G-Eval", ["engagingness"])
            + [{"dataset": "summeval", "paper_row": "ROUGE-L (Others)", "aspect": a} for a in ("average", "coherence")])
    listed = paper_only_rows("summeval", done) + paper_only_rows("topical-chat", done)
    cells = {(r["dataset"], r["evaluator"], r["aspect"]) for r in listed}
    assert not cells & {(d["dataset"], d["paper_row"], d["aspect"]) for d in done}
    # the aspects not run stay listed: the paper printed them and nothing here computes them
    assert ("summeval", f"DEBATE ({PAPER_MODEL})", "fluency") in cells
    assert ("summeval", "ROUGE-L (Others)", "relevance") in cells
    assert ("topical-chat", f"DEBATE ({PAPER_MODEL})", "engagingness") in cells
    assert all(r["experiment"] == "Table 1 (paper only)" and r["reproduced"] is None for r in listed)


def test_whole_rows_by_name_are_still_left_out():
    assert not [r for r in paper_only_rows("summeval", ("ROUGE-L (Others)",)) if r["evaluator"] == "ROUGE-L (Others)"]
