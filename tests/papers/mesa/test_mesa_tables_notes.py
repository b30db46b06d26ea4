"""A MESA note that says why a paper cell is empty does not make its row read as one the paper prints and this run
skips (``results.notes``: such a note names the paper)."""


def test_a_garbled_paper_cells_note_leaves_the_row_counted_as_not_computed():
    from sumjudge.papers.mesa.tables import GARBLED
    from sumjudge.results.notes import Table

    t = Table(name="t", rows=[], columns=["reproduced", "note"])
    assert not t.paper_row({"reproduced": "", "note": "no human Likert scores; " + GARBLED})
    assert t.paper_row({"reproduced": "", "note": "as printed in the paper; not computed here"})
