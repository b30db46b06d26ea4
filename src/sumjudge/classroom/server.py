"""A class on one server (docs/lab.md): the teacher serves the smoke model, the students' laptops hold only the client.

Teacher, on the machine the class can reach (``make class-server``): llama.cpp's server (built by ``make
llamacpp-env``) on the smoke model's GGUF, assembled from its PyPI chunks, with one slot per student
(``--slots``, each ``--slot-context`` tokens), on the loopback only, and in front of it, on the port the class
reaches, the class's answer cache (``class_cache``): a request one student asked is answered to the next from
there, so the class sees one answer per prompt and the server decodes each prompt once. Both take the API key
the teacher exported as ``OPENAI_API_KEY``; it reaches llama.cpp through its environment (``LLAMA_API_KEY``),
never a command line (which ``ps`` shows).

Student (``make lab-setup SERVER=URL``, then ``make lab SERVER=URL``): ``check`` asks the server, with the key from
``OPENAI_API_KEY``, which model it serves, and says so in one line; the lab's own judge then runs there
(``SUMJUDGE_SERVER``, read by ``notebook.Session``), the papers' judges replay from the committed answers.

A GPU in the department: vLLM serves the same model with ``--api-key`` (the command is in docs/lab.md).
"""

from __future__ import annotations

import argparse
import ctypes
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from sumjudge.classroom.answer_cache import serve
from sumjudge.errors import ConfigError
from sumjudge.llm.models import assemble_smoke_gguf
from sumjudge.llm.openai import served_models
from sumjudge.llm.types import server_identity
from sumjudge.paths import models_dir

SERVED_NAME = "qwen2.5-coder-0.5b-instruct"  # the name the server lists and the laptops ask for
SLOTS = 32  # one per student of a class of 30, and the teacher's
SLOT_CONTEXT = 2048  # tokens a slot holds: the lab's prompts (a QAGS-XSum article cut to fit) and their answers
KEY_ENV = "OPENAI_API_KEY"  # the key's one name on both sides (the openai client reads it too)


def smoke_gguf(folder: Path) -> Path:
    """The smoke model's GGUF in ``folder``, assembled from its PyPI chunks the first time (sha256 checked)."""

    out = folder / f"{SERVED_NAME}-q4_k_m.gguf"
    if not out.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        assemble_smoke_gguf(out.with_suffix(".partial"))
        out.with_suffix(".partial").rename(out)
    return out


def server_command(server: str, gguf: Path, host: str, port: int, slots: int, slot_context: int,
                   threads: int | None) -> list[str]:
    """llama.cpp's server: ``slots`` parallel slots of ``slot_context`` tokens, the GGUF's own chat template; its
    host-memory prompt cache (on by default) keeps prompts the class shares for any slot that asks them again.
    No key here: it goes in the environment (``server_environment``)."""
    cmd = [server, "-m", str(gguf), "--alias", SERVED_NAME, "--host", host, "--port", str(port),
           "-c", str(slots * slot_context), "--parallel", str(slots), "--jinja", "--seed", "0"]
    return cmd + (["--threads", str(threads)] if threads else [])


def server_environment(key: str, base: dict | None = None) -> dict:
    """The server's environment: the caller's, with the key as llama.cpp reads it (``LLAMA_API_KEY``)."""
    env = dict(os.environ if base is None else base)
    env["LLAMA_API_KEY"] = key
    return env


def run_behind_cache(cmd: list[str], key: str, inner: int, host: str, port: int, store: Path,
                     start_timeout_s: float = 600) -> None:
    """Start llama.cpp's server (``cmd``, on the loopback port ``inner``, the key in its environment), wait until
    it answers, then serve the class's answer cache (``class_cache``) in front of it on ``host:port`` until stopped;
    the server stops with it (and, on Linux, if this process is killed)."""

    import httpx


    def die_with_parent():  # Linux: SIGTERM to the server when this process dies, however it dies
        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass

    proc = subprocess.Popen(cmd, env=server_environment(key), preexec_fn=die_with_parent)
    try:
        t0 = time.time()
        while True:
            if proc.poll() is not None:
                raise ConfigError(f"class server: llama.cpp's server exited with {proc.returncode} (its output is "
                                  "above)")
            try:
                if httpx.get(f"http://127.0.0.1:{inner}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.time() - t0 > start_timeout_s:
                raise ConfigError(f"class server: llama.cpp's server did not start in {start_timeout_s:.0f} s")
            time.sleep(0.5)
        print(f"class server: ready on port {port}", flush=True)
        serve(f"http://127.0.0.1:{inner}", key, store, host, port)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


def class_key(env: dict | None = None) -> str:
    """The class's key (``OPENAI_API_KEY``); a server reachable by a class refuses to start without one."""
    key = (os.environ if env is None else env).get(KEY_ENV, "")
    if not key or key == "EMPTY":
        raise ConfigError(f"class server: export {KEY_ENV}=<a key for the class> first (e.g. `export {KEY_ENV}="
                          "$(python3 -c 'import secrets; print(secrets.token_hex(16))')`); the students export the "
                          "same value")
    return key


def check(url: str) -> str:
    """One line: the model the server at ``url`` serves, asked with the key from ``OPENAI_API_KEY``; a server that
    cannot be reached, or refuses the key, is one clear error."""

    models = served_models(url)
    answered = key_accepted(url, models[0])
    return (f"class server {url}: serves {', '.join(models)} and answered with your key ({answered}); `make lab "
            f"SERVER={url}` runs your judge there (the key is read from {KEY_ENV}, never written)")


def key_accepted(url: str, model: str, timeout: float = 120.0) -> str:
    """Ask the server one token with the key from ``OPENAI_API_KEY`` (llama.cpp lists its models to anyone, so a
    listing proves nothing about the key); a refusal is one ``ConfigError``. Returns how long the answer took."""

    import httpx


    key = os.environ.get(KEY_ENV) or "EMPTY"
    body = {"model": model, "messages": [{"role": "user", "content": "Say OK."}], "max_tokens": 1, "temperature": 0}
    t0 = time.perf_counter()
    try:
        r = httpx.post(url.rstrip("/") + "/chat/completions", json=body, timeout=timeout,
                       headers={"Authorization": f"Bearer {key}"})
    except httpx.HTTPError as e:
        raise ConfigError(f"server {server_identity(url)} did not answer ({type(e).__name__})") from None
    if r.status_code in (401, 403):
        raise ConfigError(f"server {server_identity(url)} refused the key (HTTP {r.status_code}): export {KEY_ENV}=<the "
                          "key the teacher gave the class>")
    if r.status_code != 200:
        raise ConfigError(f"server {server_identity(url)} answered HTTP {r.status_code} to one token: {r.text[:200]}")
    return f"one token in {time.perf_counter() - t0:.1f} s"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m sumjudge.classroom.server", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve", help="the teacher's server (make class-server)")
    s.add_argument("--server", required=True, help="llama.cpp's llama-server executable")
    s.add_argument("--host", default="0.0.0.0", help="0.0.0.0: the class's network reaches it")
    s.add_argument("--port", type=int, default=8080)
    s.add_argument("--slots", type=int, default=SLOTS)
    s.add_argument("--slot-context", type=int, default=SLOT_CONTEXT)
    s.add_argument("--threads", type=int, default=None, help="llama.cpp's default: the machine's cores")
    s.add_argument("--models", type=Path, default=None,
                   help="where the GGUF and the class's answer cache are kept (default data/models)")
    s.add_argument("--upstream-port", type=int, default=None, help="llama.cpp's port on the loopback (default PORT+1)")
    c = sub.add_parser("check", help="a student's laptop reaches the server (make lab-setup SERVER=URL)")
    c.add_argument("url")
    a = p.parse_args(argv)
    try:
        if a.cmd == "check":
            print(check(a.url))
            return 0

        key = class_key()
        gguf = smoke_gguf(a.models or models_dir())
        inner = a.upstream_port or a.port + 1
        cmd = server_command(a.server, gguf, "127.0.0.1", inner, a.slots, a.slot_context, a.threads)
        print(f"class server: {SERVED_NAME}, {a.slots} slots of {a.slot_context} tokens (llama.cpp on 127.0.0.1:"
              f"{inner}), the class's answer cache in front on port {a.port}; students: `export {KEY_ENV}=<the class "
              f"key>` then `make lab-setup SERVER=http://<this machine>:{a.port}/v1`", flush=True)
        run_behind_cache(cmd, key, inner, a.host, a.port, (a.models or models_dir()) / "class_answers.sqlite")
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
