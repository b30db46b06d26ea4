"""Dataset statistics beside the papers' own tables (notebook 01_datasets).

Each function returns a DataFrame with the paper's value, ours, and a note where they differ for a
known reason. Datasets that are not present locally are listed as missing, never filled in.
"""

from __future__ import annotations

from typing import Any

from sumjudge.data import registry
from sumjudge.data.sources import DataMissingError
from sumjudge.data.stats import dataset_stats


def paper_rows(table: dict) -> dict:
    return table["rows"]


def stats_if_present(name: str, level: str | None = None) -> dict[str, Any] | None:
    """Statistics, or None when the dataset is not here (without trying a download)."""
    spec = registry.get(name)
    if spec.present is not None and not spec.present():
        return None
    try:
        return dataset_stats(name, level=level)
    except DataMissingError:
        return None


def overview():
    """One row per registered dataset: kind, whether it is here, size and label balance."""
    import pandas as pd

    rows = []
    for name, spec in sorted(registry.DATASETS.items()):
        row: dict[str, Any] = {"dataset": name, "kind": spec.kind, "source": spec.source}
        st = stats_if_present(name)
        if st is None:
            rows.append({**row, "present": False})
            continue
        row.update(present=True, examples=st["examples"], pct_unfaithful=st.get("pct_unfaithful"),
                   groups=st.get("groups"), mean_document_words=st.get("mean_document_words",
                                                                       st.get("mean_source_words",
                                                                              st.get("mean_transcript_words"))))
        rows.append(row)
    return pd.DataFrame(rows)
