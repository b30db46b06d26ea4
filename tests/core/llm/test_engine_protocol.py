"""Engine protocol tests with the *scripted* backend (a rule-driven test double, not a model)."""

import asyncio

import pytest

from sumjudge.llm import ChatRequest, NullCache, ResponseCache, run_sync
from sumjudge.llm.engine import LLM
from sumjudge.llm.parsing import binary_label
from sumjudge.llm.scripted import ScriptedBackend


def req(text, **kw):
    return ChatRequest(messages=[{"role": "user", "content": text}], max_new_tokens=8, **kw)


def test_concurrent_examples_reach_the_backend_as_one_batch(cache_file):
    be = ScriptedBackend().add(r"agent", lambda r: f"<label>{len(r.messages[-1]['content']) % 2}</label>")
    llm = LLM(be, cache=ResponseCache(cache_file))

    async def example(i):  # each example: one round of 4 agents, then a second round
        first = await llm.chat_many([req(f"doc {i} agent {a}") for a in range(4)])
        second = await llm.chat_many([req(f"doc {i} agent {a} round 2") for a in range(4)])
        return first + second

    async def all_examples():
        return await asyncio.gather(*(example(i) for i in range(5)))

    out = run_sync(all_examples())
    assert len(out) == 5 and all(len(x) == 8 for x in out)
    assert be.batches == [20, 20]  # all agents of a round across all examples: one backend call per round
    assert llm.usage.backend_calls == 40 and llm.usage.cache_hits == 0


def test_identical_inflight_requests_are_sent_once(cache_file):
    be = ScriptedBackend().add(r".", "same")
    llm = LLM(be, cache=ResponseCache(cache_file))
    out = run_sync(llm.chat_many([req("x")] * 6))
    assert [r.text for r in out] == ["same"] * 6
    assert len(be.requests) == 1 and llm.usage.cache_hits == 5


def test_cache_hits_skip_the_backend_and_sample_index_is_part_of_the_key(cache_file):
    be = ScriptedBackend().add(r".", lambda r: f"s{r.sample_index}")
    llm = LLM(be, cache=ResponseCache(cache_file))
    a = run_sync(llm.sample(req("q", temperature=0.7, seed=1), 3))
    assert [r.text for r in a] == ["s0", "s1", "s2"]
    llm2 = LLM(be, cache=ResponseCache(cache_file))
    b = run_sync(llm2.sample(req("q", temperature=0.7, seed=1), 3))
    assert [r.text for r in b] == ["s0", "s1", "s2"] and all(r.cache_hit for r in b)
    assert len(be.requests) == 3
    c = run_sync(llm2.chat(req("q", temperature=0.7, seed=2)))  # another seed is another call
    assert not c.cache_hit and len(be.requests) == 4


def test_parse_failures_are_retried_then_counted_never_labelled():
    attempts = []

    def reply(r):
        attempts.append((r.temperature, r.seed))
        return "<label>1</label>" if "fixable" in r.messages[-1]["content"] and len(attempts) >= 2 else "I think so."

    be = ScriptedBackend().add(r".", reply)
    llm = LLM(be, cache=NullCache(), parse_retries=2)
    ok = run_sync(llm.chat_parsed(req("fixable", seed=5), binary_label))
    assert ok.ok and ok.value == 1 and ok.attempts == 2
    assert attempts[0] == (0.0, 5) and attempts[1] == (0.7, 100005)  # a greedy retry samples with a derived seed
    attempts.clear()
    bad = run_sync(llm.chat_parsed(req("hopeless", seed=5), binary_label))
    assert not bad.ok and bad.value is None and bad.attempts == 3 and "no <label>" in bad.error
    assert llm.usage.parse_failures == 1 and llm.usage.parse_retries == 3


def test_scoped_usage_counts_per_example():
    be = ScriptedBackend().add(r".", "one two three")
    llm = LLM(be, cache=NullCache())

    async def go():
        a, b = llm.scoped("a"), llm.scoped("b")
        await a.chat_many([req("x1"), req("x2")])
        await b.chat(req("y"))
        return a.usage, b.usage

    ua, ub = run_sync(go())
    assert (ua.calls, ua.completion_tokens, ub.calls) == (2, 6, 1)
    assert llm.usage.calls == 3


def test_backend_errors_reach_the_caller_and_are_not_cached(cache_file):
    be = ScriptedBackend().add(r"^known", "fine")  # no rule for "unknown": the backend reports an error
    llm = LLM(be, cache=ResponseCache(cache_file))
    with pytest.raises(LookupError, match="no rule matches"):
        run_sync(llm.chat(req("unknown")))
    assert ResponseCache(cache_file).stats()["entries"] == 0 and llm.usage.errors == 1


def test_option_scores_through_the_engine():
    be = ScriptedBackend(options=lambda r: {"0": 0.2, "1": 0.8})
    llm = LLM(be, cache=NullCache())
    sc = run_sync(llm.score_options([{"role": "user", "content": "q"}], ["0", "1"], prefix="<label>"))
    assert sc.best() == "1" and sc.expectation() == pytest.approx(0.8)


def test_run_sync_inside_a_running_loop():
    be = ScriptedBackend().add(r".", "ok")
    llm = LLM(be, cache=NullCache())

    async def notebook_cell():  # Jupyter runs cells inside an event loop
        return run_sync(llm.chat(req("x")))

    assert asyncio.run(notebook_cell()).text == "ok"


def test_an_answer_cut_at_max_new_tokens_is_unreadable_unless_the_method_reads_cut_answers():
    """finish_reason=length: "<label>1<" is no statement. Without a cut parser the answer is retried, then counted
    unreadable; with one (closed tags only, complete lines only) what the cut answer completed is read."""
    from sumjudge.llm.parsing import complete_lines, scale_score

    be = (ScriptedBackend()
          .add(r"bare", "<label>1", finish="length")
          .add(r"closed", "<label>0</label> <explanation>The summary adds a da", finish="length")
          .add(r"score-cut", "Score: 4", finish="length")
          .add(r"score-line", "Score: 2\nThe Critic is right that", finish="length"))
    llm = LLM(be, cache=NullCache(), parse_retries=1)
    strict = (lambda t: binary_label(t, closed_only=True))  # noqa: E731
    bare = run_sync(llm.chat_parsed(req("bare"), binary_label, cut_parse=strict))
    assert not bare.ok and "cut before it closed" in bare.error and bare.attempts == 2
    assert binary_label("<label>1") == 1  # the same text ended by a stop string would be a statement
    plain = run_sync(llm.chat_parsed(req("closed"), binary_label))
    assert not plain.ok and "cut at max_new_tokens=8 (finish_reason=length)" in plain.error
    closed = run_sync(llm.chat_parsed(req("closed"), binary_label, cut_parse=strict))
    assert closed.ok and closed.value == 0
    parse = (lambda t: scale_score(t, 1, 5))  # noqa: E731
    assert not run_sync(llm.chat_parsed(req("score-cut"), parse, cut_parse=complete_lines(parse))).ok
    line = run_sync(llm.chat_parsed(req("score-line"), parse, cut_parse=complete_lines(parse)))
    assert line.ok and line.value == 2
    assert llm.usage.cut_answers == 2 + 2 + 1 + 2 + 1 and llm.usage.parse_failures == 3


class StreamingBackend(ScriptedBackend):
    """Answers each request of a batch as it is done (``on_results``), as the hf and openai backends do, after a
    moment; a request saying "slow" is held until a request saying "next" has reached the backend (or 5 s)."""

    def __init__(self):
        super().__init__()
        self.add(r".", "ok")
        self.next_arrived: asyncio.Event | None = None
        self.slow_waited_out = False

    @property
    def capabilities(self):
        from sumjudge.llm.backend_protocol import Capabilities

        return Capabilities(tokenizer="local", max_inflight=1 << 20, streams_results=True)

    async def generate(self, reqs, on_results=None):
        self.next_arrived = self.next_arrived or asyncio.Event()
        if any("next" in r.messages[-1]["content"] for r in reqs):
            self.next_arrived.set()
        out = await super().generate(reqs)
        fast = [(i, o) for i, (r, o) in enumerate(zip(reqs, out)) if "slow" not in r.messages[-1]["content"]]
        await asyncio.sleep(0.05)  # generating: the engine's dispatcher has gone back to waiting
        on_results(fast)
        if len(fast) < len(reqs):
            try:
                await asyncio.wait_for(self.next_arrived.wait(), 5)
            except asyncio.TimeoutError:
                self.slow_waited_out = True
        return out


def test_a_request_that_follows_a_streamed_answer_goes_out_before_its_batch_returns():
    """A method's next step, made from an answer reported while the rest of its batch is still being generated,
    reaches the backend at once: it does not wait for the slowest request of the batch before it (MESA's step 2
    after step 1, a debate's next round of an example that finished early)."""
    be = StreamingBackend()
    llm = LLM(be, cache=NullCache())

    async def fast_then_next():
        await llm.chat(req("fast step"))
        return await llm.chat(req("next step"))

    async def both():
        return await asyncio.gather(fast_then_next(), llm.chat(req("slow step")))

    out = run_sync(both())
    assert [r.text for r in out] == ["ok", "ok"]
    assert be.batches == [2, 1]  # the first two together; the next step on its own while the slow one was out
    assert not be.slow_waited_out  # it arrived while the slow request was still held
