import pytest

from sumjudge.llm.parsing import ParseError, binary_label, lenient_json, xml_tag


def test_xml_tag_last_complete_occurrence_and_unclosed_tail():
    text = "I will answer in <label> tags.\n<label>0</label> wait <label> 1 </label>"
    assert xml_tag(text, "label") == "1"
    assert xml_tag(text, "label", last=False) == "0"
    assert xml_tag("<explanation>the doc says X", "explanation") == "the doc says X"
    assert xml_tag("<LABEL >1</ label>", "label") == "1"


@pytest.mark.parametrize("text, label", [
    ("<label>1</label>", 1), ("<label> 0 </label>", 0), ("<label>1 (consistent)</label>", 1),
    ("<label>inconsistent</label>", 0), ("<label>Faithful</label>", 1), ("<label>unfaithful</label>", 0),
])
def test_binary_label_accepts(text, label):
    assert binary_label(text) == label


@pytest.mark.parametrize("text", ["no tags at all", "<label>0 or 1</label>", "<label>maybe</label>",
                                  "<label></label>", "<label>0.5</label>"])
def test_binary_label_refuses_instead_of_guessing(text):
    with pytest.raises(ParseError):
        binary_label(text)


@pytest.mark.parametrize("text, expected", [
    ('```json\n{"score": 4, "why": "ok"}\n```', {"score": 4, "why": "ok"}),
    ("Here you go: {'score': 3, 'ok': true} hope it helps", {"score": 3, "ok": True}),
    ('{"a": [1, 2,], "b": "x}y",}\nTrailing text {', {"a": [1, 2], "b": "x}y"}),
    ('[{"type": "omission", "severity": null}]', [{"type": "omission", "severity": None}]),
])
def test_lenient_json(text, expected):
    assert lenient_json(text) == expected


def test_lenient_json_failure_is_typed():
    with pytest.raises(ParseError):
        lenient_json("{not json at all")
