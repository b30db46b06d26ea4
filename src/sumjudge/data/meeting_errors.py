"""QMSum meeting summaries with human yes/no error labels (Kirstein et al. 2024, the annotation team and
QMSum source of QMSum Mistake), mapped to the eight error codes of their meeting-summary error types.

Code <- column: OM <- "Total omission" or "partial omission / lacking depth" (the codes combine the
two); RED <- Redundancy; INC <- Incoherence; COR <- Wrong References; HAL <- Hallucination;
LAN <- Linguistic Inaccuracy; STR <- Structural Disorganization. IRR (irrelevance) has no label in
these files: it is ``None`` for every example, and so is OM for the Zephyr file (no omission columns).
Rows without transcript or summary text are dropped and counted (``read_meeting_errors``). 105 of the 133
transcripts were cut at 32765 characters by a spreadsheet export, while the annotators judged whole
meetings: every transcript is the start of one of 31 QMSum test meetings (``speaker : text`` lines), so the
full transcript is restored from QMSum (``restore_transcripts``; ``meta['transcript_restored']``, the
published length in ``meta['published_words']``). Without the QMSum files (``sumjudge data fetch qmsum``)
the published text is kept and flagged. "Missing Information" and "Incorrect Reasoning" have
no code; they stay in ``meta``. These files have yes/no labels, not 0-5 Likert impact scores.

Splits (``split_by_meeting``): ``all`` (every summary, the paper's evaluation set), and ``train`` / ``test``
for self-training on feedback: a fixed share of the *meetings* (``TRAIN_SHARE``) is training data, so the five
summaries of one transcript are never divided between training and test.

Your own annotations, with 0-5 Likert impact scores (the QMSum Mistake file is not
public): ``--dataset meeting-file:PATH`` reads a jsonl / json / csv file with ``transcript``, ``summary``,
optional ``id``, and per error type a column named by its code (``OM``, ``RED``, ...) holding a 0-5 Likert
score or yes/no, plus optional ``<CODE>_reasoning`` (the annotators' reasoning, used by self-training).
A Likert score > 0 counts as "error present" for the binary metrics.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import replace as dc_replace
from pathlib import Path

from sumjudge.data.readers import YES_NO, read_csv, text, yes_no
from sumjudge.data.records import MeetingErrorExample, meeting_key
from sumjudge.data.sources import RESOURCES, DataFormatError, DataMissingError, resolve
from sumjudge.data.user_files import _rows

MODELS = ("LED", "DialogLED", "PEGASUSX", "GPT35", "Zephyr")
FILE = "meeting_errors/{model}_summaries.csv"
ERROR_CODES = ("OM", "RED", "INC", "COR", "HAL", "LAN", "STR", "IRR")
ERROR_CODE_NAMES = {"OM": "omission", "RED": "redundancy", "INC": "incoherence", "COR": "coreference",
                   "HAL": "hallucination", "LAN": "language", "STR": "structure", "IRR": "irrelevance"}
COLUMNS = {"RED": "Redundancy", "INC": "Incoherence", "COR": "Wrong References", "HAL": "Hallucination",
           "LAN": "Linguistic Inaccuracy", "STR": "Structural Disorganization"}
OMISSION = ("Total omission", "partial omission / lacking depth")
UNMAPPED = ("Missing Information", "Incorrect Reasoning")
UNLABELLED = ("IRR",)
SPLITS = ("all", "train", "test")
TRAIN_SHARE = 0.3  # share of the meetings in the self-training split


EXCEL_CELL_LIMIT = 32765  # transcripts cut at this length were truncated by a spreadsheet export


def read_meeting_errors() -> tuple[list[MeetingErrorExample], dict[str, int]]:
    """(examples, dropped): rows whose transcript or summary is empty in the published files cannot be
    judged and are dropped, counted by reason (the files hold labels for them but not the text)."""
    out: list[MeetingErrorExample] = []
    dropped: Counter[str] = Counter()
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
                labels={t: labels[t] for t in ERROR_CODES},
                meta={"model": model, "gold": r["Gold"], "row": i, "meeting": meeting_key(r["Input"]),
                      "transcript_truncated": len(r["Input"]) >= EXCEL_CELL_LIMIT,
                      "unmapped_labels": {c: yes_no(r, c, path, i) for c in UNMAPPED}}))
    return out, dict(dropped)


def qmsum_transcript(rel: str) -> str:
    """A QMSum meeting as the meeting-errors files write transcripts: one ``speaker : text`` line per turn."""

    path = resolve(rel)
    try:
        turns = json.loads(path.read_text(encoding="utf-8"))["meeting_transcripts"]
        return "\n".join(f"{t['speaker']} : {t['content']}" for t in turns)
    except (ValueError, KeyError, TypeError) as e:
        raise DataFormatError(path, None, "meeting_transcripts", f"not a QMSum meeting file ({e})") from None


def restore_transcripts(examples: list[MeetingErrorExample]) -> list[MeetingErrorExample]:
    """The full QMSum transcript of every example whose published transcript is the start of one (matched on
    the text, whitespace-normalised); examples stay as published, flagged, when no QMSum file is present."""


    meetings: dict[str, str] = {}
    for rel in RESOURCES["qmsum"]:
        try:
            meetings[rel] = qmsum_transcript(rel)
        except DataMissingError:
            continue
    norm = {rel: " ".join(t.split()) for rel, t in meetings.items()}
    out = []
    for e in examples:
        head = " ".join(e.transcript.split())
        found = [rel for rel, t in norm.items() if t.startswith(head)]
        meta = {**e.meta, "published_words": len(e.transcript.split()), "transcript_restored": False}
        if len(found) == 1:
            full = meetings[found[0]]
            meta.update(transcript_restored=True, qmsum_file=found[0], transcript_truncated=False)
            out.append(dc_replace(e, transcript=full, meta=meta))
        else:
            meta["restore_note"] = ("no QMSum file present (sumjudge data fetch qmsum)" if not meetings else
                                    f"{len(found)} QMSum meetings start with this transcript")
            out.append(dc_replace(e, meta=meta))
    return out


def load_meeting_errors() -> list[MeetingErrorExample]:
    return restore_transcripts(read_meeting_errors()[0])


def split_by_meeting(examples: list[MeetingErrorExample], split: str, seed: int = 0,
                     train_share: float = TRAIN_SHARE) -> list[MeetingErrorExample]:
    """``all``, or the ``train`` / ``test`` part: a meeting is training data when the hash of its key (and
    ``seed``) falls in the first ``train_share``; deterministic, and never dividing one meeting."""
    if split == "all":
        return list(examples)
    if split not in SPLITS:
        raise ValueError(f"meeting-error data has splits {SPLITS}, not {split!r}")

    def is_train(e: MeetingErrorExample) -> bool:
        h = int(hashlib.sha1(f"{seed}:{e.meeting}".encode()).hexdigest()[:8], 16)
        return h / 0xFFFFFFFF < train_share

    return [e for e in examples if is_train(e) == (split == "train")]


def load_meeting_table(path: str | Path) -> list[MeetingErrorExample]:
    """Your own meeting-summary annotations (see the module docstring for the columns)."""

    path = Path(path)
    if not path.exists():
        raise DataMissingError(f"{path} does not exist")
    rows = _rows(path, ("transcript", "summary"))
    if not rows:
        raise DataFormatError(path, None, None, "no rows")
    codes = [c for c in ERROR_CODES if c in rows[0][1]]
    if not codes:
        raise DataFormatError(path, rows[0][0], None, f"no error-type column; expected some of {ERROR_CODES}")
    out = []
    for i, r in rows:
        labels: dict[str, int | None] = {}
        likert: dict[str, float | None] = {}
        for c in codes:
            raw = r.get(c)
            if raw is None or str(raw).strip() == "":
                labels[c] = likert[c] = None
            elif str(raw).strip().lower() in YES_NO:
                labels[c], likert[c] = YES_NO[str(raw).strip().lower()], None
            else:
                try:
                    v = float(raw)
                except (TypeError, ValueError):
                    raise DataFormatError(path, i, c, f"expected a 0-5 Likert score or yes/no, got {raw!r}") from None
                if not 0 <= v <= 5:
                    raise DataFormatError(path, i, c, f"Likert score {v:g} is outside 0-5")
                labels[c], likert[c] = int(v > 0), v
        transcript = text(r, "transcript", path, i)
        out.append(MeetingErrorExample(
            id=str(r.get("id") or f"{path.stem}-{i}"), dataset=f"meeting-file:{path}", transcript=transcript,
            summary=text(r, "summary", path, i), labels={c: labels.get(c) for c in ERROR_CODES},
            likert={c: v for c, v in likert.items() if v is not None},
            reasoning={c: str(r[f"{c}_reasoning"]) for c in codes if str(r.get(f"{c}_reasoning") or "").strip()},
            meta={"row": i, "meeting": str(r.get("meeting") or meeting_key(transcript)), "gold": str(r.get("gold") or "")}))
    return out


# QMSum Mistake (the Likert re-annotation of Kirstein et al. 2025), in the format their code reads (src/ @ adb7e6f):
# `HumanJudgment/MistekQMSum.csv`, comma-separated, `Input` (transcript) and `Predicted` (summary), and per error
# type "<Type> - Existence", "<Type> - Reasoning", "<Type> - Impact" (0-5 Likert). The authors' code reads
# structure's existence from "Structur - Existence" (a typo in their file): both spellings are accepted.
MISTEK_FILE = "mesa/MistekQMSum.csv"
MISTEK_TYPES = {"OM": "Omission", "RED": "Redundancy", "INC": "Incoherence", "COR": "Coreference",
                "HAL": "Hallucination", "LAN": "Language", "STR": "Structure", "IRR": "Irrelevance"}
_TRUE = {"yes": 1, "true": 1, "1": 1, "1.0": 1, "no": 0, "false": 0, "0": 0, "0.0": 0}


def load_mistek_qmsum(path: str | Path | None = None) -> list[MeetingErrorExample]:
    """QMSum Mistake with per-type existence, annotator reasoning and 0-5 impact (Likert). ``labels`` is the
    stated existence (or impact > 0 where existence is empty), ``likert`` the impact, ``reasoning`` the
    annotators' text; transcripts cut by a spreadsheet export are restored from QMSum as for
    ``meeting-errors``."""
    path = Path(path) if path else resolve(MISTEK_FILE)
    rows = read_csv(path, ("Input", "Predicted"))
    if not rows:
        raise DataFormatError(path, None, None, "no rows")
    header = set(rows[0][1])
    out = []
    for i, r in rows:
        labels: dict[str, int | None] = {}
        likert: dict[str, float | None] = {}
        reasoning: dict[str, str] = {}
        for code, name in MISTEK_TYPES.items():
            ex_col = next((c for c in (f"{name} - Existence", f"{name[:-1]} - Existence") if c in header), None)
            imp_col, why_col = f"{name} - Impact", f"{name} - Reasoning"
            if ex_col is None and imp_col not in header:
                raise DataFormatError(path, i, f"{name} - Existence",
                                      f"no column for error type {name} (expected '{name} - Existence' / '- Impact')")
            impact = None
            raw_imp = str(r.get(imp_col) or "").strip()
            if raw_imp:
                try:
                    impact = float(raw_imp)
                except ValueError:
                    raise DataFormatError(path, i, imp_col, f"expected a 0-5 impact score, got {raw_imp!r}") from None
                if not 0 <= impact <= 5:
                    raise DataFormatError(path, i, imp_col, f"impact {impact:g} is outside 0-5")
                likert[code] = impact
            raw_ex = str(r.get(ex_col) or "").strip().lower() if ex_col else ""
            if raw_ex:
                if raw_ex not in _TRUE:
                    raise DataFormatError(path, i, ex_col, f"expected yes/no (or true/false, 1/0), got {raw_ex!r}")
                labels[code] = _TRUE[raw_ex]
            else:
                labels[code] = None if impact is None else int(impact > 0)
            if str(r.get(why_col) or "").strip():
                reasoning[code] = str(r[why_col]).strip()
        transcript = text(r, "Input", path, i)
        out.append(MeetingErrorExample(
            id=f"mistek-{i - 1:03d}", dataset="mistek-qmsum", transcript=transcript, summary=text(r, "Predicted", path, i),
            labels=labels, likert=likert, reasoning=reasoning,
            meta={"row": i, "meeting": meeting_key(transcript), "gold": str(r.get("Gold") or ""),
                  "model": str(r.get("Model") or r.get("model") or "")}))
    return restore_transcripts(out)

