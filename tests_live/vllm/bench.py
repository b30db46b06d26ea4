"""``make bench-vllm``: the engine against one request at a time on a real vLLM server (its CPU build on the tiny
model of the live tests, ``tests_live.vllm.server``), the JSON of ``sumjudge bench --backend openai`` written to
``--out`` (docs/benchmark.md quotes it as ``bench.openai_table``). The server is started on a free port of the
loopback and stopped whatever happens."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
from pathlib import Path

from tests_live.serve import free_port, serving
from tests_live.vllm.server import SERVED_NAME, START_TIMEOUT_S, tiny_model, vllm_command, vllm_environment

# the workload docs/benchmark.md describes: 4 documents x 4 agents cut to 600 document tokens, 32 new tokens
WORKLOAD = ("--docs", "4", "--doc-tokens", "600", "--max-new-tokens", "32")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests_live.vllm.bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--python", required=True, help="the Python of vLLM's environment")
    p.add_argument("--out", required=True, type=Path, help="where the bench's JSON goes")
    a = p.parse_args(argv)
    from sumjudge.cli import main as cli

    with tempfile.TemporaryDirectory() as tmp:
        model = tiny_model(Path(tmp) / "tiny-llama3-hd32")
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        with serving("vLLM", vllm_command(a.python, model, port), url, Path(tmp) / "server.log", START_TIMEOUT_S,
                     env=vllm_environment()):
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                code = cli.main(["bench", "--backend", "openai", "--base-url", f"{url}/v1", "--model", SERVED_NAME,
                                 *WORKLOAD])
    if code != 0:
        print(out.getvalue(), file=sys.stderr)
        return code
    result = json.loads(out.getvalue())
    result.pop("server", None)  # the loopback port of this run: no part of the measurement
    result["server_model"] = {k: v for k, v in (result.get("server_model") or {}).items() if k != "root"}  # a temp path
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
