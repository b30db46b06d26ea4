"""Your own (document, summary, label) files: jsonl, json (a list), csv/tsv or parquet, with column mapping.

Use from the CLI as ``--dataset file:PATH`` or with a mapping,
``--dataset "file:my.csv?document=article&summary=claim&label=is_consistent&labels=yes:1,no:0"``.
Labels must be 1 = faithful / 0 = unfaithful (or mapped to them with ``labels=``). An optional
``error_types=COLUMN`` reads FacTax's five error types per summary (a JSON list, or names separated by ``;``
or ``,``; e.g. "Entity Error; Addition Error"), so that any dataset converted to FacTax's taxonomy
(Appendix A) can feed FacTax's error-type tables and its supervised pairs (Error Type Completion).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Callable, Iterable
from urllib.parse import parse_qsl

from .readers import field, read_csv, read_json, read_jsonl, text
from .records import FaithExample
from .sources import DataFormatError, DataMissingError

DEFAULT_LABELS = {"1": 1, "0": 0, "1.0": 1, "0.0": 0, "true": 1, "false": 0, "faithful": 1, "unfaithful": 0,
                  "consistent": 1, "inconsistent": 0, "yes": 1, "no": 0}


def _rows(path: Path, columns: Iterable[str]) -> list[tuple[int, dict]]:
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        return read_jsonl(path)
    if suffix == ".json":
        data = read_json(path)
        if not isinstance(data, list):
            raise DataFormatError(path, None, None, "expected a JSON list of objects")
        for i, r in enumerate(data):
            if not isinstance(r, dict):
                raise DataFormatError(path, i, None, f"expected a JSON object, got {type(r).__name__}")
        return list(enumerate(data))
    if suffix in (".csv", ".tsv"):
        return read_csv(path, columns, delimiter="\t" if suffix == ".tsv" else ",")
    if suffix == ".parquet":
        import pandas as pd

        return list(enumerate(pd.read_parquet(path).to_dict("records"), start=1))
    raise DataFormatError(path, None, None, f"unsupported file type {suffix!r} (jsonl, json, csv, tsv, parquet)")


def load_table(path: str | Path, *, dataset: str, document: str = "document", summary: str = "summary",
               label: str = "label", id: str | None = None, group: str | None = None,
               labels: dict[str, int] | None = None, keep: Callable[[dict], bool] | None = None,
               extra: Iterable[str] = (), error_types: str | None = None) -> list[FaithExample]:
    path = Path(path)
    if not path.exists():
        raise DataMissingError(f"{path} does not exist")
    label_map = {k.lower(): v for k, v in (labels or DEFAULT_LABELS).items()}
    out = []
    for i, r in _rows(path, [c for c in (document, summary, label, id) if c]):
        if keep is not None and not keep(r):
            continue
        raw = str(field(r, label, path, i)).strip().lower()
        if raw not in label_map:
            raise DataFormatError(path, i, label, f"unknown label {raw!r}; known: {sorted(label_map)} "
                                                  "(map others with labels=value:1,value:0)")
        ex_id = str(field(r, id, path, i)) if id else f"{path.stem}-{i}"
        meta = {"row": i, **{c: r[c] for c in extra if c in r}}
        if group:
            meta["group"] = r.get(group)
        out.append(FaithExample(id=ex_id, dataset=dataset, document=text(r, document, path, i),
                                summary=text(r, summary, path, i), label=label_map[raw], level="summary",
                                error_types=_error_types(r, error_types, path, i) if error_types else [],
                                meta=meta))
    return out


def _error_types(row: dict, column: str, path: Path, i: int) -> list[str]:
    """FacTax type names from a list or a ';'/','-separated string; '_' and case are forgiven."""
    import json

    from .factax_types import FACTAX_TYPES

    v = row.get(column)
    if v is None or (isinstance(v, str) and not v.strip()) or v != v:  # missing, empty or NaN: no error type
        return []
    if isinstance(v, str) and v.strip().startswith("["):
        try:
            v = json.loads(v)
        except json.JSONDecodeError:
            raise DataFormatError(path, i, column, "not a JSON list") from None
    names = v if isinstance(v, list) else [x for x in str(v).replace(";", ",").split(",")]
    known = {t.lower(): t for t in FACTAX_TYPES}
    out = []
    for name in names:
        key = " ".join(str(name).replace("_", " ").split()).lower()
        if not key:
            continue
        if key not in known:
            raise DataFormatError(path, i, column, f"unknown error type {name!r}; expected FacTax's {list(FACTAX_TYPES)}")
        out.append(known[key])
    return sorted(set(out))


def parse_file_spec(spec: str) -> tuple[Path, dict]:
    """``file:PATH?document=a&summary=b&label=c&id=d&labels=yes:1,no:0&error_types=e`` -> (path, load_table
    keywords)."""
    body = spec[len("file:"):]
    path, _, query = body.partition("?")
    opts: dict = {}
    for k, v in parse_qsl(query, keep_blank_values=False):
        if k in ("document", "summary", "label", "id", "error_types"):
            opts[k] = v
        elif k == "labels":
            try:
                opts["labels"] = {a: int(b) for a, b in (p.rsplit(":", 1) for p in v.split(","))}
            except ValueError:
                raise DataFormatError(spec, None, "labels", "expected value:1,value:0") from None
        else:
            raise DataFormatError(spec, None, k, "unknown option (document, summary, label, id, labels, error_types)")
    return Path(path).expanduser(), opts


def load_file_spec(spec: str) -> list[FaithExample]:
    path, opts = parse_file_spec(spec)
    name = f"file:{path.name}-{hashlib.sha256(spec.encode()).hexdigest()[:6]}"
    return load_table(path, dataset=name, **opts)
