"""``sumjudge plan`` against what runs on the tiny model make: the same calls and prompt tokens for a protocol whose
calls do not depend on the answers, an upper bound for a debate that stops when its agents agree."""

import json

import pytest

from sumjudge.llm import NullCache
from sumjudge.llm.engine import LLM
from sumjudge.plan import plan_run
from sumjudge.runs import RunConfig, run


def actual(tiny_backend, tmp_path, method, dataset, level, limit, settings):
    rc = RunConfig(method=method, dataset=dataset, level=level, limit=limit, backend="hf", model="tiny",
                   settings=settings)
    m = run(rc, tmp_path / method, llm=LLM(tiny_backend, cache=NullCache(), parse_retries=0), progress=False)
    return m["engine"]


@pytest.mark.slow
def test_plan_counts_what_a_run_makes(tiny_backend, tiny_model_dir, tmp_path):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(tiny_model_dir))
    common = dict(profile="ci", tokenizer=tok, model="tiny", context_length=tiny_backend.capabilities.context_length,
                  tokens_per_s=100.0, prefill_tokens_per_s=1000.0, price_in=1.0, price_out=2.0)
    spec = {"method": "zero-shot", "dataset": "tofueval-meetingbank", "level": "sentence"}
    p = plan_run("zero-shot", spec, limit=5, **common)
    a = actual(tiny_backend, tmp_path, "zero-shot", "tofueval-meetingbank", "sentence", 5, {"max_new_tokens": 16})
    assert (p.calls, p.prompt_tokens) == (a["calls"], a["prompt_tokens"])  # deterministic: equal
    assert p.completion_tokens_at_most == 16 * p.calls >= a["completion_tokens"]
    assert p.dollars == pytest.approx(p.prompt_tokens / 1e6 + 2 * p.completion_tokens_at_most / 1e6, abs=0.01)
    assert p.hours == pytest.approx((p.prompt_tokens / 1000 + p.completion_tokens_at_most / 100) / 3600, abs=0.01)

    spec = {"method": "madisse", "dataset": "tofueval-meetingbank", "level": "sentence"}
    p = plan_run("madisse", spec, limit=3, **common)
    a = actual(tiny_backend, tmp_path, "madisse", "tofueval-meetingbank", "sentence", 3, {"max_new_tokens": 16})
    assert p.unreadable == 0 and a["calls"] <= p.calls  # the debate stops early when its agents agree: bounded
    # the longest path: 3 examples x (4 agents asked twice against their stance in round 1, 4 in each of rounds 2-3,
    # 3 adjudicators)
    assert p.calls == 3 * (4 * 2 + 4 * 2 + 3)


def test_plan_command_prints_a_row_per_run_and_a_total(capsys):
    from sumjudge import cli

    assert cli.main(["plan", "--runs", "zero-shot", "--limit", "3", "--price-in", "1"]) == 0
    rows = [json.loads(x) for x in capsys.readouterr().out.strip().splitlines()]
    assert [r["run"] for r in rows] == ["zero-shot", "total"] and rows[0]["calls"] == 3 and rows[0]["prompt_tokens"] > 0
    assert cli.main(["plan", "--runs", "nope"]) == cli.EXIT_USAGE
