"""AggreFact's error-type files (synthetic, in their exact format) and the `file:` options real files need:
labels derived from error_type, unified types converted as FacTax Section 3 says, non-unique ids, splits,
row filters, quoted label values, and user datasets entering FacTax's domains."""

import csv

import pytest

from sumjudge.data import registry, user_files
from sumjudge.data.error_taxonomy import (
    ADDITION,
    AGGREFACT_UNIFIED,
    CIRCUMSTANTIAL,
    COREFERENCE,
    ENTITY,
    NOISE,
    PREDICATE,
    convert_unified,
)
from sumjudge.data.sources import DataFormatError

COLUMNS = ["dataset", "origin", "id", "doc", "summ", "model_name", "cut", "error_type", "annotated_span"]


def aggrefact_file(folder, name, rows):
    folder.mkdir(parents=True, exist_ok=True)
    p = folder / f"{name}_error_types.csv"
    with p.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        for i, (error_type, cut) in enumerate(rows):
            w.writerow({"dataset": name, "origin": "xsum" if i % 2 else "cnndm", "id": f"doc{i // 2}",
                        "doc": f"Document {i // 2} says the mayor opened the bridge on Monday.",
                        "summ": f"Summary {i}.", "model_name": "BART", "cut": cut, "error_type": error_type,
                        "annotated_span": "[]"})
    return p


def test_every_unified_type_converts_as_section_3_says():
    """NP -> Entity, Pred -> Predicate, Sent -> Addition; every extrinsic error is also an Addition Error."""
    assert convert_unified(["intrinsic-NP"]) == [ENTITY]
    assert convert_unified(["extrinsic-NP"]) == sorted([ENTITY, ADDITION])
    assert convert_unified(["intrinsic-predicate"]) == [PREDICATE]
    assert convert_unified(["extrinsic-predicate"]) == sorted([PREDICATE, ADDITION])
    assert convert_unified(["intrinsic-entire_sent"]) == [ADDITION] == convert_unified(["extrinsic-entire_sent"])
    assert convert_unified(["entire_sent"]) == [ADDITION]
    assert convert_unified(["noise"]) == [NOISE]  # kept, explicitly unmapped
    assert convert_unified(["intrinsic-NP", "extrinsic-predicate"]) == sorted([ENTITY, PREDICATE, ADDITION])
    assert set(AGGREFACT_UNIFIED) == {"intrinsic-NP", "extrinsic-NP", "intrinsic-predicate", "extrinsic-predicate",
                                      "intrinsic-entire_sent", "extrinsic-entire_sent", "entire_sent", "noise"}
    assert not {CIRCUMSTANTIAL, COREFERENCE} & {t for v in AGGREFACT_UNIFIED.values() for t in v}  # no such unified type


def test_an_aggrefact_folder_loads_with_labels_types_splits_and_unique_ids(tmp_path):
    rows = [("correct", "test"), ("['intrinsic-NP', 'extrinsic-NP']", "test"), ("['extrinsic-predicate']", "val"),
            ("['intrinsic-entire_sent']", "test"), ("['entire_sent']", "test"), ("['noise']", "val"), ("", "test"),
            ("[]", "test")]
    aggrefact_file(tmp_path / "em", "Goyal21", rows)
    aggrefact_file(tmp_path / "em", "CLIFF", [("['intrinsic-predicate']", "test")])
    test = registry.load(f"aggrefact-errors:{tmp_path / 'em'}", split="test")
    val = registry.load(f"aggrefact-errors:{tmp_path / 'em'}", split="val")
    assert len(test) == 7 and len(val) == 2 and len(registry.load(f"aggrefact-errors:{tmp_path / 'em'}", split="all")) == 9
    by = {ex.summary: ex for ex in test + val}
    assert by["Summary 0."].label == 1 and by["Summary 0."].error_types == []  # "correct"
    assert by["Summary 6."].label == 1 and by["Summary 7."].label == 1  # empty cell, empty list: no error
    assert by["Summary 1."].label == 0 and by["Summary 1."].error_types == sorted([ENTITY, ADDITION])
    assert by["Summary 2."].error_types == sorted([PREDICATE, ADDITION]) and by["Summary 2."].meta["cut"] == "val"
    assert by["Summary 3."].error_types == [ADDITION] == by["Summary 4."].error_types
    assert by["Summary 5."].error_types == [NOISE] and by["Summary 5."].label == 0
    ids = [ex.id for ex in test + val]
    assert len(ids) == len(set(ids)) and "Goyal21:doc0#2" in ids  # "doc0" is shared by two summaries
    assert by["Summary 1."].meta["doc_id"] == "doc0" and by["Summary 1."].meta["origin"] == "xsum"
    assert by["Summary 0."].meta["dataset"] == "CLIFF" or by["Summary 0."].meta["model_name"] == "BART"


def test_unknown_unified_type_is_named(tmp_path):
    aggrefact_file(tmp_path / "bad", "FRANK", [("['sideways-NP']", "test")])
    with pytest.raises(DataFormatError, match=r"FRANK_error_types.csv, row 2, field 'error_type'.*sideways-NP"):
        registry.load(f"aggrefact-errors:{tmp_path / 'bad'}")


def test_file_spec_options_real_files_need(tmp_path):
    p = aggrefact_file(tmp_path, "FRANK", [("correct", "test"), ("['intrinsic-NP']", "test"), ("['noise']", "val"),
                                           ("correct", "val")])
    base = f"file:{p}?document=doc&summary=summ&id=id"
    exs = registry.load(f"{base}&label=error_type&faithful=correct&error_types=error_type&error_map=aggrefact"
                        "&split=cut", split="val")
    assert [ex.label for ex in exs] == [0, 1] and exs[0].error_types == [NOISE]
    exs = registry.load(f'{base}&label=error_type&labels=correct:1,"[\'intrinsic-NP\']":0,*:0&keep=cut:test')
    assert [ex.label for ex in exs] == [1, 0] and [ex.id for ex in exs] == ["doc0", "doc0#2"]
    with pytest.raises(DataFormatError, match="no split column"):
        user_files.load_file_spec(f"{base}&label=error_type&faithful=correct", split="val")
    with pytest.raises(DataFormatError, match="unknown label"):
        registry.load(f"{base}&label=error_type&labels=correct:1")  # no default for the other values
    with pytest.raises(DataFormatError, match="unknown domain"):
        registry.get(f"{base}&domain=Moon")
    spec = registry.get(f"{base}&label=error_type&faithful=correct&domain=CNN/DM&paper=frank")
    assert spec.domain == "CNN/DM" and spec.paper_column == "frank"


def test_python_literal_and_unmapped_error_types_in_file_specs(tmp_path):
    p = tmp_path / "mine.csv"
    p.write_text('document,summary,label,types\nD,S1,0,"[\'Entity Error\', \'unmapped\']"\nD,S2,1,\n')
    exs = registry.load(f"file:{p}?error_types=types")
    assert exs[0].error_types == sorted([ENTITY, "Other (unmapped)"]) and exs[1].error_types == []
