"""The openai backend against a real OpenAI-compatible HTTP server on 127.0.0.1 serving the tiny model."""

import socket
import time

import pytest
from openai_server import LocalOpenAIServer

from sumjudge.llm import (
    BackendRequestError,
    BackendUnavailableError,
    ChatRequest,
    ConfigError,
    NullCache,
    OptionScoringError,
    PromptTooLongError,
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
    return OpenAIBackend.connect("tiny-llama3", base_url=server.base_url, backoff=0.01, **kw)


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


def test_unknown_model_is_refused_before_any_call_naming_what_the_server_serves(server):
    n = len(server.requests)
    with pytest.raises(ConfigError, match="does not serve model 'no-such-model'; it serves: tiny-llama3"):
        OpenAIBackend.connect("no-such-model", base_url=server.base_url, backoff=0.01)
    assert len(server.requests) == n


def test_a_refusal_is_not_retried(server):
    be = backend(server)
    server.fail_next(1, 400)
    with pytest.raises(BackendRequestError, match="HTTP 400"):
        run_sync(LLM(be, cache=NullCache()).chat(ChatRequest(messages=msg("refused"), max_new_tokens=4)))
    assert be.retries == 0


def free_port() -> int:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_server_fails_fast():
    port = free_port()
    t0 = time.time()
    with pytest.raises(BackendUnavailableError, match=f"127.0.0.1:{port}.*not reachable"):
        OpenAIBackend.connect("m", base_url=f"http://127.0.0.1:{port}/v1", backoff=0.01)
    assert time.time() - t0 < 10


def test_the_server_identity_holds_what_it_says_of_the_model(server):
    be = backend(server)
    assert be.info.server_model == {"id": "tiny-llama3", "root": "/models/tiny-llama3", "max_model_len": 4096}
    assert be.context_length == 4096 and be.server_tokenizes and be.option_scoring == "prompt_logprobs"
    assert backend(server, context_length=1024).context_length == 1024  # a smaller limit of the user's wins


def test_option_scores_through_prompt_logprobs_equal_hf(server, tiny_backend):
    """Exact scoring: every option as a continuation of the chat-template tokens, as hf scores it."""
    m = msg("Is it faithful? Answer 0 or 1.")
    for options, prefix in ((["0", "1"], "<label>"), (["1", "2", "3", "4", "5"], "Score: "),
                            (["Factually_Correct", "Factually_Incorrect"], "- Label: ")):
        remote = run_sync(LLM(backend(server), cache=NullCache()).score_options(m, options, prefix=prefix))
        local = run_sync(LLM(tiny_backend, cache=NullCache()).score_options(m, options, prefix=prefix))
        sent = server.requests[-1]
        assert sent["prompt_logprobs"] == 0 and len(sent["prompt"]) == len(options) and sent["max_tokens"] == 1
        assert remote.method == "prompt_logprobs" and local.method == "sequence_logprob"
        for o in options:
            assert remote.logprobs[o] == pytest.approx(local.logprobs[o], abs=1e-3)
            assert remote.probs[o] == pytest.approx(local.probs[o], abs=1e-4)
        assert remote.coverage == pytest.approx(local.coverage, rel=1e-3)


def test_option_scores_from_top_logprobs_match_hf(server, tiny_backend):
    m = msg("Is it faithful? Answer 0 or 1.")
    vocab = len(tiny_backend.tokenizer)  # vLLM allows a large top_logprobs; a random model needs the whole list
    be = backend(server, top_logprobs=vocab, option_scoring="top_logprobs", min_coverage=0.0)
    remote = run_sync(LLM(be, cache=NullCache()).score_options(m, ["0", "1"], prefix="<label>"))
    local = run_sync(LLM(tiny_backend, cache=NullCache()).score_options(m, ["0", "1"], prefix="<label>"))
    sent = server.requests[-1]
    assert sent["logprobs"] is True and sent["continue_final_message"] is True and sent["max_tokens"] == 1
    assert remote.method == "top_logprobs" and 0 < remote.coverage < 1
    assert remote.probs["1"] == pytest.approx(local.probs["1"], abs=1e-4)


def test_top_logprobs_below_the_coverage_floor_are_an_error_not_a_guess(server):
    be = backend(server, top_logprobs=1, option_scoring="top_logprobs")
    with pytest.raises(OptionScoringError, match=r"hold 0 of the probability.*min_coverage 0.5"):
        run_sync(LLM(be, cache=NullCache()).score_options(msg("x"), ["0", "1"]))


def test_a_server_without_vllm_routes_gets_top_logprobs_and_no_context_check(tiny_backend):
    with LocalOpenAIServer(tiny_backend, vllm_routes=False) as plain:
        be = OpenAIBackend.connect("tiny-llama3", base_url=plain.base_url, backoff=0.01)
        assert be.option_scoring == "top_logprobs" and be.context_length is None and not be.tokenizes
        assert be.info.server_model == {"id": "tiny-llama3"}
        llm = LLM(be, cache=NullCache())
        assert run_sync(llm.prompt_tokens(msg("hi"))) is None and run_sync(llm.count_tokens("hi")) is None
        assert be.capabilities.tokenizer == "none" and be.capabilities.option_scoring == "top_logprobs"
        with pytest.raises(ConfigError, match="option_scoring=prompt_logprobs needs token ids"):
            OpenAIBackend.connect("tiny-llama3", base_url=plain.base_url, option_scoring="prompt_logprobs")


@pytest.fixture(scope="module")
def small_server(tiny_backend):
    with LocalOpenAIServer(tiny_backend, max_model_len=300) as s:
        yield s


def test_a_request_over_the_server_context_is_refused_before_it_is_sent(small_server):
    """prompt + max_new_tokens over max_model_len: refused here, naming the request, instead of the server's
    400 (prompt over) or a silently shortened answer (prompt + answer over)."""
    be = OpenAIBackend.connect("tiny-llama3", base_url=small_server.base_url, backoff=0.01)
    n = len(small_server.requests)
    llm = LLM(be, cache=NullCache())
    p = run_sync(llm.prompt_tokens(msg("What was decided?")))
    assert p == len(be.encode(msg("What was decided?"))) > 5
    with pytest.raises(PromptTooLongError, match=rf"ex-7/zero-shot has {p} tokens \+ {301 - p} new tokens, over the "
                                                 r"model context of 300"):
        run_sync(llm.chat(ChatRequest(messages=msg("What was decided?"), max_new_tokens=301 - p, tag="ex-7/zero-shot")))
    assert len(small_server.requests) == n  # nothing reached the server
    ok = run_sync(llm.chat(ChatRequest(messages=msg("What was decided?"), max_new_tokens=300 - p)))
    assert ok.prompt_tokens == p


def test_documents_are_fitted_to_the_server_context_as_on_hf(small_server, tiny_backend):
    """truncate=truncate on openai counts with the server's tokenizer: the same words are kept as on hf with the
    same context; truncate=error names the example."""
    from sumjudge.judges.base import fit_fields

    fields = {"doc": " ".join(f"word{i}" for i in range(400)), "summary": "A summary."}
    remote = LLM(OpenAIBackend.connect("tiny-llama3", base_url=small_server.base_url), cache=NullCache())
    ctx, tiny_backend.context_length = tiny_backend.context_length, 300
    try:
        local_fields, local_info = run_sync(fit_fields(LLM(tiny_backend, cache=NullCache()),
                                                       "madisse/table26_zero_shot", fields, max_new_tokens=16,
                                                       policy="truncate", tag="e"))
    finally:
        tiny_backend.context_length = ctx
    remote_fields, remote_info = run_sync(fit_fields(remote, "madisse/table26_zero_shot", fields, max_new_tokens=16,
                                                     policy="truncate", tag="e"))
    assert 0 < remote_info["truncated_words"] < 400 and remote_info == local_info and remote_fields == local_fields
    with pytest.raises(PromptTooLongError, match="prompt for doc-9 has"):
        run_sync(fit_fields(remote, "madisse/table26_zero_shot", fields, max_new_tokens=16, policy="error",
                            tag="doc-9"))


def test_sampled_requests_send_a_seed_per_sample(server):
    llm = LLM(backend(server), cache=NullCache())
    run_sync(llm.sample(ChatRequest(messages=msg("hi"), max_new_tokens=3, temperature=0.9, seed=4), 3))
    seeds = [r["seed"] for r in server.requests[-3:]]
    assert len(set(seeds)) == 3


@pytest.mark.parametrize("fault", ["null_content", "empty_choices", "malformed_json", "early_length"])
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
    from sumjudge.run.folder import RunConfig

    url = server.base_url.replace("http://", "http://user:s3cret@") + "?api_key=s3cret"
    be = OpenAIBackend.connect("tiny-llama3", base_url=url)
    assert "s3cret" not in be.info.server and "s3cret" not in str(be.info.extra) and "s3cret" not in be.where
    rc = RunConfig(method="zero-shot", dataset="x", backend="openai", model="m", base_url=url)
    assert "s3cret" not in str(rc.to_json()) and rc.to_json()["base_url"] == server.base_url


def _faith_file(tmp_path, n):
    import json

    rows = [{"id": f"e{i}", "document": f"The council met on day {i} and approved plan {i}.",
             "summary": f"Plan {i} was approved.", "label": i % 2} for i in range(n)]
    path = tmp_path / "faith.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return f"file:{path}"


def test_a_refused_request_fails_its_example_not_the_run(server, tmp_path):
    """A 4xx other than 429 fails that example (recorded with the server's message, counted in metrics.json);
    the others are judged; the server's prefix-cache counters for the run are in metrics.json."""
    import json

    from sumjudge.run.folder import RunConfig
    from sumjudge.run.runs import run

    rc = RunConfig(method="zero-shot", dataset=_faith_file(tmp_path, 4), backend="openai", model="tiny-llama3",
                   base_url=server.base_url, settings={"max_new_tokens": 4})
    llm = LLM(backend(server), cache=NullCache())  # built (server asked what it serves) before the fault
    server.fail_next(1, 400)
    m = run(rc, tmp_path / "run", llm=llm, progress=False)
    assert m["failed_examples"]["n"] == 1 and "HTTP 400" in m["failed_examples"]["examples"][0]["error"]
    assert m["n_examples"] == 4 and m["n"] + m["unparsed"] == 3  # the metrics cover the three judged examples
    rows = [json.loads(x) for x in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert [r["judgement"]["label_source"] for r in rows].count("failed") == 1
    assert m["server"]["prefix_cache_queried_tokens"] > 0 and 0 <= m["server"]["prefix_cache_hit_rate"] <= 1
    events = [json.loads(x) for x in (tmp_path / "run" / "calls.jsonl").read_text().splitlines()]
    assert sum(e.get("event") == "example_failed" for e in events) == 1


def test_a_run_whose_examples_mostly_fail_stops(server, tmp_path):
    from sumjudge.run.folder import RunConfig
    from sumjudge.run.runs import MostExamplesFailed, run

    rc = RunConfig(method="zero-shot", dataset=_faith_file(tmp_path, 12), backend="openai", model="tiny-llama3",
                   base_url=server.base_url, settings={"max_new_tokens": 4})
    server.fail_next(40, 400)
    try:
        with pytest.raises(MostExamplesFailed, match=r"examples judged so far failed; the last: faith-\d+: .*HTTP 400"):
            run(rc, tmp_path / "run", cache=tmp_path / "c.sqlite", progress=False)
    finally:
        with server._lock:
            server._fail.clear()
    assert not (tmp_path / "run" / "metrics.json").exists()


def test_an_answer_ended_early_with_length_is_a_fault_not_an_answer(server, tmp_path):
    """A server that says finish_reason=length after 1 of max_tokens tokens, below the context: retried, and the
    run's answers are those of a fault-free server; nothing of the cut answers is cached."""
    from sumjudge.llm import ResponseCache

    reqs = [ChatRequest(messages=msg(f"Early cut {i}?"), max_new_tokens=12, tag=f"e{i}") for i in range(4)]
    clean = run_sync(LLM(backend(server), cache=NullCache()).chat_many(reqs))
    cache = ResponseCache(tmp_path / "c.sqlite")
    be = backend(server)
    server.fault_next("early_length", 3)
    got = run_sync(LLM(be, cache=cache).chat_many(reqs))
    assert [(r.text, r.finish_reason) for r in got] == [(r.text, r.finish_reason) for r in clean]
    assert be.retries == 3 and cache.count() == 4
    again = run_sync(LLM(backend(server), cache=cache).chat_many(reqs))  # replayed from the cache: clean answers
    assert [r.text for r in again] == [r.text for r in clean] and all(r.cache_hit for r in again)


def test_a_length_finish_at_max_tokens_is_an_answer(server):
    be = backend(server)
    out = run_sync(LLM(be, cache=NullCache()).chat(ChatRequest(messages=msg("Go on and on"), max_new_tokens=3)))
    assert out.finish_reason == "length" and out.completion_tokens == 3 and be.retries == 0


def test_a_prompt_no_served_model_reads_is_not_sent_to_a_server_that_states_no_context(tiny_backend):
    from sumjudge.llm.openai import MAX_PROMPT_CHARS_UNKNOWN_CONTEXT

    with LocalOpenAIServer(tiny_backend, vllm_routes=False) as plain:  # no max_model_len, no /tokenize
        be = backend(plain)
        assert be.context_length is None
        huge = ChatRequest(messages=msg("x" * (MAX_PROMPT_CHARS_UNKNOWN_CONTEXT + 1)), max_new_tokens=4, tag="doc-7")
        with pytest.raises(PromptTooLongError, match="prompt for doc-7 has .* characters.*does not state its context"):
            run_sync(LLM(be, cache=NullCache()).chat(huge))
        assert plain.requests == []  # never sent


def test_the_cache_keys_on_the_served_model_not_on_the_address(tiny_backend, tmp_path):
    """A server that says which weights it serves (vLLM's ``root``) is known by them: the same weights on another
    port (a restart, a replica, a router in front of replicas) replay the answers; other weights, or the same
    weights at another context, do not. A server that states no root is known by its address; a name the user
    gives joins the key in place of the address."""
    from sumjudge.llm import ResponseCache

    req = ChatRequest(messages=msg("Same server, new port?"), max_new_tokens=4)
    cache = ResponseCache(tmp_path / "c.sqlite")
    with LocalOpenAIServer(tiny_backend) as first:
        run_sync(LLM(backend(first), cache=cache).chat(req))
        run_sync(LLM(backend(first, server_name="lab-8b"), cache=cache).chat(req))  # named: a key of its own
    with LocalOpenAIServer(tiny_backend) as restarted:  # another port, the same weights
        assert restarted.base_url != first.base_url
        chats = lambda: [r for r in restarted.requests if "messages" in r]  # noqa: E731 (not the start-up probe)
        assert run_sync(LLM(backend(restarted), cache=cache).chat(req)).cache_hit
        assert run_sync(LLM(backend(restarted, server_name="lab-8b"), cache=cache).chat(req)).cache_hit
        assert chats() == []
        assert not run_sync(LLM(backend(restarted, server_name="other"), cache=cache).chat(req)).cache_hit
        assert len(chats()) == 1
    for other in (dict(root="/models/other-weights"), dict(max_model_len=2048), dict(root="")):
        with LocalOpenAIServer(tiny_backend, **other) as server:  # root "": states none, known by its address
            assert not run_sync(LLM(backend(server), cache=cache).chat(req)).cache_hit, other


def test_a_slow_tokenize_does_not_hold_back_other_examples(server):
    """Token counting on a server is a request: while one example waits for ``/tokenize``, another example's
    chat request reaches the server and is answered."""
    import asyncio

    server.slow_tokenize = ("SLOW-DOC", 2.0)
    try:
        llm = LLM(backend(server), cache=NullCache())

        async def counting():
            n = await llm.count_tokens("SLOW-DOC " * 20)
            return n, time.monotonic()

        async def chatting():
            await llm.chat(ChatRequest(messages=msg("Another example"), max_new_tokens=2))
            return time.monotonic()

        async def both():
            return await asyncio.gather(counting(), chatting())

        (n, counted_at), chatted_at = run_sync(both())
    finally:
        server.slow_tokenize = ("", 0.0)
    assert n > 20 and chatted_at < counted_at - 1.0


def test_stop_strings_beyond_the_api_limit_are_applied_to_the_answer(server):
    """The API takes four stop strings; a fifth and sixth are applied here: the answer ends before the first of
    them it holds, finish_reason stop."""
    llm = LLM(backend(server), cache=NullCache())
    free = run_sync(llm.chat(ChatRequest(messages=msg("Tell me more"), max_new_tokens=24)))
    words = free.text.split()
    assert len(words) > 4
    stop = words[3]
    cut = free.text[: free.text.find(stop)]
    req = ChatRequest(messages=msg("Tell me more"), max_new_tokens=24,
                      stop=("@@1", "@@2", "@@3", "@@4", "@@5", stop))
    out = run_sync(llm.chat(req))
    assert server.requests[-1]["stop"] == ["@@1", "@@2", "@@3", "@@4"]
    assert out.text == cut and out.finish_reason == "stop"


def test_tokenize_faults_are_retried_under_the_same_policy_as_model_calls(server):
    """``/tokenize`` answering 503 with Retry-After is retried (waiting what it asks), as a model call is; an empty
    token list for a non-empty text is never read as zero tokens."""
    be = backend(server)
    calls = []
    real = be._http.post

    class Busy:
        status_code, text = 503, "busy"
        headers = {"retry-after": "0.3"}

    class Empty:
        status_code, text, headers = 200, '{"tokens": []}', {}

        def json(self):
            return {"tokens": []}

    def flaky(url, json):
        calls.append(time.monotonic())
        return Busy() if len(calls) == 1 else real(url, json=json)

    be._http.post = flaky
    assert be.count_tokens("a fresh text to count") > 3
    assert len(calls) == 2 and calls[1] - calls[0] >= 0.3 and be.retries == 1
    be._http.post = lambda url, json: Empty()
    with pytest.raises(BackendRequestError, match="no tokens for a non-empty text"):
        be.count_tokens("another text")


def test_the_constructor_asks_the_server_nothing(server):
    """Discovery is ``connect()``'s: a backend built directly has sent no request and knows only what it is told."""
    nowhere = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there: any request would fail
    be = OpenAIBackend("tiny-llama3", base_url=nowhere, context_length=512)
    assert be.served == {} and be.capabilities.tokenizer == "none"
    with pytest.raises(BackendUnavailableError, match="not reachable"):
        OpenAIBackend.connect("tiny-llama3", base_url=nowhere)
    assert be.capabilities.context_length == 512 and be.capabilities.option_scoring == "top_logprobs"
    full = backend(server)
    assert full.capabilities.tokenizer == "remote" and full.capabilities.option_scoring == "exact"
    assert full.capabilities.server_metrics and full.served["max_model_len"] == 4096


@pytest.fixture(scope="module")
def llama_cpp_server(tiny_backend):
    with LocalOpenAIServer(tiny_backend, flavor="llama.cpp", max_model_len=300) as s:
        yield s


def test_a_llama_cpp_server_is_understood(llama_cpp_server, tiny_backend):
    """llama.cpp's server: /tokenize reads ``content`` (an empty list for ``prompt``, never taken as zero tokens),
    the chat template through /apply-template, one slot's context from /props, /metrics 501, option scores from
    top_logprobs; its sampling defaults (top_k 40, min_p 0.05) are neutralised in every chat request."""
    # the tiny random model puts little mass on "0"/"1": no coverage floor here (a real model's is tested live)
    be = OpenAIBackend.connect("tiny-llama3", base_url=llama_cpp_server.base_url, backoff=0.01, min_coverage=0.0,
                               top_logprobs=len(tiny_backend.tokenizer))
    assert be.dialect == "llama.cpp" and be.server_tokenizes and be.context_length == 300
    assert be.info.server_model == {"id": "tiny-llama3", "n_ctx": 300}
    caps = be.capabilities
    assert (caps.tokenizer, caps.option_scoring, caps.server_metrics) == ("remote", "top_logprobs", False)
    m = msg("What was decided about the budget?")
    assert be.encode(m) == tiny_backend.encode(m)  # the server's template and tokenizer: the hf backend's ids
    assert be.count_tokens("Hello world") == tiny_backend.count_tokens("Hello world")
    llm = LLM(be, cache=NullCache())
    run_sync(llm.chat(ChatRequest(messages=m, max_new_tokens=3, temperature=0.7, top_p=0.9, seed=1)))
    sent = llama_cpp_server.requests[-1]
    assert (sent["top_k"], sent["min_p"], sent["repeat_penalty"], sent["top_p"]) == (0, 0.0, 1.0, 0.9)
    scores = run_sync(llm.score_options(m, ["0", "1"]))
    assert scores.method == "top_logprobs"


def test_documents_are_fitted_to_a_llama_cpp_context_as_on_hf(llama_cpp_server, tiny_backend):
    """The failure that sent whole documents to llama.cpp: prompts are counted with its tokenizer, so
    truncate=truncate keeps the same words as the hf backend with the same context."""
    from sumjudge.judges.base import fit_fields

    fields = {"doc": " ".join(f"word{i}" for i in range(400)), "summary": "A summary."}
    remote = LLM(OpenAIBackend.connect("tiny-llama3", base_url=llama_cpp_server.base_url), cache=NullCache())
    ctx, tiny_backend.context_length = tiny_backend.context_length, 300
    try:
        local = run_sync(fit_fields(LLM(tiny_backend, cache=NullCache()), "madisse/table26_zero_shot", fields,
                                    max_new_tokens=16, policy="truncate", tag="e"))
    finally:
        tiny_backend.context_length = ctx
    got = run_sync(fit_fields(remote, "madisse/table26_zero_shot", fields, max_new_tokens=16, policy="truncate",
                              tag="e"))
    assert 0 < got[1]["truncated_words"] < 400 and got == local


def test_a_server_without_a_tokenize_route_counts_with_the_tokenizer_given(tiny_backend, tiny_model_dir):
    """ollama and llama-cpp-python's server have no tokenize route: with ``--tokenizer`` (the model's own) prompts
    are counted locally, exactly as the hf backend counts them, and option scoring is still top_logprobs."""
    with LocalOpenAIServer(tiny_backend, vllm_routes=False) as plain:
        be = OpenAIBackend.connect("tiny-llama3", base_url=plain.base_url, tokenizer=str(tiny_model_dir),
                                   context_length=300)
        m = msg("What was decided about the budget?")
        assert be.capabilities.tokenizer == "local" and be.prompt_tokens(m) == len(tiny_backend.encode(m))
        assert be.capabilities.option_scoring == "top_logprobs" and be.info.extra["tokenizer"] == str(tiny_model_dir)


def test_async_requests_go_through_aiohttp_and_its_dropped_connections_are_retried(server):
    """Many requests in flight: the SDK's aiohttp transport carries the chat calls and the server's own routes (far
    less CPU per request than httpcore's pool); a dropped connection there (raised as httpx2's error) is retried under
    the same policy as model calls, not taken for an answer or a refusal."""
    import asyncio

    import httpx2

    be = backend(server)

    async def go():
        be._bind_loop()
        assert type(be.client._client._transport).__name__ == "AiohttpTransport"
        assert type(be._ahttp._transport).__name__ == "AiohttpTransport"
        real, seen = be._ahttp.post, []

        async def dropped_once(url, json):
            seen.append(url)
            if len(seen) == 1:
                raise httpx2.RemoteProtocolError("Server disconnected")
            return await real(url, json=json)

        be._ahttp.post = dropped_once
        n = await be.aprompt_tokens(msg("a prompt counted on the event loop"))
        await asyncio.sleep(0)
        return n

    assert run_sync(go()) > 5 and be.retries == 1


def test_a_server_that_states_no_context_and_fails_at_random_gives_the_fault_free_run(tiny_backend, tmp_path):
    """22% of the calls faulted (early length cuts among them) on a server that states no context: a short length
    finish is asked again with the same seed before it counts as a cut, so every run equals the fault-free one,
    and the cache holds no faulted answer."""
    from sumjudge.llm import ResponseCache

    reqs = [ChatRequest(messages=msg(f"Lying server {i}?"), max_new_tokens=10, temperature=0.7 if i % 2 else 0.0,
                        seed=i, tag=f"e{i}") for i in range(10)]
    with LocalOpenAIServer(tiny_backend, vllm_routes=False) as plain:
        assert backend(plain).context_length is None
        clean = [(r.text, r.finish_reason) for r in run_sync(LLM(backend(plain), cache=NullCache()).chat_many(reqs))]
        kinds = ("early_length", "null_content", "empty_choices", "malformed_json", "503")
        for run in range(8):
            plain.fault_mix(0.22, kinds, seed=run)
            cache = ResponseCache(tmp_path / f"c{run}.sqlite")
            be = backend(plain, max_retries=20)
            got = run_sync(LLM(be, cache=cache).chat_many(reqs))
            assert [(r.text, r.finish_reason) for r in got] == clean, f"run {run}"
            again = run_sync(LLM(backend(plain), cache=cache).chat_many(reqs))
            assert all(r.cache_hit for r in again) and [(r.text, r.finish_reason) for r in again] == clean
        plain.fault_mix(0.0, kinds)


def test_a_real_cut_at_an_unstated_context_is_asked_again_and_kept(tiny_backend):
    with LocalOpenAIServer(tiny_backend, vllm_routes=False) as plain:
        be = backend(plain)
        n = len(tiny_backend.encode(msg("Cut me")))
        plain.max_model_len = n + 3  # the server cuts the answer at its context, which it does not state
        out = run_sync(LLM(be, cache=NullCache()).chat(ChatRequest(messages=msg("Cut me"), max_new_tokens=12)))
        assert out.finish_reason == "length" and out.completion_tokens < 12
        assert be.retries == 2 and len(plain.requests) == 3  # asked three times, the same cut each time
