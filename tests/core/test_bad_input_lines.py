"""Inputs that used to end in a traceback, a wrong exit code or a misleading message: each is now one line on
stderr naming the file (and row) or the flag, with the documented exit code (docs/command-line.md), before any
call where the input can be checked before one; only the project's own refusals exit 2, any other ValueError is a
bug shown with its traceback."""

import csv
import json
import socket
import time

import pytest
from openai_server import LocalOpenAIServer

from sumjudge.cli import main as cli
from sumjudge.errors import ConfigError


def one_line(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err


def rows(n: int) -> list[dict]:
    return [{"id": f"r{i}", "document": f"The council met on day {i} and approved plan {i}.",
             "summary": f"Plan {i} was approved.", "label": i % 2} for i in range(n)]


def write_jsonl(path, lines: list[str]):
    path.write_text("\n".join(lines) + "\n")
    return path


def run_scripted(tmp_path, dataset: str) -> int:
    """A run on the scripted backend, which answers nothing from the command line: a data error stops it with
    exit 3 at load time, before its first call (a call would end it with exit 5)."""
    return cli.main(["run", "zero-shot", "--dataset", dataset, "--backend", "scripted", "--out", str(tmp_path / "run"),
                     "--cache", str(tmp_path / "c.sqlite")])


def test_a_csv_document_over_131072_characters_loads_and_runs(tmp_path):
    from sumjudge.data import registry
    from sumjudge.llm.cache import NullCache
    from sumjudge.llm.engine import LLM
    from sumjudge.llm.scripted import ScriptedBackend
    from sumjudge.run.folder import RunConfig
    from sumjudge.run.runs import run

    f = tmp_path / "long.csv"
    with f.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["id", "document", "summary", "label"])
        w.writerow(["long", "The council met. " * 12_000, "The council met.", "1"])  # 204,000 characters
        w.writerow(["short", "The council met.", "The council did not meet.", "0"])
    examples = registry.load(f"file:{f}")
    assert len(examples[0].document) == 204_000
    llm = LLM(ScriptedBackend().add(r".", "<label>1</label>"), cache=NullCache())
    m = run(RunConfig(method="zero-shot", dataset=f"file:{f}", backend="scripted"), tmp_path / "run", llm=llm,
            progress=False)
    assert m["n_examples"] == 2 and m["failed_examples"]["n"] == 0 and m["unparsed"] == 0


@pytest.mark.parametrize("name, lines, says", [
    ("surrogate.jsonl", [json.dumps(r) for r in rows(4)[:2]] + [json.dumps(rows(4)[2]).replace("The council",
                                                                                               "The \\ud800 council")],
     r"surrogate.jsonl, row 3, field 'document': a lone surrogate \ud800 at character 5"),
    ("deep.jsonl", [json.dumps(rows(2)[0]), "[" * 100_000], "deep.jsonl, row 2: nested too deeply to read"),
    ("deep-inside.jsonl", ['{"id": "a", "document": ' + "[" * 100_000], "deep-inside.jsonl, row 1: nested too deeply"),
    ("deep.json", ["[" * 100_000], "deep.json: nested too deeply to read"),
    ("surrogate.json", [json.dumps(rows(2)).replace("Plan 1", "Plan \\udfff")],
     r"surrogate.json, row 2, field 'summary': a lone surrogate \udfff at character 6"),
    ("dup.csv", ["id,document,document,summary,label", "a,one,two,s,1"],
     "dup.csv, row 1, field 'document': the column appears twice in the header (columns 2 and 3)"),
])
def test_a_bad_line_is_one_data_error_naming_file_and_row_before_any_call(tmp_path, capsys, name, lines, says):
    f = write_jsonl(tmp_path / name, lines)
    assert run_scripted(tmp_path, f"file:{f}") == 3
    err = one_line(capsys)
    assert err.startswith("sumjudge: data error: ") and says in err, err
    assert not (tmp_path / "run").exists() and not (tmp_path / "c.sqlite").exists()


def test_an_escaped_surrogate_pair_is_text(tmp_path):
    from sumjudge.data import registry

    r = rows(1)[0]
    f = write_jsonl(tmp_path / "emoji.jsonl", [json.dumps({**r, "summary": "Plan 0 was approved \U0001F600."})])
    assert "\\ud83d\\ude00" in f.read_text()  # json.dumps escapes it as a pair
    assert registry.load(f"file:{f}")[0].summary.endswith("\U0001F600.")


def test_a_password_in_the_base_url_is_refused_at_once_and_never_printed(tmp_path, capsys):
    t0 = time.monotonic()
    code = cli.main(["run", "zero-shot", "--dataset", "any", "--backend", "openai", "--model", "m", "--base-url",
                     "http://alice:s3cret-pw@127.0.0.1:9/v1", "--out", str(tmp_path / "run")])
    err = one_line(capsys)
    assert code == 2 and time.monotonic() - t0 < 5
    assert "--base-url 'http://***@127.0.0.1:9/v1'" in err and "OPENAI_API_KEY" in err
    assert "s3cret" not in err and "alice" not in err and not (tmp_path / "run").exists()


def test_a_tokenizer_folder_that_is_not_there_names_the_flag(tmp_path, capsys):
    missing = str(tmp_path / "no" / "tok")
    code = cli.main(["run", "zero-shot", "--dataset", "any", "--backend", "openai", "--model", "m", "--base-url",
                     "http://127.0.0.1:9/v1", "--tokenizer", missing, "--out", str(tmp_path / "run")])
    assert code == 2 and f"--tokenizer {missing}: no such folder" in one_line(capsys)
    assert cli.main(["plan", "--runs", "zero-shot", "--tokenizer", missing]) == 2
    assert f"--tokenizer {missing}: no such folder" in one_line(capsys)


def test_a_tokenizer_that_cannot_be_loaded_names_the_flag(tmp_path):
    from sumjudge.llm.models import tokenizer_named

    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match=r"--tokenizer .*empty: the folder holds no tokenizer"):
        tokenizer_named(str(tmp_path / "empty"))
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "tokenizer.json").write_text("{not json")
    with pytest.raises(ConfigError, match=r"--tokenizer .*broken: no tokenizer can be loaded from it \("):
        tokenizer_named(str(tmp_path / "broken"))


def test_a_truncated_cache_file_is_named_on_import(tmp_path, capsys):
    from sumjudge.llm.cache import ResponseCache

    full = tmp_path / "class.sqlite"
    c = ResponseCache(full)
    c.put_many([(f"k{i}", "chat", "hf", "m", {"q": f"question {i} " * 20}, {"text": "x" * 200}) for i in range(200)])
    c.close()
    cut = tmp_path / "cut.sqlite"
    cut.write_bytes(full.read_bytes()[:8192])
    assert cli.main(["cache", "import", str(cut), "--cache", str(tmp_path / "mine.sqlite")]) == 2
    err = one_line(capsys)
    assert f"cache import: {cut} cannot be read" in err


@pytest.mark.parametrize("dataset", ["{file}", "mine.jsonl", "data/mine.csv"])
def test_a_file_given_without_file_prefix_is_pointed_to_it(tmp_path, capsys, dataset):
    f = write_jsonl(tmp_path / "rows.jsonl", [json.dumps(r) for r in rows(2)])
    dataset = dataset.format(file=f)
    assert run_scripted(tmp_path, dataset) == 2
    assert f"unknown dataset '{dataset}': a file of your own is given as --dataset file:{dataset}" in one_line(capsys)


@pytest.mark.parametrize("argv, says", [
    (["plan", "--runs", "madisse,mesa"], "sumjudge: error: unknown run(s) ['madisse,mesa']"),
    (["plan", "--notebooks", "99"], "sumjudge: error: plan: no notebook matches 99"),
])
def test_plan_errors_are_the_error_alone(capsys, argv, says):
    assert cli.main(argv) == 2
    assert one_line(capsys).startswith(says)


def test_a_value_error_that_is_no_refusal_of_ours_is_a_bug_with_its_traceback(monkeypatch, tmp_path):
    def bug(*args, **kwargs):
        raise ValueError("an internal mistake")

    monkeypatch.setattr("sumjudge.cli.tiny_model_command.build_tiny_model", bug)
    with pytest.raises(ValueError, match="an internal mistake"):
        cli.main(["tiny-model", str(tmp_path / "m")])


@pytest.fixture(scope="module")
def plain_server(tiny_backend):
    with LocalOpenAIServer(tiny_backend, vllm_routes=False) as s:  # no probe: every model call is an example's
        yield s


def openai_run(server, tmp_path, n: int) -> int:
    f = write_jsonl(tmp_path / "faith.jsonl", [json.dumps(r) for r in rows(n)])
    return cli.main(["run", "zero-shot", "--dataset", f"file:{f}", "--backend", "openai", "--model", "tiny-llama3",
                     "--base-url", server.base_url, "--set", "max_new_tokens=4", "--out", str(tmp_path / "run"),
                     "--cache", str(tmp_path / "c.sqlite")])


def test_a_run_whose_every_example_failed_does_not_exit_0_and_says_why(plain_server, tmp_path, capsys):
    plain_server.fail_next(3, 400)
    try:
        code = openai_run(plain_server, tmp_path, 3)
    finally:
        with plain_server._lock:
            plain_server._fail.clear()
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    assert code == 5 and summary["failed"] == 3 and "HTTP 400" in summary["first_failure"]
    last = captured.err.strip().splitlines()[-1]  # after the progress bar
    assert last.startswith("sumjudge: error: every example failed (3 of 3; the first: faith-1: BackendRequestError")


def test_a_run_where_some_examples_failed_still_exits_0_and_counts_them(plain_server, tmp_path, capsys):
    plain_server.fail_next(1, 400)
    code = openai_run(plain_server, tmp_path, 4)
    summary = json.loads(capsys.readouterr().out)
    assert code == 0 and summary["failed"] == 1 and "HTTP 400" in summary["first_failure"]


def test_a_server_that_goes_away_after_answering_is_not_called_a_timeout(tiny_backend):
    from sumjudge.llm import BackendUnavailableError, ChatRequest, NullCache, run_sync
    from sumjudge.llm.engine import LLM
    from sumjudge.llm.openai import OpenAIBackend

    def ask(llm, text):
        return run_sync(llm.chat(ChatRequest(messages=[{"role": "user", "content": text}], max_new_tokens=3)))

    with LocalOpenAIServer(tiny_backend) as s:
        be = OpenAIBackend.connect("tiny-llama3", base_url=s.base_url, backoff=0.01, max_retry_time=2)
        llm = LLM(be, cache=NullCache())
        assert ask(llm, "first").text is not None
        port = s.httpd.server_address[1]
    with pytest.raises(BackendUnavailableError) as refused:  # the server is gone: nothing listens on its port
        ask(llm, "second")
    with socket.socket() as lsock:  # something that takes connections on the port and drops each one
        lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        lsock.bind(("127.0.0.1", port))
        lsock.listen(16)
        lsock.settimeout(0.05)

        def drop():
            while not stop:
                try:
                    conn, _ = lsock.accept()
                except OSError:
                    continue
                conn.recv(65536)
                conn.close()

        import threading

        stop = False
        t = threading.Thread(target=drop, daemon=True)
        t.start()
        try:
            with pytest.raises(BackendUnavailableError) as dropped:
                ask(llm, "third")
        finally:
            stop = True
            t.join()
    for e in (refused.value, dropped.value):
        assert str(e).startswith(f"http://127.0.0.1:{port}/v1 went away: connection ") and "timed out" not in str(e)
    assert "connection refused" in str(refused.value)


def test_a_real_timeout_is_still_called_one(tiny_backend):
    from sumjudge.llm import BackendUnavailableError, ChatRequest, NullCache, run_sync
    from sumjudge.llm.engine import LLM
    from sumjudge.llm.openai import OpenAIBackend

    with LocalOpenAIServer(tiny_backend) as s:
        s.hang_s = 1.0
        be = OpenAIBackend.connect("tiny-llama3", base_url=s.base_url, backoff=0.01, timeout=0.3, max_retries=1)
        s.fault_next("hang", 2)
        with pytest.raises(BackendUnavailableError, match="did not answer after 2 attempts: APITimeoutError"):
            run_sync(LLM(be, cache=NullCache()).chat(ChatRequest(messages=[{"role": "user", "content": "x"}],
                                                                 max_new_tokens=3)))
        time.sleep(s.hang_s)
