"""Profiles: a paper's methods may run on a model of their own (``paper_engines``); every other method runs on
the profile's."""

from dataclasses import replace

import pytest

from sumjudge import profiles


def test_a_paper_engine_runs_that_papers_methods_only():
    paper = profiles.load("paper")
    assert paper.engine_for("mesa") == ("openai", "gpt-4o", "https://api.openai.com/v1")
    assert paper.engine_for("madisse") == (paper.backend, paper.model, paper.base_url)
    smoke = profiles.load("smoke")
    assert smoke.engine_for("mesa") == (smoke.backend, smoke.model, smoke.base_url)
    own = replace(smoke, paper_engines={"factax": {"model": "other"}})
    assert own.engine_for("factax") == (smoke.backend, "other", None)  # backend: the profile's


def test_a_paper_engine_without_a_model_or_with_unknown_keys_is_refused(monkeypatch, tmp_path):
    (tmp_path / "bad.yaml").write_text("name: bad\nbackend: hf\nmodel: tiny\nbase_url: null\nn: 1\nseed: 0\n"
                                       "max_new_tokens: 4\ntruncate: error\nlabel_fallback: none\n"
                                       "paper_engines:\n  mesa: {url: http://x}\n")
    monkeypatch.setattr(profiles, "files", lambda _pkg: tmp_path)
    with pytest.raises(ValueError, match="paper_engines.mesa takes model .required., backend, base_url; got url"):
        profiles.load("bad")
