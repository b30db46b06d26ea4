"""The stand-in server (answers that parse, latency and slots as configured, bounded) and ``sumjudge scale`` on it."""

import asyncio
import json
import time

import httpx
import pytest

from sumjudge.cli import main as cli
from sumjudge.perf.standin_server import StandinServer, answer


def chat(url, content="Provide your evaluation between <label></label> tags"):
    r = httpx.post(url + "/chat/completions", json={"model": "standin", "max_tokens": 50,
                                                     "messages": [{"role": "user", "content": content}]}, timeout=30)
    return r.status_code, r.json()


def test_answers_parse_and_usage_is_reported():
    from sumjudge.llm.parsing import binary_label
    from sumjudge.papers.mesa.protocol import parse_instances, parse_rated, parse_score

    with StandinServer() as s:
        status, body = chat(s.base_url)
        assert status == 200 and binary_label(body["choices"][0]["message"]["content"]) in (0, 1)
        assert body["usage"]["prompt_tokens"] == 12 and body["usage"]["completion_tokens"] > 0
        r = httpx.post(s.base_url.removesuffix("/v1") + "/tokenize", json={"prompt": "two words"}, timeout=30).json()
        assert r["count"] == 2 and len(r["tokens"]) == 2
    msg = [{"role": "user", "content": "Step 1 is to collect possible error instances"}]
    assert isinstance(parse_instances(answer(msg)), list)
    assert parse_rated(answer([{"role": "user", "content": "Step 2 is to rate the severity"}]))
    assert parse_score(answer([{"role": "user", "content": 'answer {"rating": .., "confidence": ..}'}]))[0] in (0, 2)


def test_latency_slots_and_bounds():
    with StandinServer(latency_s=0.2, slots=2, max_requests=7) as s:
        async def six():
            async with httpx.AsyncClient(timeout=30) as c:
                return await asyncio.gather(*(c.post(s.base_url + "/chat/completions",
                                                     json={"messages": [{"role": "user", "content": "x"}]})
                                              for _ in range(6)))
        t = time.monotonic()
        assert all(r.status_code == 200 for r in asyncio.run(six()))
        assert time.monotonic() - t >= 0.6 - 0.05  # six requests, two at a time, 0.2 s each
        assert s.stats.max_in_flight == 2
        assert chat(s.base_url)[0] == 200 and chat(s.base_url)[0] == 503  # the 8th request is over the bound
    with pytest.raises(ValueError):
        StandinServer(slots=0)


def test_scale_measures_a_run_against_the_stand_in(tmp_path, capsys):
    args = ["scale", "--out", tmp_path, "--runs", "zero-shot", "--limit", "12", "--memory-limit", "4",
            "--latency", "0.05", "--slots", "4", "--latency-run", "zero-shot", "--latency-limit", "12"]
    assert cli.main([str(a) for a in args]) == 0
    rows = [json.loads(x) for x in capsys.readouterr().out.strip().splitlines()]
    instant, smaller, slow = rows[:3]
    assert (instant["n_examples"], instant["backend_calls"], smaller["n_examples"]) == (12, 12, 4)
    assert instant["requests_per_s"] > 0 and instant["peak_rss_mb"] > 0 and instant["calls_jsonl_mb_per_10k"] > 0
    assert slow["max_in_flight"] <= 4 and slow["wall_s"] >= 12 / 4 * 0.05
    report = json.loads((tmp_path / "scale.json").read_text())
    assert report["latency"]["slots"] == 4 and (tmp_path / "concurrency.png").stat().st_size > 0
    assert cli.main(["scale", "--runs", "nope"]) == cli.EXIT_USAGE
