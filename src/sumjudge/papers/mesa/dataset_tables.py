"""MESA's dataset tables beside the paper's own (notebook 01_datasets): the paper's value, ours, and a note
where they differ for a known reason."""

from __future__ import annotations

import re
import statistics

from sumjudge.data.meeting_errors import read_meeting_errors, restore_transcripts
from sumjudge.report import paper_results
from sumjudge.results.dataset_tables import paper_rows


def mesa_table10():
    """Table 10 beside the meeting-errors data: summaries, erroneous ones, and per distinct meeting the turns,
    speakers and words of the transcripts restored from QMSum (``meeting_errors.restore_transcripts``), with
    the published (cut) transcripts' words beside them."""

    import pandas as pd


    paper = paper_rows(paper_results("mesa")["table10"])
    published, dropped = read_meeting_errors()
    exs = restore_transcripts(published)
    restored = sum(e.meta["transcript_restored"] for e in exs)
    meetings = list({e.meeting: e.transcript for e in exs}.values())
    cut = list({e.meeting: e.transcript for e in published}.values())

    def words(t: str) -> int:  # QMSum's text is tokenized: punctuation tokens are not words
        return sum(1 for w in t.split() if re.search(r"[^\W_]", w))

    speakers = [len({line.split(" : ", 1)[0].strip() for line in t.splitlines() if " : " in line}) for t in meetings]
    ours = {"meetings": len(exs), "erroneous": sum(any(v for v in e.labels.values()) for e in exs),
            "turns": round(statistics.mean(t.count("\n") + 1 for t in meetings), 1),
            "speakers": round(statistics.mean(speakers), 1),
            "meeting_words": round(statistics.mean(words(t) for t in meetings), 1),
            "gold_summary_words": round(statistics.mean(len(e.meta["gold"].split()) for e in exs), 1),
            "auto_summary_words": round(statistics.mean(len(e.summary.split()) for e in exs), 1)}
    notes = {"meetings": f"summaries of the public yes/no release (5 x 35 rows; {sum(dropped.values())} without text "
                         f"dropped) over {len(meetings)} QMSum meetings, not MESA's 170/200-sample Likert re-annotation",
             "meeting_words": f"per distinct meeting, transcripts restored from QMSum ({restored} of {len(exs)} "
                              "rows); words are tokens with a letter or digit. The published, spreadsheet-cut "
                              f"transcripts average {round(statistics.mean(words(t) for t in cut), 1)}",
             "turns": "per distinct meeting: speaker turns (lines) of the restored transcripts",
             "speakers": "per distinct meeting: distinct 'Name :' prefixes of the restored transcripts"}
    return pd.DataFrame([{"statistic": k, "paper": v, "ours": ours[k], "note": notes.get(k, "")}
                         for k, v in paper.items()])
