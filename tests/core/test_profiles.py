"""Profiles: a paper's methods may run on a model of their own (``paper_engines``); every other method runs on
the profile's."""

import re
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


def test_notebook_parameters_sit_under_their_papers_key_and_reach_the_notebooks_flat():
    """Each paper's notebook parameters sit under its own key in the profile file; a notebook is given one flat
    mapping (the names it declares), the same as before the files were grouped."""
    from importlib.resources import files

    import yaml

    for name in ("smoke", "ci"):
        grouped = yaml.safe_load(files("sumjudge.profiles").joinpath(f"{name}.yaml").read_text())["parameters"]
        assert set(grouped) <= {"madisse", "debate", "mesa", "factax"} and "mesa_n" in grouped["mesa"]
        flat = profiles.load(name).parameters
        assert flat == {k: v for values in grouped.values() for k, v in values.items()}


@pytest.mark.parametrize("parameters, says", [
    ({"mesa_n": 2}, "parameters.mesa_n: notebook parameters sit under their paper's key (debate, factax, madisse, mesa)"),
    ({"mesa": {"n": 2}, "factax": {"n": 3}}, "parameter 'n' is set under both parameters.mesa and parameters.factax"),
    ({"nobody": {"n": 1}}, "parameters.nobody: notebook parameters sit under their paper's key"),
])
def test_a_parameter_outside_its_papers_key_or_set_by_two_papers_is_refused(parameters, says):
    from sumjudge.errors import ConfigError

    with pytest.raises(ConfigError, match=re.escape(says)):
        profiles.paper_parameters("x.yaml", parameters)
