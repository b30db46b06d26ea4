"""A class on one server (docs/lab.md): the teacher's command keeps the key off its command line, the students'
sessions ask the server (``SUMJUDGE_SERVER``), and the key is never written by a run. The real llama.cpp server,
the lab notebook on it and 30 concurrent clients: tests_live/llamacpp/test_class_server.py."""

from __future__ import annotations

import pandas as pd
import pytest
from openai_server import LocalOpenAIServer

from sumjudge.classroom import server as class_server
from sumjudge.errors import ConfigError
from sumjudge.llm.openai import served_models
from sumjudge.notebook import Session

KEY = "sk-class-0123456789abcdef"


def test_the_teachers_server_gets_its_key_from_the_environment_not_the_command_line(monkeypatch, capsys):
    cmd = class_server.server_command("llama-server", "/m/x.gguf", "0.0.0.0", 8080, 32, 2048, None)
    assert KEY not in " ".join(cmd) and "--api-key" not in cmd
    assert cmd[cmd.index("--parallel") + 1] == "32" and cmd[cmd.index("-c") + 1] == str(32 * 2048)
    assert class_server.server_environment(KEY, {"PATH": "/bin"}) == {"PATH": "/bin", "LLAMA_API_KEY": KEY}
    with pytest.raises(ConfigError, match="export OPENAI_API_KEY"):
        class_server.class_key({})
    with pytest.raises(ConfigError, match="export OPENAI_API_KEY"):
        class_server.class_key({"OPENAI_API_KEY": "EMPTY"})
    assert class_server.class_key({"OPENAI_API_KEY": KEY}) == KEY
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert class_server.main(["serve", "--server", "llama-server"]) == 2  # no key: refused in one line, exit 2
    assert capsys.readouterr().err.startswith("error: class server: export OPENAI_API_KEY")


def test_a_session_under_sumjudge_server_asks_the_server_and_the_replay_keeps_its_engine(tiny_backend, monkeypatch):
    with LocalOpenAIServer(tiny_backend, model_name="class-model") as server:
        monkeypatch.setenv("SUMJUDGE_SERVER", server.base_url)
        s = Session("02_lab_llm_judges", profile="ci")
        assert (s.prof.backend, s.prof.model, s.prof.base_url) == ("openai", "class-model", server.base_url)
        monkeypatch.setenv("SUMJUDGE_SERVER", f"other-name@{server.base_url}")
        assert Session("02_lab_llm_judges", profile="ci").prof.model == "other-name"
        assert served_models(server.base_url) == ["class-model"]
        assert "serves class-model and answered with your key" in class_server.check(server.base_url)
    explicit = Session("02_lab_llm_judges", profile="ci", backend="scripted")
    assert explicit.prof.backend == "scripted"  # a notebook that names its backend keeps it
    replayed = Session("50_judge_arena", profile="smoke", replay="figures/results-smoke")
    assert replayed.prof.backend == "hf"  # the papers' judges replay as recorded


def test_a_server_that_is_down_or_refuses_the_key_is_one_line_without_the_key(monkeypatch):
    import httpx

    from tests_live.serve import free_port

    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with pytest.raises(ConfigError, match="cannot be reached") as down:
        served_models(f"http://127.0.0.1:{free_port()}/v1")
    assert KEY not in str(down.value)

    class Refused:
        status_code = 401

        def json(self):
            return {"error": "bad key"}

    monkeypatch.setattr(httpx, "get", lambda *a, **k: Refused())
    with pytest.raises(ConfigError, match="refused the key") as refused:
        served_models("http://teacher:8080/v1")
    assert KEY not in str(refused.value)


def test_a_run_against_the_server_writes_the_key_nowhere(tiny_backend, monkeypatch, tmp_path):
    """A session's judge on the server, its recording, run folders, cache and tables: the key is in none of them."""
    from sumjudge import report
    from sumjudge.judges.base import request
    from sumjudge.llm import run_sync

    monkeypatch.setenv("SUMJUDGE_HOME", str(tmp_path))
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with LocalOpenAIServer(tiny_backend, model_name="class-model") as server:
        monkeypatch.setenv("SUMJUDGE_SERVER", server.base_url)
        s = Session("02_lab_llm_judges", profile="ci")
        answer = run_sync(s.llm.chat(request("Is the sky blue? Answer 1 or 0.", max_new_tokens=4, tag="q/1")))
        s.write_time_profile()
        report.save_table(pd.DataFrame([{"answer": answer.text}]), "02_lab_llm_judges", "answers")
    written = [f for f in tmp_path.rglob("*") if f.is_file()]
    assert any(f.suffix == ".sqlite" for f in written) and any("answers" in f.name for f in written)
    assert [str(f) for f in written if KEY.encode() in f.read_bytes()] == []
