import multiprocessing as mp

from sumjudge.llm.cache import NullCache, ResponseCache


def _writer(path, start, n):
    c = ResponseCache(path)
    for i in range(start, start + n, 5):
        c.put_many([(f"k{j}", "chat", "b", "m", {"i": j}, {"text": str(j)}) for j in range(i, i + 5)])
    c.close()


def test_roundtrip_stats_and_clear(cache_file):
    c = ResponseCache(cache_file)
    assert c.get("x") is None
    c.put_many([("x", "chat", "hf", "m1", {"q": 1}, {"text": "a"}), ("y", "chat", "hf", "m2", {"q": 2}, {"text": "b"})])
    assert c.get("x") == {"text": "a"}
    assert c.stats()["entries"] == 2
    assert c.clear("m1") == 1 and c.get("x") is None and c.get("y") == {"text": "b"}
    # persistent: a new connection sees it
    assert ResponseCache(cache_file).get("y") == {"text": "b"}


def test_two_processes_write_at_once(cache_file):
    ResponseCache(cache_file).close()
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(cache_file), k * 1000, 200)) for k in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    c = ResponseCache(cache_file)
    assert c.stats()["entries"] == 400
    assert c.get("k1199") == {"text": "1199"} and c.get("k0") == {"text": "0"}


def test_null_cache_stores_nothing():
    c = NullCache()
    c.put_many([("x", "chat", "b", "m", {}, {})])
    assert c.get("x") is None


def test_clear_is_scoped_by_backend_model_revision_and_server_and_compacts(cache_file):
    c = ResponseCache(cache_file)
    big = {"text": "x" * 20000}
    c.put_many([(f"a{i}", "chat", "hf", "tiny-llama3", {"i": i}, big, "rev1", "") for i in range(20)]
               + [(f"b{i}", "chat", "hf", "tiny-llama3", {"i": i}, big, "rev2", "") for i in range(20)]
               + [(f"s{i}", "chat", "openai", "m", {"i": i}, big, "", "http://a:8000/v1") for i in range(5)]
               + [(f"t{i}", "chat", "openai", "m", {"i": i}, big, "", "http://b:8000/v1") for i in range(5)])
    assert c.count(model="tiny-llama3") == 40 and c.count(server="http://a:8000/v1") == 5
    before = c.stats()["bytes"]
    assert c.clear("tiny-llama3", revision="rev1") == 20  # one build of the model, not every build of that name
    assert c.count(model="tiny-llama3") == 20 and c.get("b0") is not None
    assert c.clear(backend="openai", server="http://a:8000/v1") == 5 and c.get("t0") is not None
    assert c.stats()["bytes"] < before  # the file shrank
    rows = {(r["revision"], r["server"]) for r in c.stats()["by_model"]}
    assert rows == {("rev2", ""), ("", "http://b:8000/v1")}


def test_cli_cache_stats_never_creates_and_clear_asks(tmp_path, capsys, monkeypatch):
    import io
    import json

    from sumjudge.cli import main as cli

    missing = tmp_path / "none" / "c.sqlite"
    assert cli.main(["cache", "stats", "--cache", missing]) == 0
    assert json.loads(capsys.readouterr().out)["exists"] is False and not missing.parent.exists()
    path = tmp_path / "c.sqlite"
    ResponseCache(path).put_many([("x", "chat", "hf", "m1", {}, {"text": "a"}), ("y", "chat", "hf", "m2", {}, {})])
    monkeypatch.setattr("sys.stdin", io.StringIO(""))  # not a terminal: no silent deletion
    assert cli.main(["cache", "clear", "--cache", path]) == 2
    assert "add --yes" in capsys.readouterr().err and ResponseCache(path).count() == 2
    assert cli.main(["cache", "clear", "--cache", path, "--model", "m1", "--yes"]) == 0
    assert json.loads(capsys.readouterr().out)["deleted"] == 1 and ResponseCache(path).count() == 1


def test_two_servers_never_share_answers():
    from sumjudge.llm.types import BackendInfo, cache_key, server_identity

    fields = {"messages": [{"role": "user", "content": "q"}]}
    a = BackendInfo("openai", "m", server=server_identity("http://user:secret@HostA:8000/v1/"))
    b = BackendInfo("openai", "m", server=server_identity("http://hostb:8000/v1"))
    assert a.server == "http://hosta:8000/v1" and "secret" not in a.server
    assert cache_key("chat", a, fields) != cache_key("chat", b, fields)
    # local backends keep the keys they had (no server field): caches built earlier stay valid
    assert cache_key("chat", BackendInfo("hf", "m"), fields) == cache_key("chat", BackendInfo("hf", "m", server=""), fields)


def test_one_model_in_two_dtypes_never_shares_answers():
    from sumjudge.llm.types import BackendInfo, cache_key

    fields = {"messages": [{"role": "user", "content": "q"}]}
    fp32 = BackendInfo("hf", "m", revision="r", extra={"dtype": "float32"})
    bf16 = BackendInfo("hf", "m", revision="r", extra={"dtype": "bfloat16"})
    assert cache_key("chat", fp32, fields) != cache_key("chat", bf16, fields)
    assert cache_key("chat", fp32, fields) == cache_key("chat", BackendInfo("hf", "m", revision="r",
                                                                           extra={"dtype": "float32", "device": "x"}), fields)
