"""The README's "Your own judge" block is code that works: run it, then judge two examples with it."""

import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def _block() -> str:
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Your own judge"):]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_readme_judge_registers_and_judges(monkeypatch):
    from sumjudge.data.records import FaithExample
    from sumjudge.judges.settings import make_config
    from sumjudge.llm import NullCache, run_sync
    from sumjudge.llm.engine import LLM
    from sumjudge.llm.scripted import Rule, ScriptedBackend
    from sumjudge.run.methods import METHODS, get_method

    monkeypatch.setitem(METHODS, "two-readers", None)  # removed again after the test
    exec(compile(_block(), str(README), "exec"), {})
    spec = get_method("two-readers")
    backend = ScriptedBackend([Rule(r"Summary:\nMonday\..*number, date", "<label>0</label>"),
                               Rule(r"Summary:\nTuesday\..*Check who did what", "I cannot tell."),
                               Rule(r"number, date|Check who did what", "<label>1</label>")])
    llm = LLM(backend, cache=NullCache(), parse_retries=1)
    cfg = make_config(spec.config_cls, {})
    doc = "Ann met Bob on Monday."
    wrong = run_sync(spec.judge(FaithExample(id="a", dataset="t", document=doc, summary="Monday.", label=0), llm, cfg))
    assert (wrong.label, wrong.details["labels"]) == (0, [0, 1])
    unread = run_sync(spec.judge(FaithExample(id="b", dataset="t", document=doc, summary="Tuesday.", label=0), llm, cfg))
    assert unread.label is None and not unread.parsed  # "I cannot tell." twice: retried, then counted
    assert sum("Tuesday" in r.messages[-1]["content"] and "who did" in r.messages[-1]["content"]
               for r in backend.requests) == 2
