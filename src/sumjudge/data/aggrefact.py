"""Benchmarks that are not mirrored here; loaders follow their published formats.

- LLM-AggreFact (Tang et al. 2024; Hugging Face ``lytang/LLM-AggreFact``): columns ``dataset``,
  ``doc``, ``claim``, ``label`` (1 supported / 0 unsupported), splits dev/test. Read from
  ``data/raw/llm-aggrefact/{split}.jsonl|.csv|.parquet`` when present, else through ``datasets``
  (internet), saved there as jsonl for next time.
- AggreFact-FtSota (Tang et al. 2023, ``aggre_fact_sota.csv``): columns ``dataset`` (FRANK,
  Polytope, SummEval, CLIFF, Goyal21, Cao22, Wang20, ...), ``origin`` (cnndm / xsum), ``doc``,
  ``summary``, ``label``, ``cut`` (val / test), ``model_name``. A paper's table may split it by ``origin`` into CNN/DM and
  XSum and report each source (``SOTA_SOURCES``) in a column of its own. The loader keeps AggreFact's
  SOTA models (``SOTA_MODELS``, the repository's ``utils.py``), so the full ``aggre_fact_final.csv`` gives the
  same subset when it is the file at hand.
"""

from __future__ import annotations

import json
from pathlib import Path

from sumjudge.data import sources
from sumjudge.data.records import FaithExample
from sumjudge.data.sources import DataMissingError
from sumjudge.data.user_files import load_table
from sumjudge.environment import read
from sumjudge.paths import raw_dir

LLM_AGGREFACT_HF = "lytang/LLM-AggreFact"
# The revision to download: a commit pins it (SUMJUDGE_LLM_AGGREFACT_REVISION); by default the current main is
# resolved to its commit at download time and that commit is both downloaded and recorded beside the file
# (``<split>.jsonl.source.json``) and in every run's config.json.
LLM_AGGREFACT_REVISION = read("SUMJUDGE_LLM_AGGREFACT_REVISION")
LLM_AGGREFACT_SUBSETS = {"cnn": "AggreFact-CNN", "xsum": "AggreFact-XSum", "mediasum": "TofuEval-MediaS",
                         "meetingbank": "TofuEval-MeetB"}
AGGREFACT_SOTA = "aggrefact/aggre_fact_sota.csv"
AGGREFACT_SOTA_URL = "https://github.com/Liyan06/AggreFact/blob/main/data/aggre_fact_sota.csv"
SOTA_MODELS = ("BART", "PegasusDynamic", "T5", "Pegasus")  # AggreFact utils.py SOTA (f0654b2)
# Table 2's FtSota columns: name -> (the file's ``dataset`` value, ``origin``); test cut sizes 34, 200, 175,
# 150 (CNN/DM) and 119, 150, 50, 239 (XSum)
SOTA_SOURCES = {"polytope": ("Polytope", "cnndm"), "summeval": ("SummEval", "cnndm"), "frank": ("FRANK", "cnndm"),
                "cliff-cnndm": ("CLIFF", "cnndm"), "wang20": ("Wang20", "xsum"), "cliff-xsum": ("CLIFF", "xsum"),
                "goyal21": ("Goyal21", "xsum"), "cao22": ("Cao22", "xsum")}


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


def aggrefact_sota_local() -> Path | None:
    return _local("aggrefact", "aggre_fact_sota") or _local("aggrefact", "aggre_fact_final")


def load_aggrefact_sota(split: str = "test", origin: str | None = None, source: str | None = None
                        ) -> list[FaithExample]:
    """AggreFact-FtSota ``cut`` == split (test | val), SOTA models only; optionally only ``origin`` cnndm or
    xsum, or one ``source`` of ``SOTA_SOURCES`` (a Table 2 column)."""
    local = aggrefact_sota_local()
    if local is None:
        raise DataMissingError(f"`sumjudge data fetch aggrefact-sota` downloads it (AggreFact @ f0654b2), or save "
                               f"{AGGREFACT_SOTA_URL} (raw file) as {raw_dir() / AGGREFACT_SOTA}")
    name, origin = (SOTA_SOURCES[source][0].lower(), SOTA_SOURCES[source][1]) if source else (None, origin)
    dataset = f"aggrefact-sota-{source or origin}" if (source or origin) else "aggrefact-sota"

    def keep(r) -> bool:
        return (r["cut"] == split and (origin is None or r["origin"] == origin)
                and (name is None or str(r["dataset"]).lower() == name)
                and ("model_name" not in r or r["model_name"] in SOTA_MODELS))

    exs = load_table(local, dataset=dataset, document="doc", summary="summary", label="label", group="dataset",
                     keep=keep, extra=("origin", "cut", "model_name", "id"))
    if not exs:
        raise DataMissingError(f"{local} has no {split} rows" + (f" of {source}" if source else "")
                               + " from AggreFact's SOTA models")
    return exs


def sota_source(example_meta: dict) -> str | None:
    """The ``SOTA_SOURCES`` name of an AggreFact-FtSota example (from its ``group`` and ``origin``)."""
    key = (str(example_meta.get("group", "")).lower(), example_meta.get("origin"))
    return next((k for k, (d, o) in SOTA_SOURCES.items() if (d.lower(), o) == key), None)
