"""MESA's inputs: the authors' criteria resolved like a dataset, whole QMSum transcripts restored behind the
published (spreadsheet-cut) ones, the QMSum Mistake Likert format, and runs the model's context cannot hold
refused before any call."""

import csv
import json

import pytest
from conftest import needs_mirror

from sumjudge.data import registry, sources
from sumjudge.data.meeting_errors import MISTEK_TYPES, load_mistek_qmsum, qmsum_transcript, read_meeting_errors
from sumjudge.llm import ConfigError, NullCache
from sumjudge.llm.engine import LLM
from sumjudge.llm.scripted import ScriptedBackend


@needs_mirror
def test_meeting_errors_transcripts_are_restored_from_qmsum():
    published, _ = read_meeting_errors()
    restored = registry.load("meeting-errors")
    assert len(restored) == len(published) == 133 and all(e.meta["transcript_restored"] for e in restored)
    cut = [(p, r) for p, r in zip(published, restored) if p.meta["transcript_truncated"]]
    assert len(cut) == 105
    for p, r in zip(published, restored):
        assert " ".join(r.transcript.split()).startswith(" ".join(p.transcript.split()))
        assert r.meta["published_words"] == len(p.transcript.split()) and r.meeting == p.meeting  # splits unchanged
    assert all(len(r.transcript) > len(p.transcript) for p, r in cut)
    assert len({r.meta["qmsum_file"] for r in restored}) == 31


@needs_mirror
def test_table10_statistics_come_from_the_restored_meetings():
    from sumjudge.papers.mesa.dataset_tables import mesa_table10

    t = mesa_table10().set_index("statistic")
    assert t.loc["meetings", "ours"] == 133 and t.loc["speakers", "ours"] is not None
    assert 8 < t.loc["speakers", "ours"] < 13 and 8000 < t.loc["meeting_words", "ours"] < 10500  # paper: 9.2, 9069.8
    assert "restored from QMSum (133 of 133 rows)" in t.loc["meeting_words", "note"]


def test_without_qmsum_files_the_published_text_is_kept_and_flagged(tmp_path, monkeypatch):
    from sumjudge.data.meeting_errors import restore_transcripts
    from sumjudge.data.records import MeetingErrorExample

    monkeypatch.setenv("SUMJUDGE_DATA_MIRROR", str(tmp_path / "none"))
    monkeypatch.setenv("SUMJUDGE_DATA_RAW", str(tmp_path / "raw"))
    ex = MeetingErrorExample(id="x", dataset="t", transcript="A : hi", summary="s", labels={})
    (out,) = restore_transcripts([ex])
    assert out.transcript == "A : hi" and not out.meta["transcript_restored"] and "data fetch qmsum" in out.meta["restore_note"]


@needs_mirror
def test_mesa_criteria_resolve_like_a_dataset_and_name_their_fetch(tmp_path, monkeypatch):
    from sumjudge.papers.mesa.protocol import _error_types, error_types

    assert sources.resolve("mesa/criteria/omission.json").exists()
    assert sources.sha256_of(sources.resolve("mesa/criteria/omission.json")) == sources.CRITERIA_FILES["omission"]
    monkeypatch.setenv("SUMJUDGE_DATA_MIRROR", str(tmp_path / "none"))
    monkeypatch.setenv("SUMJUDGE_DATA_RAW", str(tmp_path / "raw"))
    _error_types.cache_clear()
    try:
        with pytest.raises(sources.DataMissingError, match="mesa/criteria/omission.json.*coling2025-MESA/adb7e6f"):
            error_types("authors")
    finally:
        _error_types.cache_clear()


def mistek_file(tmp_path, rows):
    cols = ["Input", "Predicted", "Gold"]
    for name in MISTEK_TYPES.values():
        cols += [("Structur" if name == "Structure" else name) + " - Existence", f"{name} - Reasoning",
                 f"{name} - Impact"]
    p = tmp_path / "MistekQMSum.csv"
    with p.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        for r in rows:
            w.writerow({c: r.get(c, "") for c in cols})
    return p


def test_qmsum_mistake_format_is_read_with_all_eight_types(tmp_path):
    rows = [{"Input": "A : we met .\nB : fine .", "Predicted": "They met.", "Gold": "They met.",
             "Omission - Existence": "Yes", "Omission - Reasoning": "the decision is missing", "Omission - Impact": "3",
             "Irrelevance - Existence": "No", "Irrelevance - Impact": "0", "Structur - Existence": "yes",
             "Structure - Impact": "2", "Hallucination - Impact": "1"},
            {"Input": "A : later .", "Predicted": "Later.", "Redundancy - Existence": "no"}]
    exs = load_mistek_qmsum(mistek_file(tmp_path, rows))
    a, b = exs
    assert a.labels["OM"] == 1 and a.likert["OM"] == 3.0 and a.reasoning == {"OM": "the decision is missing"}
    assert a.labels["IRR"] == 0 and a.likert["IRR"] == 0.0  # irrelevance is annotated here (not in meeting-errors)
    assert a.labels["STR"] == 1 and a.likert["STR"] == 2.0  # existence from the authors' "Structur" column
    assert a.labels["HAL"] == 1 and a.likert["HAL"] == 1.0  # no existence given: impact > 0
    assert b.labels["RED"] == 0 and b.labels["OM"] is None and b.likert == {}
    bad = mistek_file(tmp_path, [{**rows[0], "Omission - Impact": "7"}])
    with pytest.raises(Exception, match="Omission - Impact.*outside 0-5"):
        load_mistek_qmsum(bad)


def test_likert_tables_run_on_qmsum_mistake(tmp_path):
    """Tables 4-5 have data: Spearman/Kendall against the human impact and the gap."""
    from sumjudge.judges.base import Judgement
    from sumjudge.papers.mesa.metrics import meeting_error_metrics

    rows = [{"Input": f"A : meeting {i} .", "Predicted": f"Summary {i}.", "Omission - Impact": str(i % 5),
             "Omission - Existence": "yes" if i % 5 else "no"} for i in range(8)]
    exs = load_mistek_qmsum(mistek_file(tmp_path, rows))
    js = [Judgement(example_id=e.id, scores={"OM": float(min(5, i % 5 + 1))}) for i, e in enumerate(exs)]
    lk = meeting_error_metrics(exs, js)["types"]["OM"]["likert"]
    assert lk["available"] and lk["n"] == 8 and lk["spearman"]["r"] < 0 and lk["gap"] == pytest.approx(1.0)
    assert lk["gap_ci"] == (1.0, 1.0)  # every summary rated exactly one point above its human impact
    js = [Judgement(example_id=e.id, scores={"OM": float(i % 2 * 3)}) for i, e in enumerate(exs)]
    lk = meeting_error_metrics(exs, js)["types"]["OM"]["likert"]
    low, high = lk["gap_ci"]
    assert low < lk["gap"] < high
    om = meeting_error_metrics(exs, js)["types"]["OM"]  # the mean rating (Table 2, Section 2.2) with its interval
    low, high = om["mean_rating_ci"]
    assert low < om["mean_rating"] == 1.5 < high


@needs_mirror
def test_a_model_whose_context_cannot_hold_the_transcripts_is_refused_before_any_call(tmp_path):
    """The paper profile's 8k Llama-3 cannot hold QMSum meetings under truncate=error: the run stops before its
    first call, naming the counts, the longest need and the long-context way out."""
    from sumjudge.run.folder import RunConfig
    from sumjudge.run.runs import run

    be = ScriptedBackend().add(r".", '{"reasoning": "r", "confidence": 5, "rating": 1}')
    be.context_length = 8192  # the scripted backend counts words as tokens
    rc = RunConfig(method="mesa", dataset="meeting-errors", limit=4, backend="scripted",
                   settings={"types": "RED", "truncate": "error", "max_new_tokens": 1024})
    with pytest.raises(ConfigError, match=r"\d of 4 transcripts do not fit scripted \(context 8192 tokens\).*GPT-4o"):
        run(rc, tmp_path / "run", llm=LLM(be, cache=NullCache()), progress=False)
    assert be.requests == [] and not (tmp_path / "run" / "results.jsonl").exists()


@needs_mirror
def test_qmsum_meeting_renders_as_the_published_lines():
    text = qmsum_transcript("qmsum/ALL/test/Bed003.json")
    assert text.startswith("Grad C : Nice .\nGrad D : OK .") and text.count("\n") > 500
    meta = json.loads(sources.resolve("qmsum/ALL/test/Bed003.json").read_text())
    assert len(meta["meeting_transcripts"]) == text.count("\n") + 1


def test_an_edited_criteria_file_is_read_again(tmp_path):
    """Criteria are read once while unchanged; an edited file (a live kernel, a user refining definitions) is
    read again, never served from the earlier reading."""
    from sumjudge.papers.mesa.protocol import error_types

    f = tmp_path / "types.yaml"
    f.write_text("RED:\n  name: redundancy\n  definition: first wording\n", encoding="utf-8")
    assert error_types(str(f))["RED"].definition == "first wording"
    assert error_types(str(f)) is error_types(str(f))  # unchanged: read once
    f.write_text("RED:\n  name: redundancy\n  definition: the second, longer wording\n", encoding="utf-8")
    assert error_types(str(f))["RED"].definition == "the second, longer wording"
