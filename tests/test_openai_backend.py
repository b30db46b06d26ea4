"""The openai backend against a real OpenAI-compatible HTTP server on 127.0.0.1 serving the tiny model."""

import socket
import time

import pytest
from openai_server import LocalOpenAIServer

from sumjudge.llm import (
    BackendRequestError,
    BackendUnavailableError,
    ChatRequest,
    NullCache,
    OptionScoringError,
    run_sync,
)
from sumjudge.llm.engine import LLM
from sumjudge.llm.openai import OpenAIBackend


@pytest.fixture(scope="module")
def server(tiny_backend):
    with LocalOpenAIServer(tiny_backend) as s:
        yield s


def msg(text):
    return [{"role": "user", "content": text}]


def backend(server, **kw):
    return OpenAIBackend("tiny-llama3", base_url=server.base_url, backoff=0.01, **kw)


def test_greedy_text_and_usage_match_the_local_model(server, tiny_backend):
    reqs = [ChatRequest(messages=msg(f"Question {i}: what was decided?"), max_new_tokens=10) for i in range(3)]
    llm = LLM(backend(server), cache=NullCache())
    out = run_sync(llm.chat_many(reqs))
    local = tiny_backend.generate_sync(reqs)
    assert [r.text for r in out] == [r.text for r in local]
    assert [r.prompt_tokens for r in out] == [r.prompt_tokens for r in local]
    assert llm.usage.completion_tokens == sum(r.completion_tokens for r in local)
    sent = server.requests[-1]
    assert sent["temperature"] == 0.0 and sent["max_tokens"] == 10 and "seed" not in sent


def test_retries_with_backoff_on_429_and_5xx(server):
    be = backend(server)
    server.fail_next(2, 429)
    server.fail_next(1, 503)
    r = run_sync(LLM(be, cache=NullCache()).chat(ChatRequest(messages=msg("hi"), max_new_tokens=4)))
    assert r.text is not None and be.retries == 3


def test_gives_up_after_max_retries_with_a_clear_error(server):
    be = backend(server, max_retries=2)
    server.fail_next(3, 500)
    with pytest.raises(BackendUnavailableError, match="did not answer after 3 attempts"):
        run_sync(LLM(be, cache=NullCache()).chat(ChatRequest(messages=msg("hi"), max_new_tokens=4)))


def test_unknown_model_is_refused_without_retrying(server):
    be = OpenAIBackend("no-such-model", base_url=server.base_url, backoff=0.01)
    with pytest.raises(BackendRequestError, match="HTTP 404"):
        run_sync(LLM(be, cache=NullCache()).chat(ChatRequest(messages=msg("hi"), max_new_tokens=4)))
    assert be.retries == 0


def test_unreachable_server_fails_fast():
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    be = OpenAIBackend("m", base_url=f"http://127.0.0.1:{port}/v1", backoff=0.01)
    t0 = time.time()
    with pytest.raises(BackendUnavailableError, match=f"127.0.0.1:{port}"):
        run_sync(LLM(be, cache=NullCache()).chat(ChatRequest(messages=msg("hi"), max_new_tokens=4)))
    assert time.time() - t0 < 10


def test_option_scores_from_top_logprobs_match_hf(server, tiny_backend):
    m = msg("Is it faithful? Answer 0 or 1.")
    vocab = len(tiny_backend.tokenizer)  # vLLM allows a large top_logprobs; a random model needs the whole list
    remote = run_sync(LLM(backend(server, top_logprobs=vocab), cache=NullCache()).score_options(m, ["0", "1"], prefix="<label>"))
    local = run_sync(LLM(tiny_backend, cache=NullCache()).score_options(m, ["0", "1"], prefix="<label>"))
    sent = server.requests[-1]
    assert sent["logprobs"] is True and sent["continue_final_message"] is True and sent["max_tokens"] == 1
    assert remote.method == "top_logprobs" and 0 < remote.coverage < 1
    assert remote.probs["1"] == pytest.approx(local.probs["1"], abs=1e-4)


def test_options_outside_the_top_list_are_an_error_not_a_guess(server):
    with pytest.raises(OptionScoringError, match="none of the options"):
        run_sync(LLM(backend(server, top_logprobs=1), cache=NullCache()).score_options(msg("x"), ["0", "1"]))


def test_sampled_requests_send_a_seed_per_sample(server):
    llm = LLM(backend(server), cache=NullCache())
    run_sync(llm.sample(ChatRequest(messages=msg("hi"), max_new_tokens=3, temperature=0.9, seed=4), 3))
    seeds = [r["seed"] for r in server.requests[-3:]]
    assert len(set(seeds)) == 3


@pytest.mark.parametrize("fault", ["null_content", "empty_choices", "malformed_json"])
def test_malformed_answers_are_retried_never_cached_or_parsed(server, fault, tmp_path):
    from sumjudge.llm import ResponseCache

    reqs = [ChatRequest(messages=msg(f"Fault {fault} {i}?"), max_new_tokens=6) for i in range(3)]
    clean = run_sync(LLM(backend(server), cache=NullCache()).chat_many(reqs))
    cache = ResponseCache(tmp_path / "c.sqlite")
    be = backend(server)
    server.fault_next(fault, 2)
    got = run_sync(LLM(be, cache=cache).chat_many(reqs))
    assert [r.text for r in got] == [r.text for r in clean] and be.retries == 2
    assert all(isinstance(r.text, str) for r in got)
    assert cache.count() == 3  # the three real completions, no fault


def test_malformed_answers_to_the_end_fail_with_the_backend_error(server):
    be = backend(server, max_retries=1)
    server.fault_next("null_content", 2)
    with pytest.raises(BackendUnavailableError, match="did not answer after 2 attempts.*null"):
        run_sync(LLM(be, cache=NullCache()).chat(ChatRequest(messages=msg("null twice"), max_new_tokens=4)))


def test_retry_after_is_honoured(server):
    be = backend(server)  # backoff 0.01 s: only Retry-After can make it wait a second
    server.fault_next("retry_after")
    t0 = time.monotonic()
    r = run_sync(LLM(be, cache=NullCache()).chat(ChatRequest(messages=msg("wait?"), max_new_tokens=4)))
    assert time.monotonic() - t0 >= 1.0 and be.retries == 1 and r.text


def test_a_hanging_request_times_out_and_is_retried(server):
    be = backend(server, timeout=0.5)
    server.hang_s = 2.0
    ref = run_sync(LLM(backend(server), cache=NullCache()).chat(ChatRequest(messages=msg("hang?"), max_new_tokens=4)))
    server.fault_next("hang")
    t0 = time.monotonic()
    r = run_sync(LLM(be, cache=NullCache()).chat(ChatRequest(messages=msg("hang?"), max_new_tokens=4)))
    assert r.text == ref.text and be.retries >= 1 and time.monotonic() - t0 < 2.0
    time.sleep(server.hang_s)  # let the abandoned request finish before the next test


def test_retry_time_is_bounded(server):
    be = backend(server, max_retries=50, max_retry_time=0.2)
    server.fail_next(50, 503)
    t0 = time.monotonic()
    with pytest.raises(BackendUnavailableError):
        run_sync(LLM(be, cache=NullCache()).chat(ChatRequest(messages=msg("bounded"), max_new_tokens=4)))
    assert time.monotonic() - t0 < 2.0
    with server._lock:
        server._fail.clear()


def test_credentials_in_the_base_url_are_never_recorded(server, tmp_path):
    from sumjudge.runs import RunConfig

    url = server.base_url.replace("http://", "http://user:s3cret@") + "?api_key=s3cret"
    be = OpenAIBackend("tiny-llama3", base_url=url)
    assert "s3cret" not in be.info.server and "s3cret" not in str(be.info.extra) and "s3cret" not in be.where
    rc = RunConfig(method="zero-shot", dataset="x", backend="openai", model="m", base_url=url)
    assert "s3cret" not in str(rc.to_json()) and rc.to_json()["base_url"] == server.base_url
