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
