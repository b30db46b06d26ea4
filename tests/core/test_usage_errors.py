"""Usage errors of `sumjudge run` that used to end in a traceback, a bare Errno or silence: each exits 2 with
one line naming the flag or setting (3 for data), before any model loads; a failed run's folder takes the rerun
its message suggests; no temp file survives a finished run."""

import json

import pytest
from conftest import needs_mirror

from sumjudge.cli import main as cli

BASE = ["run", "zero-shot", "--dataset", "tofueval-meetingbank", "--level", "sentence", "--limit", "2"]


def _run(tmp_path, capsys, *extra, cache=True):
    args = [*BASE, "--out", tmp_path / "run", *(["--cache", tmp_path / "c.sqlite"] if cache else []), *extra]
    code = cli.main([str(a) for a in args])
    err = capsys.readouterr().err
    return code, err


@pytest.mark.parametrize("extra, cache, says", [
    (["--model", "tiny", "--max-retry-time", "-1"], True, "--max-retry-time applies to --backend openai only"),
    (["--backend", "openai", "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--max-retry-time", "-1"], True,
     "--max-retry-time -1.0: expected a number above 0"),
    (["--backend", "openai", "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--timeout", "0"], True,
     "--timeout 0.0: expected a number above 0"),
    (["--backend", "openai", "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--token-budget", "100"], True,
     "--token-budget applies to --backend hf only"),
    (["--backend", "openai", "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--dtype", "bfloat16"], True,
     "--dtype applies to --backend hf only"),
    (["--model", "tiny", "--base-url", "http://127.0.0.1:9/v1"], True, "--base-url applies to --backend openai only"),
    (["--model", "tiny", "--token-budget", "-1"], True, "--token-budget -1: expected a number above 0"),
    (["--backend", "openai", "--model", "m", "--base-url", "not a url"], True,
     "--base-url 'not a url': expected an http(s) URL"),
    (["--model", "tiny", "--no-cache"], True, "--no-cache and --cache"),
    (["--model", "tiny", "--server-name", "lab"], True, "--server-name applies to --backend openai only"),
    (["--model", "tiny", "--tokenizer", "tiny"], True, "--tokenizer applies to --backend openai only"),
])
def test_flag_errors_exit_2_naming_the_flag(tmp_path, capsys, extra, cache, says):
    code, err = _run(tmp_path, capsys, *extra, cache=cache)
    assert code == 2 and says in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "run").exists()  # nothing written


def test_a_cache_that_is_a_folder_or_not_sqlite_is_refused(tmp_path, capsys):
    (tmp_path / "folder").mkdir()
    code = cli.main([str(a) for a in [*BASE, "--model", "tiny", "--out", tmp_path / "run", "--cache", tmp_path / "folder"]])
    err = capsys.readouterr().err
    assert code == 2 and "--cache" in err and "is a folder" in err
    (tmp_path / "notes.txt").write_text("my notes, not a cache")
    code = cli.main([str(a) for a in [*BASE, "--model", "tiny", "--out", tmp_path / "run", "--cache", tmp_path / "notes.txt"]])
    err = capsys.readouterr().err
    assert code == 2 and "not an SQLite file" in err and (tmp_path / "notes.txt").read_text() == "my notes, not a cache"


def test_a_missing_guidelines_file_names_the_setting(tmp_path, capsys):
    code = cli.main([str(a) for a in ["run", "madisse", "--dataset", "tofueval-meetingbank", "--model", "./no/model",
                                      "--out", tmp_path / "run", "--set", f"guidelines={tmp_path / 'missing.json'}"]])
    err = capsys.readouterr().err
    assert code == 2 and "guidelines=" in err and "no such file" in err and "Errno" not in err


def test_an_out_folder_that_cannot_be_created_is_named(tmp_path, capsys):
    import os

    if os.geteuid() == 0:  # root may write anywhere: name a path under a file instead
        (tmp_path / "file").write_text("x")
        out = tmp_path / "file" / "run"
    else:
        (tmp_path / "ro").mkdir()
        (tmp_path / "ro").chmod(0o500)
        out = tmp_path / "ro" / "x" / "run"
    try:
        code = cli.main([str(a) for a in [*BASE, "--model", "tiny", "--out", out, "--cache", tmp_path / "c.sqlite"]])
    finally:
        if (tmp_path / "ro").exists():
            (tmp_path / "ro").chmod(0o700)
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("sumjudge: error: --out ") and "cannot create the run folder" in err


def test_a_broken_parquet_file_is_a_data_error(tmp_path, capsys):
    bad = tmp_path / "rows.parquet"
    bad.write_bytes(b"PAR1 this is not a parquet file")
    code = cli.main(["run", "zero-shot", "--dataset", f"file:{bad}", "--model", "tiny", "--out", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert code == 3 and "rows.parquet" in err and "not a readable parquet file" in err


def test_json_list_rows_are_numbered_from_1_like_jsonl_and_csv(tmp_path):
    from sumjudge.data import registry
    from sumjudge.data.sources import DataFormatError

    f = tmp_path / "rows.json"
    f.write_text(json.dumps([{"document": "d", "summary": "s", "label": 1}, "not an object"]))
    with pytest.raises(DataFormatError, match=r"rows.json, row 2"):
        registry.load(f"file:{f}")


def test_a_nul_byte_in_a_document_is_refused_naming_file_row_and_column(tmp_path):
    from sumjudge.data import registry
    from sumjudge.data.sources import DataFormatError

    f = tmp_path / "rows.jsonl"
    f.write_text(json.dumps({"id": "a", "document": "fine", "summary": "s", "label": 1}) + "\n" +
                 json.dumps({"id": "b", "document": "bin\u0000ary", "summary": "s", "label": 0}) + "\n")
    with pytest.raises(DataFormatError, match=r"rows.jsonl, row 2, field 'document': a NUL byte at character 4"):
        registry.load(f"file:{f}")


@needs_mirror
def test_meeting_error_statistics_read_the_transcripts_the_runs_read():
    from sumjudge.data import registry
    from sumjudge.data.stats import dataset_stats

    st = dataset_stats("meeting-errors")
    examples = registry.load("meeting-errors")
    distinct = list(dict.fromkeys(ex.transcript for ex in examples))
    assert st["transcripts_restored"] == len(examples) == 133
    assert st["mean_transcript_words"] == pytest.approx(sum(len(t.split()) for t in distinct) / len(distinct), abs=0.05)


@needs_mirror
def test_a_run_refused_for_a_long_prompt_before_any_call_leaves_no_folder_and_takes_the_suggested_rerun(tmp_path,
                                                                                                         capsys):
    from sumjudge.llm.models import TINY_SHAPE, build_tiny_model

    model = build_tiny_model(tmp_path / "short-ctx", shape={**TINY_SHAPE, "max_position_embeddings": 1024})
    out = tmp_path / "run"
    args = ["run", "zero-shot", "--dataset", "tofueval-meetingbank", "--level", "sentence", "--limit", "1",
            "--model", str(model), "--out", str(out), "--cache", str(tmp_path / "c.sqlite"), "--set", "max_new_tokens=4"]
    code = cli.main(args)  # a MeetingBank transcript is over this model's 1,024 tokens
    err = capsys.readouterr().err
    assert code == 5 and "truncate" in err
    assert not out.exists()  # stopped before its first call: nothing of it is left in --out
    code = cli.main([*args, "--set", "truncate=truncate"])  # what the message suggests, into the same folder
    err = capsys.readouterr().err
    assert code == 0, err
    assert json.loads((out / "config.json").read_text())["method_config"]["truncate"] == "truncate"
    code = cli.main([*args, "--set", "truncate=truncate", "--set", "max_new_tokens=5"])  # a finished run: refused
    assert code == 2 and "different configuration" in capsys.readouterr().err


@needs_mirror
def test_no_temp_file_survives_a_finished_run(tmp_path, capsys, tiny_model_dir):
    out = tmp_path / "run"
    out.mkdir()
    args = [*BASE, "--model", str(tiny_model_dir), "--out", str(out), "--cache", str(tmp_path / "c.sqlite"),
            "--set", "max_new_tokens=4"]
    assert cli.main(args) == 0
    for name in ("results.jsonl.tmp", "results.jsonl.4242.tmp", "metrics.json.77.tmp"):  # what kills leave
        (out / name).write_text("partial")
    (out / "metrics.json").unlink()  # an unfinished run: the rerun finishes it
    assert cli.main(args) == 0
    capsys.readouterr()
    assert sorted(p.name for p in out.glob("*.tmp")) == []


@pytest.mark.parametrize("argv, says", [
    (["bogus"], "sumjudge: error: unknown command 'bogus' (commands: run, "),
    (["run", "zero-shot", "--dataset", "d", "--out", "o", "--limit", "abc"], "--limit expects a whole number, not 'abc'"),
    (["run", "zero-shot", "--dataset", "d", "--out", "o", "--seed", "abc"], "--seed expects a whole number, not 'abc'"),
    (["run", "zero-shot", "--dataset", "d", "--out", "o", "--level", "bogus"],
     "--level accepts sentence, summary, not 'bogus'"),
    (["arena", "--methods", "zero-shot", "--datasets", "d", "--out", "o", "--timeout", "x"], "unrecognized arguments"),
])
def test_argparse_errors_are_one_line_naming_the_flag(capsys, argv, says):
    with pytest.raises(SystemExit) as e:
        cli.main(argv)
    err = capsys.readouterr().err
    assert e.value.code == 2 and says in err and "--help" in err and len(err.strip().splitlines()) == 1, err
    assert "usage:" not in err


def test_a_port_out_of_range_names_base_url(tmp_path, capsys):
    code, err = _run(tmp_path, capsys, "--backend", "openai", "--model", "m", "--base-url", "http://127.0.0.1:99999/v1")
    assert code == 2 and "--base-url 'http://127.0.0.1:99999/v1': Port out of range" in err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "run").exists()


def test_arena_judges_and_datasets_may_be_comma_separated():
    from sumjudge.arena import parse_cells, split_names

    assert split_names(["zero-shot,factax", "cot"]) == ["zero-shot", "factax", "cot"]
    assert split_names(["cot,self-consistency:samples=3;seeds=1,2"]) == ["cot", "self-consistency:samples=3;seeds=1,2"]
    cells = parse_cells(["zero-shot,factax"], ["a,b"])
    assert [(c.judge, c.dataset) for c in cells] == [("zero-shot", "a"), ("zero-shot", "b"), ("factax", "a"),
                                                     ("factax", "b")]


def test_the_scripted_backend_from_the_command_line_says_what_it_is_in_one_line(tmp_path, capsys):
    """The scripted backend answers only the rules a test gives it: from the command line, its first unanswered
    request ends the run with one line that says so and names the backends that judge (exit 5), and leaves no
    run folder behind."""
    data = tmp_path / "tiny.jsonl"
    data.write_text(json.dumps({"id": "a", "document": "The cat sat.", "summary": "A cat sat.", "label": 1}) + "\n")
    code = cli.main(["run", "zero-shot", "--dataset", f"file:{data}", "--backend", "scripted", "--out",
                     str(tmp_path / "run"), "--cache", str(tmp_path / "c.sqlite")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 5 and "Traceback" not in "\n".join(err)
    assert "no rule matches request" in err[-1] and "use --backend hf or openai" in err[-1]
    assert not (tmp_path / "run").exists()
