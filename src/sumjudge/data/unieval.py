"""QAGS-C / QAGS-X (Wang et al. 2020, "Wang'20" in AggreFact) and Topical-Chat (USR), as packaged by UniEval.

QAGS: ``scores['consistency']`` is the fraction of summary sentences that the majority of three
annotators judged consistent (QAGS protocol). A summary is faithful (label 1) only if every sentence
is (score == 1), as in QAGS; XSum summaries are single sentences, so there the score is already 0/1.
Topical-Chat: 60 dialogue contexts x 6 responses; ``context`` is the fact the response should use.
"""

from __future__ import annotations

import ast
from pathlib import Path

from sumjudge.data.readers import field, read_json
from sumjudge.data.records import FaithExample, RatedExample
from sumjudge.data.sources import DataFormatError, resolve

QAGS_FILES = {"cnndm": "unieval/qags_cnndm.json", "xsum": "unieval/qags_xsum.json"}
TOPICAL_CHAT = "unieval/topical_chat.json"
TOPICAL_CHAT_ASPECTS = ("naturalness", "coherence", "engagingness", "groundedness", "understandability", "overall")


def _scores(row: dict, path: Path, i: int) -> dict[str, float]:
    s = field(row, "scores", path, i)
    if isinstance(s, str):
        try:
            s = ast.literal_eval(s)
        except (ValueError, SyntaxError):
            raise DataFormatError(path, i, "scores", f"not a score dictionary: {s[:60]!r}") from None
    if not isinstance(s, dict) or not all(isinstance(v, (int, float)) for v in s.values()):
        raise DataFormatError(path, i, "scores", "expected a dictionary of numbers")
    return {k: float(v) for k, v in s.items()}


def _rows(rel: str) -> tuple[Path, list[dict]]:
    path = resolve(rel)
    data = read_json(path)
    if not isinstance(data, list) or not data:
        raise DataFormatError(path, None, None, "expected a non-empty JSON list")
    return path, data


def load_qags(domain: str) -> list[FaithExample]:
    path, rows = _rows(QAGS_FILES[domain])
    out = []
    for i, r in enumerate(rows):
        score = _scores(r, path, i).get("consistency")
        if score is None or not 0 <= score <= 1:
            raise DataFormatError(path, i, "scores.consistency", f"expected a value in [0, 1], got {score!r}")
        out.append(FaithExample(
            id=f"qags-{domain}-{field(r, 'doc_id', path, i)}", dataset=f"qags-{domain}",
            document=field(r, "source", path, i), summary=field(r, "system_output", path, i),
            label=int(score == 1.0), level="summary",
            meta={"consistency": score, "reference": r.get("reference", ""), "row": i}))
    return out


def load_topical_chat() -> list[RatedExample]:
    path, rows = _rows(TOPICAL_CHAT)
    group_of: dict[str, str] = {}
    out = []
    for i, r in enumerate(rows):
        src = field(r, "source", path, i)
        gid = group_of.setdefault(src, f"tc-{len(group_of):02d}")
        scores = _scores(r, path, i)
        missing = [a for a in TOPICAL_CHAT_ASPECTS if a not in scores]
        if missing:
            raise DataFormatError(path, i, "scores", f"missing aspect(s) {missing}")
        system = field(r, "system_id", path, i)
        out.append(RatedExample(id=f"{gid}|{system}", dataset="topical-chat", group_id=gid, source=src,
                                output=field(r, "system_output", path, i), scores=scores,
                                context=field(r, "context", path, i, nonempty=False),
                                meta={"system": system, "row": i}))
    return out
