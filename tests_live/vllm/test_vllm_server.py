"""The paper path on a real vLLM server (CPU build): runs through the CLI, token counts, context checks, exact
option scoring against the hf backend on the same weights, seeded sampling, and the openai benchmark."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from sumjudge.cli import main as cli
from sumjudge.data import registry
from sumjudge.llm import ChatRequest, NullCache, PromptTooLongError, run_sync
from sumjudge.llm.engine import LLM
from sumjudge.llm.openai import OpenAIBackend


def sumjudge(capsys, *args) -> tuple[int, str, str]:
    code = cli.main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


def run_args(vllm_server, tmp_path: Path, method: str, dataset: str, *extra) -> list:
    url, name, _ = vllm_server
    return ["run", method, "--dataset", dataset, "--backend", "openai", "--base-url", url, "--model", name,
            "--cache", tmp_path / "cache.sqlite", *extra]


def events(run_dir: Path, kind: str | None = None) -> list[dict]:
    rows = [json.loads(x) for x in (run_dir / "calls.jsonl").read_text().splitlines() if x.strip()]
    return [r for r in rows if kind is None or r.get("event") == kind]


def local_prompt_tokens(model_dir: Path, messages) -> int:
    """Prompt tokens as the model's own tokenizer and chat template count them (the hf backend's rule)."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(model_dir))
    return len(tok(tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False),
                   add_special_tokens=False).input_ids)


def test_zero_shot_run_records_agree_with_the_server(vllm_server, model_dir, tmp_path, capsys):
    """Exit 0; calls.jsonl and metrics.json count the same calls and tokens; every prompt's token count is the
    server's usage.prompt_tokens and the model tokenizer's count; the run records the server's identity."""
    out = tmp_path / "zs"
    code, _, err = sumjudge(capsys, *run_args(vllm_server, tmp_path, "zero-shot", "tofueval-meetingbank", "--limit",
                                              3, "--set", "max_new_tokens=16", "--set", "truncate=truncate",
                                              "--out", out))
    assert code == 0, err
    m = json.loads((out / "metrics.json").read_text())
    chats = events(out, "chat")
    assert len(chats) == m["cost"]["calls_total"] == m["usage_all_processes"]["calls"] > 0
    assert sum(c["response"]["prompt_tokens"] for c in chats) == m["usage_all_processes"]["prompt_tokens"]
    assert sum(c["response"]["completion_tokens"] for c in chats) == m["cost"]["completion_tokens_total"]
    for c in chats:
        assert c["response"]["prompt_tokens"] == local_prompt_tokens(model_dir, c["request"]["messages"])
    cfg = json.loads((out / "config.json").read_text())["backend_info"]
    assert cfg["server_model"]["max_model_len"] == 4096 and cfg["option_scoring"] == "prompt_logprobs"
    assert m["server"]["prefix_cache_queried_tokens"] > 0


def test_madisse_run_reuses_the_shared_document_prefix(vllm_server, tmp_path, capsys):
    """The agents of an example share the document's prefix: the server's prefix cache serves most prompt
    tokens, and the run's metrics.json says how many (read from /metrics before and after)."""
    out = tmp_path / "madisse"
    code, _, err = sumjudge(capsys, *run_args(vllm_server, tmp_path, "madisse", "tofueval-meetingbank", "--limit", 2,
                                              "--set", "rounds=2", "--set", "adjudicators=1", "--set",
                                              "max_new_tokens=16", "--set", "truncate=truncate", "--out", out))
    assert code == 0, err
    m = json.loads((out / "metrics.json").read_text())
    assert m["server"]["prefix_cache_hit_rate"] > 0.5, m["server"]
    assert m["cost"]["calls_total"] >= 2 * 4  # at least one round of four agents per example


def test_geval_scores_options_exactly_through_prompt_logprobs(vllm_server, tmp_path, capsys):
    out = tmp_path / "geval"
    code, _, err = sumjudge(capsys, *run_args(vllm_server, tmp_path, "g-eval", "summeval", "--limit", 2, "--set",
                                              "aspects=coherence", "--set", "mode=probs", "--set",
                                              "truncate=truncate", "--out", out))
    assert code == 0, err
    options = events(out, "options")
    assert options and all(o["response"]["method"] == "prompt_logprobs" for o in options)
    assert all(abs(sum(o["response"]["probs"].values()) - 1) < 1e-6 for o in options)


def test_a_short_mesa_run_completes(vllm_server, tmp_path, capsys):
    out = tmp_path / "mesa"
    code, _, err = sumjudge(capsys, *run_args(vllm_server, tmp_path, "mesa", "meeting-errors", "--limit", 1,
                                              "--set", "types=RED", "--set", "max_new_tokens=24", "--set",
                                              "truncate=truncate", "--out", out))
    assert code == 0, err
    m = json.loads((out / "metrics.json").read_text())
    assert m["n_examples"] >= 1 and m["cost"]["calls_total"] >= 1


def test_a_prompt_over_the_context_fails_naming_the_example(vllm_server, tmp_path, capsys):
    """A document longer than the server's 4096 tokens: truncate=error stops with the example named (exit 5)
    before anything is sent for it; truncate=truncate cuts it to fit and records the words cut."""
    data = tmp_path / "long.jsonl"
    rows = [{"id": f"long-{i}", "document": " ".join(f"Item {j} of meeting {i} was approved." for j in range(900)),
             "summary": f"Meeting {i} approved every item.", "label": 1} for i in range(2)]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, _, err = sumjudge(capsys, *run_args(vllm_server, tmp_path, "zero-shot", f"file:{data}", "--set",
                                              "max_new_tokens=16", "--set", "truncate=error", "--out", tmp_path / "a"))
    assert code == 5 and "over the model context of 4096" in err and "prompt for long-" in err, err
    assert not (tmp_path / "a" / "metrics.json").exists()
    code, _, err = sumjudge(capsys, *run_args(vllm_server, tmp_path, "zero-shot", f"file:{data}", "--set",
                                              "max_new_tokens=16", "--set", "truncate=truncate", "--out", tmp_path / "b"))
    assert code == 0, err
    rows = [json.loads(x) for x in (tmp_path / "b" / "results.jsonl").read_text().splitlines()]
    assert all(r["judgement"]["details"]["truncated_words"] > 0 for r in rows)
    assert all(c["response"]["prompt_tokens"] + 16 <= 4096 for c in events(tmp_path / "b", "chat"))


def test_hf_and_vllm_option_scores_agree_on_the_same_weights(vllm_server, model_dir):
    from sumjudge.llm.hf import HFBackend
    from sumjudge.prompts import render

    url, name, _ = vllm_server
    remote = LLM(OpenAIBackend.connect(name, base_url=url), cache=NullCache())
    local = LLM(HFBackend(str(model_dir)), cache=NullCache())
    examples = registry.load("qags-xsum", limit=4, seed=0)
    asks = [([{"role": "user", "content": render("madisse/table26_zero_shot", doc=e.document, summary=e.summary)}],
             ("0", "1"), "<label>") for e in examples]
    asks += [([{"role": "user", "content": f"Rate summary {i} from 1 to 5."}], tuple("12345"), "Score: ")
             for i in range(3)]
    for messages, options, prefix in asks:
        r = run_sync(remote.score_options(messages, options, prefix=prefix))
        h = run_sync(local.score_options(messages, options, prefix=prefix))
        assert r.method == "prompt_logprobs" and h.method == "sequence_logprob"
        for o in options:
            assert r.logprobs[o] == pytest.approx(h.logprobs[o], abs=0.02), (o, r.logprobs, h.logprobs)
            assert r.probs[o] == pytest.approx(h.probs[o], abs=0.01)


def test_context_is_learnt_from_the_server_and_checked_before_sending(vllm_server):
    url, name, _ = vllm_server
    be = OpenAIBackend.connect(name, base_url=url)
    assert be.context_length == 4096 and be.server_tokenizes
    llm = LLM(be, cache=NullCache())
    messages = [{"role": "user", "content": "word " * 100}]
    n = run_sync(llm.prompt_tokens(messages))
    with pytest.raises(PromptTooLongError, match="over the model context of 4096"):
        run_sync(llm.chat(ChatRequest(messages=messages, max_new_tokens=4097 - n, tag="e1")))
    ok = run_sync(llm.chat(ChatRequest(messages=messages, max_new_tokens=4)))
    assert ok.prompt_tokens == n  # our count is the server's


def test_seeded_sampling_is_reproducible_and_leaves_the_server_healthy(vllm_server):
    """Seeded sampled requests (the CPU server crashed on these with chunked prefill): the same seeds give the
    same texts twice, different samples differ, and the server still answers /health."""
    url, name, _ = vllm_server
    req = ChatRequest(messages=[{"role": "user", "content": "Say something."}], max_new_tokens=12, temperature=1.0,
                      top_p=0.9, seed=7)
    first = run_sync(LLM(OpenAIBackend.connect(name, base_url=url), cache=NullCache()).sample(req, 6))
    second = run_sync(LLM(OpenAIBackend.connect(name, base_url=url), cache=NullCache()).sample(req, 6))
    assert [r.text for r in first] == [r.text for r in second]
    assert len({r.text for r in first}) > 1
    assert httpx.get(url.removesuffix("/v1") + "/health", timeout=10).status_code == 200


def test_openai_bench_prints_its_json(vllm_server, capsys):
    url, name, _ = vllm_server
    code, out, err = sumjudge(capsys, "bench", "--backend", "openai", "--base-url", url, "--model", name, "--docs", 2,
                              "--doc-tokens", 400, "--max-new-tokens", 8)
    assert code == 0, err
    result = json.loads(out)
    assert result["requests"] == 8 and result["speedup"] > 0 and result["prefix_cache_hit_rate_engine"] is not None
    print(json.dumps(result))  # the figures, in the test log
