"""The engine's seams: backends declare capabilities (never probed), runs sharing one engine keep their own
logs and counts, the openai backend imports without torch."""

import asyncio
import json
import re
import subprocess
import sys
from pathlib import Path

from sumjudge.llm import ChatRequest, NullCache, run_sync
from sumjudge.llm.backend_protocol import Backend, Capabilities
from sumjudge.llm.engine import LLM, CallLog, RunContext
from sumjudge.llm.scripted import ScriptedBackend

SRC = Path(__file__).resolve().parents[3] / "src" / "sumjudge"


def test_no_code_probes_a_backend_for_what_it_can_do():
    """Capabilities are declared (``backend.capabilities``), never guessed with getattr/hasattr."""
    probe = re.compile(r"\b(?:getattr|hasattr)\(\s*[\w.]*backend\b")
    found = [f"{p.relative_to(SRC)}:{i}" for p in SRC.rglob("*.py")
             for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if probe.search(line)]
    assert found == []
    assert probe.search('limit = getattr(self.backend, "max_inflight", 1)')  # the pattern finds what it should


def test_every_backend_declares_its_capabilities(tiny_backend):
    scripted = ScriptedBackend(options=lambda r: {o: 1 / len(r.options) for o in r.options})
    for be in (tiny_backend, scripted):
        assert isinstance(be, Backend) and isinstance(be.capabilities, Capabilities)
    assert tiny_backend.capabilities.option_scoring == "exact" and tiny_backend.capabilities.tokenizer == "local"
    assert tiny_backend.capabilities.context_length == tiny_backend.context_length
    assert ScriptedBackend().capabilities.option_scoring == "none"


def test_two_runs_on_one_engine_keep_their_own_logs_and_counts(tmp_path):
    """Two runs at once on one engine (their requests batched together): each run's log holds its own calls
    and parse events only, and each run's usage counts its own calls."""
    be = ScriptedBackend().add(r"run A", "<label>1</label>").add(r"run B", "no label here")
    llm = LLM(be, cache=NullCache(), parse_retries=1)
    logs = {name: CallLog(tmp_path / f"{name}.jsonl") for name in "AB"}
    views = {name: llm.for_run(RunContext(log=logs[name])) for name in "AB"}

    def parse(text):
        from sumjudge.llm.parsing import ParseError

        if "<label>" not in text:
            raise ParseError("no label")
        return text

    async def run(name, n):
        view = views[name]
        return await asyncio.gather(*(view.scoped(f"{name}{i}").chat_parsed(
            ChatRequest(messages=[{"role": "user", "content": f"run {name} example {i}"}], max_new_tokens=4,
                        tag=f"{name}{i}"), parse) for i in range(n)))

    async def both():
        return await asyncio.gather(run("A", 3), run("B", 2))

    run_sync(both())
    for log in logs.values():
        log.close()
    events = {name: [json.loads(x) for x in (tmp_path / f"{name}.jsonl").read_text().splitlines()] for name in "AB"}
    assert max(be.batches) > 3  # the two runs' requests went out together
    for name, evs in events.items():
        assert evs and all(e["tag"].startswith(name) for e in evs)
        assert all(e["scope"].startswith(name) for e in evs if e["event"] == "chat")
    assert [e["ok"] for e in events["A"] if e["event"] == "parse"] == [True] * 3
    assert [e["ok"] for e in events["B"] if e["event"] == "parse"] == [False] * 2
    a, b = views["A"].context.usage, views["B"].context.usage
    assert (a.calls, a.parse_failures, b.calls, b.parse_failures) == (3, 0, 4, 2)  # B: two retries each failing
    assert llm.usage.calls == 7 and llm.usage.parse_failures == 2


def test_counting_tokens_asks_the_tokenizer_once_per_text(tiny_backend):
    calls = []
    real = tiny_backend.count_tokens
    tiny_backend.count_tokens = lambda text: calls.append(text) or real(text)
    try:
        llm = LLM(tiny_backend, cache=NullCache())
        ns = run_sync(_count_three(llm))
    finally:
        del tiny_backend.count_tokens
    assert len(set(ns)) == 1 and ns[0] == 3 and calls == ["the same text"]


async def _count_three(llm):
    return [await llm.count_tokens("the same text") for _ in range(3)]


def test_the_openai_backend_imports_without_torch():
    code = ("import sys; sys.modules['torch'] = None; sys.modules['transformers'] = None\n"
            "import sumjudge.llm.openai, sumjudge.run.runs, sumjudge.cli.main\n"
            "from sumjudge.llm.openai import OpenAIBackend\n"
            "be = OpenAIBackend('m', base_url='http://127.0.0.1:9/v1')\n"
            "print(be.capabilities.tokenizer)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "none"


def test_the_time_profile_says_where_decoding_time_went(tiny_backend):
    """Waves and rows per wave from the engine; prefill and decode seconds, rows per decode step and the share of
    decode time spent with rows that had finished early, from the hf decoder."""
    llm = LLM(tiny_backend, cache=NullCache())
    before = dict(tiny_backend.decoder.stats)
    reqs = [ChatRequest(messages=[{"role": "user", "content": f"Question {i}"}], max_new_tokens=2 + 6 * (i % 2))
            for i in range(6)]
    run_sync(llm.chat_many(reqs))
    prof = llm.time_profile()
    assert prof["calls"] == prof["backend_calls"] == 6 and prof["waves"] >= 1
    assert prof["rows_per_wave"] == round(6 / prof["waves"], 2)
    d = {k: tiny_backend.decoder.stats[k] - before[k] for k in ("decode_steps", "row_steps", "underfilled_s")}
    assert d["decode_steps"] >= 7 and d["underfilled_s"] > 0  # the short answers left their batch after 2 tokens
    assert 1 <= prof["rows_per_decode_step"] <= 6 and 0 < prof["underfilled_share"] <= 1
    stats = tiny_backend.decoder.stats  # the backend is shared: its totals since it was loaded
    assert prof["prefill_tokens_per_s"] == round(stats["prefill_tokens"] / stats["prefill_s"], 1) > 0
    assert ScriptedBackend().decode_stats() is None
    # in this process every row is the caller's own: its answers, their tokens, and at most the decoder's seconds
    assert prof["own_answers"] >= 6 and prof["own_decode_tokens"] >= sum(2 + 6 * (i % 2) for i in range(6))
    assert 0 < prof["own_decode_s"] <= round(stats["decode_s"], 2) + 0.01
    assert 0 < prof["own_prefill_s"] <= round(stats["prefill_s"], 2) + 0.01


def test_the_time_profile_table_has_a_row_per_notebook_engine(tmp_path):
    from sumjudge.reproduce.record import TIME_COLUMNS, write_time_profile

    rows = [{"notebook": "10_madisse_main", "wall_s": 12.5, "model": "tiny", "calls": 40, "waves": 4,
             "rows_per_wave": 10.0, "underfilled_share": 0.25}, {"notebook": "01_datasets", "wall_s": 3.0}]
    text = write_time_profile(rows, "ci", tmp_path).read_text()
    lines = text.splitlines()
    assert lines[2] == "| " + " | ".join(TIME_COLUMNS) + " |"
    assert "| 10_madisse_main | 12.5 | tiny | 40 |  |  | 4 | 10.0 |" in text and "| 01_datasets | 3.0 |" in text
    # a shared engine: how many notebooks really ran at a time; one that answered nothing is not reported as serving
    busy = {"decode": {"prefill_s": 4.0, "decode_s": 2.0}, "coalesced": 0}
    text = write_time_profile(rows[:1], "ci", tmp_path, busy, jobs=3).read_text()
    assert "1 notebook ran at a time on one shared engine" in text and "- prefill_s: 4.0" in text
    idle = {"decode": {"prefill_s": 0.0, "decode_s": 0.0}, "coalesced": 0}
    text = write_time_profile(rows, "ci", tmp_path, idle, jobs=3).read_text()
    assert "answered none of these notebooks' requests" in text and "all notebooks together" not in text


def test_the_heaviest_notebooks_by_their_own_model_time():
    from sumjudge.reproduce.record import model_time_by_notebook

    rows = [{"notebook": "21", "own_prefill_s": 110.0, "own_decode_s": 43.5, "own_score_s": 0.0},
            {"notebook": "51", "own_prefill_s": 670.5, "own_decode_s": 75.2, "own_score_s": 1.0},
            {"notebook": "43", "own_prefill_s": 1.0, "own_decode_s": 0.0, "own_score_s": 0.0},
            {"notebook": "43", "own_prefill_s": 2.0, "own_decode_s": 1.0, "own_score_s": 0.0},
            {"notebook": "01"}]
    assert model_time_by_notebook(rows) == [("51", 746.7), ("21", 153.5), ("43", 4.0)]
