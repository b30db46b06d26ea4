"""Replicas without a router binary: the stand-in's prefix store and replica name, what a run's log says of where
its calls were served (``run.serving``), and the openai backend behind something that names replicas (a router's
``/list_workers``): context, counters and requests in flight learnt per replica, what is missing said once.
The real router's tests are in tests_live/router (``make test-router``)."""

import json

import httpx
import pytest

from sumjudge.llm.openai import CONCURRENCY_PER_SERVER, OpenAIBackend
from sumjudge.perf.local_replicas import Fleet
from sumjudge.perf.scale import merged_timeline
from sumjudge.perf.standin_server import PREFIX_BLOCK, PrefixStore, StandinServer
from sumjudge.run.serving import serving_from_log


def chat(url: str, content: str) -> dict:
    return httpx.post(url + "/chat/completions", timeout=30,
                      json={"model": "standin", "messages": [{"role": "user", "content": content}]}).json()


def test_the_prefix_store_counts_whole_blocks_already_seen():
    store = PrefixStore(blocks=1000)
    doc = [f"w{i}" for i in range(5 * PREFIX_BLOCK + 3)]
    assert store.admit(doc) == 0
    assert store.admit(doc) == 5 * PREFIX_BLOCK  # the tail short of a block is never cached
    other_end = doc[:2 * PREFIX_BLOCK] + ["x"] * (3 * PREFIX_BLOCK)
    assert store.admit(other_end) == 2 * PREFIX_BLOCK  # a prefix, not any shared block
    assert store.admit(["x"] * PREFIX_BLOCK + doc[PREFIX_BLOCK:]) == 0  # the same later blocks after another start
    small = PrefixStore(blocks=2)
    small.admit(doc)
    assert small.admit(doc) == 0  # the first blocks were dropped for the later ones


def test_a_stand_in_names_itself_and_reports_cached_tokens_as_vllm_does():
    with StandinServer(replica="r7") as s:
        long = " ".join(f"word{i}" for i in range(200))
        first, again = chat(s.base_url, long), chat(s.base_url, long)
        assert first["system_fingerprint"] == "r7"
        assert first["usage"]["prompt_tokens_details"]["cached_tokens"] == 0
        assert again["usage"]["prompt_tokens_details"]["cached_tokens"] >= 192
        root = s.base_url.removesuffix("/v1")
        stats = httpx.get(root + "/stats", timeout=30).json()
        assert stats["replica"] == "r7" and stats["cached_tokens"] == again["usage"]["prompt_tokens_details"][
            "cached_tokens"]
        metrics = httpx.get(root + "/metrics", timeout=30).text
        assert f"vllm:prefix_cache_hits_total{{model_name=\"standin\"}} {float(stats['cached_tokens'])}" in metrics
        assert httpx.post(root + "/stats/reset", timeout=30).status_code == 200
        assert httpx.get(root + "/stats", timeout=30).json()["chat"] == 0
        assert chat(s.base_url, long)["usage"]["prompt_tokens_details"]["cached_tokens"] == 0  # the store too


def log_line(scope, served_by=None, cached=None, prompt=100, hit=False, event="chat"):
    resp = {"text": "x", "prompt_tokens": prompt}
    if served_by:
        resp["served_by"] = served_by
    if cached is not None:
        resp["cached_tokens"] = cached
    return json.dumps({"event": event, "scope": scope, "cache_hit": hit, "response": resp})


def test_a_runs_log_says_where_its_examples_were_served(tmp_path):
    log = tmp_path / "calls.jsonl"
    log.write_text("\n".join([
        log_line("a", "r0", 0), log_line("a", "r0", 80), log_line("a", "r1", 0), log_line("a", "r0", 90),
        log_line("b", "r1", 0), log_line("b", "r1", 50),
        log_line("c", "r0", 0),  # one call: no locality to speak of
        log_line("a", "r2", 100, hit=True),  # a cache hit: nothing was served
        '{"event": "chat", "scope": "a", "response": {"served_by": "r', ""]), encoding="utf-8")  # cut by a kill
    s = serving_from_log(log)
    assert s["replicas"] == {"r0": 4, "r1": 3}
    assert s["examples"] == 2 and s["examples_on_one_replica"] == 1
    assert s["example_locality"] == pytest.approx((3 / 4 + 1) / 2)
    assert (s["prompt_tokens"], s["cached_tokens"], s["prefix_hit_share"]) == (700, 220, round(220 / 700, 4))
    log.write_text(json.dumps({"event": "chat", "scope": "a", "response": {"text": "x"}}) + "\n")
    assert serving_from_log(log) is None  # a server that says neither: no section
    assert serving_from_log(tmp_path / "absent.jsonl") is None


def test_a_run_against_one_stand_in_records_its_serving(tmp_path):
    from sumjudge.run.folder import RunConfig
    from sumjudge.run.runs import run

    with Fleet(replicas=1) as fleet:
        rc = RunConfig(method="zero-shot", dataset="tofueval-meetingbank", level="sentence", limit=4,
                       backend="openai", model="standin", base_url=fleet.base_url)
        m = run(rc, tmp_path / "run", cache=tmp_path / "c.sqlite", progress=False)
    assert m["serving"]["replicas"] == {"r0": 4} and m["serving"]["calls_reporting_cache"] == 4
    assert m["server"]["prefix_cache_queried_tokens"] > 0  # the stand-in's /metrics, read as vLLM's
    with pytest.raises(ValueError, match="needs a router"):
        Fleet(replicas=2)


class Router:
    """Something in front of two stand-ins that names them (``/list_workers``) and passes chat requests to the
    first, but lists the model without its context and has no ``/tokenize`` or ``/metrics`` (as a router may)."""

    def __init__(self, replicas):
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        urls = [r.base_url.removesuffix("/v1") for r in replicas]
        sessions = self.sessions = []  # the session key of each chat request passed on

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def send(self, code, body):
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                if self.path == "/list_workers":
                    return self.send(200, {"urls": urls})
                if self.path == "/v1/models":
                    return self.send(200, {"object": "list", "data": [{"id": "standin", "object": "model"}]})
                self.send(404, {"error": {"message": "no route"}})

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path == "/v1/chat/completions":
                    sessions.append((self.headers.get("X-Session-ID"), self.headers.get("x-smg-routing-key")))
                    return self.send(200, httpx.post(urls[0] + self.path, content=body, timeout=30).json())
                self.send(404, {"error": {"message": "no route"}})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()


def test_behind_a_router_the_client_learns_each_replica_and_says_once_what_is_missing(capsys):
    with StandinServer(max_model_len=8192, replica="r0") as a, StandinServer(max_model_len=4096, replica="r1") as b:
        router = Router([a, b])
        try:
            be = OpenAIBackend.connect("standin", base_url=router.base_url, backoff=0.01)
            assert be.replicas == [a.base_url.removesuffix("/v1"), b.base_url.removesuffix("/v1")]
            assert be.context_length == 4096  # the smallest replica's, asked of each (the router said none)
            assert be.concurrency == 2 * CONCURRENCY_PER_SERVER
            assert be.server_metrics and be.server_counters()["prefix_cache_queried_tokens"] == 0  # summed
            chat(a.base_url, "one two three")
            chat(b.base_url, "four five")
            assert be.server_counters()["prefix_cache_queried_tokens"] == 5
            assert be.serving_notes == ["no /tokenize: prompts are not counted; give --tokenizer (the model's own) "
                                        "to count them"]
            assert be.info.extra["serving_notes"] == be.serving_notes and len(be.info.extra["replicas"]) == 2
            assert capsys.readouterr().err.count("routes to 2 replicas") == 1
            assert OpenAIBackend.connect("standin", base_url=router.base_url, concurrency=8).concurrency == 8
            capsys.readouterr()
        finally:
            router.close()
    with StandinServer() as plain:  # no router: one server's defaults, nothing said
        be = OpenAIBackend.connect("standin", base_url=plain.base_url)
        assert be.replicas == [] and be.concurrency == CONCURRENCY_PER_SERVER and be.serving_notes == []
        assert capsys.readouterr().err == ""


def test_replicas_timelines_merge_into_requests_in_flight_over_all():
    assert merged_timeline([[(0.0, 1), (1.0, 0)]]) == [(0.0, 1), (1.0, 0)]
    assert merged_timeline([[(0.0, 1), (2.0, 0)], [(1.0, 2), (3.0, 0)]]) == [(0.0, 1), (1.0, 3), (2.0, 2), (3.0, 0)]


def test_behind_a_router_each_request_carries_its_example_as_the_session_key(tmp_path):
    """A router hashing the session key (vllm-router --policy consistent_hash) keeps an example's calls on one
    replica and spreads the examples: the client sends each request's example as that key, behind a router only."""
    from sumjudge.run.folder import RunConfig
    from sumjudge.run.runs import run

    with StandinServer() as a:
        router = Router([a])
        try:
            rc = RunConfig(method="zero-shot", dataset="tofueval-meetingbank", level="sentence", limit=3,
                           backend="openai", model="standin", base_url=router.base_url)
            run(rc, tmp_path / "run", cache=tmp_path / "c.sqlite", progress=False)
            ids = [json.loads(x)["example"]["id"] for x in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
        finally:
            router.close()
        assert sorted(router.sessions) == sorted((i, i) for i in ids)
    with Fleet(replicas=1) as fleet:  # one server: nothing to route, no key sent
        be = OpenAIBackend.connect("standin", base_url=fleet.base_url)
        assert not be.capabilities.routes_by_session


def test_the_serving_docs_quote_the_committed_router_measurements():
    """docs/serving.md's tables are ``scale.routed_table`` of the committed measurements, never typed."""
    from sumjudge.paths import project_root
    from sumjudge.perf.scale import routed_table

    root = project_root()
    docs = (root / "docs" / "serving.md").read_text(encoding="utf-8")
    measured = sorted((root / "figures" / "scale").glob("routed-*.json"))
    assert [p.name for p in measured] == ["routed-madisse-mesa-400-2s.json",
                                          "routed-madisse-mesa-400.json"]
    for path in measured:
        report = json.loads(path.read_text(encoding="utf-8"))
        assert report["machine"]["cpu"] in docs and path.name in docs
        assert routed_table(report) in docs, path.name


def test_the_benchmark_docs_quote_the_committed_scale_measurement():
    """docs/benchmark.md's `make scale` tables are ``scale.instant_table`` of the committed scale.json."""
    from sumjudge.paths import project_root
    from sumjudge.perf.scale import instant_table

    root = project_root()
    report = json.loads((root / "figures" / "scale" / "scale.json").read_text(encoding="utf-8"))
    docs = (root / "docs" / "benchmark.md").read_text(encoding="utf-8")
    assert instant_table(report) in docs and report["machine"]["cpu"] in docs


def test_the_routing_curve_at_another_latency_is_named_apart_from_the_default_one(monkeypatch, tmp_path, capsys):
    """``python -m sumjudge.perf.scale --routing OUT --latency 2 --runs mesa --policies a,b``: the runs, routings and
    seconds per request asked for, the files and the page's markers named ``-2s``; the default latency keeps the
    default names; a latency of 0 is refused."""
    from sumjudge.perf import scale

    asked = []
    monkeypatch.setattr(scale, "routing_curve", lambda out, docs, **kw: asked.append((out, docs, kw)) or out)
    scale.main(["--routing", str(tmp_path), "--latency", "2", "--runs", "mesa", "--policies",
                "sticky_least_loaded, round_robin"])
    out, docs, kw = asked[-1]
    assert out == tmp_path and docs is None
    assert kw == {"runs": ["mesa"], "latency_s": 2.0, "policies": ["sticky_least_loaded", "round_robin"],
                  "tag": "-2s"}
    scale.main(["--routing", str(tmp_path), "--latency", str(scale.CURVE_LATENCY_S)])
    assert asked[-1][2]["tag"] == "" and asked[-1][2]["runs"] is None and asked[-1][2]["policies"] is None
    with pytest.raises(SystemExit):
        scale.main(["--routing", str(tmp_path), "--latency", "0"])
    assert "seconds per request must be above 0" in capsys.readouterr().err
