"""Recorded answers and their replay: every answer and token count an engine gives is kept; a replay answers from
them as the recorded engine did, calls no model, and stops on a request it does not hold, saying what differs."""

import json

import pytest

from sumjudge.llm import ChatRequest, NullCache, run_sync
from sumjudge.llm.engine import LLM, CallLog, RunContext
from sumjudge.llm.recording import MemoryCache, Recorder, Recording, ReplayMiss
from sumjudge.llm.scripted import ScriptedBackend
from sumjudge.run.replay import model_label


def req(text, **kw):
    return ChatRequest(messages=[{"role": "user", "content": text}], max_new_tokens=8, **kw)


async def judge(llm, doc):
    """A two-step judge: fit the prompt (a token count), ask, ask again with the first answer, score options."""
    await llm.prompt_tokens([{"role": "user", "content": doc}])
    first = await llm.chat(req(f"read {doc}", tag="first"))
    second = await llm.chat(req(f"{first.text}: verdict?", tag="second"))
    scores = await llm.score_options([{"role": "user", "content": doc}], ["0", "1"])
    return first.text, second.text, scores.probs


def recorded(tmp_path, docs=("a b", "c d e")):
    be = ScriptedBackend(options=lambda r: {"0": -1.0, "1": -0.5}, context_length=100)
    be.add(r"^read", lambda r: f"saw {len(r.messages[0]['content'])}").add(r"verdict", "<label>1</label>")
    llm = LLM(be, cache=NullCache())
    rec = Recorder()
    rec.register(llm, "scripted", "scripted", None, {"parse_retries": 2})
    view = llm.for_run(RunContext(log=CallLog(tmp_path / "run-1" / "calls.jsonl")))
    out = run_sync(_all(view, docs))
    path = rec.write(tmp_path / "answers.jsonl.xz")
    return out, path, len(be.requests)


async def _all(view, docs):
    import asyncio

    return await asyncio.gather(*(judge(view.scoped(d), d) for d in docs))


def replayed(path, docs=("a b", "c d e"), options=None):
    rec = Recording.load(path, notebook="99_test")
    i = rec.engine_for("scripted", "scripted", None, options or {"parse_retries": 2})
    llm = LLM(rec.backend(i), cache=MemoryCache())
    view = llm.for_run(RunContext(log=None))
    return run_sync(_all(view, docs)), llm


def test_a_replay_gives_the_recorded_answers_without_the_backend(tmp_path):
    out, path, asked = recorded(tmp_path)
    assert asked == 4
    again, llm = replayed(path)
    assert again == out and llm.usage.backend_calls == 6  # answered by the recording (2 chats + 1 option set each)
    lines = [json.loads(x) for x in __import__("lzma").decompress(path.read_bytes()).decode().splitlines()]
    kinds = [x["type"] for x in lines]
    assert kinds.count("engine") == 1 and kinds.count("answer") == 6 and kinds.count("tokens") == 1
    answer = next(x for x in lines if x["type"] == "answer" and x["kind"] == "chat")
    assert answer["run"] == "run-1" and answer["scope"] in ("a b", "c d e")
    # the same answers give the same bytes
    assert recorded(tmp_path / "again")[1].read_bytes() == path.read_bytes()


def test_a_changed_prompt_stops_the_replay_and_names_what_differs(tmp_path):
    _, path, _ = recorded(tmp_path)
    with pytest.raises(ReplayMiss, match=r"prompt being fitted was not recorded; nearest recorded \(run-1 / .*prompt differs at character"):
        replayed(path, docs=("a X",))
    rec = Recording.load(path, notebook="99_test")
    llm = LLM(rec.backend(0), cache=MemoryCache())
    view = llm.for_run(RunContext(log=CallLog(tmp_path / "run-7" / "calls.jsonl"))).scoped("ex-3")
    with pytest.raises(ReplayMiss, match=r"99_test, run run-7, example ex-3: chat request 'first'.*setting "
                                         r"max_new_tokens: recorded 8, asked 9"):
        run_sync(view.chat(ChatRequest(messages=[{"role": "user", "content": "read a b"}], max_new_tokens=9,
                                       tag="first")))


def test_another_model_or_engine_setting_is_named(tmp_path):
    _, path, _ = recorded(tmp_path)
    rec = Recording.load(path, notebook="99_test")
    with pytest.raises(ReplayMiss, match="no engine hf:smoke was recorded .*scripted:scripted.*the model differs"):
        rec.engine_for("hf", "smoke", None, {})
    with pytest.raises(ReplayMiss, match="parse_retries: recorded 2, now 3"):
        rec.engine_for("scripted", "scripted", None, {"parse_retries": 3})


def test_repeats_that_bypass_the_cache_replay_in_order(tmp_path):
    n = iter(range(10))
    be = ScriptedBackend().add(r".", lambda r: f"answer {next(n)}")
    llm = LLM(be, cache=MemoryCache())
    rec = Recorder()
    rec.register(llm, "scripted", "scripted", None, {})
    first = run_sync(llm.chat(req("q"))).text
    repeats = [run_sync(llm.bypassing_cache().chat(req("q"))).text for _ in range(2)]
    assert (first, repeats) == ("answer 0", ["answer 1", "answer 2"])
    path = rec.write(tmp_path / "a.jsonl")
    replay = LLM(Recording.load(path).backend(0), cache=MemoryCache())
    assert run_sync(replay.chat(req("q"))).text == "answer 0"
    assert run_sync(replay.chat(req("q"))).text == "answer 0"  # the engine's own cache, as recorded
    assert [run_sync(replay.bypassing_cache().chat(req("q"))).text for _ in range(2)] == ["answer 1", "answer 2"]


def test_a_missing_recording_is_named_and_a_run_folder_by_its_name(tmp_path):
    from sumjudge.llm import ConfigError

    with pytest.raises(ConfigError, match="make reproduce NOTEBOOKS=30"):
        Recording.load(tmp_path / "nothing.jsonl.xz", notebook="30_mesa")
    assert Recording.load(tmp_path / "nothing.jsonl.xz", missing_ok=True).engines == []
    (tmp_path / "sft-I-Binary-lora").mkdir()
    assert model_label(str(tmp_path / "sft-I-Binary-lora")) == "sft-I-Binary-lora"
    assert model_label("smoke") == "smoke" and model_label("meta-llama/Meta-Llama-3-8B") == "meta-llama/Meta-Llama-3-8B"


def test_a_step_is_recorded_and_a_replay_takes_its_result_without_running_it(tmp_path, monkeypatch):
    """A notebook step that calls no model (fine-tuning) is recorded by name; its replay never runs it."""
    from sumjudge import notebook
    from sumjudge.papers.factax.sft import steps

    monkeypatch.setattr(notebook, "_RECORDERS", {})
    monkeypatch.setattr(notebook, "_RECORDINGS", {})
    trained = []

    def fake_train(base, pairs, out, config, **overrides):
        trained.append((base, out.name, overrides))
        return {"losses": [2.5, 1.25], "gradient_accumulation_steps": 4, "precision": "fp32", "reused": False,
                "base_model": base, "key": "k"}

    monkeypatch.setattr(steps, "train", fake_train)
    monkeypatch.setattr(steps, "base_model_for", lambda name, profile, out: (str(tmp_path / "models" / "m1"), False))

    class Set:
        pairs = [1, 2, 3]

    s = notebook.Session("99_steps", profile="ci")
    base, tiny = steps.base_model(s, "smoke")
    assert base == str(tmp_path / "models" / "m1") and tiny is False
    got = steps.fine_tune(s, base, {"I-Binary": Set()}, "lora", max_steps=2)
    assert trained == [(base, "sft-I-Binary-lora", {"max_steps": 2})]
    path = s.recorder.write(tmp_path / "page" / "99_steps" / "answers.jsonl.xz")
    text = __import__("lzma").decompress(path.read_bytes()).decode()
    assert str(tmp_path) not in text  # a machine's paths are not recorded: the base model by its folder's name

    again = notebook.Session("99_steps", profile="ci", replay=tmp_path / "page")
    monkeypatch.setattr(steps, "train", lambda *a, **k: pytest.fail("a replay trained a model"))
    monkeypatch.setattr(steps, "base_model_for", lambda *a, **k: pytest.fail("a replay resolved a model"))
    assert steps.base_model(again, "smoke") == ("m1", False)
    replayed_ = steps.fine_tune(again, "m1", {"I-Binary": Set()}, "lora", max_steps=2)
    assert replayed_["I-Binary"][1] == got["I-Binary"][1] == {
        "pairs": 3, "gradient_accumulation_steps": 4, "losses": [2.5, 1.25], "precision": "fp32", "reused": False}
    assert replayed_["I-Binary"][0].name == "sft-I-Binary-lora"
    with pytest.raises(ReplayMiss, match=r"step 'fine-tune I-Taxonomy \(lora\)' was not recorded"):
        steps.fine_tune(again, "m1", {"I-Taxonomy": Set()}, "lora", max_steps=2)
