"""Cache keys hash what determines an answer (rendered prompts, sampling, model), never where code lives: the
requests a few judges send on fixed examples have the same keys as before the papers moved into their folders
(values recorded at commit 0dd85cf with the layout of the time), so every cached run replays with zero calls."""

import hashlib

import pytest
from conftest import needs_mirror

from sumjudge.data import registry
from sumjudge.judges.settings import make_config
from sumjudge.llm import NullCache, run_sync
from sumjudge.llm.engine import LLM
from sumjudge.llm.scripted import Rule, ScriptedBackend
from sumjudge.llm.types import cache_key
from sumjudge.run.methods import get_method

CASES = [("zero-shot", "tofueval-meetingbank", {}), ("cot", "tofueval-meetingbank", {}),
         ("madisse", "tofueval-meetingbank", {"rounds": "2"}), ("factax", "qags-xsum", {}), ("factax-wd", "diasumfact", {}),
         ("star", "qags-xsum", {}), ("chatgpt-zs", "qags-xsum", {}), ("debate", "summeval", {"aspects": "coherence"}),
         ("mesa", "meeting-errors", {"types": "OM,HAL", "truncate": "truncate"})]
# one answer every protocol above can read (a label, a score, the Critic's stop, a yes, an empty list)
REPLY = "<label>1</label> <explanation>It is supported.</explanation>\nScore: 3\nNO ISSUE\nAnswer: yes\n[]"
# (requests sent, sha256 of their cache keys in order), recorded at 0dd85cf
RECORDED = {
    "zero-shot": (1, "0c2b601b419aa3db"),
    "cot": (1, "8b73e4a9d565eeb1"),
    "madisse": (6, "3bcef66ca2acd743"),
    "factax": (1, "85348962655119f6"),
    "factax-wd": (2, "76eb3b2cdaba4c6b"),
    "star": (1, "d21f93cb44ac78d1"),
    "chatgpt-zs": (1, "9ca0d140d0e6d824"),
    "debate": (2, "2b90c1a8a33743d8"),
    "mesa": (4, "bddd4b0f8e11b52a"),
}


@needs_mirror
@pytest.mark.parametrize("method,dataset,settings", CASES, ids=[c[0] for c in CASES])
def test_cache_keys_are_those_of_the_layout_before_the_move(method, dataset, settings):
    spec = get_method(method)
    backend = ScriptedBackend([Rule(".", REPLY)])
    llm = LLM(backend, cache=NullCache(), parse_retries=0)
    ex = registry.load(dataset, limit=1, seed=0)[0]
    run_sync(spec.judge(ex, llm, make_config(spec.config_cls, dict(settings))))
    keys = [cache_key("chat", backend.info, r.key_fields()) for r in backend.requests]
    assert (len(keys), hashlib.sha256("\n".join(keys).encode()).hexdigest()[:16]) == RECORDED[method]


def test_request_and_response_json_hold_every_field_as_asdict_does():
    """``to_json`` is written out field by field (for speed): a field added later must appear in it."""
    from dataclasses import asdict

    from sumjudge.llm.types import ChatRequest, ChatResponse

    r = ChatRequest(messages=[{"role": "user", "content": "x"}], stop=("a",), seed=3, tag="t", sample_index=2)
    assert r.to_json() == {**asdict(r), "stop": ["a"]}
    r.to_json()["messages"][0]["content"] = "changed"
    assert r.messages[0]["content"] == "x"  # a copy, not the request's own messages
    c = ChatResponse("t", "stop", 1, 2, 0.1, "b", "m")
    assert c.to_json() == {k: v for k, v in asdict(c).items() if k not in ("served_by", "cached_tokens")}
    served = ChatResponse("t", "stop", 1, 2, 0.1, "b", "m", served_by="r1", cached_tokens=0)
    assert served.to_json() == asdict(served)  # said: kept, a zero included
