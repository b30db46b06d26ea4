"""The data layer converts annotations through the taxonomies it registers itself (the datasets' annotation schemes);
the papers import them from there."""

import pytest
from conftest import needs_mirror

from sumjudge.data import taxonomies
from sumjudge.errors import ConfigError


def test_the_data_layer_registers_the_taxonomies_itself():
    from sumjudge.data.ambiguity_taxonomy import AMBIGUITY_TAXONOMY
    from sumjudge.data.error_taxonomy import ERROR_TAXONOMY

    assert taxonomies.get(taxonomies.ERRORS) is ERROR_TAXONOMY
    assert taxonomies.get(taxonomies.AMBIGUITY) is AMBIGUITY_TAXONOMY
    errors = taxonomies.get(taxonomies.ERRORS)
    assert len(errors.types) == 5 and errors.unmapped in errors.unmapped_types
    assert set(errors.conversions) == {"diasumfact", "faceval", "govreport", "aggrefact-unified"}
    assert errors.convert("aggrefact-unified", ["extrinsic-NP", "intrinsic-NP"]) == sorted(
        errors.conversions["aggrefact-unified"]["extrinsic-NP"])
    with pytest.raises(KeyError):
        errors.convert("faceval", ["NoSuchE"])
    amb = taxonomies.get(taxonomies.AMBIGUITY)
    assert len(amb.types) == 16 and amb.category("Meaning phenomena") == ("meaning",)


def test_an_unknown_taxonomy_is_one_clear_error():
    with pytest.raises(ConfigError, match="unknown taxonomy .nope.; known: ambiguity, summary-errors$"):
        taxonomies.get("nope")


@needs_mirror
def test_a_loader_reads_its_types_from_the_registered_taxonomy(monkeypatch):
    from sumjudge.data.dialogue_factuality import load_faceval

    real = taxonomies.get(taxonomies.ERRORS)
    relabelled = taxonomies.ErrorTaxonomy(
        types=("any",), unmapped="?", unmapped_types=("?",), extrinsic=(),
        conversions={**real.conversions, "faceval": {c: ("any",) for c in real.conversions["faceval"]}})
    monkeypatch.setitem(taxonomies._TAXONOMIES, taxonomies.ERRORS, relabelled)
    examples = load_faceval()
    assert {t for ex in examples for t in ex.error_types} == {"any"}
    assert all(ex.error_types == ["any"] for ex in examples if ex.meta["raw_error_flags"])
