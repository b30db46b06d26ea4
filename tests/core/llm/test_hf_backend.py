"""The real transformers code path, on a tiny random Llama-3-architecture model (real Llama-3 tokenizer)."""

import pytest
import torch

from sumjudge.llm import ChatRequest, NullCache, PromptTooLongError, run_sync
from sumjudge.llm.decode import MIN_SHARED_PREFIX, prefix_groups
from sumjudge.llm.engine import LLM
from sumjudge.llm.hf import HFBackend

DOC = " ".join(f"Councilmember {i % 7} moved item {i} and the motion carried {i % 3} to one." for i in range(40))


def msg(text):
    return [{"role": "user", "content": text}]


def reference_generate(be: HFBackend, r: ChatRequest) -> str:
    """What the papers' code does: one ``model.generate`` per request (greedy)."""
    ids = torch.tensor([be.encode(r.messages)])
    with torch.inference_mode():
        out = be.model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=r.max_new_tokens,
                                do_sample=False, eos_token_id=be.eos_ids, pad_token_id=be.tokenizer.pad_token_id)
    return be.tokenizer.decode(out[0, ids.shape[1]:], skip_special_tokens=True)


def test_chat_template_and_token_counts_are_llama3(tiny_backend):
    ids = tiny_backend.encode(msg("Hello"))
    text = tiny_backend.tokenizer.decode(ids)
    assert text.startswith("<|begin_of_text|><|start_header_id|>user<|end_header_id|>")
    assert text.endswith("<|start_header_id|>assistant<|end_header_id|>\n\n")
    assert tiny_backend.count_tokens("Hello world") == 2
    assert tiny_backend.info.extra["dtype"] == "float32" and tiny_backend.info.revision


def test_batched_greedy_equals_one_generate_per_request(tiny_backend):
    reqs = [ChatRequest(messages=msg(f"{DOC}\n\nAgent {a}: is the summary faithful? {'Explain. ' * a}"),
                        max_new_tokens=12 + 3 * a, tag=f"agent{a}") for a in range(4)]
    reqs += [ChatRequest(messages=msg("Short prompt."), max_new_tokens=10),
             ChatRequest(messages=msg("Another, a little longer, prompt about a meeting."), max_new_tokens=7)]
    llm = LLM(tiny_backend, cache=NullCache())
    before = tiny_backend.generate_calls
    out = run_sync(llm.chat_many(reqs))
    assert tiny_backend.generate_calls - before == 1  # one micro-batch for all six
    for r, resp in zip(reqs, out):
        assert resp.text == reference_generate(tiny_backend, r)
        assert resp.prompt_tokens == len(tiny_backend.encode(r.messages))
        assert 0 < resp.completion_tokens <= r.max_new_tokens
        assert resp.finish_reason in ("stop", "length")


def test_shared_document_prefix_is_grouped():
    base = list(range(100))
    rows = [base + [1, 2], base + [3], base[:50] + [9] * 80, [7] * 10]
    group, plen = prefix_groups(rows, share=True)
    assert group[0] == group[1] and len({group[0], group[2], group[3]}) == 3
    assert plen[group[0]] == 100 and MIN_SHARED_PREFIX <= 100
    assert prefix_groups(rows, share=False)[1] == [len(r) - 1 for r in rows]


def test_small_token_budget_gives_more_micro_batches_same_text(tiny_model_dir, tiny_backend):
    small = HFBackend(str(tiny_model_dir), token_budget=150)
    reqs = [ChatRequest(messages=msg(f"{DOC[: 200 + 40 * i]} question {i}"), max_new_tokens=8) for i in range(5)]
    a = run_sync(LLM(small, cache=NullCache()).chat_many(reqs))
    b = run_sync(LLM(tiny_backend, cache=NullCache()).chat_many(reqs))
    assert small.generate_calls >= 3
    assert [x.text for x in a] == [x.text for x in b]


def test_seeded_sampling_does_not_depend_on_the_batch(tiny_backend):
    r = ChatRequest(messages=msg("Tell me about the meeting."), max_new_tokens=12, temperature=1.0, seed=7)
    alone = run_sync(LLM(tiny_backend, cache=NullCache()).chat(r))
    others = [ChatRequest(messages=msg(f"Other prompt {i} {'x ' * i}"), max_new_tokens=5 + i, temperature=0.8, seed=i)
              for i in range(4)]
    batched = run_sync(LLM(tiny_backend, cache=NullCache()).chat_many(others + [r]))[-1]
    assert batched.text == alone.text
    samples = run_sync(LLM(tiny_backend, cache=NullCache()).sample(r, 4))
    assert samples[0].text == alone.text  # sample 0 is the request itself
    assert len({s.text for s in samples}) > 1  # other sample indices draw other tokens


def test_stop_strings_cut_the_text(tiny_backend):
    llm = LLM(tiny_backend, cache=NullCache())
    full = run_sync(llm.chat(ChatRequest(messages=msg("Count."), max_new_tokens=16))).text
    assert len(full) > 4
    stop = full[2:4]
    cut = run_sync(llm.chat(ChatRequest(messages=msg("Count."), max_new_tokens=16, stop=(stop,))))
    assert cut.text == full[: full.find(stop)] and cut.finish_reason == "stop"


def test_prompt_over_the_context_fails_alone(tiny_backend):
    small = HFBackend.from_loaded(tiny_backend.model, tiny_backend.tokenizer, name="tiny-ctx", context_length=120)
    llm = LLM(small, cache=NullCache())
    ok = ChatRequest(messages=msg("Short."), max_new_tokens=8, tag="ok")
    long = ChatRequest(messages=msg(DOC), max_new_tokens=8, tag="ex-42/zero-shot")

    async def both():
        import asyncio

        return await asyncio.gather(llm.chat(ok), llm.chat(long), return_exceptions=True)

    a, b = run_sync(both())
    assert a.prompt_tokens <= 120 and 1 <= a.completion_tokens <= 8  # the short prompt was answered
    assert isinstance(b, PromptTooLongError) and "ex-42/zero-shot" in str(b) and "120" in str(b)


def test_option_scores_match_the_logits(tiny_backend):
    llm = LLM(tiny_backend, cache=NullCache())
    m = msg("Is it faithful? Answer 0 or 1.")
    sc = run_sync(llm.score_options(m, ["0", "1"], prefix="<label>"))
    assert sum(sc.probs.values()) == pytest.approx(1.0)
    tok = tiny_backend.tokenizer
    ids = tiny_backend.encode(m) + tok("<label>", add_special_tokens=False).input_ids
    with torch.inference_mode():
        logits = tiny_backend.model(input_ids=torch.tensor([ids])).logits[0, -1]
    lp = torch.log_softmax(logits.float(), -1)
    l0, l1 = (float(lp[tok.convert_tokens_to_ids(t)]) for t in ("0", "1"))
    assert sc.logprobs["0"] == pytest.approx(l0, abs=1e-4) and sc.logprobs["1"] == pytest.approx(l1, abs=1e-4)
    assert sc.probs["1"] == pytest.approx(torch.softmax(torch.tensor([l0, l1]), 0)[1].item(), abs=1e-5)
    multi = run_sync(llm.score_options(m, ["1", "2", "3", "4", "5"]))
    assert set(multi.probs) == {"1", "2", "3", "4", "5"} and 1 <= multi.expectation() <= 5


def _manual_logprob(backend, ids_prompt: list[int], option_ids: list[int]) -> float:
    ids = ids_prompt + option_ids
    with torch.inference_mode():
        logits = backend.model(input_ids=torch.tensor([ids])).logits[0]
    lp = torch.log_softmax(logits.float(), -1)
    return sum(float(lp[len(ids_prompt) + t - 1, tok]) for t, tok in enumerate(option_ids))


def test_option_scores_share_a_pass_where_options_differ_in_the_last_token(tiny_backend, monkeypatch):
    """Single-token options are scored from one row (one forward pass over the prompt); multi-token options
    still get their exact summed log-probability, the same as scoring each sequence on its own."""
    llm = LLM(tiny_backend, cache=NullCache())
    rows_seen: list[int] = []
    real = tiny_backend.micro_batches

    def spy(rows, key):
        rows_seen.append(len(rows))
        return real(rows, key)

    monkeypatch.setattr(tiny_backend, "micro_batches", spy)
    m = msg("Which error type?")
    single = run_sync(llm.score_options(m, ["1", "2", "3", "4", "5"]))
    assert rows_seen == [1] and len(single.logprobs) == 5
    options = ["Entity Error", "Entity Errors", "Factually_Correct"]
    multi = run_sync(llm.score_options(m, options, prefix="- Label: "))
    tok = tiny_backend.tokenizer
    pre = tok("- Label: ", add_special_tokens=False).input_ids
    for o in options:
        full = tok("- Label: " + o, add_special_tokens=False).input_ids
        opt_ids = full[len(pre):] if full[:len(pre)] == pre else tok(o, add_special_tokens=False).input_ids
        prompt = tiny_backend.encode(m) + pre
        assert multi.logprobs[o] == pytest.approx(_manual_logprob(tiny_backend, prompt, opt_ids), abs=1e-3)
    assert rows_seen[1] <= len(options)


def test_dtype_choices(monkeypatch):
    from sumjudge.llm import ConfigError, hf

    assert hf.resolve_dtype(None, "cpu") == "float32" and hf.resolve_dtype(None, "cuda") == "bfloat16"
    assert hf.resolve_dtype("float16", "cpu") == "float16"
    monkeypatch.setattr(hf, "cpu_has_native_bf16", lambda: False)
    assert hf.resolve_dtype("cpu-native", "cpu") == "float32" and hf.resolve_dtype("cpu-native", "cuda:0") == "bfloat16"
    monkeypatch.setattr(hf, "cpu_has_native_bf16", lambda: True)
    assert hf.resolve_dtype("cpu-native", "cpu") == "bfloat16"
    with pytest.raises(ConfigError, match="unknown dtype 'fp8'"):
        hf.resolve_dtype("fp8", "cpu")


def test_bfloat16_weights_are_recorded_and_keyed_apart(tiny_model_dir, tiny_backend):
    from sumjudge.llm.types import cache_key

    be = HFBackend(str(tiny_model_dir), dtype="bfloat16")
    assert be.model.dtype == torch.bfloat16 and be.info.extra["dtype"] == "bfloat16"
    req = ChatRequest(messages=msg("Is the summary faithful?"), max_new_tokens=4)
    assert cache_key("chat", be.info, req.key_fields()) != cache_key("chat", tiny_backend.info, req.key_fields())
    out = run_sync(LLM(be, cache=NullCache()).chat(req))  # bf16 weights decode: tokens come back, within the cap
    ref = run_sync(LLM(tiny_backend, cache=NullCache()).chat(req))
    assert 1 <= out.completion_tokens <= 4 and out.prompt_tokens == ref.prompt_tokens > 0


def test_profile_dtype_reaches_the_hf_engine_only():
    from sumjudge import profiles

    smoke = profiles.load("smoke")
    assert smoke.dtype == "cpu-native" and smoke.engine_options()["dtype"] == "cpu-native"
    assert "dtype" not in profiles.load("smoke", backend="openai", base_url="http://h:1/v1").engine_options()
    assert "dtype" not in profiles.load("paper").engine_options()


def full_sort_nucleus(probs, top_p):
    sp, si = torch.sort(probs, descending=True)
    keep = torch.cumsum(sp, dim=-1) - sp < top_p
    return set(si[keep].tolist())


@pytest.mark.parametrize("scale", [0.5, 3.0, 10.0])
@pytest.mark.parametrize("top_p", [0.1, 0.5, 0.9, 0.99])
def test_nucleus_from_the_most_likely_candidates_is_the_full_sort_nucleus(scale, top_p):
    from sumjudge.llm.decode import nucleus

    probs = torch.softmax(torch.randn(5000, generator=torch.Generator().manual_seed(7)) * scale, dim=-1)
    for candidates in (4, 64, 1024):  # too few candidates: the whole vocabulary is sorted instead
        vals, ids = nucleus(probs, top_p, candidates=candidates)
        assert set(ids.tolist()) == full_sort_nucleus(probs, top_p)
        assert torch.all(vals[:-1] >= vals[1:]) and torch.allclose(vals, probs[ids])


def test_draws_follow_the_renormalised_nucleus():
    from sumjudge.llm.decode import draw

    probs = torch.tensor([0.05, 0.4, 0.02, 0.3, 0.2, 0.03])
    g = torch.Generator().manual_seed(0)
    n = 20000
    for top_p, expect in ((1.0, probs), (0.85, torch.tensor([0, 0.4, 0, 0.3, 0.2, 0]) / 0.9)):
        counts = torch.bincount(torch.stack([draw(probs, top_p, g) for _ in range(n)]), minlength=6).float() / n
        assert torch.allclose(counts, expect, atol=0.015), (top_p, counts)
    same = [int(draw(probs, 0.9, torch.Generator().manual_seed(s))) for s in range(20)]
    assert same == [int(draw(probs, 0.9, torch.Generator().manual_seed(s))) for s in range(20)]


def stock_and_ours(tiny_model_dir):
    """The tiny model twice: on transformers' SDPA, and switched to the decode-step attention."""
    from transformers import AutoModelForCausalLM

    from sumjudge.llm.attention import NAME, use_gqa_decode_attention

    stock = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32).eval()
    ours = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32).eval()
    assert stock.config.num_key_value_heads < stock.config.num_attention_heads  # grouped-query
    assert use_gqa_decode_attention(ours) and ours.config._attn_implementation == NAME
    return stock, ours


def prompt_then_one_step(model, ids, mask):
    """Left-padded prompts (``mask``), then one decode step: (the prompts' logits, the step's)."""
    from transformers import DynamicCache

    cache = DynamicCache(config=model.config)
    pos = (mask.cumsum(-1) - 1).clamp(min=0)
    with torch.inference_mode():
        first = model(input_ids=ids, attention_mask=mask, position_ids=pos, past_key_values=cache, use_cache=True).logits
        step_mask = torch.cat([mask, torch.ones((len(ids), 1), dtype=mask.dtype)], dim=1)
        nxt = first[:, -1].argmax(-1, keepdim=True)
        step = model(input_ids=nxt, attention_mask=step_mask, position_ids=pos[:, -1:] + 1, past_key_values=cache,
                     use_cache=True).logits
    return first, step


def test_decode_attention_equals_transformers_sdpa_on_a_padded_gqa_batch(tiny_model_dir):
    models = stock_and_ours(tiny_model_dir)
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(10, 1000, (3, 40), generator=g)
    mask = torch.ones_like(ids)
    mask[1, :15] = 0  # left padding, as the batched decoder pads
    mask[2, :33] = 0
    logits = [prompt_then_one_step(m, ids, mask) for m in models]
    assert torch.equal(logits[0][0], logits[1][0])  # prompts: transformers' own path
    # one query token: the unrepeated keys (float32 sums in another order: differences far below 1e-3; a wrong
    # head-to-key mapping or mask moves logits by whole units)
    assert (logits[0][1] - logits[1][1]).abs().max() < 1e-3


def test_decode_attention_row_by_row_equals_the_padded_read(tiny_model_dir, monkeypatch):
    """Rows read over their own columns (a row with a masked gap inside its span, as between a shared prefix and
    its suffix, keeps its mask) give the logits transformers' padded SDPA gives."""
    from sumjudge.llm import attention

    models = stock_and_ours(tiny_model_dir)
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(10, 1000, (3, 60), generator=g)
    mask = torch.ones_like(ids)
    mask[1, :45] = 0  # a short row beside a long one
    mask[2, :20] = 0
    mask[2, 30:38] = 0  # a gap inside row 2's span
    monkeypatch.setattr(attention, "ROW_CALL_COLUMNS", 0)
    calls = []
    spans = attention.row_spans
    monkeypatch.setattr(attention, "row_spans", lambda m: calls.append(spans(m)) or calls[-1])
    steps = [prompt_then_one_step(m, ids, mask)[1] for m in models]
    assert calls and calls[0] == [(0, False), (45, False), (20, True)]  # the decode step went row by row
    assert (steps[0] - steps[1]).abs().max() < 1e-3


def test_decode_attention_reads_row_by_row_only_when_the_padding_outweighs_the_calls():
    from sumjudge.llm.attention import ROW_CALL_COLUMNS, row_spans

    width = 4 * ROW_CALL_COLUMNS
    even = torch.ones((4, 1, 1, width), dtype=torch.bool)
    assert row_spans(even) is None  # no padding: one call
    ragged = even.clone()
    ragged[1:, ..., : width - ROW_CALL_COLUMNS] = False
    assert row_spans(ragged) == [(0, False)] + [(width - ROW_CALL_COLUMNS, False)] * 3
    additive = torch.zeros((4, 1, 1, width))
    additive[1:, ..., : width - ROW_CALL_COLUMNS] = torch.finfo(torch.float32).min
    assert row_spans(additive) == row_spans(ragged)
    slight = even.clone()
    slight[1, ..., :ROW_CALL_COLUMNS] = False  # saves fewer columns than three more calls cost
    assert row_spans(slight) is None


def test_the_backend_records_its_attention(tiny_backend):
    assert tiny_backend.info.extra["attention"] == "sumjudge_gqa_sdpa"


def test_prefill_in_chunks_gives_the_answers_of_one_pass(tiny_backend):
    """Prefill run in many small chunks of rows (shared prefixes and suffixes alike, each chunk without its common
    padding) decodes exactly what one pass over the whole micro-batch decodes, greedy and seeded alike."""
    reqs = [ChatRequest(messages=msg(f"{DOC}\n\nAgent {a}: is the summary faithful? {'Explain. ' * a}"),
                        max_new_tokens=10 + a, temperature=0.0 if a % 2 else 1.0, seed=a) for a in range(5)]
    reqs += [ChatRequest(messages=msg(f"Short prompt {'about the vote ' * i}."), max_new_tokens=9) for i in range(5)]
    one = HFBackend.from_loaded(tiny_backend.model, tiny_backend.tokenizer, name="tiny", prefill_budget=1 << 30)
    chunked = HFBackend.from_loaded(tiny_backend.model, tiny_backend.tokenizer, name="tiny", prefill_budget=64)
    a = run_sync(LLM(one, cache=NullCache()).chat_many(reqs))
    b = run_sync(LLM(chunked, cache=NullCache()).chat_many(reqs))
    assert one.generate_calls == chunked.generate_calls == 1  # one micro-batch, decoded in one batch
    assert chunked.decoder.stats["shared_prefix_tokens_saved"] > 0  # the agents' document ran once
    assert chunked.decoder.stats["forward_calls"] - one.decoder.stats["forward_calls"] >= 4  # prefill in chunks
    assert [x.text for x in b] == [x.text for x in a]
    assert all(x.completion_tokens for x in b)
    for r, resp in zip(reqs, b):
        if r.temperature == 0:
            assert resp.text == reference_generate(tiny_backend, r)


def _decode_alone(be: HFBackend, row):
    return be.decoder.decode([row])[0].tokens


def test_rows_that_join_a_decoding_batch_get_the_answers_they_get_alone(tiny_backend):
    """Continuous batching: rows admitted between steps (a longer prompt into a narrower batch, a shorter one into a
    wider batch, a seeded sample) decode exactly what each decodes alone, and so do the rows already there; a row
    that finishes leaves at once and the cache drops the columns no remaining row reads."""
    from sumjudge.llm.decode import DecodeRow

    be = tiny_backend
    ids = [be.encode(msg(t)) for t in ("Short prompt.", f"{DOC}\n\nIs it faithful?", "Another prompt about a vote.",
                                       f"{DOC[:300]} Explain.")]
    rows = [DecodeRow(ids=ids[0], max_new_tokens=30), DecodeRow(ids=ids[1], max_new_tokens=6),
            DecodeRow(ids=ids[2], max_new_tokens=12, temperature=1.0, seed=3),
            DecodeRow(ids=ids[3], max_new_tokens=9)]
    alone = [_decode_alone(be, r) for r in rows]
    assert all(alone)
    live = be.decoder.start()
    got: dict = {}
    be.decoder.admit(live, rows[:1], [0])
    for _ in range(3):
        got.update(be.decoder.step(live))
    be.decoder.admit(live, rows[1:2], [1])  # wider than the batch: the batch is padded on the left
    widest = live.width()
    got.update(be.decoder.step(live))
    be.decoder.admit(live, rows[2:], [2, 3])  # narrower: the new rows are padded
    while live.rows:
        got.update(be.decoder.step(live))
        if 1 in got and live.rows:
            assert live.width() < widest  # the long prompt left, and its columns with it
    assert [got[i].tokens for i in range(4)] == alone


def test_requests_sent_while_others_decode_join_them(tiny_model_dir, tiny_backend):
    """A generate call made while another decodes joins its batch (no waiting for it to end): a short request sent
    after a long one starts is answered first, and both answers are what each gets alone."""
    import threading

    be = HFBackend.from_loaded(tiny_backend.model, tiny_backend.tokenizer, name="tiny")
    long = ChatRequest(messages=msg(f"{DOC} Summarise."), max_new_tokens=60)
    short = ChatRequest(messages=msg("Short prompt."), max_new_tokens=3)
    order: list[str] = []
    started = threading.Event()
    real_step = be.decoder.step

    def step(live):
        started.set()
        return real_step(live)

    be.decoder.step = step
    t = threading.Thread(target=lambda: (be.generate_sync([long]), order.append("long")))
    t.start()
    started.wait()
    (s,) = be.generate_sync([short])
    order.append("short")
    t.join()
    assert be.generate_calls == 2 and be.decoder.stats["row_steps"] > be.decoder.stats["decode_steps"]
    assert s.text == reference_generate(tiny_backend, short)
    assert len(be.tokenizer(reference_generate(tiny_backend, long)).input_ids) > 30  # the long answer is long
    assert order[0] == "short"


def test_a_run_of_rows_sharing_a_prefix_joins_whole():
    """Admission is first come, first served within the budget; a run of queued rows sharing a document prefix that
    the room would cut waits until it fits whole (its prefix then runs once), unless no batch could hold it."""
    from types import SimpleNamespace

    from sumjudge.llm.hf import _Job, _Queued, _Row

    be = HFBackend.__new__(HFBackend)
    be.token_budget, be.max_batch = 10_000, 4
    be.decoder = SimpleNamespace(joins=True)
    be._served, be._active = {}, set()
    doc = list(range(200))  # most of each prompt: the agents read one document
    job = _Job(out=[], decoded=[], report=None, finish=None)

    def q(ids):
        return _Queued(job, _Row(0, ids, ChatRequest(messages=msg("x"), max_new_tokens=10)))

    live = SimpleNamespace(rows=[1, 2], tags=[q([5] * 50), q([6] * 50)])
    agents = [q(doc + [a]) for a in range(2)]
    be._queue = [first := q([9] * 30), *agents]
    assert be._admissible(live) == [first] and be._queue == agents  # 2 places left: the agents wait whole
    live.rows, live.tags = [1], live.tags[:1]
    assert be._admissible(live) == agents and be._queue == []
    many = [q(doc + [a]) for a in range(6)]  # a run longer than any batch: admitted as far as it fits
    be._queue = list(many)
    assert be._admissible(live) == many[:3]
    assert be._admissible(SimpleNamespace(rows=[], tags=[])) == many[3:]


def test_rows_sharing_only_an_instruction_do_not_wait_for_each_other():
    from types import SimpleNamespace

    from sumjudge.llm.hf import _Job, _Queued, _Row

    be = HFBackend.__new__(HFBackend)
    be.token_budget, be.max_batch = 100_000, 3
    be.decoder = SimpleNamespace(joins=True)
    be._served, be._active = {}, set()
    job = _Job(out=[], decoded=[], report=None, finish=None)
    instruction = list(range(100))
    queued = [_Queued(job, _Row(0, instruction + [1000 + d] * 300, ChatRequest(messages=msg("x"), max_new_tokens=8)))
              for d in range(4)]
    be._queue = list(queued)
    live = SimpleNamespace(rows=[1], tags=[_Queued(job, _Row(0, [5] * 50, queued[0].row.req))])
    assert be._admissible(live) == queued[:2]  # two places: two of the four documents join now


def test_sources_take_turns_the_one_served_least_first():
    """Two sources (a shared engine's notebooks): one floods the queue, the other asks one row later (a debate's
    next turn). The later row joins at the next free place instead of after the flood; within a source, first come
    first served, a document's rows together. One source: the queue's own order."""
    from types import SimpleNamespace

    from sumjudge.llm.hf import _Job, _Queued, _Row

    be = HFBackend.__new__(HFBackend)
    be.token_budget, be.max_batch = 100_000, 3
    be.decoder = SimpleNamespace(joins=True)
    flood, chain = (_Job(out=[], decoded=[], report=None, finish=None, source=s) for s in ("nb13", "nb30"))
    req = ChatRequest(messages=msg("x"), max_new_tokens=8)

    def q(job, ids, unit):
        return _Queued(job, _Row(0, ids, req), unit=unit)

    many = [q(flood, [100 + i] * 40, i) for i in range(6)]
    turn = q(chain, [7] * 40, 99)
    be._served, be._active = {"nb13": 2}, {"nb13"}  # the flood's two rows decoding were admitted before
    be._queue = [*many, turn]
    live = SimpleNamespace(rows=[1, 2], tags=[q(flood, [1] * 40, 50), q(flood, [2] * 40, 51)])
    # one place: the newcomer starts as served as the flood, and with one row waiting against six it goes first
    assert be._admissible(live) == [turn] and be._queue == many
    assert be._served == {"nb13": 2, "nb30": 3}
    be._queue = [*many, turn]
    live = SimpleNamespace(rows=[], tags=[])
    assert be._admissible(live) == [many[0], turn, many[1]]  # empty batch: the one served least first, in turns
    assert be._queue == many[2:] and be._served == {"nb13": 4, "nb30": 4}
    # a document's rows of one source stay together
    agents = [q(chain, [8] * 200 + [a], 98) for a in range(2)]
    be._queue = [*many, *agents]
    live = SimpleNamespace(rows=[1], tags=[q(flood, [1] * 40, 50)])
    assert be._admissible(live) == agents
    # a source that was idle earns nothing: it returns as served as the least served of those asking
    be._served, be._active = {"nb13": 100, "nb30": 5, "nb12": 60}, {"nb13", "nb12"}
    be._queue = [*many[:2], turn]
    assert be._fair_order(SimpleNamespace(rows=[], tags=[])) == [turn, *many[:2]]
    assert be._served["nb30"] == 100  # nb12 asks no more: nb13 is the only one asking
    be._queue = list(many)
    assert be._fair_order(live) is be._queue  # one source: as queued
    # a full batch (max_batch rows) orders nothing: the queue is not walked at every decode step
    full = SimpleNamespace(rows=[1, 2, 3], tags=[q(flood, [1] * 40, 50 + i) for i in range(3)])
    be._queue = [*many, turn]
    be._fair_order = lambda live: pytest.fail("ordered the queue for a full batch")
    assert be._admissible(full) == [] and be._queue == [*many, turn]
    be.max_batch, be.token_budget = 10, 3 * 48 + 47  # room in rows, but a fourth row of 48 tokens passes the budget
    assert be._admissible(full) == []


def test_a_fault_while_decoding_reaches_the_callers_and_the_backend_goes_on(tiny_backend, monkeypatch):
    """A model error (e.g. out of memory) fails the rows it met and the decoding thread goes on with the queue; a
    fault while turning a finished row into its answer is that row's error; either way the next request is
    answered."""
    be = HFBackend.from_loaded(tiny_backend.model, tiny_backend.tokenizer, name="tiny")
    req = ChatRequest(messages=msg("Short prompt."), max_new_tokens=3)
    real_step, real_text = be.decoder.step, be._text

    def failing_step(live):
        be.decoder.step = real_step
        raise RuntimeError("out of memory")

    be.decoder.step = failing_step
    (out,) = be.generate_sync([req])
    assert isinstance(out, RuntimeError) and "out of memory" in str(out)
    assert be.generate_sync([req])[0].text == reference_generate(tiny_backend, req)

    def failing_text(row, d):
        monkeypatch.setattr(be, "_text", real_text)
        raise RuntimeError("a bug in delivering")

    monkeypatch.setattr(be, "_text", failing_text)
    (out,) = be.generate_sync([req])
    assert isinstance(out, RuntimeError) and "a bug in delivering" in str(out)
    assert be.generate_sync([req])[0].text == reference_generate(tiny_backend, req)


def test_engine_forward_passes_on_cuda_leave_out_cudnn_attention():
    """On a CUDA device the engine's forward passes run without cuDNN's SDPA backend (a plan built per shape:
    1.4 ms of CPU per attention call on an H200); elsewhere, and after the pass, nothing changes."""
    import contextlib

    import torch

    from sumjudge.llm.attention import attention_backends

    assert isinstance(attention_backends(torch.device("cpu")), contextlib.nullcontext)
    before = torch.backends.cuda.cudnn_sdp_enabled()
    with attention_backends(torch.device("cuda", 0)):
        assert not torch.backends.cuda.cudnn_sdp_enabled()
        assert torch.backends.cuda.flash_sdp_enabled() and torch.backends.cuda.mem_efficient_sdp_enabled()
    assert torch.backends.cuda.cudnn_sdp_enabled() == before
