"""The cost guard (``--max-calls`` / ``--max-tokens``): a run stops before it passes its budget, exits with
EXIT_BUDGET, keeps every answered call, and the same command with a larger budget resumes from them."""

import json
import sqlite3

import pytest

from sumjudge.cli import main as cli
from sumjudge.llm import ChatRequest, NullCache, run_sync
from sumjudge.llm.budget import Budget, BudgetExhausted
from sumjudge.llm.engine import LLM
from sumjudge.llm.scripted import ScriptedBackend


def req(text: str, n: int = 5) -> ChatRequest:
    return ChatRequest(messages=[{"role": "user", "content": text}], max_new_tokens=n, tag=text)


def test_only_the_requests_that_fit_the_tokens_left_are_sent_and_answers_settle_the_reserve():
    be = ScriptedBackend().add(lambda r: True, "yes")  # a word is a token; every answer one token
    llm = LLM(be, cache=NullCache())
    llm.budget = Budget(max_tokens=20)

    async def go():
        return await __import__("asyncio").gather(*(llm.chat(req(f"w{i} x y")) for i in range(3)),
                                                  return_exceptions=True)

    # each request reserves 3 prompt tokens + 5 answer tokens: two fit 20, the third (24) does not
    out = run_sync(go())
    assert [type(o).__name__ for o in out] == ["ChatResponse", "ChatResponse", "BudgetExhausted"]
    assert len(be.requests) == 2 and "max-tokens 20" in str(out[2])
    # the answers used 3 + 1 tokens each: the reserve of 8 was given back down to 4 per call
    assert llm.budget.tokens == 8 and llm.budget.calls == 2
    with pytest.raises(BudgetExhausted):  # once ended, the budget sends nothing more, even what would fit
        run_sync(llm.chat(req("a")))
    assert len(be.requests) == 2


def test_budget_settings_are_checked():
    with pytest.raises(Exception, match="--max-calls must be a whole number of at least 1"):
        Budget(max_calls=0)
    assert cli.main(["run", "zero-shot", "--dataset", "x", "--max-tokens", "-3", "--out", "o"]) == cli.EXIT_USAGE


def cache_rows(path):
    with sqlite3.connect(path) as c:
        return c.execute("select count(*) from responses").fetchone()[0]


@pytest.mark.slow
def test_max_calls_stops_a_run_and_the_rerun_resumes(tiny_model_dir, tmp_path, capsys):
    def args(out, cache, *extra):
        return [str(a) for a in ["run", "zero-shot", "--dataset", "tofueval-meetingbank", "--level", "sentence",
                                 "--limit", "6", "--model", tiny_model_dir, "--set", "max_new_tokens=8",
                                 "--cache", cache, "--out", out, *extra]]

    assert cli.main(args(tmp_path / "r", tmp_path / "c.sqlite", "--max-calls", "3")) == cli.EXIT_BUDGET
    assert "budget reached (3 backend calls made, --max-calls 3)" in capsys.readouterr().err
    assert cache_rows(tmp_path / "c.sqlite") == 3  # the three answered calls are kept
    events = [json.loads(x) for x in (tmp_path / "r" / "calls.jsonl").read_text().splitlines()]
    assert sum(e["event"] == "budget_exhausted" for e in events) == 1
    assert not (tmp_path / "r" / "metrics.json").exists()

    assert cli.main(args(tmp_path / "r", tmp_path / "c.sqlite")) == 0  # the same command, no budget: resumed
    resumed = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert cli.main(args(tmp_path / "fresh", tmp_path / "fresh.sqlite")) == 0  # the whole run from nothing
    fresh = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert resumed["cache_hits"] >= 3 and resumed["backend_calls"] + 3 == fresh["backend_calls"]
    assert resumed["bacc"] == fresh["bacc"] and resumed["unparsed"] == fresh["unparsed"]
