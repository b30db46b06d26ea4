"""LLM-AggreFact's LLM prompt as a judge (two readings) and the leaderboard's published number (offline: a data file
in the leaderboard's format written here, with made-up values)."""

from __future__ import annotations

import pytest

from sumjudge import arena
from sumjudge.data.records import FaithExample
from sumjudge.judges.settings import make_config
from sumjudge.llm import NullCache, PromptTooLongError, run_sync
from sumjudge.llm.engine import LLM
from sumjudge.llm.scripted import ScriptedBackend
from sumjudge.papers.llm_aggrefact import published
from sumjudge.prompts import load
from sumjudge.run.methods import get_method

EX = FaithExample(id="s1", dataset="tofueval-meetingbank", document="The council approved the budget on Monday.",
                  summary="The council rejected the budget.", label=0)

SYSTEM = ('Determine whether the provided claim is consistent with the corresponding document. Consistency in this '
          'context implies that all information presented in the claim is substantiated by the document. If not, it '
          'should be considered inconsistent. Please assess the claim\'s consistency with the document by responding '
          'with either "Yes" or "No".')

DATA = '''import { ModelData } from "@/components/Leaderboard";

export const scoresData: ModelData[] = [
  {
    model: "Model-A-70B-Instruct",
    Size: "70B",
    MediaS: 11.5,
    MeetB: 22.5,
    RAGTruth: -1,
    color: "#ffffff",
  },
  {
    model: "Llama-9-1B-Instruct",
    Size: "1B",
    MeetB: 33.0,
  },
];
'''


def judge(backend, method="llm-aggrefact", **cfg):
    spec = get_method(method)
    return run_sync(spec.judge(EX, LLM(backend, cache=NullCache()), make_config(spec.config_cls, cfg)))


def test_the_prompt_is_the_leaderboards_wording_in_a_system_and_a_user_message():
    be = ScriptedBackend().add("Claim:", "Yes")
    judge(be)
    (req,) = be.requests
    assert req.messages == [{"role": "system", "content": SYSTEM},
                            {"role": "user", "content": f"Document: {EX.document}\nClaim: {EX.summary}"}]
    assert "MiniCheck" in load("llm_aggrefact/minicheck_system").meta["source"]


@pytest.mark.parametrize("answer,label", [("Yes", 1), ("No.", 0), ("No, the document says it was approved.", 0)])
def test_the_stated_answer_is_read(answer, label):
    j = judge(ScriptedBackend().add("Claim:", answer))
    assert (j.label, j.parsed, j.label_source) == (label, True, "parsed")


def test_an_answer_without_yes_or_no_is_unreadable_or_the_likelier_option_when_asked():
    j = judge(ScriptedBackend().add("Claim:", "The claim concerns a budget."))
    assert j.label is None and not j.parsed and j.label_source == "unparsed"
    be = ScriptedBackend(options=lambda r: {"Yes": 0.3, "No": 0.7}).add("Claim:", "The claim concerns a budget.")
    j = judge(be, fallback="option_scores")
    assert (j.label, j.label_source) == (0, "option_scores")


def test_p_yes_is_the_probability_of_yes_over_yes_and_no_and_no_text_is_generated():
    be = ScriptedBackend(options=lambda r: {"Yes": 0.2, "No": 0.6})
    j = judge(be, method="llm-aggrefact-p-yes")
    assert j.score == pytest.approx(0.25) and j.label == 0 and not be.requests
    j = judge(ScriptedBackend(options=lambda r: {"Yes": 0.2, "No": 0.6}), method="llm-aggrefact-p-yes", threshold=0.2)
    assert j.label == 1
    assert get_method("llm-aggrefact-p-yes").scores and not get_method("llm-aggrefact").scores


def test_p_yes_is_unreadable_where_yes_and_no_are_not_what_the_model_would_say():
    be = ScriptedBackend(options=lambda r: ({"Yes": 0.5, "No": 0.5}, 0.1))
    j = judge(be, method="llm-aggrefact-p-yes")
    assert j.label is None and j.score is None and not j.parsed and j.details["coverage"] == 0.1


def test_a_document_over_the_context_is_cut_only_when_asked():
    long = FaithExample(**{**EX.__dict__, "document": "word " * 400})
    spec = get_method("llm-aggrefact")
    be = ScriptedBackend(context_length=200).add("Claim:", "No")
    with pytest.raises(PromptTooLongError):
        run_sync(spec.judge(long, LLM(be, cache=NullCache()), make_config(spec.config_cls, {})))
    j = run_sync(spec.judge(long, LLM(be, cache=NullCache()), make_config(spec.config_cls, {"truncate": "truncate"})))
    assert j.label == 0 and 0 < j.details["truncated_words"] < 400


def test_the_leaderboards_data_file_is_read_per_model_and_dataset(tmp_path):
    f = tmp_path / "data.tsx"
    f.write_text(DATA)
    table = published.parse(DATA)
    assert table["Model-A-70B-Instruct"] == {"MediaS": 11.5, "MeetB": 22.5}  # -1: not evaluated, left out
    got = published.published("org/Model-A-70B-Instruct", "tofueval-meetingbank", "sentence", path=f)
    assert (got.model, got.dataset, got.bacc) == ("Model-A-70B-Instruct", "MeetB", 22.5)
    assert got.source.startswith("https://raw.githubusercontent.com/") and "/src/app/data.tsx" in got.source
    assert published.published("meta-llama/Meta-Llama-9-1B-Instruct", "tofueval-meetingbank", "sentence",
                               path=f).bacc == 33.0
    assert "lists no" in published.published("org/Other-7B", "tofueval-meetingbank", "sentence", path=f)
    assert "no tofueval-meetingbank at summary" in published.published("org/Model-A-70B-Instruct",
                                                                        "tofueval-meetingbank", "summary", path=f)


def test_without_the_data_file_the_column_is_blank_and_says_how_to_fetch_it(tmp_path, monkeypatch):
    monkeypatch.setenv("SUMJUDGE_DATA_RAW", str(tmp_path))
    monkeypatch.setenv("SUMJUDGE_DATA_MIRROR", str(tmp_path / "none"))
    cols = arena.published_columns(arena.Cell("llm-aggrefact", "tofueval-meetingbank"), "org/Model-A-70B-Instruct",
                                   "sentence")
    assert cols["published"] is None and "sumjudge data fetch llm-aggrefact-leaderboard" in cols["published_note"]
    (tmp_path / "leaderboards").mkdir()
    (tmp_path / published.LEADERBOARD_FILE).write_text(DATA)
    cols = arena.published_columns(arena.Cell("llm-aggrefact-p-yes", "tofueval-meetingbank"),
                                   "org/Model-A-70B-Instruct", "sentence")
    assert cols["published"] == 22.5 and cols["published_source"].endswith("/src/app/data.tsx")
    assert arena.published_columns(arena.Cell("zero-shot", "tofueval-meetingbank"), "m", "sentence") == {}
