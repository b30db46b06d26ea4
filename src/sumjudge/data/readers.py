"""File readers shared by the loaders: every problem becomes a DataFormatError naming file, row and field."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from typing import Any, Iterable

from sumjudge.data.sources import DataFormatError

YES_NO = {"yes": 1, "no": 0}

# a field may hold a whole long document: csv's default limit (131,072 characters) would refuse a 200 KB one
CSV_FIELD_LIMIT = 2 ** 31 - 1
# a \uD800-\uDFFF escape: half of a UTF-16 pair, a character only when its other half follows
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
TOO_DEEP = "nested too deeply to read (lists or objects inside each other past Python's recursion limit)"


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


def read_json(path: Path, rows: bool = False) -> Any:
    """A JSON file's content. ``rows``: a list of objects, each checked as ``read_jsonl`` checks a line
    (numbered from 1)."""
    content = read_text(path)
    try:
        data = json.loads(content)
    except json.JSONDecodeError as e:
        raise DataFormatError(path, e.lineno, None, f"not valid JSON ({e.msg}; truncated file?)") from None
    except RecursionError:
        raise DataFormatError(path, None, None, TOO_DEEP) from None
    if rows:
        if not isinstance(data, list):
            raise DataFormatError(path, None, None, "expected a JSON list of objects")
        escapes = _SURROGATE_ESCAPE.search(content) is not None
        for i, r in enumerate(data, start=1):
            _check_row(r, path, i, escapes)
    return data


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
        except RecursionError:
            raise DataFormatError(path, i, None, TOO_DEEP) from None
        _check_row(obj, path, i, _SURROGATE_ESCAPE.search(line) is not None)
        out.append((i, obj))
    return out


def _check_row(obj: Any, path: Path, i: int, escapes: bool) -> None:
    """A row must be an object; where its text held a surrogate escape (``escapes``), every string in it must be
    text: a lone surrogate (``"\\ud800"`` without its other half) is no character, and would stop the run at the
    first request that carries it."""
    if not isinstance(obj, dict):
        raise DataFormatError(path, i, None, f"expected a JSON object, got {type(obj).__name__}")
    if not escapes:
        return
    stack = [(k, k) for k in obj] + [(k, v) for k, v in obj.items()]
    while stack:
        name, v = stack.pop()
        if isinstance(v, dict):
            stack += [(name, x) for kv in v.items() for x in kv]
        elif isinstance(v, list):
            stack += [(name, x) for x in v]
        elif isinstance(v, str):
            try:
                v.encode("utf-8")
            except UnicodeEncodeError as e:
                raise DataFormatError(path, i, name, f"a lone surrogate \\u{ord(v[e.start]):04x} at character "
                                                     f"{e.start + 1} (half of a UTF-16 pair, no character: a broken "
                                                     "escape?); fix or drop this row") from None


def read_csv(path: Path, required: Iterable[str], delimiter: str = ",") -> list[tuple[int, dict[str, str]]]:
    """(spreadsheet row number, row) for every row; header names are stripped of BOM and spaces."""
    if csv.field_size_limit() < CSV_FIELD_LIMIT:
        csv.field_size_limit(CSV_FIELD_LIMIT)
    with io.StringIO(read_text(path), newline="") as f:
        reader = csv.reader(f, delimiter=delimiter)
        try:
            header = [h.strip() for h in next(reader)]
        except StopIteration:
            raise DataFormatError(path, None, None, "empty file") from None
        except csv.Error as e:
            raise DataFormatError(path, 1, None, f"not a readable CSV line ({e})") from None
        for k, name in enumerate(header):
            if name and name in header[:k]:
                raise DataFormatError(path, 1, name, f"the column appears twice in the header (columns "
                                                     f"{header.index(name) + 1} and {k + 1}); rename or drop one")
        missing = [c for c in required if c not in header]
        if missing:
            raise DataFormatError(path, 1, missing[0], f"missing column(s) {missing}; found {header}")
        rows = []
        i = 1
        try:
            for i, values in enumerate(reader, start=2):
                if not any(v.strip() for v in values):
                    continue
                if len(values) != len(header):
                    raise DataFormatError(path, i, None, f"{len(values)} fields for {len(header)} columns "
                                                         "(truncated or malformed line)")
                rows.append((i, dict(zip(header, values))))
        except csv.Error as e:
            raise DataFormatError(path, i + 1, None, f"not a readable CSV row ({e})") from None
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
