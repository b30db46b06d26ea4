"""SummEval (Fabbri et al. 2021): 100 CNN/DM documents x 16 systems, mean of 3 expert scores per aspect.

The file is BARTScore's pickle of plain containers. A pickle can run code while loading, so it is
read with ``SafeUnpickler``, which refuses every global (class or function) and therefore accepts
only the built-in types pickle encodes natively (dict, list, tuple, str, bytes, numbers, bool, None).
"""

from __future__ import annotations

import io
import pickle
from pathlib import Path
from typing import Any

from sumjudge.data.records import FaithExample, RatedExample
from sumjudge.data.sources import DataFormatError, resolve

SUMMEVAL = "summeval/bartscore_SUM_SummEval_data.pkl"
SUMMEVAL_ASPECTS = ("coherence", "consistency", "fluency", "relevance")


class SafeUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str):  # noqa: D102
        raise pickle.UnpicklingError(f"refusing to load {module}.{name}: only plain built-in types are allowed")


def safe_load(path: Path) -> Any:
    try:
        return SafeUnpickler(io.BytesIO(Path(path).read_bytes())).load()
    except pickle.UnpicklingError as e:
        raise DataFormatError(path, None, None, str(e)) from None
    except (EOFError, ValueError) as e:
        raise DataFormatError(path, None, None, f"not a complete pickle ({e}); truncated file?") from None


def load_summeval() -> list[RatedExample]:
    path = resolve(SUMMEVAL)
    data = safe_load(path)
    if not isinstance(data, dict):
        raise DataFormatError(path, None, None, f"expected a dict of documents, got {type(data).__name__}")
    out = []
    for doc_id, d in data.items():
        for key in ("src", "sys_summs"):
            if key not in d:
                raise DataFormatError(path, doc_id, key, "missing")
        for system, s in d["sys_summs"].items():
            where = f"{doc_id}/{system}"
            scores = s.get("scores", {})
            missing = [a for a in SUMMEVAL_ASPECTS if not isinstance(scores.get(a), (int, float))]
            if missing:
                raise DataFormatError(path, where, "scores", f"missing aspect(s) {missing}")
            if not str(s.get("sys_summ", "")).strip():
                raise DataFormatError(path, where, "sys_summ", "empty summary")
            out.append(RatedExample(
                id=f"{doc_id}|{system}", dataset="summeval", group_id=doc_id, source=d["src"], output=s["sys_summ"],
                scores={a: float(scores[a]) for a in SUMMEVAL_ASPECTS},
                meta={"system": system, "reference": d.get("ref_summ", ""), "references": d.get("ref_summs", [])}))
    return out


# AggreFact-FtSota's SOTA systems among SummEval's 16 (AggreFact's naming); PegasusDynamic (M23_dynamic) has
# no expert annotation in SummEval's release, so FtSota's fourth SummEval system is not here
SOTA_SYSTEMS = {"M17": "T5", "M22": "BART", "M23": "Pegasus"}


def load_summeval_binary(sota_only: bool = False) -> list[FaithExample]:
    """SummEval consistency binarised as AggreFact does: a summary is consistent (1) only when every expert
    gave it 5, i.e. the mean of the three expert scores is 5; otherwise inconsistent (0). All 16 systems, or
    (``sota_only``) FtSota's SOTA systems (``SOTA_SYSTEMS``: 300 summaries over both of AggreFact's cuts; FtSota's
    test cut has 200, its file decides which)."""
    name = "summeval-consistency-sota" if sota_only else "summeval-consistency"
    return [FaithExample(id=ex.id, dataset=name, document=ex.source, summary=ex.output,
                         label=int(ex.scores["consistency"] >= 5 - 1e-9), level="summary",
                         meta={"system": ex.meta["system"], "doc_id": ex.group_id,
                               "consistency": ex.scores["consistency"],
                               **({"model_name": SOTA_SYSTEMS[ex.meta["system"]]} if sota_only else {})})
            for ex in load_summeval() if not sota_only or ex.meta["system"] in SOTA_SYSTEMS]
