"""A prompt far from the context limit is not counted (``certainly_fits``: a bound from its bytes), a prompt near it
is; the bound never says "fits" of a prompt that does not, under the tokenizers users run (Llama-3's byte-level BPE,
and Qwen2.5's where the smoke model is converted); concurrent counts of one prompt make one request (``SingleFlight``)."""

import asyncio
import random

import pytest

from sumjudge.llm import NullCache, run_sync
from sumjudge.llm.engine import LLM
from sumjudge.llm.fitting import SLACK_TOKENS_PER_MESSAGE, certainly_fits
from sumjudge.llm.loops import SingleFlight

PIECES = ["the council", " ", "  ", "\n", "\n\n", "\t", "Ünïcödé", "会議の議事録", "🙂🙃", "1234567", "----", "a",
          "<label>0</label>", "don't", "https://x.y/z?q=1", "ſ", "ﬁ", "\u200b", "½", "Ω", "ĳ", "¤§¶", "}{)(", "ЖжЩ", "\x00", "ℌ"]


def counter_of(tokenizer):
    counted = []

    async def prompt_tokens(messages):
        counted.append(messages)
        return len(tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True,
                                                 return_dict=False))
    return prompt_tokens, counted


@pytest.fixture(scope="module")
def tokenizers():
    """Llama-3's byte-level BPE (the tiny model's too), and the smoke model's (Qwen2.5) where it is converted."""
    from transformers import AutoTokenizer

    from sumjudge.llm.models import llama3_tokenizer
    from sumjudge.paths import models_dir

    smoke = models_dir() / "qwen2.5-coder-0.5b-instruct"
    return [llama3_tokenizer()] + ([AutoTokenizer.from_pretrained(str(smoke))] if (smoke / "tokenizer.json").exists()
                                   else [])


def test_the_bound_never_passes_a_prompt_that_does_not_fit(tokenizers):
    rng = random.Random(0)
    for tok in tokenizers:
        if tok.chat_template is None:
            continue
        count, _ = counter_of(tok)
        said_fits = 0
        for _ in range(300):
            size = rng.choice([rng.randint(1, 6), rng.randint(1, 400)])  # short: the template's own tokens matter
            text = "".join(rng.choice(PIECES) for _ in range(size))
            messages = [{"role": "system", "content": text[: len(text) // 3]},
                        {"role": "user", "content": text[len(text) // 3:]}]
            exact = run_sync(count(messages))
            context, reserve = rng.randint(exact // 2, 3 * exact + 50), rng.randint(0, 64)
            if run_sync(certainly_fits(messages, reserve, context, count)):
                said_fits += 1
                assert exact + reserve <= context, (text, exact, reserve, context)
        assert said_fits > 30  # the bound is used, not always declined


def test_only_the_template_is_counted_far_from_the_limit_and_the_prompt_near_it(tokenizers):
    tok = tokenizers[0]
    count, counted = counter_of(tok)
    long = [{"role": "user", "content": "word " * 1000}]  # about 1,000 tokens, 5,000 bytes
    assert run_sync(certainly_fits(long, 100, 8192, count)) and counted == [[{"role": "user", "content": ""}]]
    counted.clear()
    assert not run_sync(certainly_fits(long, 100, 4000, count)) and counted == []  # too close: count it
    engine_counts = []

    class Backend:
        from sumjudge.llm.backend_protocol import Capabilities
        from sumjudge.llm.types import BackendInfo

        info = BackendInfo(name="t", model="t")
        capabilities = Capabilities(option_scoring="none", tokenizer="local", context_length=4000)

        def prompt_tokens(self, messages):
            engine_counts.append(messages)
            return run_sync(count(messages))

    llm = LLM(Backend(), cache=NullCache())
    assert run_sync(llm.fits(long, 100)) and [m[0]["content"] for m in engine_counts] == ["word " * 1000]
    engine_counts.clear()
    short = [{"role": "user", "content": "word " * 100}]
    assert run_sync(llm.fits(short, 100)) and [m[0]["content"] for m in engine_counts] == [""]  # the template only
    assert SLACK_TOKENS_PER_MESSAGE >= 1


def test_concurrent_counts_of_one_prompt_share_one_computation_and_its_error():
    calls = []

    async def compute(value):
        calls.append(value)
        await asyncio.sleep(0.05)
        if value == "bad":
            raise ValueError("refused")
        return len(value)

    async def main():
        sf = SingleFlight()
        same = await asyncio.gather(*(sf.run("k", lambda: compute("abc")) for _ in range(5)))
        errors = await asyncio.gather(*(sf.run("b", lambda: compute("bad")) for _ in range(3)), return_exceptions=True)
        again = await sf.run("k", lambda: compute("abcd"))  # finished keys are not kept: computed anew
        return same, errors, again

    same, errors, again = run_sync(main())
    assert same == [3] * 5 and again == 4 and calls == ["abc", "bad", "abcd"]
    assert [type(e) for e in errors] == [ValueError] * 3
    assert run_sync(SingleFlight().run("k", lambda: compute("xy"))) == 2  # another loop, another flight
