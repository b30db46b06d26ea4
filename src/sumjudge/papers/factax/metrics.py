"""FacTax's run metrics: the faithfulness metrics plus, on data with (converted) error types, per-type F1
and the four matching criteria of Tables 6-7."""

from __future__ import annotations

from typing import Any

from sumjudge.data.error_taxonomy import ERROR_TYPES as FACTAX_TYPES
from sumjudge.data.error_taxonomy import UNMAPPED_TYPES
from sumjudge.judges.base import Judgement
from sumjudge.metrics import error_type_criteria, error_type_f1, error_type_f1_ci
from sumjudge.run.metrics import faithfulness_metrics


def error_type_metrics(examples, judgements: list[Judgement]) -> dict[str, Any]:
    """FacTax Tables 6-7 on data with (converted) error types: per-type F1 and the four matching criteria,
    over the summaries with a readable verdict. Summaries whose gold types include one FacTax could not
    map (DiaSumFact "Others", FacEval "Other Error": mapped by hand in the paper) are left out and counted."""

    keep = [(ex.error_types, j.details.get("predicted_types", [])) for ex, j in zip(examples, judgements)
            if j.label is not None and not set(UNMAPPED_TYPES) & set(ex.error_types)]
    gold, pred = [g for g, _ in keep], [p for _, p in keep]
    f1 = error_type_f1(gold, pred, FACTAX_TYPES)
    for t, v in f1.items():
        ci = error_type_f1_ci(gold, pred, t)
        v["f1_ci"] = list(ci) if ci else None
    return {"f1": f1, "criteria": error_type_criteria(gold, pred),
            "n": len(keep), "left_out_unmapped": sum(bool(set(UNMAPPED_TYPES) & set(ex.error_types)) for ex in examples)}


def factax_metrics(examples, judgements: list[Judgement]) -> dict[str, Any]:
    """Faithfulness metrics, and the error-type metrics where the method predicted types and the data has them."""
    out = faithfulness_metrics(examples, judgements)
    if any("predicted_types" in j.details for j in judgements) and any(ex.error_types for ex in examples):
        out["error_types"] = error_type_metrics(examples, judgements)
    return out
