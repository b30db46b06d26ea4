"""Your own (document, summary, label) files: jsonl, json (a list), csv/tsv or parquet, with column mapping.

Use from the CLI as ``--dataset file:PATH`` or with options, e.g.
``--dataset "file:my.csv?document=article&summary=claim&label=is_consistent&labels=yes:1,no:0"``:

- ``document``, ``summary``, ``label``, ``id``: column names. Labels must be 1 = faithful / 0 = unfaithful or be
  mapped with ``labels=value:1,value:0``; ``*:0`` gives every other value a label, and a value holding commas is
  written in double quotes (``labels="[a, b]":0``). ``faithful=correct`` (values separated by ``|``) labels
  those values 1 and every other value 0: a label derived from an error-type column (``label=error_type``, or
  ``label_from=error_type``).
- ``error_types=COLUMN``: the registered error taxonomy's types per summary (``taxonomies.ERRORS``) (a JSON or Python-literal list, or names
  separated by ``;`` or ``,``; "unmapped" marks a type left unmapped); ``error_map=aggrefact`` reads AggreFact's
  unified types instead (``['intrinsic-NP', 'extrinsic-predicate']``, ``noise``) and converts them through the
  taxonomy's ``aggrefact-unified`` conversion.
- ``keep=COLUMN:VALUE`` (repeatable; ``|`` between values): only rows whose column holds one of the values.
- ``split=COLUMN``: the column ``--split`` filters on (e.g. AggreFact's ``cut``: val / test); without it,
  ``--split`` other than ``test`` is refused.
- Ids need not be unique: a repeated id gets ``#2``, ``#3`` ... (the column's value stays in ``meta['doc_id']``).
- ``domain=CNN/DM|XSum|Dialogues|Reports|Stories`` and ``paper=COLUMN`` (a column of the paper's table of
  domains): the dataset enters that domain and MACRO in the domain tables, beside that paper value.

``aggrefact-errors:PATH`` (a file or a folder of AggreFact's ``<Dataset>_error_types.csv``) is the same reader
with AggreFact's columns preset: ``doc``, ``summ``, label from ``error_type`` ("correct" or an empty list is
faithful), its unified types converted, ``cut`` as the split, and ``dataset``, ``origin``, ``model_name`` kept.
"""

from __future__ import annotations

import ast
import csv
import hashlib
import io
import json
from dataclasses import replace
from pathlib import Path
from typing import Callable, Iterable
from urllib.parse import parse_qsl

from sumjudge.data import taxonomies
from sumjudge.data.readers import field, read_csv, read_json, read_jsonl, text
from sumjudge.data.records import FaithExample
from sumjudge.data.sources import DataFormatError, DataMissingError

DEFAULT_LABELS = {"1": 1, "0": 0, "1.0": 1, "0.0": 0, "true": 1, "false": 0, "faithful": 1, "unfaithful": 0,
                  "consistent": 1, "inconsistent": 0, "yes": 1, "no": 0}


def _rows(path: Path, columns: Iterable[str]) -> list[tuple[int, dict]]:
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        return read_jsonl(path)
    if suffix == ".json":  # rows numbered from 1, as in JSONL and CSV files
        return list(enumerate(read_json(path, rows=True), start=1))
    if suffix in (".csv", ".tsv"):
        return read_csv(path, columns, delimiter="\t" if suffix == ".tsv" else ",")
    if suffix == ".parquet":
        import pandas as pd

        try:
            frame = pd.read_parquet(path)
        except Exception as e:  # a truncated or foreign file: pyarrow's errors have no common base
            raise DataFormatError(path, None, None, f"not a readable parquet file ({type(e).__name__}: {e})") from None
        return list(enumerate(frame.to_dict("records"), start=1))
    raise DataFormatError(path, None, None, f"unsupported file type {suffix!r} (jsonl, json, csv, tsv, parquet)")


def load_table(path: str | Path, *, dataset: str, document: str = "document", summary: str = "summary",
               label: str = "label", id: str | None = None, group: str | None = None,
               labels: dict[str, int] | None = None, keep: Callable[[dict], bool] | None = None,
               extra: Iterable[str] = (), error_types: str | None = None, error_map: str | None = None
               ) -> list[FaithExample]:
    path = Path(path)
    if not path.exists():
        raise DataMissingError(f"{path} does not exist")
    label_map = {k.lower(): v for k, v in (labels or DEFAULT_LABELS).items()}
    default = label_map.pop("*", None)
    out: list[FaithExample] = []
    seen: dict[str, int] = {}
    for i, r in _rows(path, [c for c in (document, summary, label, id) if c]):
        ex_id = str(field(r, id, path, i)) if id else f"{path.stem}-{i}"
        doc_id = ex_id
        if id:  # ids need not be unique (AggreFact: a document id shared by several summaries); counted over every
            seen[ex_id] = seen.get(ex_id, 0) + 1  # row, so an example's id does not depend on a split or filter
            if seen[ex_id] > 1:
                ex_id = f"{ex_id}#{seen[ex_id]}"
        if keep is not None and not keep(r):
            continue
        # an empty label cell is a value only where the map names it ("" or a default: AggreFact's "no error")
        value = field(r, label, path, i, nonempty="" not in label_map and default is None)
        raw = "" if value is None or value != value else str(value).strip().lower()  # None / NaN: empty
        if raw == "" and "" not in label_map and default is None:
            raise DataFormatError(path, i, label, "the label is empty (a blank or NaN cell); give it a label, drop the "
                                                  "row, or map empty cells with labels=:0")
        if raw not in label_map and default is None:
            raise DataFormatError(path, i, label, f"unknown label {raw!r}; known: {sorted(label_map)} "
                                                  "(map others with labels=value:1,value:0, or *:0 for the rest)")
        meta = {"row": i, "file": str(path), **{c: r[c] for c in extra if c in r}}
        if id:
            meta["doc_id"] = doc_id
        if group:
            meta["group"] = r.get(group)
        types = _error_types(r, error_types, path, i, error_map) if error_types else []
        out.append(FaithExample(id=ex_id, dataset=dataset, document=text(r, document, path, i),
                                summary=text(r, summary, path, i), label=label_map.get(raw, default), level="summary",
                                error_types=types, meta=meta))
    return out


def _listed(v, path: Path, i: int, column: str):
    """A cell holding a list: JSON, or a Python literal (AggreFact writes ``['intrinsic-NP']``)."""

    try:
        return json.loads(v)
    except json.JSONDecodeError:
        try:
            return ast.literal_eval(v)
        except (ValueError, SyntaxError):
            raise DataFormatError(path, i, column, f"not a list (JSON or Python literal): {v[:60]!r}") from None


def _error_types(row: dict, column: str, path: Path, i: int, error_map: str | None = None) -> list[str]:
    """The registered error taxonomy's type names (``taxonomies.ERRORS``) from a list or a ';'/','-separated string
    ('_' and case are forgiven; "unmapped" is its unmapped type), or, with ``error_map="aggrefact"``, AggreFact's
    unified types converted to it."""
    taxonomy = taxonomies.get(taxonomies.ERRORS)

    v = row.get(column)
    if v is None or (isinstance(v, str) and not v.strip()) or v != v:  # missing, empty or NaN: no error type
        return []
    if isinstance(v, str) and v.strip().lower() == "correct":
        return []
    if isinstance(v, str) and v.strip().startswith("["):
        v = _listed(v.strip(), path, i, column)
    names = v if isinstance(v, list) else [x for x in str(v).replace(";", ",").split(",")]
    if error_map == "aggrefact":
        try:
            return taxonomy.convert("aggrefact-unified", [str(n).strip() for n in names if str(n).strip()])
        except KeyError as e:
            raise DataFormatError(path, i, column, f"unknown AggreFact error type {e.args[0]!r}; known: "
                                                   "intrinsic-/extrinsic-NP, -predicate, -entire_sent, entire_sent, "
                                                   "noise") from None
    known = {t.lower(): t for t in (*taxonomy.types, *taxonomy.unmapped_types)} | {"unmapped": taxonomy.unmapped}
    out = []
    for name in names:
        key = " ".join(str(name).replace("_", " ").split()).lower()
        if not key:
            continue
        if key not in known:
            raise DataFormatError(path, i, column, f"unknown error type {name!r}; expected one of {list(taxonomy.types)} "
                                                   "or 'unmapped'")
        out.append(known[key])
    return sorted(set(out))


SPEC_OPTIONS = ("document", "summary", "label", "label_from", "id", "labels", "faithful", "error_types", "error_map", "keep",
                "split", "domain", "paper")
DOMAINS = ("CNN/DM", "XSum", "Dialogues", "Reports", "Stories")


def _pairs(text: str) -> list[tuple[str, str]]:
    """``a:1,"b, c":0`` -> [("a", "1"), ("b, c", "0")]: commas inside double quotes belong to the value."""

    items = next(csv.reader(io.StringIO(text), skipinitialspace=True), [])
    out = []
    for item in items:
        value, sep, number = item.rpartition(":")
        if not sep:
            raise ValueError(item)
        out.append((value.strip().strip('"'), number.strip()))
    return out


def parse_file_spec(spec: str) -> tuple[Path, dict]:
    """``file:PATH?document=a&summary=b&...`` -> (path, options: load_table keywords plus ``split``, ``domain``,
    ``paper``); every option is described in the module docstring."""
    body = spec[len("file:"):]
    path, _, query = body.partition("?")
    opts: dict = {}
    keeps: dict[str, set[str]] = {}
    for k, v in parse_qsl(query, keep_blank_values=False):
        if k in ("document", "summary", "label", "id", "error_types", "split", "paper"):
            opts[k] = v
        elif k == "label_from":  # the label's column when a value map derives it (same as label=)
            opts["label"] = v
        elif k == "labels":
            try:
                opts["labels"] = {**opts.get("labels", {}), **{a: int(b) for a, b in _pairs(v)}}
            except ValueError:
                raise DataFormatError(spec, None, "labels", 'expected value:1,value:0 (*:0 for the rest, "a, b":0 for '
                                                            "a value with commas)") from None
        elif k == "faithful":
            opts["labels"] = {**{x.strip(): 1 for x in v.split("|")}, "*": 0, **opts.get("labels", {})}
        elif k == "error_map":
            if v != "aggrefact":
                raise DataFormatError(spec, None, k, f"unknown error map {v!r} (aggrefact)")
            opts[k] = v
        elif k == "keep":
            col, sep, values = v.partition(":")
            if not sep:
                raise DataFormatError(spec, None, k, "expected keep=COLUMN:VALUE (values separated by |)")
            keeps.setdefault(col, set()).update(x.strip() for x in values.split("|"))
        elif k == "domain":
            if v not in DOMAINS:
                raise DataFormatError(spec, None, k, f"unknown domain {v!r}; the domains are {', '.join(DOMAINS)}")
            opts[k] = v
        else:
            raise DataFormatError(spec, None, k, f"unknown option ({', '.join(SPEC_OPTIONS)})")
    if keeps:
        opts["keep"] = lambda r, keeps=keeps: all(str(r.get(c, "")).strip() in vals for c, vals in keeps.items())
    return Path(path).expanduser(), opts


def load_file_spec(spec: str, split: str | None = None) -> list[FaithExample]:
    path, opts = parse_file_spec(spec)
    name = f"file:{path.name}-{hashlib.sha256(spec.encode()).hexdigest()[:6]}"
    return load_with_split(path, name, opts, split, spec)


def load_with_split(path: Path, name: str, opts: dict, split: str | None, where: str) -> list[FaithExample]:
    """``load_table`` over a file, or every file of a folder, keeping the rows of ``split`` (its column given
    as the ``split`` option; without one only ``test``, the default, is accepted)."""
    opts = dict(opts)
    column = opts.pop("split", None)
    opts.pop("domain", None)
    opts.pop("paper", None)
    if column is None and split not in (None, "test", "all"):
        raise DataFormatError(where, None, "split", f"--split {split}: this dataset has no split column (give "
                                                    "split=COLUMN, e.g. split=cut)")
    if column and split not in (None, "all"):
        inner = opts.get("keep")
        opts["keep"] = lambda r, inner=inner: str(r.get(column, "")).strip() == split and (inner is None or inner(r))
    files = sorted(path.glob("*_error_types.csv")) or sorted(p for p in path.iterdir() if p.is_file()) \
        if path.is_dir() else [path]
    if not files:
        raise DataMissingError(f"{path} holds no data files")
    if len(files) == 1:
        return load_table(files[0], dataset=name, **opts)  # an empty result is refused by the registry, named
    out = []
    for f in files:  # several files: ids are prefixed with the file's dataset name (AggreFact: Goyal21, CLIFF ...)
        tag = f.stem.removesuffix("_error_types")
        out += [replace(ex, id=f"{tag}:{ex.id}") for ex in load_table(f, dataset=name, **opts)]
    return out


# AggreFact's error-type files (data/error_type_mapping/<Dataset>_error_types.csv): columns dataset, origin, id
# (a document id several summaries share), doc, summ, model_name (some files), cut (val/test), error_type,
# annotated_span
AGGREFACT_ERRORS = {"document": "doc", "summary": "summ", "label": "error_type", "id": "id",
                    "labels": {"correct": 1, "": 1, "[]": 1, "*": 0}, "error_types": "error_type",
                    "error_map": "aggrefact", "split": "cut", "group": "dataset",
                    "extra": ("dataset", "origin", "model_name", "cut", "annotated_span")}


def load_aggrefact_errors(path: str | Path, split: str | None = "test") -> list[FaithExample]:
    """AggreFact's error-type files, a file or a folder of them: labels derived from ``error_type`` ("correct" or
    an empty list = faithful), unified types converted to the error taxonomy's, ``cut`` as the split."""
    path = Path(path).expanduser()
    if not path.exists():
        raise DataMissingError(f"{path} does not exist (AggreFact's data/error_type_mapping/*_error_types.csv; "
                               "sumjudge data fetch aggrefact-errors downloads them)")
    return load_with_split(path, "aggrefact-errors", AGGREFACT_ERRORS, split, str(path))
