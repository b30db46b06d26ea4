"""``make reproduce REUSE=1``: the answers a results page recorded of the same weights are taken into the response
cache under the key the model has now (its weights' content), so a notebook recorded again, or a second notebook
asking the same sampled request, gets the recorded answer instead of sampling a new one."""

from __future__ import annotations

import json
import os
import shutil

from sumjudge.llm import ChatRequest, run_sync
from sumjudge.llm.cache import ResponseCache
from sumjudge.llm.engine import LLM
from sumjudge.llm.hf import HFBackend
from sumjudge.llm.recording import Recorder
from sumjudge.reproduce.reuse import reuse_recorded_answers
from sumjudge.results.model_files import weights_sha256

SAMPLED = ChatRequest(messages=[{"role": "user", "content": "Is the summary faithful? Answer 0 or 1."}],
                      temperature=1.0, top_p=0.9, max_new_tokens=6, seed=7, tag="ex-1/zero-shot")


def record_page(page, model_dir, notebook, weights):
    """A page of one notebook whose answer to SAMPLED was recorded from ``model_dir`` (provenance naming
    ``weights``)."""
    llm = LLM(HFBackend(str(model_dir)), cache=ResponseCache(page.parent / f"{notebook}.sqlite"))
    rec = Recorder()
    rec.register(llm, "hf", model_dir.name, None, {})
    answer = run_sync(llm.chat(SAMPLED)).text
    (page / notebook).mkdir(parents=True, exist_ok=True)
    rec.write(page / notebook / "answers.jsonl.xz")
    prov = page / "provenance.json"
    notebooks = json.loads(prov.read_text())["notebooks"] if prov.exists() else {}
    notebooks[notebook] = {"answers": f"{notebook}/answers.jsonl.xz", "weights_sha256": weights}
    prov.write_text(json.dumps({"notebooks": notebooks}))
    return answer


def test_a_rebuilt_model_takes_the_pages_answers_of_its_weights_and_asks_nothing_again(tiny_model_dir, tmp_path):
    page = tmp_path / "figures" / "results-ci"
    recorded = record_page(page, tiny_model_dir, "50_arena", weights_sha256(tiny_model_dir))
    record_page(page, tiny_model_dir, "60_other", {"model.safetensors": "0" * 64})  # another model's answers
    rebuilt = tmp_path / "elsewhere" / tiny_model_dir.name  # converted again: the same bytes, new file times
    shutil.copytree(tiny_model_dir, rebuilt, ignore=shutil.ignore_patterns(".sumjudge_revision.json"))
    for f in rebuilt.iterdir():
        os.utime(f, ns=(10**18, 10**18))
    cache = ResponseCache(tmp_path / "fresh.sqlite")
    line = reuse_recorded_answers(page, rebuilt, cache)
    assert "1 new of 1" in line and "50_arena: 1 answers" in line and "60_other: not taken: recorded with other" in line
    assert "1 new of 1" not in reuse_recorded_answers(page, rebuilt, cache)  # what the cache holds stays
    llm = LLM(HFBackend(str(rebuilt)), cache=cache)
    again = run_sync(llm.chat(SAMPLED))
    assert again.cache_hit and again.text == recorded
    assert llm.usage.backend_calls == 0
