"""Loaders on the real benchmark mirror, the ambiguity mapping, bad input, seeded subsets."""

import shutil
from collections import Counter

import pytest
from conftest import needs_mirror, require

from sumjudge.data import registry, sources, tofueval
from sumjudge.data.ambiguity_taxonomy import TAXONOMY, normalise_category, normalise_subcategory
from sumjudge.data.records import FaithExample, RatedExample
from sumjudge.data.sources import DataFormatError, DataMissingError


@needs_mirror
def test_tofueval_meetingbank_sentence_and_summary_counts():
    sents = registry.load("tofueval-meetingbank", level="sentence")
    assert len(sents) == 777 and len({s.summary for s in sents}) == 770
    # 5 texts written twice and 1 three times: 764 + 10 + 3 rows = 777, 764 + 5 + 1 texts = 770
    assert Counter(s.meta["shared_text"] for s in sents) == {1: 764, 2: 10, 3: 3}
    assert all(s.document.strip() and s.label in (0, 1) for s in sents)
    summaries = registry.load("tofueval-meetingbank", level="summary")
    assert len(summaries) == 267 and sum(s.label == 0 for s in summaries) == 98
    assert sum(len(s.sentences) for s in summaries) == 777
    for s in summaries:  # a summary is unfaithful iff one of its sentences is; sentences in sent_idx order
        assert s.label == int(all(s.sentence_labels))
        assert s.meta["sent_idx"] == sorted(s.meta["sent_idx"])
        assert s.summary == " ".join(s.sentences)


@needs_mirror
def test_duplicate_sentences_keep_their_own_rows_and_labels():
    sents = registry.load("tofueval-meetingbank", level="sentence")
    by_text = {}
    for s in sents:
        by_text.setdefault(s.summary, []).append(s)
    dups = {t: ss for t, ss in by_text.items() if len(ss) > 1}
    assert sum(len(ss) - 1 for ss in dups.values()) == 7
    for ss in dups.values():
        assert len({s.id for s in ss}) == len(ss)  # distinct TofuEval identities
        assert len({s.document for s in ss}) == 1 and all(s.meta["shared_text"] == len(ss) for s in ss)


@needs_mirror
def test_ambiguity_dataset():
    amb = registry.load("meetingbank-ambiguity")
    assert len(amb) == 770 and sum(e.ambiguity.ambiguous for e in amb) == 131
    types = Counter(t for e in amb for t in e.ambiguity.subtypes)
    assert set(types) <= {t for _, t in TAXONOMY}
    assert types["Conflation"] == 24 + 1 + 3 and types["Other evaluability issue"] == 10
    assert all(e.ambiguity.raw_subcategory or not e.ambiguity.ambiguous for e in amb)


# Every (category, sub-category) string pair in the MADISSE file, mapped by hand to Table 24.
RAW_PAIRS = {
    ("Other", "-"): (("other",), ("Other evaluability issue",)),
    ("context phenomena", "Conflation"): (("context",), ("Conflation",)),
    ("context phenomena", "Decontextualization"): (("context",), ("Decontextualization",)),
    ("context phenomena", "Other context phenoma"): (("context",), ("Other context phenomenon",)),
    ("context phenomena", "Other context phenomena"): (("context",), ("Other context phenomenon",)),
    ("context phenomena", "Other meaning phenomena"): (("context",), ("Other meaning phenomenon",)),
    ("implicit reasoning phenomena", "Deduction"): (("implicit_reasoning",), ("Deduction",)),
    ("implicit reasoning phenomena", "Inference-commonsense"): (("implicit_reasoning",), ("Inference: Common-sense",)),
    ("implicit reasoning phenomena", "Inference-value-based"): (("implicit_reasoning",), ("Inference: Value-based",)),
    ("implicit reasoning phenomena/context phenomena", "Inference-commonsense/Conflation"):
        (("implicit_reasoning", "context"), ("Inference: Common-sense", "Conflation")),
    ("implicit reasoning phenomena/meaning phenomena", "Deduction/Semantic relations:Synonymy"):
        (("implicit_reasoning", "meaning"), ("Deduction", "Semantic relations: Synonymy/Paraphrasing")),
    ("meaning phenomena", "Linguistic ambiguity: Lexical"): (("meaning",), ("Linguistic ambiguity: Lexical",)),
    ("meaning phenomena", "linguistic ambiguity: Lexical"): (("meaning",), ("Linguistic ambiguity: Lexical",)),
    ("meaning phenomena", "Linguistic ambiguity: Structural"): (("meaning",), ("Linguistic ambiguity: Structural",)),
    ("meaning phenomena", "Structural ambiguity"): (("meaning",), ("Linguistic ambiguity: Structural",)),
    ("meaning phenomena", "Non-assertion"): (("meaning",), ("Non-assertion",)),
    ("meaning phenomena", "Other meaning phenomena"): (("meaning",), ("Other meaning phenomenon",)),
    ("meaning phenomena", "Semantic relations: Hypernymy/Generalization"):
        (("meaning",), ("Semantic relations: Hypernymy/Generalization",)),
    ("meaning phenomena", "Semantic relations: Synonymy"): (("meaning",), ("Semantic relations: Synonymy/Paraphrasing",)),
    ("meaning phenomena", "Vagueness"): (("meaning",), ("Vagueness",)),
    ("meaning phenomena/context phenomena", "Linguistic ambiguity: Structural /Conflation"):
        (("meaning", "context"), ("Linguistic ambiguity: Structural", "Conflation")),
    ("", ""): ((), ()),
}


@pytest.mark.parametrize("raw", sorted(RAW_PAIRS))
def test_every_raw_ambiguity_string_maps(raw):
    cat, sub = raw
    assert (normalise_category(cat), normalise_subcategory(sub, cat)) == RAW_PAIRS[raw]


@needs_mirror
def test_the_mirror_has_no_other_raw_strings():
    rows = tofueval.read_ambiguity_file(sources.resolve(tofueval.AMBIGUITY_JSON))
    assert {(r["ambiguity"].raw_category, r["ambiguity"].raw_subcategory) for r in rows} == set(RAW_PAIRS)


def test_unknown_ambiguity_strings_are_errors_naming_the_row():
    with pytest.raises(DataFormatError, match="x.json, row 12, field 'sub-category'.*'Telepathy'"):
        normalise_subcategory("Deduction/Telepathy", "implicit reasoning phenomena", file="x.json", row=12)
    with pytest.raises(DataFormatError, match="'-' outside category 'Other'"):
        normalise_subcategory("-", "meaning phenomena", file="x.json", row=3)


@pytest.fixture
def broken_mirror(tmp_path, monkeypatch):
    """A copy of the two TofuEval files in a temporary mirror, for corrupting."""
    require("needs_mirror")
    for rel in (tofueval.TOFU_CSV.format(domain="meetingbank", split="test"), tofueval.AMBIGUITY_JSON):
        dest = tmp_path / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(sources.resolve(rel), dest)
    monkeypatch.setenv("SUMJUDGE_DATA_MIRROR", str(tmp_path))
    return tmp_path


@needs_mirror
def test_bad_label_in_csv_names_file_row_field(broken_mirror):
    p = broken_mirror / tofueval.TOFU_CSV.format(domain="meetingbank", split="test")
    lines = p.read_text(encoding="utf-8").splitlines(keepends=True)
    import csv
    import io

    rows = list(csv.reader(io.StringIO("".join(lines))))
    header = rows[0]
    rows[5][header.index("sent_label")] = "maybe"
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    p.write_text(buf.getvalue(), encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"meetingbank_factual_eval_test.csv, row 6, field 'sent_label'.*'maybe'"):
        registry.load("tofueval-meetingbank")


@needs_mirror
def test_truncated_json_line_names_the_line(broken_mirror):
    p = broken_mirror / tofueval.AMBIGUITY_JSON
    lines = p.read_text(encoding="utf-8").splitlines()
    lines[9] = lines[9][: len(lines[9]) // 2]
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"MeetingBank_ambiguity_annotated.json, row 10: not a JSON line"):
        registry.load("meetingbank-ambiguity")


def test_missing_file_says_where_to_get_it(tmp_path, monkeypatch):
    monkeypatch.setenv("SUMJUDGE_DATA_MIRROR", str(tmp_path))
    with pytest.raises(DataMissingError, match="raw.githubusercontent.com/amazon-science/tofueval"):
        registry.load("tofueval-meetingbank")


def test_unknown_level_and_dataset():
    with pytest.raises(ValueError, match="levels"):
        registry.load("meetingbank-ambiguity", level="summary")
    with pytest.raises(KeyError, match="unknown dataset"):
        registry.get("nope")


def _faith(i, label):
    return FaithExample(id=str(i), dataset="d", document="x", summary="y", label=label)


def test_subset_is_seeded_stratified_and_in_order():
    exs = [_faith(i, int(i % 3 != 0)) for i in range(90)]  # 30 unfaithful, 60 faithful
    a = registry.subset(exs, 9, seed=1)
    assert a == registry.subset(exs, 9, seed=1) and a != registry.subset(exs, 9, seed=2)
    assert Counter(e.label for e in a) == {0: 3, 1: 6}
    assert [int(e.id) for e in a] == sorted(int(e.id) for e in a)
    tiny = registry.subset(exs, 2, seed=0)
    assert {e.label for e in tiny} == {0, 1}
    assert registry.subset(exs, None) == exs and registry.subset(exs, 500) == exs


def test_subset_of_rated_data_keeps_whole_groups():
    exs = [RatedExample(id=f"{g}-{k}", dataset="d", group_id=str(g), source="s", output="o", scores={"a": 1.0})
           for g in range(10) for k in range(4)]
    sub = registry.subset(exs, 10, seed=0)
    sizes = Counter(e.group_id for e in sub)
    assert len(sub) == 12 and set(sizes.values()) == {4}
    part = registry.subset(exs, 3, seed=1)  # less than a group: three examples of one group
    assert len(part) == 3 and len({e.group_id for e in part}) == 1 and part == registry.subset(exs, 3, seed=1)


@needs_mirror
def test_wrong_type_names_file_row_field(broken_mirror):
    p = broken_mirror / tofueval.TOFU_CSV.format(domain="meetingbank", split="test")
    import csv
    import io

    rows = list(csv.reader(io.StringIO(p.read_text(encoding="utf-8"))))
    rows[3][rows[0].index("sent_idx")] = "three"
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    p.write_text(buf.getvalue(), encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"row 4, field 'sent_idx': not an integer: 'three'"):
        registry.load("tofueval-meetingbank")
