"""Five summary error types (Xu et al., Section 3) and the conversions of each annotation scheme's classes to
them (their Appendix A).

The taxonomy's authors also map DiaSumFact "Others" and FacEval "Other Error" *manually*, summary by summary, from
the annotators' comments; that judgement is not published, so those labels stay unmapped here
("Other (unmapped)") and are counted by the statistics. The faithfulness label does not depend on it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class ErrorTaxonomy:
    """Summary error types and the conversion of each annotation scheme's classes to them."""

    types: tuple[str, ...]  # the taxonomy's types
    unmapped: str  # an annotated class the conversion leaves without a type (kept, counted)
    unmapped_types: tuple[str, ...]  # labels kept on the example but left out of per-type metrics
    extrinsic: tuple[str, ...]  # what an error its annotators mark extrinsic also counts as
    conversions: Mapping[str, Mapping[str, tuple[str, ...]]]  # scheme -> the scheme's class -> types

    def knows(self, scheme: str, cls: str) -> bool:
        return cls in self.conversions[scheme]

    def convert(self, scheme: str, classes: Iterable[str]) -> list[str]:
        """The types of ``classes`` of ``scheme``, sorted and distinct (``KeyError`` names an unknown class)."""
        table = self.conversions[scheme]
        return sorted({t for c in classes for t in table[c]})


PREDICATE, ENTITY, CIRCUMSTANTIAL, COREFERENCE, ADDITION = (
    "Predicate Error", "Entity Error", "Circumstantial Error", "Coreference Error", "Addition Error")
ERROR_TYPES = (PREDICATE, ENTITY, CIRCUMSTANTIAL, COREFERENCE, ADDITION)
UNMAPPED = "Other (unmapped)"
NOISE = "Noise (unmapped)"  # AggreFact's "noise": an annotation its authors could not place in any type
UNMAPPED_TYPES = (UNMAPPED, NOISE)  # kept on the example, left out of error-type metrics and training pairs

# DiaSumFact (Zhu et al. 2023): Ex-/In-EntE -> Entity; Ex-/In-PredE and LinkE -> Predicate;
# Ex-/In-CirE -> Circumstantial; CorefE -> Coreference; Others -> manual in the taxonomy's paper (unmapped here).
# Extrinsic errors (the annotation's intrinsic/extrinsic field) are also Addition Error: the taxonomy maps "Ex-Error
# to Addition Error" (Appendix A) and marks "all extrinsic errors" as Addition Error (Section 3), so an
# extrinsic entity error counts as Entity Error and Addition Error.
DIASUMFACT = {"EntE": ENTITY, "PredE": PREDICATE, "LinkE": PREDICATE, "CirE": CIRCUMSTANTIAL,
              "CorefE": COREFERENCE, "Others": UNMAPPED}

# FacEval (Wang et al. 2022): Subject Object -> Entity; Pronoun -> Coreference; Negation -> Predicate;
# Particulars -> Circumstantial; Hallucination -> Addition; Other -> manual in the taxonomy's paper (unmapped here).
FACEVAL = {"SubObjE": ENTITY, "ProE": COREFERENCE, "NegE": PREDICATE, "ParE": CIRCUMSTANTIAL, "HalE": ADDITION,
           "OtherE": UNMAPPED}

# GovReport (Koh et al. 2022), Appendix A: EntityE -> Entity; PredE, GramE and LinkE -> Predicate;
# CircE -> Circumstantial; CorefE -> Coreference; OutE -> Addition. The published annotation file spells
# the entity class "EntE"; both spellings are accepted.
GOVREPORT = {"EntityE": ENTITY, "EntE": ENTITY, "PredE": PREDICATE, "GramE": PREDICATE, "LinkE": PREDICATE,
             "CircE": CIRCUMSTANTIAL, "CorefE": COREFERENCE, "OutE": ADDITION}

# AggreFact's unified error types (Tang et al. 2023, data/error_type_mapping/*_error_types.csv: a Python list per
# summary, or "correct"), converted as the taxonomy's Section 3 says: "NP -> Entity Error; Pred -> Predicate Error;
# Sent -> Addition Error. For all extrinsic errors, we also mark them as Addition Error." So an extrinsic NP
# error is an Entity Error and an Addition Error, an intrinsic one an Entity Error only; an entire-sentence
# error (intrinsic, extrinsic or unmarked) is an Addition Error; "noise" stays an explicit unmapped type.
AGGREFACT_UNIFIED = {
    "intrinsic-NP": (ENTITY,), "extrinsic-NP": (ENTITY, ADDITION),
    "intrinsic-predicate": (PREDICATE,), "extrinsic-predicate": (PREDICATE, ADDITION),
    "intrinsic-entire_sent": (ADDITION,), "extrinsic-entire_sent": (ADDITION,), "entire_sent": (ADDITION,),
    "noise": (NOISE,),
}


# The loaders convert each annotation scheme's classes through this (registered as ``taxonomies.ERRORS``).
ERROR_TAXONOMY = ErrorTaxonomy(
    types=ERROR_TYPES, unmapped=UNMAPPED, unmapped_types=UNMAPPED_TYPES, extrinsic=(ADDITION,),
    conversions={"diasumfact": {c: (t,) for c, t in DIASUMFACT.items()},
                 "faceval": {c: (t,) for c, t in FACEVAL.items()},
                 "govreport": {c: (t,) for c, t in GOVREPORT.items()},
                 "aggrefact-unified": AGGREFACT_UNIFIED})


def convert_unified(types: list[str]) -> list[str]:
    """The taxonomy's types of a list of AggreFact unified types (``KeyError`` names an unknown one)."""
    return ERROR_TAXONOMY.convert("aggrefact-unified", [str(u).strip() for u in types])
