"""File readers shared by the loaders: every problem becomes a DataFormatError naming file, row and field."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any, Iterable

from .sources import DataFormatError

YES_NO = {"yes": 1, "no": 0}


def read_text(path: Path) -> str:
    """A text file's content: UTF-8, a byte-order mark allowed; undecodable bytes are a DataFormatError
    naming the line and column."""
    data = Path(path).read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        col = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise DataFormatError(path, line, None, f"not UTF-8 text: byte 0x{data[e.start]:02x} at column {col} "
                                                "(save the file as UTF-8)") from None


def read_json(path: Path) -> Any:
    try:
        return json.loads(read_text(path))
    except json.JSONDecodeError as e:
        raise DataFormatError(path, e.lineno, None, f"not valid JSON ({e.msg}; truncated file?)") from None


def read_jsonl(path: Path) -> list[tuple[int, dict]]:
    """(line number, object) for every non-empty line."""
    out = []
    for i, line in enumerate(read_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise DataFormatError(path, i, None, f"not a JSON line ({e.msg}; truncated file?)") from None
        if not isinstance(obj, dict):
            raise DataFormatError(path, i, None, f"expected a JSON object, got {type(obj).__name__}")
        out.append((i, obj))
    return out


def read_csv(path: Path, required: Iterable[str], delimiter: str = ",") -> list[tuple[int, dict[str, str]]]:
    """(spreadsheet row number, row) for every row; header names are stripped of BOM and spaces."""
    with io.StringIO(read_text(path), newline="") as f:
        reader = csv.reader(f, delimiter=delimiter)
        try:
            header = [h.strip() for h in next(reader)]
        except StopIteration:
            raise DataFormatError(path, None, None, "empty file") from None
        missing = [c for c in required if c not in header]
        if missing:
            raise DataFormatError(path, 1, missing[0], f"missing column(s) {missing}; found {header}")
        rows = []
        for i, values in enumerate(reader, start=2):
            if not any(v.strip() for v in values):
                continue
            if len(values) != len(header):
                raise DataFormatError(path, i, None, f"{len(values)} fields for {len(header)} columns "
                                                     "(truncated or malformed line)")
            rows.append((i, dict(zip(header, values))))
    if not rows:
        raise DataFormatError(path, None, None, "no rows")
    return rows


def field(row: dict, name: str, path: Path, i: int | str, *, nonempty: bool = True) -> Any:
    if name not in row:
        raise DataFormatError(path, i, name, "missing")
    v = row[name]
    if nonempty and (v is None or (isinstance(v, str) and not v.strip())):
        raise DataFormatError(path, i, name, "empty")
    return v


def text(row: dict, name: str, path: Path, i: int | str) -> str:
    """A text field (document, summary, transcript): must be a string; a mapping, list or number is refused
    naming the type found, never turned into text for the model."""
    v = field(row, name, path, i)
    if not isinstance(v, str):
        raise DataFormatError(path, i, name, f"expected text, found {type(v).__name__} ({str(v)[:40]!r})")
    if "\x00" in v:
        raise DataFormatError(path, i, name, f"a NUL byte at character {v.index(chr(0)) + 1} (binary data in a text "
                                             "column?); fix or drop this row")
    return v


def yes_no(row: dict, name: str, path: Path, i: int | str) -> int:
    v = str(field(row, name, path, i)).strip().lower()
    if v not in YES_NO:
        raise DataFormatError(path, i, name, f"unknown label {v!r} (expected yes/no)")
    return YES_NO[v]


def number(row: dict, name: str, path: Path, i: int | str) -> float:
    v = field(row, name, path, i)
    try:
        return float(v)
    except (TypeError, ValueError):
        raise DataFormatError(path, i, name, f"not a number: {v!r}") from None
