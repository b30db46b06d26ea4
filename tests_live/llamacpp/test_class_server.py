"""A class on one server, against the real llama.cpp server (``make test-llamacpp``): the teacher's command
(``python -m sumjudge.classroom.server serve``: llama.cpp on the loopback, the class's answer cache in front, one key),
the lab notebook executed on it as a student's laptop runs it (``SUMJUDGE_SERVER``) with the key written nowhere,
and 30 lab clients at once getting one client's answers, each prompt decoded once."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import httpx
import pytest

from tests_live.serve import free_port, serving

ROOT = Path(__file__).resolve().parents[2]
KEY = "sk-class-live-5f2a9c0d7e1b4a38"
SLOTS = 4
CLIENTS = 30
EXAMPLES = 3  # of the lab's examples, per client: 30 clients x (a skeptic, and a verdict where it flags something)


@pytest.fixture(scope="module")
def class_server(tmp_path_factory):
    """(base URL, folder of its GGUF and answer cache) of the teacher's command, started as `make class-server` does."""
    command = os.environ.get("SUMJUDGE_LLAMA_SERVER")
    if not command:
        pytest.fail("SUMJUDGE_LLAMA_SERVER must name llama.cpp's server command (run `make test-llamacpp`)")
    folder = tmp_path_factory.mktemp("class")
    port = free_port()
    cmd = [sys.executable, "-m", "sumjudge.classroom.server", "serve", "--server", command, "--host", "127.0.0.1",
           "--port", str(port), "--upstream-port", str(free_port()), "--slots", str(SLOTS), "--threads", "2",
           "--models", str(folder)]
    with serving("class", cmd, f"http://127.0.0.1:{port}", folder / "server.log", 300,
                 env={**os.environ, "OPENAI_API_KEY": KEY}):
        yield f"http://127.0.0.1:{port}/v1", folder


def lab_judge():
    """The lab's own judge as notebook 02 defines it (its cell, up to the registration and the run)."""
    nb = json.loads((ROOT / "notebooks" / "02_lab_llm_judges.ipynb").read_text(encoding="utf-8"))
    cell = next("".join(c["source"]) for c in nb["cells"]
                if c["cell_type"] == "code" and "async def my_judge" in "".join(c["source"]))
    ns: dict = {}
    exec(cell.split("\nregister(")[0], ns)  # noqa: S102 - the notebook's own code
    return ns["my_judge"], ns["MyJudgeConfig"]


def test_the_server_takes_only_the_class_key_and_the_students_check_says_so(class_server, monkeypatch):
    from sumjudge.classroom import server as cs
    from sumjudge.errors import ConfigError

    url, _ = class_server
    body = {"model": cs.SERVED_NAME, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 1}
    assert httpx.post(f"{url}/chat/completions", json=body, timeout=60).status_code == 401  # no key
    wrong = {"Authorization": "Bearer not-the-key"}
    assert httpx.post(f"{url}/chat/completions", json=body, headers=wrong, timeout=60).status_code == 401
    monkeypatch.setenv("OPENAI_API_KEY", "not-the-key")
    with pytest.raises(ConfigError, match="refused the key"):
        cs.check(url)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    assert f"serves {cs.SERVED_NAME} and answered with your key" in cs.check(url)


def test_thirty_lab_clients_at_once_get_one_clients_answers_and_each_prompt_is_decoded_once(class_server):
    from sumjudge.classroom import lab
    from sumjudge.data import registry
    from sumjudge.llm import LLM, make_backend, run_sync
    from sumjudge.llm.recording import MemoryCache

    url, _ = class_server
    judge, config = lab_judge()
    rivals = lab.replay_arena("smoke")
    examples = registry.load(rivals.datasets[0], limit=rivals.n, seed=rivals.seed, level=rivals.level)[:EXAMPLES]

    async def client():  # a student's laptop: its own engine, its own empty cache, its own connections
        llm = LLM(make_backend("openai", "qwen2.5-coder-0.5b-instruct", base_url=url, api_key=KEY),
                  cache=MemoryCache())
        out = await asyncio.gather(*[judge(e, llm, config()) for e in examples])
        return [(j.label, j.details["notes"]) for j in out], llm.usage.backend_calls

    async def class_then_one():
        many = await asyncio.gather(*[client() for _ in range(CLIENTS)])
        return many, await client()

    before = httpx.get(url.removesuffix("/v1") + "/class-cache", headers={"Authorization": f"Bearer {KEY}"}).json()
    many, (one, one_calls) = run_sync(class_then_one())  # each client's connections closed on its loop
    after = httpx.get(url.removesuffix("/v1") + "/class-cache", headers={"Authorization": f"Bearer {KEY}"}).json()
    assert [m for m, _ in many] == [one] * CLIENTS  # every client, every example: the same notes and label
    asked = sum(c for _, c in many) + one_calls
    delta = {k: after[k] - before[k] for k in after}
    decoded = delta["answers_kept"]  # what llama.cpp answered (the rest came from these answers)
    assert delta["requests"] >= asked  # every judge's request reached the front (and the backend's own probes)
    assert decoded <= one_calls + 1 and delta["from_cache"] + delta["joined"] == delta["requests"] - decoded \
        - delta["passed_on"]  # each distinct prompt decoded once (the probe's, where cached, once)
    print(f"\n{CLIENTS} clients + 1: {asked} judge requests ({delta['requests']} at the front), {decoded} decoded by "
          f"llama.cpp, {delta['joined']} joined one in flight, {delta['from_cache']} from the class's answer cache")


def test_the_lab_notebook_runs_on_the_class_server_and_writes_the_key_nowhere(class_server, tmp_path, monkeypatch):
    """notebooks/02 executed as `make lab SERVER=URL` runs it (ci profile: the lab's judge on the server, the papers'
    judges replayed): it finishes, its recording names the server, and no file it wrote holds the key."""
    import papermill as pm

    from sumjudge.data import sources

    url, folder = class_server
    mirror = sources.mirror_dir()
    home = tmp_path / "home"
    monkeypatch.setenv("SUMJUDGE_HOME", str(home))
    monkeypatch.setenv("SUMJUDGE_DATA_MIRROR", str(mirror))
    monkeypatch.setenv("SUMJUDGE_SERVER", url)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    out = tmp_path / "02_lab_llm_judges.ipynb"
    nb = ROOT / "notebooks" / "02_lab_llm_judges.ipynb"
    pm.execute_notebook(str(nb), str(out), parameters={"profile": "ci"}, cwd=str(nb.parent), progress_bar=False,
                        kernel_name="python3", log_output=False)
    answers = home / "figures" / "02_lab_llm_judges" / "answers.jsonl"
    engines = [json.loads(line) for line in answers.read_text().splitlines() if '"type": "engine"' in line]
    assert [(e["backend"], e["base_url"]) for e in engines] == [("openai", url)]
    written = [f for f in [*home.rglob("*"), out, *Path(folder).glob("*.sqlite*")] if f.is_file()]
    assert len(written) > 10
    assert [str(f) for f in written if KEY.encode() in f.read_bytes()] == []
