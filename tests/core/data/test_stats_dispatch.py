"""A dataset's statistics come from its own loader, never from another dataset of the same kind: a missing
meeting-error dataset is listed as missing (not given ``meeting-errors``' rows), a user's meeting file is counted
from that file."""

import csv

from conftest import needs_mirror

from sumjudge.data import meeting_errors, sources
from sumjudge.data.stats import dataset_stats
from sumjudge.results.dataset_tables import stats_if_present


def test_a_missing_meeting_error_dataset_is_missing_not_meeting_errors(monkeypatch):
    def missing(path=None):
        raise sources.DataMissingError("mesa/MistekQMSum.csv is not here")

    def never():
        raise AssertionError("meeting-errors' files read for another dataset")

    monkeypatch.setattr(meeting_errors, "load_mistek_qmsum", missing)
    monkeypatch.setattr(meeting_errors, "read_meeting_errors", never)
    assert stats_if_present("mistek-qmsum") is None  # page 01's overview: present False, no count


def test_a_meeting_file_is_counted_from_that_file(tmp_path, monkeypatch):
    monkeypatch.setattr(meeting_errors, "read_meeting_errors",
                        lambda: (_ for _ in ()).throw(AssertionError("meeting-errors' files read")))
    path = tmp_path / "mine.csv"
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=["transcript", "summary", "RED", "HAL"])
        w.writeheader()
        w.writerows([{"transcript": "A : we met .", "summary": "They met.", "RED": "0", "HAL": "2"},
                     {"transcript": "B : later .", "summary": "Later.", "RED": "yes", "HAL": "no"}])
    st = dataset_stats(f"meeting-file:{path}")
    assert st["examples"] == 2 and st["errors_per_type"]["HAL"] == 1 and st["errors_per_type"]["RED"] == 1
    assert st["dropped"] == {}


@needs_mirror
def test_table2_and_table24_count_the_same_mentions_and_say_where_they_differ():
    """MADISSE's Table 2 counts category mentions by each sentence's stated category, Table 24 by its type: the
    totals agree, and the one sentence whose type belongs to another category is named in Table 2's note."""
    from sumjudge.papers.madisse import dataset_tables as madisse_t

    st = dataset_stats("meetingbank-ambiguity")
    t24 = madisse_t.madisse_table24()
    by_type = t24.groupby("category")["ours"].sum().to_dict()
    by_category = st["ambiguity_categories"]
    assert sum(by_type.values()) == sum(by_category.values()) == st["ambiguity_category_mentions"]
    moved = st["ambiguity_type_outside_category"]
    for m in moved:
        by_type[m["type_category"]] -= 1
        by_type[m["category"]] = by_type.get(m["category"], 0) + 1
    assert by_type == by_category
    note = madisse_t.madisse_table2().set_index("statistic").loc["pct_meaning", "note"]
    assert all(m["type"] in note for m in moved)
