"""Benchmarks that are not mirrored here; loaders follow their published formats.

- LLM-AggreFact (Tang et al. 2024; Hugging Face ``lytang/LLM-AggreFact``): columns ``dataset``,
  ``doc``, ``claim``, ``label`` (1 supported / 0 unsupported), splits dev/test. Read from
  ``data/raw/llm-aggrefact/{split}.jsonl|.csv|.parquet`` when present, else through ``datasets``
  (internet), saved there as jsonl for next time.
- AggreFact-FtSota (Tang et al. 2023, ``aggre_fact_sota.csv``): columns ``dataset`` (FRANK,
  Polytope, SummEval, CLIFF, Goyal21, Cao22, Wang20, ...), ``origin`` (cnndm / xsum), ``doc``,
  ``summary``, ``label``, ``cut`` (val / test). FacTax splits it by ``origin`` into CNN/DM and XSum.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..paths import raw_dir
from .generic import load_table
from .records import FaithExample
from . import sources
from .sources import DataMissingError

LLM_AGGREFACT_HF = "lytang/LLM-AggreFact"
# The revision to download: a commit pins it (SUMJUDGE_LLM_AGGREFACT_REVISION); by default the current main is
# resolved to its commit at download time and that commit is both downloaded and recorded beside the file
# (``<split>.jsonl.source.json``) and in every run's config.json.
LLM_AGGREFACT_REVISION = os.environ.get("SUMJUDGE_LLM_AGGREFACT_REVISION") or None
LLM_AGGREFACT_SUBSETS = {"cnn": "AggreFact-CNN", "xsum": "AggreFact-XSum", "mediasum": "TofuEval-MediaS",
                         "meetingbank": "TofuEval-MeetB"}
AGGREFACT_SOTA = "aggrefact/aggre_fact_sota.csv"
AGGREFACT_SOTA_URL = "https://github.com/Liyan06/AggreFact/blob/main/data/aggre_fact_sota.csv"


def _local(folder: str, stem: str) -> Path | None:
    for ext in ("jsonl", "csv", "parquet"):
        p = raw_dir() / folder / f"{stem}.{ext}"
        if p.exists():
            return p
    return None


def llm_aggrefact_local(split: str) -> Path | None:
    return _local("llm-aggrefact", split)


def llm_aggrefact_provenance(split: str = "test") -> dict | None:
    """Repository and commit the local split was downloaded from (None for a file placed by hand)."""
    return sources.read_provenance(llm_aggrefact_local(split))


def llm_aggrefact_file(split: str) -> Path:
    """The split as a local file, downloading it through ``datasets`` the first time."""
    local = _local("llm-aggrefact", split)
    if local:
        return local
    try:
        from datasets import load_dataset

        commit = sources.hf_dataset_commit(LLM_AGGREFACT_HF, LLM_AGGREFACT_REVISION)
        ds = load_dataset(LLM_AGGREFACT_HF, split=split, revision=commit or LLM_AGGREFACT_REVISION)
    except Exception as e:  # offline, no access token, renamed split...
        raise DataMissingError(
            f"LLM-AggreFact {split} is not in {raw_dir() / 'llm-aggrefact'} and could not be downloaded from the "
            f"Hugging Face dataset {LLM_AGGREFACT_HF} ({type(e).__name__}: {e}). Download it there, or save the split "
            f"as {raw_dir() / 'llm-aggrefact' / (split + '.jsonl')} with columns dataset, doc, claim, label.") from e
    dest = raw_dir() / "llm-aggrefact" / f"{split}.jsonl"
    dest.parent.mkdir(parents=True, exist_ok=True)
    with dest.open("w", encoding="utf-8") as f:
        for row in ds:
            f.write(json.dumps({k: row[k] for k in ("dataset", "doc", "claim", "label")}) + "\n")
    sources.write_provenance(dest, LLM_AGGREFACT_HF, LLM_AGGREFACT_REVISION, commit)
    return dest


def load_llm_aggrefact(split: str = "test", subset: str | None = None) -> list[FaithExample]:
    """All of LLM-AggreFact's ``split``, or one benchmark (``subset``: cnn | xsum | mediasum | meetingbank)."""
    path = llm_aggrefact_file(split)
    name = LLM_AGGREFACT_SUBSETS[subset] if subset else None
    dataset = f"llm-aggrefact-{subset}" if subset else "llm-aggrefact"
    exs = load_table(path, dataset=dataset, document="doc", summary="claim", label="label", group="dataset",
                     keep=(lambda r: r["dataset"] == name) if name else None)
    if not exs:
        raise DataMissingError(f"{path} has no rows of {name}")
    return exs


def load_aggrefact_sota(split: str = "test", origin: str | None = None) -> list[FaithExample]:
    """AggreFact-FtSota ``cut`` == split (test | val), optionally only ``origin`` cnndm or xsum."""
    local = _local("aggrefact", "aggre_fact_sota")
    if local is None:
        raise DataMissingError(f"download {AGGREFACT_SOTA_URL} (raw file) to {raw_dir() / AGGREFACT_SOTA}")
    dataset = f"aggrefact-sota-{origin}" if origin else "aggrefact-sota"
    return load_table(local, dataset=dataset, document="doc", summary="summary", label="label", group="dataset",
                      keep=lambda r: r["cut"] == split and (origin is None or r["origin"] == origin),
                      extra=("origin", "cut", "model_name", "id"))
