"""The shared engine: one hf model served to several processes (make reproduce's notebooks) over the loopback."""

from __future__ import annotations

import asyncio
import threading

import pytest

from sumjudge.llm import ChatRequest, NullCache, OptionRequest, PromptTooLongError, make_backend, run_sync
from sumjudge.llm.engine import LLM
from sumjudge.llm.shared_engine import ENV, EngineServer, SharedEngineBackend, shared_engine_for
from sumjudge.llm.types import cache_key

DOC = "The council met on Tuesday. " * 30


def msg(text):
    return [{"role": "user", "content": text}]


@pytest.fixture(scope="module")
def served(tiny_backend, tiny_model_dir):
    """(base URL, server) of an EngineServer over the tiny model, on its own loop in a thread."""
    from aiohttp import web

    server = EngineServer(tiny_backend, {"model": str(tiny_model_dir)})
    loop = asyncio.new_event_loop()
    started = threading.Event()
    box = {}

    async def start():
        runner = web.AppRunner(server.app(), access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        box["url"] = f"http://127.0.0.1:{runner.addresses[0][1]}"
        box["runner"] = runner
        started.set()

    thread = threading.Thread(target=lambda: (loop.run_until_complete(start()), loop.run_forever()), daemon=True)
    thread.start()
    assert started.wait(60)
    yield box["url"], server
    asyncio.run_coroutine_threadsafe(box["runner"].cleanup(), loop).result(30)
    loop.call_soon_threadsafe(loop.stop)


def test_answers_and_cache_keys_are_the_local_backends(served, tiny_backend):
    url, _ = served
    remote = SharedEngineBackend(url)
    reqs = [ChatRequest(messages=msg(f"{DOC} Agent {a}: faithful?"), max_new_tokens=6 + a) for a in range(3)]
    reqs.append(ChatRequest(messages=msg("Short."), max_new_tokens=5, temperature=0.8, seed=7))
    local = run_sync(LLM(tiny_backend, cache=NullCache()).chat_many(reqs))
    shared = run_sync(LLM(remote, cache=NullCache()).chat_many(reqs))
    assert [r.text for r in shared] == [r.text for r in local]
    assert [r.prompt_tokens for r in shared] == [r.prompt_tokens for r in local]
    # the same backend name, model, revision and dtype: the cache entries are interchangeable
    assert all(cache_key("chat", remote.info, r.key_fields()) == cache_key("chat", tiny_backend.info, r.key_fields())
               for r in reqs)
    assert remote.info.extra["shared_engine"] == url
    opt = OptionRequest(messages=msg("Is it faithful?"), options=("0", "1"), prefix="<label>")
    (a,), (b,) = run_sync(tiny_backend.score([opt])), run_sync(remote.score([opt]))
    assert a.probs == pytest.approx(b.probs)
    text = "Agent 1: the summary is faithful."
    assert run_sync(LLM(remote, cache=NullCache()).count_tokens(text)) == tiny_backend.count_tokens(text)
    assert run_sync(LLM(remote, cache=NullCache()).prompt_tokens(msg(text))) == tiny_backend.prompt_tokens(msg(text))


def test_each_client_keeps_its_own_context_length(served, tiny_backend):
    url, _ = served
    small = SharedEngineBackend(url, context_length=120)
    assert small.capabilities.context_length == 120 and small.info.extra["context_length"] == 120

    async def both():
        llm = LLM(small, cache=NullCache())
        return await asyncio.gather(llm.chat(ChatRequest(messages=msg("Short."), max_new_tokens=8, tag="ok")),
                                    llm.chat(ChatRequest(messages=msg(DOC), max_new_tokens=8, tag="ex-42/zero-shot")),
                                    return_exceptions=True)

    a, b = run_sync(both())
    assert 1 <= a.completion_tokens <= 8
    assert isinstance(b, PromptTooLongError) and "ex-42/zero-shot" in str(b) and "120" in str(b)
    # the same long prompt fits a client with the model's whole context
    assert run_sync(LLM(SharedEngineBackend(url), cache=NullCache()).chat(
        ChatRequest(messages=msg(DOC), max_new_tokens=8))).completion_tokens >= 1


def test_identical_requests_in_flight_together_are_decoded_once(served, tiny_backend):
    url, server = served
    req = ChatRequest(messages=msg(f"{DOC} Which day?"), max_new_tokens=24)
    before_rows, before_coalesced = tiny_backend.generate_calls, server.coalesced

    async def two_clients():  # two processes' engines asking the same call at the same time
        return await asyncio.gather(LLM(SharedEngineBackend(url), cache=NullCache()).chat(req),
                                    LLM(SharedEngineBackend(url), cache=NullCache()).chat(req))

    a, b = run_sync(two_clients())
    assert a.text == b.text and server.coalesced == before_coalesced + 1
    assert tiny_backend.generate_calls - before_rows == 1


def test_make_backend_uses_the_shared_engine_only_for_its_model_and_options(served, tiny_model_dir, monkeypatch):
    url, _ = served
    monkeypatch.setenv(ENV, url)
    be = make_backend("hf", str(tiny_model_dir), context_length=256)
    assert isinstance(be, SharedEngineBackend) and be.context_length == 256
    assert shared_engine_for(str(tiny_model_dir), {"dtype": "bfloat16"}) is None  # another dtype: load locally
    assert shared_engine_for("smoke", {}) is None  # another model
    monkeypatch.setenv(ENV, "http://127.0.0.1:9")  # nothing listens there: the model is loaded in the process
    assert shared_engine_for(str(tiny_model_dir), {}) is None


def test_each_client_process_is_its_own_source_of_rows(served, tiny_backend, monkeypatch):
    # the notebooks take turns joining the batch: the server hands the client's name to the backend as the source
    import os

    url, _ = served
    seen = []
    real = tiny_backend.generate

    async def recording(reqs, on_results=None, context_length=None, source=""):
        seen.append(source)
        return await real(reqs, on_results=on_results, context_length=context_length, source=source)

    monkeypatch.setattr(tiny_backend, "generate", recording)
    remote = SharedEngineBackend(url)
    run_sync(LLM(remote, cache=NullCache()).chat(ChatRequest(messages=msg("Which source?"), max_new_tokens=3)))
    assert seen == [str(os.getpid())] and remote.client == str(os.getpid())


def test_each_client_reads_its_own_share_of_the_engines_work(served, tiny_backend):
    """``own_*`` in a client's decode stats: its rows' prompt tokens, answers and tokens, and its share of the
    prefill and decode seconds, apart from another client's rows decoded in the same batch."""
    url, _ = served
    mine, other = SharedEngineBackend(url), SharedEngineBackend(url, client="another notebook")
    reqs = [ChatRequest(messages=msg(f"{DOC} Agent {a}: faithful?"), max_new_tokens=4 + a) for a in range(3)]
    theirs = [ChatRequest(messages=msg(f"Question {i} of the other notebook."), max_new_tokens=8) for i in range(5)]

    async def both():
        return await asyncio.gather(LLM(mine, cache=NullCache()).chat_many(reqs),
                                    LLM(other, cache=NullCache()).chat_many(theirs))

    got, _ = run_sync(both())
    d, o = mine.decode_stats(), other.decode_stats()
    assert d["own_answers"] == 3 and o["own_answers"] == 5
    assert d["own_prompt_tokens"] == sum(r.prompt_tokens for r in got)
    assert d["own_decode_tokens"] == sum(r.completion_tokens for r in got)
    assert d["own_decode_s"] > 0 and d["own_prefill_s"] > 0 and o["own_decode_s"] > 0
    # the shares add up to no more than the engine's own seconds over the same span
    assert d["own_decode_s"] + o["own_decode_s"] <= d["decode_s"] + 1e-6
    opts = [OptionRequest(messages=msg(f"{DOC} Is it faithful? ({i})"), options=("0", "1")) for i in range(4)]
    scorer = LLM(mine, cache=NullCache())

    async def score_all():
        return await asyncio.gather(*(scorer.score_options(o.messages, o.options) for o in opts))

    run_sync(score_all())
    d = mine.decode_stats()
    assert d["own_option_sets"] == 4 and d["own_score_s"] > 0 and other.decode_stats()["own_option_sets"] == 0
    prof = LLM(mine, cache=NullCache()).time_profile()
    assert prof["own_answers"] == 3 and prof["own_decode_tokens"] == d["own_decode_tokens"]
    assert prof["own_option_sets"] == 4
