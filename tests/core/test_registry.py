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
