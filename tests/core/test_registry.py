"""One registry type (``sumjudge.registry.Registry``) serves the methods, the backends, the datasets and the
taxonomies: registered by a call or a decorator, looked up with the plug-ins imported once on a miss, an unknown
name one error naming what is known."""

from __future__ import annotations

import pytest

from sumjudge import registry
from sumjudge.errors import ConfigError, UnknownName
from sumjudge.registry import Registry


def test_register_by_call_or_decorator_and_an_unknown_name_says_what_is_known(monkeypatch):
    asked = []
    monkeypatch.setattr(registry, "discover", lambda: asked.append(1))
    things: Registry[int] = Registry("thing")
    assert things.add("b", 2) == 2

    @things.register("a")
    def a():
        return 1

    assert things.find("a") is a and things.find("b") == 2 and asked == []  # found: no plug-in imported
    with pytest.raises(UnknownName, match=r"unknown thing 'c'; known: a, b") as e:
        things.find("c")
    assert isinstance(e.value, ConfigError) and isinstance(e.value, KeyError) and asked == [1]
    assert things.all() is things and asked == [1, 1]
    local: Registry[int] = Registry("local thing", plugins=False)
    with pytest.raises(UnknownName, match="unknown local thing 'x'; known: none"):
        local.find("x")
    assert asked == [1, 1]  # a registry without plug-ins never imports them


def test_the_methods_backends_datasets_and_taxonomies_are_one_registry_type():
    from sumjudge.data import registry as datasets
    from sumjudge.data import taxonomies
    from sumjudge.llm.backend_registry import BACKENDS, make_backend
    from sumjudge.run.methods import METHODS, get_method

    for reg in (METHODS, BACKENDS, datasets.DATASETS, taxonomies._TAXONOMIES):
        assert isinstance(reg, Registry)
    assert get_method("zero-shot").name == "zero-shot" and datasets.get("qags-xsum").name == "qags-xsum"
    with pytest.raises(ConfigError, match="unknown backend 'bogus'; known: hf, openai, scripted"):
        make_backend("bogus")
    with pytest.raises(ConfigError, match="unknown method 'nope'; known: .*zero-shot"):
        get_method("nope")


def test_the_aspect_templates_and_the_kinds_of_method_are_registries_the_papers_fill():
    """A dataset's aspect templates and fields and a kind of method's metrics are looked up like a method: the papers
    register theirs (DEBATE's aspect templates, MADISSE's ambiguity task, MESA's meeting errors and their fields) and
    an unknown name says what is known."""
    from sumjudge.judges.aspects import FIELDS, TEMPLATES, aspects_for
    from sumjudge.run.metrics import KINDS, faithfulness_metrics

    assert all(isinstance(reg, Registry) for reg in (TEMPLATES, FIELDS, KINDS))
    assert list(FIELDS.find("meeting-errors")) == ["transcript", "summary"]  # MESA's, registered when it is imported
    assert [a.name for a in aspects_for("summeval", "all")] == ["coherence", "consistency", "fluency", "relevance"]
    with pytest.raises(UnknownName, match="unknown dataset with rated aspects 'nope'; known: .*summeval"):
        aspects_for("nope", "all")
    assert KINDS.find("faithfulness").metrics is faithfulness_metrics
    ambiguity = KINDS.find("ambiguity")
    assert ambiguity.judges == "faithfulness" and ambiguity.metrics.__module__ == "sumjudge.papers.madisse.ambiguity"
    with pytest.raises(ConfigError, match="needs ambiguity annotations"):
        ambiguity.check("ambiguity-sc", "qags-xsum", [object()])
    assert KINDS.find("meeting-errors").judges == "meeting-errors"
    with pytest.raises(UnknownName, match="unknown kind of method 'nope'; known: .*rated"):
        KINDS.find("nope")
