"""The LLM-AggreFact leaderboard's published balanced accuracy per model and dataset, read from the leaderboard
site's data file (``src/app/data.tsx``, one object per model: ``model: "Llama-3-70B-Instruct"``, then one
``<dataset>: <BAcc>`` field per dataset; -1 where a model was not evaluated), pinned by commit and fetched like any
benchmark file (``sumjudge data fetch llm-aggrefact-leaderboard``). Nothing here types a number: where the file is
not at hand the column stays blank and says why."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from sumjudge.data import sources

LEADERBOARD_FILE = "leaderboards/llm-aggrefact-data.tsx"
GROUP = "llm-aggrefact-leaderboard"  # its name for ``sumjudge data fetch``
# the leaderboard's column for each of our (dataset, level) pairs: its unit is one claim per summary sentence
COLUMNS = {("tofueval-meetingbank", "sentence"): "MeetB", ("tofueval-mediasum", "sentence"): "MediaS"}

_MODEL = re.compile(r'\bmodel:\s*"([^"]+)"')
_FIELD = re.compile(r"\b([A-Za-z][A-Za-z0-9_]*):\s*(-?\d+(?:\.\d+)?)\s*,")


@dataclass(frozen=True)
class Published:
    model: str  # as the leaderboard names it
    dataset: str  # the leaderboard's column
    bacc: float  # in percent, as published
    source: str  # where it was read: the pinned address


def parse(text: str) -> dict[str, dict[str, float]]:
    """{leaderboard model name: {dataset column: BAcc}} from the data file's text; a -1 (not evaluated) is left
    out."""
    starts = [(m.start(), m.group(1)) for m in _MODEL.finditer(text)]
    table: dict[str, dict[str, float]] = {}
    for (start, name), (end, _) in zip(starts, starts[1:] + [(len(text), "")]):
        fields = {k: float(v) for k, v in _FIELD.findall(text[start:end]) if float(v) >= 0}
        table[name] = fields
    return table


def model_key(name: str) -> str:
    """A model's name compared with the leaderboard's: the last part of a Hugging Face id, without "Meta-", lower
    case ("meta-llama/Meta-Llama-3-70B-Instruct" -> "llama-3-70b-instruct")."""
    last = name.rstrip("/").split("/")[-1]
    return re.sub(r"^meta-", "", last.lower())


def leaderboard(path: Path | None = None) -> dict[str, dict[str, float]] | None:
    """The parsed data file: ``path``, else the fetched copy or a mirror's; None where neither is at hand."""
    try:
        path = path or sources.resolve(LEADERBOARD_FILE)
    except sources.DataMissingError:
        return None
    return parse(path.read_text(encoding="utf-8"))


def published(model: str, dataset: str, level: str | None, path: Path | None = None) -> Published | str:
    """The leaderboard's BAcc for ``model`` on ``dataset`` at ``level``, or why there is none (in words)."""
    column = COLUMNS.get((dataset, level or ""))
    if column is None:
        return f"the leaderboard has no {dataset} at {level or 'its default'} level"
    table = leaderboard(path)
    if table is None:
        return f"the leaderboard's data is not fetched (sumjudge data fetch {GROUP})"
    by_key = {model_key(name): name for name in table}
    name = by_key.get(model_key(model))
    if name is None or column not in table[name]:
        return f"the leaderboard lists no {model_key(model)} on {column}"
    return Published(model=name, dataset=column, bacc=table[name][column],
                     source=sources.FILES[LEADERBOARD_FILE].url)
