"""Bad input files: one clear data error (exit 3) naming file, line or row, field and what was found; byte-order
marks accepted in every text format; an empty dataset is an error."""

import json

import pytest

from sumjudge.cli import main as cli
from sumjudge.data import registry
from sumjudge.data.sources import DataFormatError

GOOD = {"document": "The council met on Monday.", "summary": "The council met.", "label": 1}


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.mark.parametrize("row, field, found", [
    ({**GOOD, "document": {"text": "x"}}, "document", "dict"),
    ({**GOOD, "summary": ["a", "b"]}, "summary", "list"),
    ({**GOOD, "summary": 42}, "summary", "int"),
    ({**GOOD, "document": None}, "document", "empty"),
])
def test_wrong_types_name_file_line_field_and_type(tmp_path, row, field, found):
    f = _jsonl(tmp_path / "d.jsonl", [GOOD, row])
    with pytest.raises(DataFormatError) as e:
        registry.load(f"file:{f}")
    msg = str(e.value)
    assert "d.jsonl" in msg and "row 2" in msg and f"'{field}'" in msg and found in msg


def test_meeting_file_checks_text_types(tmp_path):
    f = _jsonl(tmp_path / "m.jsonl", [{"transcript": {"a": 1}, "summary": "s", "OM": "yes"}])
    with pytest.raises(DataFormatError, match="'transcript': expected text, found dict"):
        registry.load(f"meeting-file:{f}")


def test_non_utf8_names_line_and_column(tmp_path):
    f = tmp_path / "latin1.jsonl"
    f.write_bytes(json.dumps(GOOD).encode() + b"\n" + b'{"document": "caf\xe9", "summary": "s", "label": 1}\n')
    with pytest.raises(DataFormatError, match=r"latin1.jsonl, row 2: not UTF-8 text: byte 0xe9 at column 18"):
        registry.load(f"file:{f}")
    c = tmp_path / "latin1.csv"
    c.write_bytes(b"document,summary,label\nd,caf\xe9,1\n")
    with pytest.raises(DataFormatError, match=r"latin1.csv, row 2: not UTF-8"):
        registry.load(f"file:{c}")


@pytest.mark.parametrize("name, content", [("e.jsonl", ""), ("e.json", "[]"), ("blank.jsonl", "\n\n")])
def test_an_empty_dataset_is_an_error(tmp_path, name, content):
    f = tmp_path / name
    f.write_text(content)
    with pytest.raises(DataFormatError, match="no examples"):
        registry.load(f"file:{f}")


@pytest.mark.parametrize("name, body", [
    ("b.jsonl", json.dumps(GOOD) + "\n"),
    ("b.json", json.dumps([GOOD])),
    ("b.csv", "document,summary,label\nThe council met on Monday.,The council met.,1\n"),
    ("b.tsv", "document\tsummary\tlabel\nThe council met on Monday.\tThe council met.\t1\n"),
])
def test_byte_order_marks_are_accepted_in_every_text_format(tmp_path, name, body):
    f = tmp_path / name
    f.write_bytes(b"\xef\xbb\xbf" + body.encode("utf-8"))
    (ex,) = registry.load(f"file:{f}")
    assert ex.document == "The council met on Monday." and ex.label == 1


def test_a_json_list_of_non_objects_names_the_item(tmp_path):
    f = tmp_path / "l.json"
    f.write_text(json.dumps([GOOD, "oops"]))
    with pytest.raises(DataFormatError, match="l.json, row 2: expected a JSON object, got str"):
        registry.load(f"file:{f}")


def test_cli_exits_3_with_one_line_and_no_run_folder(tmp_path, capsys):
    f = _jsonl(tmp_path / "d.jsonl", [{**GOOD, "document": {"x": 1}}])
    out = tmp_path / "run"
    assert cli.main(["run", "zero-shot", "--dataset", f"file:{f}", "--model", "tiny", "--out", out,
                     "--cache", tmp_path / "c.sqlite"]) == 3
    err = capsys.readouterr().err
    assert "d.jsonl, row 1, field 'document': expected text, found dict" in err and "Traceback" not in err
    assert not out.exists()


def test_an_empty_or_nan_label_names_row_and_column(tmp_path):
    f = tmp_path / "nan.jsonl"
    f.write_text(json.dumps(GOOD) + "\n" + '{"document": "d", "summary": "s", "label": NaN}\n')
    with pytest.raises(DataFormatError, match=r"nan.jsonl, row 2, field 'label': the label is empty \(a blank or NaN"):
        registry.load(f"file:{f}")
    c = tmp_path / "blank.csv"
    c.write_text("document,summary,verdict\nd,s,1\nd,s,\n")
    with pytest.raises(DataFormatError, match=r"blank.csv, row 3, field 'verdict': empty"):
        registry.load(f"file:{c}?label=verdict")


def test_a_nul_byte_names_the_column_as_the_file_writes_it(tmp_path):
    f = _jsonl(tmp_path / "nul.jsonl", [{"doc": "The council\x00 met.", "summ": "The council met.", "label": 1}])
    with pytest.raises(DataFormatError, match=r"nul.jsonl, row 1, field 'doc': a NUL byte at character 12"):
        registry.load(f"file:{f}?document=doc&summary=summ")


def test_a_document_no_served_model_reads_names_file_and_row_and_leaves_out_untouched(tmp_path, capsys,
                                                                                       tiny_backend):
    from openai_server import LocalOpenAIServer

    from sumjudge.llm.openai import MAX_PROMPT_CHARS_UNKNOWN_CONTEXT

    f = _jsonl(tmp_path / "big.jsonl", [{**GOOD, "document": "word " * (MAX_PROMPT_CHARS_UNKNOWN_CONTEXT // 4)}])
    out = tmp_path / "run"
    with LocalOpenAIServer(tiny_backend, vllm_routes=False) as plain:  # states no context
        code = cli.main(["run", "zero-shot", "--dataset", f"file:{f}", "--backend", "openai", "--model", "tiny-llama3",
                         "--base-url", plain.base_url, "--out", str(out), "--cache", str(tmp_path / "c.sqlite")])
    err = capsys.readouterr().err
    assert code == 5 and f"{f}, row 1 (example big-1)" in err and "does not state its context" in err, err
    assert not out.exists()  # no call was made: nothing of the run is left
    (out).mkdir()
    (out / "notes.txt").write_text("mine")
    with LocalOpenAIServer(tiny_backend, vllm_routes=False) as plain:
        code = cli.main(["run", "zero-shot", "--dataset", f"file:{f}", "--backend", "openai", "--model", "tiny-llama3",
                         "--base-url", plain.base_url, "--out", str(out), "--cache", str(tmp_path / "c.sqlite")])
    assert code != 0 and sorted(p.name for p in out.iterdir()) == ["notes.txt"]


def test_a_resumed_folder_gets_its_files_back_when_the_run_stops_before_an_answer(tmp_path):
    from sumjudge.run.folder import FolderState

    out = tmp_path / "run"
    out.mkdir()
    (out / "config.json").write_text('{"run": 1}')
    (out / "calls.jsonl").write_text('{"event": "chat", "key": "k1"}\n')
    before = FolderState.of(out)
    (out / "config.json").write_text('{"run": 2}')
    with (out / "calls.jsonl").open("a") as fh:
        fh.write('{"event": "process_start"}\n{"event": "run_failed"}\n')
    assert before.nothing_answered(out)
    before.restore(out)
    assert (out / "config.json").read_text() == '{"run": 1}'
    assert (out / "calls.jsonl").read_text() == '{"event": "chat", "key": "k1"}\n'
    assert sorted(p.name for p in out.iterdir()) == ["calls.jsonl", "config.json"]
    with (out / "calls.jsonl").open("a") as fh:
        fh.write('{"event": "chat", "key": "k2"}\n')
    assert not before.nothing_answered(out)
