"""Runs submitted together share the engine's batches, and each keeps what a run alone would have: its folder,
its own log, the same answers and metrics, a resume without a backend call."""

import json

import pytest

from sumjudge.llm import ConfigError, NullCache, ResponseCache, run_sync
from sumjudge.llm.engine import LLM
from sumjudge.run.folder import RunConfig
from sumjudge.run.runs import run, run_many, run_many_async

pytestmark = pytest.mark.usefixtures("tiny_backend")


def configs():
    common = dict(dataset="tofueval-meetingbank", level="sentence", limit=3, backend="hf", model="tiny",
                  settings={"max_new_tokens": 8})
    return [RunConfig(method="zero-shot", **common), RunConfig(method="cot", **common)]


def rows(folder):
    return [json.loads(x)["judgement"] for x in (folder / "results.jsonl").read_text().splitlines()]


def keys(folder):
    return sorted(e["key"] for e in map(json.loads, (folder / "calls.jsonl").read_text().splitlines())
                  if e.get("event") == "chat")


def test_runs_together_match_runs_alone_in_fewer_batches(tiny_backend, tmp_path):
    alone = LLM(tiny_backend, cache=NullCache())
    start = tiny_backend.generate_calls
    solo = [run(rc, tmp_path / f"alone-{rc.method}", llm=alone, progress=False) for rc in configs()]
    solo_batches = tiny_backend.generate_calls - start

    together = LLM(tiny_backend, cache=ResponseCache(tmp_path / "c.sqlite"))
    start = tiny_backend.generate_calls
    outs = [tmp_path / f"together-{rc.method}" for rc in configs()]
    many = run_many([(rc, out, together) for rc, out in zip(configs(), outs)], progress=False)
    assert tiny_backend.generate_calls - start < solo_batches  # the two runs' requests shared micro-batches
    for m, s, rc, out in zip(many, solo, configs(), outs):
        assert m["method"] == rc.method and m["n_examples"] == 3
        assert rows(out) == rows(tmp_path / f"alone-{rc.method}")  # the same answers, labels and usage
        written = [json.loads((f / "metrics.json").read_text()) for f in (out, tmp_path / f"alone-{rc.method}")]
        assert [{k: w[k] for k in ("bacc", "n", "unparsed", "parse_rates", "cost")} for w in written] == \
            [{k: written[1][k] for k in ("bacc", "n", "unparsed", "parse_rates", "cost")}] * 2
        # each log holds exactly its own run's calls: the same requests as the run alone logged
        assert keys(out) == keys(tmp_path / f"alone-{rc.method}") and keys(out)
    again = run_many([(rc, out, together) for rc, out in zip(configs(), outs)], progress=False)
    assert all(m["engine"]["backend_calls"] == 0 for m in again)  # resumed: everything from the cache


def test_two_runs_into_one_folder_are_refused(tmp_path):
    llm = LLM.__new__(LLM)  # never used: refused before any engine work
    rc = configs()[0]
    with pytest.raises(ConfigError, match="two runs name the same folder"):
        run_many([(rc, tmp_path / "x", llm), (configs()[1], tmp_path / "x", llm)], progress=False)


def test_work_alongside_the_runs_shares_their_batches_and_its_failure_comes_after_them(tiny_backend, tmp_path):
    from sumjudge.llm import ChatRequest

    together = LLM(tiny_backend, cache=NullCache())
    answers = []

    async def job():  # work that is not a run (e.g. MESA's self-training) in the runs' event loop
        answers.append(await together.chat(ChatRequest(messages=[{"role": "user", "content": "hello"}],
                                                       max_new_tokens=8, tag="job")))

    start = tiny_backend.generate_calls
    run_many([(configs()[0], tmp_path / "alone", together)], progress=False)
    run_sync(job())
    apart = tiny_backend.generate_calls - start
    answers.clear()

    fresh = LLM(tiny_backend, cache=NullCache())
    together = fresh
    start = tiny_backend.generate_calls
    many = run_many([(configs()[0], tmp_path / "with-job", fresh)], progress=False, alongside=[job])
    assert len(answers) == 1 and many[0]["n_examples"] == 3
    assert tiny_backend.generate_calls - start < apart  # the job's request joined the run's batches

    async def broken():
        raise RuntimeError("job failed")

    with pytest.raises(RuntimeError, match="job failed"):
        run_many([(configs()[1], tmp_path / "after-failure", fresh)], progress=False, alongside=[broken])
    assert (tmp_path / "after-failure" / "metrics.json").exists()  # the run finished all the same


def chat_times(folder):
    return [e["time"] for e in map(json.loads, (folder / "calls.jsonl").read_text().splitlines())
            if e.get("event") == "chat"]


def test_a_run_started_by_work_alongside_joins_the_runs_still_going(tiny_backend, tmp_path):
    """Work alongside (e.g. a training) that starts a run once it is done (``run_many_async``): the run joins
    the batches of the runs still decoding, instead of waiting for them, and keeps its own folder and log."""
    from sumjudge.llm import ChatRequest

    llm = LLM(tiny_backend, cache=NullCache())
    long_rc, short_rc = configs()[1], configs()[0]
    long_rc.settings = {"max_new_tokens": 96}  # chains of thought the tiny model never closes: retried, long
    later = {}

    async def learn_then_run():
        await llm.chat(ChatRequest(messages=[{"role": "user", "content": "learn"}], max_new_tokens=2, tag="job"))
        later["metrics"] = (await run_many_async([(short_rc, tmp_path / "later", llm)], progress=False))[0]

    first = run_many([(long_rc, tmp_path / "first", llm)], progress=False, alongside=[learn_then_run])
    assert first[0]["n_examples"] == 3 and later["metrics"]["n_examples"] == 3
    assert json.loads((tmp_path / "later" / "metrics.json").read_text())["method"] == "zero-shot"
    # the later run answered while the first was still asking
    assert min(chat_times(tmp_path / "later")) < max(chat_times(tmp_path / "first"))
    assert len(chat_times(tmp_path / "later")) == later["metrics"]["engine"]["backend_calls"]


def test_runs_started_inside_a_loop_of_their_own_close_their_logs(tiny_backend, tmp_path):
    llm = LLM(tiny_backend, cache=NullCache())
    got = run_sync(run_many_async([(configs()[0], tmp_path / "inside", llm)], progress=False))
    assert got[0]["n_examples"] == 3
    again = run_many([(configs()[0], tmp_path / "inside", llm)], progress=False)  # the folder is free again
    assert again[0]["n_examples"] == 3
