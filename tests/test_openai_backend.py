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
