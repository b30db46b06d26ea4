"""QMSum meeting summaries with human yes/no error labels (Kirstein et al. 2024, the annotation team and
QMSum source of MESA's QMSum Mistake), mapped to MESA's eight error types.

MESA type <- column: OM <- "Total omission" or "partial omission / lacking depth" (MESA combines the
two); RED <- Redundancy; INC <- Incoherence; COR <- Wrong References; HAL <- Hallucination;
LAN <- Linguistic Inaccuracy; STR <- Structural Disorganization. IRR (irrelevance) has no label in
these files: it is ``None`` for every example, and so is OM for the Zephyr file (no omission columns).
Rows without transcript or summary text are dropped and counted (``read_meeting_errors``); transcripts
of 32765 characters were cut by a spreadsheet export (``meta['transcript_truncated']``). "Missing Information" and "Incorrect Reasoning" have
no MESA type; they stay in ``meta``. These files have yes/no labels, not MESA's 0-5 Likert scores.
"""

from __future__ import annotations

from collections import Counter

from .readers import read_csv, yes_no
from .records import MeetingErrorExample
from .sources import resolve

MODELS = ("LED", "DialogLED", "PEGASUSX", "GPT35", "Zephyr")
FILE = "meeting_errors/{model}_summaries.csv"
MESA_TYPES = ("OM", "RED", "INC", "COR", "HAL", "LAN", "STR", "IRR")
MESA_TYPE_NAMES = {"OM": "omission", "RED": "redundancy", "INC": "incoherence", "COR": "coreference",
                   "HAL": "hallucination", "LAN": "language", "STR": "structure", "IRR": "irrelevance"}
COLUMNS = {"RED": "Redundancy", "INC": "Incoherence", "COR": "Wrong References", "HAL": "Hallucination",
           "LAN": "Linguistic Inaccuracy", "STR": "Structural Disorganization"}
OMISSION = ("Total omission", "partial omission / lacking depth")
UNMAPPED = ("Missing Information", "Incorrect Reasoning")
UNLABELLED = ("IRR",)


EXCEL_CELL_LIMIT = 32765  # transcripts cut at this length were truncated by a spreadsheet export


def read_meeting_errors() -> tuple[list[MeetingErrorExample], dict[str, int]]:
    """(examples, dropped): rows whose transcript or summary is empty in the published files cannot be
    judged and are dropped, counted by reason (the files hold labels for them but not the text)."""
    out, dropped = [], Counter()
    for model in MODELS:
        path = resolve(FILE.format(model=model))
        rows = read_csv(path, ("Input", "Gold", "Predicted", *COLUMNS.values(), *UNMAPPED), delimiter=";")
        has_omission = all(c in rows[0][1] for c in OMISSION)  # the Zephyr file has no omission columns
        for i, r in rows:
            if not r["Input"].strip():
                dropped[f"empty transcript ({model})"] += 1
                continue
            if not r["Predicted"].strip():
                dropped[f"empty summary ({model})"] += 1
                continue
            labels: dict[str, int | None] = {t: yes_no(r, c, path, i) for t, c in COLUMNS.items()}
            labels["OM"] = int(any(yes_no(r, c, path, i) for c in OMISSION)) if has_omission else None
            labels["IRR"] = None
            out.append(MeetingErrorExample(
                id=f"{model}-{i - 1:02d}", dataset="meeting-errors", transcript=r["Input"], summary=r["Predicted"],
                labels={t: labels[t] for t in MESA_TYPES},
                meta={"model": model, "gold": r["Gold"], "row": i,
                      "transcript_truncated": len(r["Input"]) >= EXCEL_CELL_LIMIT,
                      "unmapped_labels": {c: yes_no(r, c, path, i) for c in UNMAPPED}}))
    return out, dict(dropped)


def load_meeting_errors() -> list[MeetingErrorExample]:
    return read_meeting_errors()[0]
