"""A small OpenAI-compatible HTTP server for tests: serves a local HF model on 127.0.0.1.

Implements ``POST /v1/chat/completions`` (greedy/sampled text, ``max_tokens``, ``stop``, ``seed``,
``logprobs``/``top_logprobs`` of the first token, vLLM's ``continue_final_message``), and, as vLLM does,
``GET /v1/models`` (``root``, ``max_model_len``), ``POST /tokenize`` (``messages`` or ``prompt``),
``POST /v1/completions`` with token-id prompts and ``prompt_logprobs``, and ``GET /metrics`` (prefix-cache
counters). ``vllm_routes=False`` serves the chat endpoint and a plain model list only, like other
OpenAI-compatible servers. Like vLLM, a prompt over ``max_model_len`` is refused with a 400 and an answer
that would pass it is cut (``finish_reason=length``). ``fail_next(n, status)`` makes the next n requests fail with an HTTP status, to
test retries; ``fault_next(kind, n)`` injects faults a real server shows: ``null_content``,
``empty_choices``, ``malformed_json`` (a 200 whose body is not JSON), ``retry_after`` (429 asking for a
one-second wait), ``hang`` (an answer that comes after ``hang_s`` seconds) and ``early_length`` (the
answer's first characters with ``finish_reason=length`` after one token, far below ``max_tokens``);
``fault_mix(share, kinds, seed)`` injects one of ``kinds`` into that share of model calls, drawn from the seed,
the request and how often it was asked before (a server that fails at random, the same way whatever the order
requests arrive in); ``slow_tokenize = (marker, seconds)`` makes ``/tokenize`` of a text holding the marker take that long.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import torch

from sumjudge.llm import ChatRequest


class PromptOverContext(Exception):
    pass


class _QuietServer(ThreadingHTTPServer):
    """A client that gave up (a test's short timeout) leaves a broken connection: not an error worth printing
    into a later test's output."""

    daemon_threads = True

    def handle_error(self, request, client_address):
        import sys

        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)


class LocalOpenAIServer:
    def __init__(self, backend, model_name: str = "tiny-llama3", *, max_model_len: int = 4096,
                 vllm_routes: bool = True, root: str = "/models/tiny-llama3", flavor: str = "vllm"):
        self.backend = backend
        self.flavor = flavor  # vllm | llama.cpp (its own routes: /tokenize with content, /apply-template, /props)
        if flavor == "llama.cpp":
            vllm_routes = False
        self.model_name = model_name
        self.max_model_len = max_model_len
        self.vllm_routes = vllm_routes
        self.root = root
        self.prefix_queries = self.prefix_hits = 0
        self.requests: list[dict] = []
        self._fail: list[int] = []
        self._faults: list[str] = []
        self._mix: tuple[float, tuple[str, ...], int] | None = None
        self.hang_s = 3.0
        self.slow_tokenize: tuple[str, float] = ("", 0.0)  # (text marker, seconds): a /tokenize that takes its time
        self._lock = threading.Lock()
        self.httpd = _QuietServer(("127.0.0.1", 0), self._handler())
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def fail_next(self, n: int, status: int = 429) -> None:
        with self._lock:
            self._fail += [status] * n

    def fault_next(self, kind: str, n: int = 1) -> None:
        with self._lock:
            self._faults += [kind] * n

    def fault_mix(self, share: float, kinds: tuple[str, ...], seed: int = 0) -> None:
        """From now on, ``share`` of the model calls get one of ``kinds`` (drawn from ``seed``, the request and its
        attempt)."""
        with self._lock:
            self._mix = (share, tuple(kinds), seed)
            self._asked: dict[str, int] = {}

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()

    # ---- request handling ---------------------------------------------------------------------
    def _complete(self, body: dict) -> dict:
        be = self.backend
        messages = body["messages"]
        if body.get("logprobs"):
            return self._logprobs(body, messages)
        n = len(be.encode(messages))
        if n >= self.max_model_len:
            raise PromptOverContext(f"This model's maximum context length is {self.max_model_len} tokens. However, "
                                    f"your request has {n} input tokens.")
        self.prefix_queries += n  # a test double: every prompt token is queried, none found
        room = self.max_model_len - n  # vLLM shortens an answer that would pass the context
        req = ChatRequest(messages=messages, max_new_tokens=min(body.get("max_tokens") or 16, room),
                          temperature=body.get("temperature", 1.0), top_p=body.get("top_p", 1.0),
                          seed=body.get("seed"), stop=tuple(body.get("stop") or ()))
        (resp,) = be.generate_sync([req])
        if isinstance(resp, Exception):
            raise resp
        return self._wrap(resp.text, resp.finish_reason, resp.prompt_tokens, resp.completion_tokens, None)

    def _logprobs(self, body: dict, messages: list[dict]) -> dict:
        be, tok = self.backend, self.backend.tokenizer
        if body.get("continue_final_message"):
            ids = be.encode(messages[:-1]) + tok(messages[-1]["content"], add_special_tokens=False).input_ids
        else:
            ids = be.encode(messages)
        with torch.inference_mode():
            logits = be.model(input_ids=torch.tensor([ids])).logits[0, -1].float()
        lp = torch.log_softmax(logits, -1)
        top = torch.topk(lp, body.get("top_logprobs") or 1)
        entries = [{"token": tok.decode([int(i)]), "logprob": float(v), "bytes": None}
                   for v, i in zip(top.values, top.indices)]
        first = entries[0]
        content = [{"token": first["token"], "logprob": first["logprob"], "bytes": None, "top_logprobs": entries}]
        return self._wrap(first["token"], "length", len(ids), 1, {"content": content})

    def _completions(self, body: dict) -> dict:
        """Token-id prompts with ``prompt_logprobs``: each prompt token's log-probability given the tokens
        before it (the first is None), as vLLM's completions endpoint returns them."""
        prompts = body["prompt"]
        choices = []
        for i, ids in enumerate(prompts):
            with torch.inference_mode():
                lp = torch.log_softmax(self.backend.model(input_ids=torch.tensor([ids])).logits[0].float(), -1)
            plp = [None] + [{str(t): {"logprob": float(lp[p - 1, t]), "rank": 1, "decoded_token": ""}}
                            for p, t in enumerate(ids) if p > 0]
            choices.append({"index": i, "text": "", "finish_reason": "length", "logprobs": None,
                            "prompt_logprobs": plp if body.get("prompt_logprobs") is not None else None})
            self.prefix_queries += len(ids)
        n = sum(len(p) for p in prompts)
        return {"id": "cmpl-test", "object": "text_completion", "created": int(time.time()), "model": self.model_name,
                "choices": choices, "usage": {"prompt_tokens": n, "completion_tokens": len(prompts),
                                              "total_tokens": n + len(prompts)}}

    def _tokenize_content(self, body: dict) -> dict:
        """llama.cpp's ``/tokenize``: reads ``content`` (``add_special``, ``parse_special``) and answers an empty
        list to a body without it, as the real server does."""
        tok = self.backend.tokenizer
        text = body.get("content")
        if not isinstance(text, str):
            return {"tokens": []}
        ids = tok(text, add_special_tokens=bool(body.get("add_special", False)),
                  split_special_tokens=not body.get("parse_special", True)).input_ids
        return {"tokens": ids}

    def _apply_template(self, body: dict) -> dict:
        tok = self.backend.tokenizer
        return {"prompt": tok.apply_chat_template(body["messages"], add_generation_prompt=True, tokenize=False)}

    def _tokenize(self, body: dict) -> dict:
        be = self.backend
        if "messages" in body:
            ids = be.encode(body["messages"])
        else:
            ids = be.tokenizer(body["prompt"], add_special_tokens=body.get("add_special_tokens", True)).input_ids
        return {"count": len(ids), "max_model_len": self.max_model_len, "tokens": ids}

    def _wrap(self, text, finish, prompt_tokens, completion_tokens, logprobs) -> dict:
        return {"id": "cmpl-test", "object": "chat.completion", "created": int(time.time()), "model": self.model_name,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                             "finish_reason": finish, "logprobs": logprobs}],
                "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                          "total_tokens": prompt_tokens + completion_tokens}}

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def _send(self, status: int, payload: dict) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                if server.flavor == "llama.cpp":
                    if self.path.endswith("/props"):
                        return self._send(200, {"default_generation_settings": {"n_ctx": server.max_model_len},
                                                "total_slots": 4, "chat_template": "..."})
                    if self.path.endswith("/metrics"):  # llama-server without --metrics
                        return self._send(501, {"error": {"message": "This server does not support metrics endpoint."}})
                if self.path.endswith("/metrics") and server.vllm_routes:
                    text = (f'vllm:prefix_cache_queries_total{{engine="0"}} {float(server.prefix_queries)}\n'
                            f'vllm:prefix_cache_hits_total{{engine="0"}} {float(server.prefix_hits)}\n')
                    return self._raw(200, text.encode(), {"Content-Type": "text/plain"})
                if not self.path.endswith("/models"):
                    return self._send(404, {"error": {"message": f"no route {self.path}"}})
                model = {"id": server.model_name, "object": "model"}
                if server.vllm_routes:
                    model.update(root=server.root, max_model_len=server.max_model_len)
                self._send(200, {"object": "list", "data": [model]})

            def _raw(self, status: int, data: bytes, headers: dict | None = None) -> None:
                self.send_response(status)
                for k, v in {"Content-Type": "application/json", "Content-Length": str(len(data)), **(headers or {})}.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                route = self.path.rstrip("/")
                if route.endswith("/chat/completions"):
                    work = server._complete
                elif route.endswith("/completions") and server.vllm_routes:
                    work = server._completions
                elif route.endswith("/tokenize") and server.vllm_routes:
                    work = server._tokenize
                elif route.endswith("/tokenize") and server.flavor == "llama.cpp":
                    work = server._tokenize_content
                elif route.endswith("/apply-template") and server.flavor == "llama.cpp":
                    work = server._apply_template
                else:
                    return self._send(404, {"error": {"message": f"no route {self.path}"}})
                status = fault = None
                if not route.endswith(("/tokenize", "/apply-template")):  # requests and faults: model calls only
                    with server._lock:
                        server.requests.append(body)
                        status = server._fail.pop(0) if server._fail else None
                        fault = server._faults.pop(0) if server._faults and not status else None
                        if server._mix is not None and not status and fault is None:
                            import random

                            share, kinds, seed = server._mix
                            key = json.dumps(body, sort_keys=True)
                            server._asked[key] = attempt = server._asked.get(key, 0) + 1
                            rng = random.Random(f"{seed}:{attempt}:{key}")
                            fault = rng.choice(kinds) if rng.random() < share else None
                            status = 503 if fault == "503" else None
                            fault = None if status else fault
                if fault == "retry_after":
                    return self._raw(429, b'{"error": {"message": "slow down"}}', {"Retry-After": "1"})
                if fault == "malformed_json":
                    return self._raw(200, b'{"id": "cmpl", "choices": [{"message": ')
                if fault == "hang":
                    time.sleep(server.hang_s)
                if fault in ("null_content", "empty_choices"):
                    payload = server._wrap(None, "stop", 1, 0, None)
                    if fault == "empty_choices":
                        payload["choices"] = []
                    return self._send(200, payload)
                if status:
                    return self._send(status, {"error": {"message": f"injected {status}", "type": "test"}})
                if body.get("model") != server.model_name and not route.endswith("/apply-template"):
                    return self._send(404, {"error": {"message": f"model {body.get('model')} not found"}})
                marker, delay = server.slow_tokenize
                if route.endswith("/tokenize") and marker and marker in json.dumps(body):
                    time.sleep(delay)  # a slow tokenizer, which holds back no other request
                try:
                    with server._lock:  # one forward at a time on the shared model
                        payload = work(body)
                except PromptOverContext as e:
                    return self._send(400, {"error": {"message": str(e), "type": "BadRequestError"}})
                if fault == "early_length" and payload.get("choices"):  # a lying server: a cut that is not one
                    ch = payload["choices"][0]
                    ch["message"]["content"], ch["finish_reason"] = (ch["message"]["content"] or "")[:3], "length"
                    payload["usage"]["completion_tokens"] = 1
                self._send(200, payload)

        return Handler
