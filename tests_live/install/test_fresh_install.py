"""The package as a user installs it: a fresh virtual environment (no site packages), `pip install` of this
checkout with no extras, at the versions requirements.txt pins (as constraints: nothing is installed that the
package does not declare), then `sumjudge --help` and one run on the scripted backend, through the installed
copy, not the checkout. Needs a package index (``make test-install``; CI runs it)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

RUN = r'''
import json, sys
from pathlib import Path
import sumjudge
from sumjudge.llm import make_llm
from sumjudge.llm.scripted import ScriptedBackend
from sumjudge.runs import RunConfig, run

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


def test_a_fresh_environment_installs_the_package_and_runs_it(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py, exe = venv / "bin" / "python", venv / "bin" / "sumjudge"
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", "-c",
                    str(_constraints(tmp_path)), str(ROOT)], check=True, cwd=tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SUMJUDGE_", "PYTHONPATH", "VIRTUAL_ENV"))}
    env["SUMJUDGE_HOME"] = str(tmp_path)  # the installed copy's folders (cache, data) go here, not to the checkout

    shown = subprocess.run([str(exe), "--help"], capture_output=True, text=True, cwd=tmp_path, env=env)
    assert shown.returncode == 0, shown.stderr
    assert all(c in shown.stdout for c in ("run", "arena", "learn-guidelines", "mesa-feedback"))

    (tmp_path / "tiny.jsonl").write_text(
        json.dumps({"id": "a", "document": "The cat sat on the mat.", "summary": "A cat sat.", "label": 1}) + "\n" +
        json.dumps({"id": "b", "document": "The dog ran home.", "summary": "The dog slept.", "label": 0}) + "\n")
    ran = subprocess.run([str(py), "-c", RUN], capture_output=True, text=True, cwd=tmp_path, env=env)
    assert ran.returncode == 0, ran.stderr[-3000:]
    got = json.loads(ran.stdout.strip().splitlines()[-1])
    assert Path(got["package"]).is_relative_to(venv)  # the installed copy ran, not the checkout
    assert got["n"] == 2 and got["bacc"] == 1.0
    assert (tmp_path / "run" / "results.jsonl").is_file() and (tmp_path / "run" / "metrics.json").is_file()
