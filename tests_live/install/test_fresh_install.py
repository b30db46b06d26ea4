"""The package as users install it, each install in a fresh virtual environment (no site packages) from this checkout
at the versions requirements.txt pins (as constraints: nothing is installed that the package does not declare), run
through the installed copy, not the checkout:

- the client, `pip install .` (for a server's models): no torch; `sumjudge --help` and a scripted run; a judge run
  against an OpenAI-compatible server (tests/openai_server.py, serving the tiny model from this process); a replay
  of the lab's and the arena's notebooks from the committed results page (figures/results-smoke: no notebook's
  replay needs torch), which the page check judges as it does in the full environment; the hf backend, `sumjudge tiny-model` and `bench` say in one line which extra to
  install (exit 2);
- the full install, `pip install ".[hf]"`: the local models' packages import, a scripted run, and the hf backend
  judges with the tiny model.

Needs a package index (``make test-install``; CI runs it)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HF_IMPORTS = "import torch, transformers, accelerate, safetensors, tokenizers, peft, gguf"
REPLAYED = "02 50"  # the lab's notebook and the arena's (pandas' Styler)

RUN = r'''
import json, sys
from pathlib import Path
import sumjudge
from sumjudge.llm import make_llm
from sumjudge.llm.scripted import ScriptedBackend
from sumjudge.run.folder import RunConfig
from sumjudge.run.runs import run

backend = ScriptedBackend().add(r"cat sat", "<explanation>Supported.</explanation><label>1</label>") \
                           .add(r"dog", "<explanation>It ran.</explanation><label>0</label>")
metrics = run(RunConfig(method="zero-shot", dataset="file:tiny.jsonl", backend="scripted"), "run",
              llm=make_llm(backend, no_cache=True), progress=False)
print(json.dumps({"package": sumjudge.__file__, "n": metrics["n"], "bacc": metrics["bacc"]}))
'''


def _constraints(tmp: Path) -> Path:
    """requirements.txt's pins as a constraints file (pip takes no extras there: ``openai[aiohttp]`` -> ``openai``)."""
    lines = [re.sub(r"\[[^\]]*\]", "", line.split("#")[0]).strip()
             for line in (ROOT / "requirements.txt").read_text().splitlines()]
    out = tmp / "constraints.txt"
    out.write_text("\n".join(x for x in lines if x) + "\n")
    return out


class Install:
    """A fresh environment holding ``pip install <this checkout><extras>``, and a folder to run it in."""

    def __init__(self, tmp: Path, extras: str = ""):
        self.tmp, self.venv = tmp, tmp / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(self.venv)], check=True)
        self.py, self.exe = self.venv / "bin" / "python", self.venv / "bin" / "sumjudge"
        subprocess.run([str(self.py), "-m", "pip", "install", "-q", "--disable-pip-version-check", "-c",
                        str(_constraints(tmp)), f"{ROOT}{extras}"], check=True, cwd=tmp)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("SUMJUDGE_", "PYTHONPATH", "VIRTUAL_ENV"))}
        self.env["SUMJUDGE_HOME"] = str(tmp)  # the installed copy's folders (cache, data) go here, not to the checkout
        (tmp / "tiny.jsonl").write_text(
            json.dumps({"id": "a", "document": "The cat sat on the mat.", "summary": "A cat sat.", "label": 1}) + "\n" +
            json.dumps({"id": "b", "document": "The dog ran home.", "summary": "The dog slept.", "label": 0}) + "\n")

    def sumjudge(self, *args: str, **env: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(self.exe), *args], capture_output=True, text=True, cwd=self.tmp,
                              env={**self.env, **env})

    def python(self, *args: str, **env: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(self.py), *args], capture_output=True, text=True, cwd=self.tmp,
                              env={**self.env, **env})

    def run_judge(self, name: str, *flags: str, **env: str) -> dict:
        """``sumjudge run zero-shot`` on tiny.jsonl into ``name`` (short answers: a tiny model's are noise): its metrics
        (the run must succeed)."""
        res = self.sumjudge("run", "zero-shot", "--dataset", "file:tiny.jsonl", "--out", name, "--set",
                            "max_new_tokens=8", *flags, **env)
        assert res.returncode == 0, res.stderr[-3000:]
        return json.loads((self.tmp / name / "metrics.json").read_text())

    def scripted_run(self) -> None:
        """``sumjudge --help`` and a scripted run, through the installed copy."""
        shown = self.sumjudge("--help")
        assert shown.returncode == 0, shown.stderr
        assert all(c in shown.stdout for c in ("run", "arena", "learn-guidelines", "mesa-feedback"))
        ran = self.python("-c", RUN)
        assert ran.returncode == 0, ran.stderr[-3000:]
        got = json.loads(ran.stdout.strip().splitlines()[-1])
        assert Path(got["package"]).is_relative_to(self.venv)  # the installed copy ran, not the checkout
        assert got["n"] == 2 and got["bacc"] == 1.0
        assert (self.tmp / "run" / "results.jsonl").is_file() and (self.tmp / "run" / "metrics.json").is_file()


@pytest.fixture(scope="module")
def client(tmp_path_factory) -> Install:
    return Install(tmp_path_factory.mktemp("client"))


def test_the_client_install_has_no_torch_and_runs(client):
    for module in ("torch", "transformers", "peft", "gguf"):
        assert client.python("-c", f"import {module}").returncode != 0, f"the client install holds {module}"
    client.scripted_run()


def test_the_client_judges_against_an_openai_compatible_server(client):
    from sumjudge.llm.hf import HFBackend
    from tests.openai_server import LocalOpenAIServer

    with LocalOpenAIServer(HFBackend("tiny")) as server:  # this process's tiny model, behind vLLM's routes
        metrics = client.run_judge("served", "--backend", "openai", "--base-url", server.base_url,
                                   "--model", "tiny-llama3")
        assert metrics["n_examples"] == 2 and len(server.requests) >= 2  # every example was asked of the server
    info = json.loads((client.tmp / "served" / "config.json").read_text())["backend_info"]
    assert info["name"] == "openai" and info["extra"]["tokenizer"] == "server"  # prompts counted by its /tokenize


def _replay(python: str, home: Path, env: dict[str, str], mirror: Path) -> tuple[list[str], list[str]]:
    """``REPLAYED`` replayed from the page's recorded answers and checked against the page, by ``python``, in ``home``
    (a folder holding only the notebooks and the page): each notebook's run line and the check's verdict on it."""
    shutil.copytree(ROOT / "notebooks", home / "notebooks")
    shutil.copytree(ROOT / "figures" / "results-smoke", home / "figures" / "results-smoke")
    res = subprocess.run([python, "-m", "sumjudge.reproduce.check", "--profile", "smoke", "--notebooks", REPLAYED,
                          "--jobs", "1"], capture_output=True, text=True, cwd=home,
                         env={**env, "SUMJUDGE_HOME": str(home), "SUMJUDGE_DATA_MIRROR": str(mirror)})
    runs = [line.split()[-1] for line in res.stdout.splitlines() if re.match(r"^\d\d_\w+\.ipynb ", line)]
    verdicts = [line for line in res.stdout.splitlines() if re.match(r"^\d\d_\w+: ", line)]
    assert len(verdicts) == len(REPLAYED.split()), res.stdout[-3000:] + res.stderr[-3000:]
    return runs, verdicts


def test_the_client_replays_recorded_notebooks_as_the_full_install_does(client, tmp_path):
    """The lab's and the arena's notebooks run from the results page's recorded answers in the client install (no
    model, no torch), and the page check says of them what it says in this checkout's full environment (`make env`):
    where `make check-page` passes, so does the client's."""
    from sumjudge.data.sources import mirror_dir

    mirror = mirror_dir()
    if mirror is None:
        if os.environ.get("CI") == "true":
            pytest.fail("the benchmark mirror is missing (set SUMJUDGE_DATA_MIRROR)")
        pytest.skip("benchmark mirror not found (set SUMJUDGE_DATA_MIRROR or place it at ../shared/data)")
    runs, verdicts = _replay(str(client.py), tmp_path / "client", client.env, mirror)
    assert runs == ["ok"] * len(REPLAYED.split()), runs
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("SUMJUDGE_")}
    assert verdicts == _replay(sys.executable, tmp_path / "full", full_env, mirror)[1]


def test_the_client_runs_the_lab_on_a_class_server(client, tmp_path):
    """The lab notebook (02) executed in the client install as `make lab SERVER=URL` runs it (the ci profile): the
    papers' judges replay, the lab's own judge asks the server (this process's tiny model), with the class key from
    OPENAI_API_KEY, which no file the run wrote holds."""
    from sumjudge.data.sources import mirror_dir
    from sumjudge.llm.hf import HFBackend
    from tests.openai_server import LocalOpenAIServer

    mirror, key = mirror_dir(), "sk-class-install-7c3e91"
    if mirror is None:
        if os.environ.get("CI") == "true":
            pytest.fail("the benchmark mirror is missing (set SUMJUDGE_DATA_MIRROR)")
        pytest.skip("benchmark mirror not found (set SUMJUDGE_DATA_MIRROR or place it at ../shared/data)")
    home = tmp_path / "lab"
    shutil.copytree(ROOT / "notebooks", home / "notebooks")
    shutil.copytree(ROOT / "figures" / "results-smoke", home / "figures" / "results-smoke")
    out = tmp_path / "02_executed.ipynb"
    with LocalOpenAIServer(HFBackend("tiny"), model_name="class-model") as server:
        res = subprocess.run([str(client.py), "-m", "papermill", str(home / "notebooks" / "02_lab_llm_judges.ipynb"),
                              str(out), "-p", "profile", "ci", "--cwd", str(home / "notebooks")],
                             capture_output=True, text=True, cwd=home,
                             env={**client.env, "SUMJUDGE_HOME": str(home), "SUMJUDGE_DATA_MIRROR": str(mirror),
                                  "SUMJUDGE_SERVER": server.base_url, "OPENAI_API_KEY": key})
        asked = [r for r in server.requests if "messages" in r]
    assert res.returncode == 0, res.stderr[-3000:]
    assert asked  # the lab's own judge ran on the server
    written = [f for f in [*home.rglob("*"), out] if f.is_file()]
    assert (home / "figures" / "02_lab_llm_judges" / "answers.jsonl").is_file()
    assert [str(f) for f in written if key.encode() in f.read_bytes()] == []


@pytest.mark.parametrize("command", [["run", "zero-shot", "--dataset", "file:tiny.jsonl", "--out", "local",
                                      "--backend", "hf", "--model", "tiny"],
                                     ["tiny-model", "tiny-model"], ["bench", "--docs", "1"]])
def test_the_client_says_which_extra_a_local_model_needs(client, command):
    res = client.sumjudge(*command)
    assert res.returncode == 2, res.stderr[-3000:]
    assert res.stderr.count("\n") == 1 and 'pip install "sumjudge[hf]"' in res.stderr, res.stderr[-3000:]


def test_the_full_install_runs_a_local_model(tmp_path):
    full = Install(tmp_path, "[hf]")
    imported = full.python("-c", HF_IMPORTS)
    assert imported.returncode == 0, imported.stderr[-3000:]
    full.scripted_run()
    from sumjudge.llm.models import resolve_model

    metrics = full.run_judge("local", "--backend", "hf", "--model", resolve_model("tiny"))
    assert metrics["n_examples"] == 2
