"""Exploring the recorded runs in JupyterLab without a model (``make lab REPLAY=1``, docs/explore.md): a notebook
executed as JupyterLab executes it (from its own folder, the notebook as committed, nothing injected) with
``SUMJUDGE_REPLAY`` naming the committed page gives the page's tables; a changed parameter asks only its new requests
of the engine ``SUMJUDGE_REPLAY_ASK`` names, and without one stops on the first of them (``ReplayMiss``)."""

from __future__ import annotations

import asyncio
import json
import re

import nbformat
import pytest
from conftest import needs_mirror

from sumjudge.errors import ConfigError
from sumjudge.llm.engine import LLM
from sumjudge.llm.recording import Recorder, Recording, ReplayMiss
from sumjudge.llm.scripted import ScriptedBackend
from sumjudge.llm.types import ChatRequest
from sumjudge.paths import project_root
from sumjudge.reproduce.check import notebook_differences
from sumjudge.run.replay import Ask, replay_llm

PAGE = "figures/results-smoke"  # as a user names it: relative to the project root, the notebook runs in notebooks/


def lab_env(monkeypatch, tmp_path, ask: str | None = None):
    """The variables ``make lab REPLAY=1`` sets, tables and figures and asked answers kept in ``tmp_path``."""
    monkeypatch.setenv("SUMJUDGE_REPLAY", PAGE)
    monkeypatch.setenv("SUMJUDGE_FIGURES", str(tmp_path / "figures"))
    monkeypatch.setenv("SUMJUDGE_CACHE", str(tmp_path / "cache.sqlite"))
    monkeypatch.delenv("SUMJUDGE_SHARED_ENGINE", raising=False)
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "false")
    if ask:
        monkeypatch.setenv("SUMJUDGE_REPLAY_ASK", ask)
    else:
        monkeypatch.delenv("SUMJUDGE_REPLAY_ASK", raising=False)


def run_as_jupyterlab(stem: str, after_session: str = "") -> tuple[nbformat.NotebookNode, str]:
    """The notebook as committed, every cell run in a kernel started in ``notebooks/`` (``after_session``: a cell
    a user adds after the session's cell); its printed output."""
    from nbclient import NotebookClient

    nb = nbformat.read(project_root() / "notebooks" / f"{stem}.ipynb", as_version=4)
    if after_session:
        at = next(i for i, c in enumerate(nb.cells) if "notebook.Session(" in c.source) + 1
        nb.cells.insert(at, nbformat.v4.new_code_cell(after_session))
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(project_root() / "notebooks")}}).execute()
    return nb, printed(nb)


def printed(nb) -> str:
    return "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
                   if o.get("output_type") == "stream")


def differences(stem: str, figures) -> list[str]:
    page = project_root() / PAGE
    record = json.loads((page / "provenance.json").read_text())["notebooks"][stem]
    return notebook_differences(project_root() / "notebooks" / f"{stem}.ipynb", page, figures / stem, record)


@pytest.mark.slow
@needs_mirror
def test_a_notebook_run_by_hand_replays_its_page(monkeypatch, tmp_path):
    """20_debate_main, which calls the model: run by hand it has the paper's parameters, not the profile's; the
    session sets the profile's (what the recording ran) and every answer comes from the page. Its tables are those
    of the page check's replay (papermill, the profile's parameters injected), file for file, and so differ from
    the page exactly where that check says (nowhere on a verified page). About 10 s each."""
    from sumjudge.run.notebooks import execute

    stem = "20_debate_main"
    lab_env(monkeypatch, tmp_path / "lab")
    _, out = run_as_jupyterlab(stem)
    assert "replay: the parameters this notebook was recorded with: " in out and "debate_iterations = 1" in out
    assert "asked of" not in out  # nothing was asked of a model

    lab_env(monkeypatch, tmp_path / "check")
    execute(project_root() / "notebooks" / f"{stem}.ipynb", "smoke", tmp_path / "executed")
    lab, check = (tmp_path / where / "figures" / stem for where in ("lab", "check"))
    tables = sorted(f.name for f in check.iterdir() if f.suffix in (".csv", ".md", ".json"))
    assert tables and sorted(f.name for f in lab.iterdir() if f.suffix in (".csv", ".md", ".json")) == tables
    assert [f for f in tables if (lab / f).read_bytes() != (check / f).read_bytes()] == []
    assert differences(stem, tmp_path / "lab" / "figures") == differences(stem, tmp_path / "check" / "figures")


@pytest.mark.slow
@needs_mirror
def test_a_changed_parameter_asks_only_its_new_requests(monkeypatch, tmp_path, tiny_backend):
    """41_factax_windows with one window size more (a cell after the session's): only the requests the recording
    does not hold reach the server, the session says how many, and the tables that did not change are the page's;
    without an engine to ask, the same notebook stops on the first new request."""
    from openai_server import LocalOpenAIServer

    stem, change = "41_factax_windows", "window_sizes = [0, 15, None]"
    recorded = Recording.load(project_root() / PAGE / stem / "answers.jsonl.xz")
    recorded_prompts = {json.dumps(a.request["messages"]) for a in recorded.answers.values() if a.kind == "chat"}
    with LocalOpenAIServer(tiny_backend, model_name="class-model") as server:
        lab_env(monkeypatch, tmp_path, ask=f"openai:class-model@{server.base_url}")
        _, out = run_as_jupyterlab(stem, change)
    asked = [int(n) for n in re.findall(r"replay: (\d+) request\(s\) the recording does not hold were asked of "
                                         r"openai:class-model@", out)]
    chats = [r for r in server.requests if "messages" in r]  # (the backend's probe of option scoring aside)
    assert chats and sum(asked) == len(chats), out[-2000:]
    assert not [r for r in chats if json.dumps(r["messages"]) in recorded_prompts]
    diff = differences(stem, tmp_path / "figures")
    assert diff and all("`window sizes`" in d or "cannot show" in d for d in diff), diff

    lab_env(monkeypatch, tmp_path / "strict")
    with pytest.raises(Exception, match="ReplayMiss"):
        run_as_jupyterlab(stem, change)


def recorded_engine(tmp_path) -> Recording:
    """A recording of one scripted engine that answered one request."""
    rec = Recorder()
    llm = LLM(ScriptedBackend().add("first", "one"))
    rec.register(llm, "scripted", "scripted", None, {})
    asyncio.run(llm.chat(ChatRequest(messages=[{"role": "user", "content": "first"}])))
    return Recording.load(rec.write(tmp_path / "answers.jsonl"), notebook="nb")


def test_a_replay_asks_its_engine_only_what_was_not_recorded(tmp_path):
    recording = recorded_engine(tmp_path)
    ask = Ask("scripted:other@http://class", "scripted", "scripted", None, {})
    ask._llm = LLM(ScriptedBackend().add(".", "two"))  # the engine asked (built on first use otherwise)
    llm = replay_llm(recording, "scripted", "scripted", None, {}, ask)

    async def both():
        return await llm.chat_many([ChatRequest(messages=[{"role": "user", "content": w}]) for w in ("first", "new")])

    assert [r.text for r in asyncio.run(both())] == ["one", "two"]
    assert [r.messages[-1]["content"] for r in ask._llm.backend.requests] == ["new"]
    assert ask.news().startswith("1 request(s) the recording does not hold were asked of scripted:other@http://class")
    assert ask.news() is None  # said once

    strict = replay_llm(recording, "scripted", "scripted", None, {})
    with pytest.raises(ReplayMiss, match="was not recorded"):
        asyncio.run(strict.chat(ChatRequest(messages=[{"role": "user", "content": "new"}])))


def test_the_engine_to_ask_is_named_one_way():
    assert Ask("profile", "hf", "smoke", None, {"dtype": "float32"}).args == ("hf", "smoke", None, {"dtype": "float32"})
    assert Ask("openai:m@http://h:8000/v1", "hf", "smoke", None, {}).args == ("openai", "m", "http://h:8000/v1", {})
    with pytest.raises(ConfigError, match="backend:model@base_url"):
        Ask("http://h:8000/v1", "hf", "smoke", None, {})


def test_a_runs_engine_stats_say_whether_its_answers_were_replayed(tmp_path):
    from sumjudge.run.runs import engine_stats

    replayed = replay_llm(recorded_engine(tmp_path), "scripted", "scripted", None, {})
    assert engine_stats(replayed)["replayed"] is True
    assert engine_stats(LLM(ScriptedBackend()))["replayed"] is False
