"""FacTax's supervised paradigm, data side (Section 5, Table 5): prompt-completion pairs.

- Binary Completion (``factax/s51_binary_completion``): every training summary; completion
  " Factually_Correct" / " Factually_Incorrect".
- Error Type Completion (``factax/s51_error_type_completion``): summaries whose dataset has converted error
  types (FacTax Appendix A; here DiaSumFact / FacEval style ``error_types``); completion = the present types
  as FacTax labels, or " Factually_Correct". A summary with a type FacTax maps by hand (``Other (unmapped)``)
  gets no Error Type pair.

Settings: ``I-Binary`` (set I, binary only), ``I-Taxonomy`` (set I, both kinds), ``I&II-Taxonomy`` (plus set II,
binary only, with the Error-Type-Completion share set to ``t_ratio``, 20% in the paper). Table 5 keeps
I&II-Taxonomy's total at its binary pairs (116,393 = 16,393 of set I + 100,000 of set II) while the typed
share is 20%: ``t_ratio`` x total typed pairs (resampled with replacement when there are fewer) and a seeded
sample of the binary pairs for the rest. Test leakage: a training summary whose document is a test document
(compared on lower-cased letters and digits only, so spacing, punctuation or an emoji do not hide it) is
dropped and counted, so no test document is ever trained on.

Every pair keeps its template, document and summary, so training can cut the document inside the prompt
(``factax_sft.fit_pair``) and never the instruction or the summary.
"""

from __future__ import annotations

import hashlib
import random
import re
from dataclasses import asdict, dataclass
from typing import Any, Iterable

from sumjudge.data.error_taxonomy import ERROR_TYPES as FACTAX_TYPES
from sumjudge.data.error_taxonomy import UNMAPPED_TYPES
from sumjudge.data.records import FaithExample
from sumjudge.errors import ConfigError
from sumjudge.prompts import render

SETTINGS = ("I-Binary", "I-Taxonomy", "I&II-Taxonomy")
CORRECT, INCORRECT = "Factually_Correct", "Factually_Incorrect"
TYPE_LABEL = {t: t.replace(" ", "_") for t in FACTAX_TYPES}  # "Entity Error" -> "Entity_Error"


BINARY_TEMPLATE, TYPE_TEMPLATE = "factax/s51_binary_completion", "factax/s51_error_type_completion"


@dataclass
class Pair:
    prompt: str
    completion: str
    kind: str  # binary | taxonomy
    example_id: str
    dataset: str
    template: str = ""  # the prompt's template and fields (training cuts the document inside it)
    document: str = ""
    summary: str = ""


def make_pair(template: str, ex: FaithExample, completion: str, kind: str) -> Pair:
    return Pair(prompt=render(template, document=ex.document, summary=ex.summary), completion=completion, kind=kind,
                example_id=ex.id, dataset=ex.dataset, template=template, document=ex.document, summary=ex.summary)


def doc_key(document: str) -> str:
    """A document's identity for the leakage check: its lower-cased letters and digits (any script) only."""
    return hashlib.sha1(re.sub(r"[\W_]+", "", document.lower()).encode("utf-8")).hexdigest()


def binary_pair(ex: FaithExample) -> Pair:
    return make_pair(BINARY_TEMPLATE, ex, " " + (CORRECT if ex.label == 1 else INCORRECT), "binary")


def taxonomy_completion(types: Iterable[str]) -> str:
    present = [TYPE_LABEL[t] for t in FACTAX_TYPES if t in set(types)]
    return " " + (", ".join(present) if present else CORRECT)


def taxonomy_pair(ex: FaithExample) -> Pair | None:
    if set(UNMAPPED_TYPES) & set(ex.error_types) or (ex.label == 0 and not ex.error_types):
        return None  # hand-mapped in the paper, or an error without a converted type
    return make_pair(TYPE_TEMPLATE, ex, taxonomy_completion(ex.error_types if ex.label == 0 else []), "taxonomy")


@dataclass
class TrainingSet:
    setting: str
    pairs: list[Pair]
    dropped_test_documents: int
    no_type_pair: int

    def stats(self, test_size: int, count=lambda t: len(t.split())) -> dict[str, Any]:
        """Table 5's columns: pairs, mean prompt length, share of Error Type Completion (%), test prompts."""
        n = len(self.pairs)
        return {"setting": self.setting, "train": n,
                "length": sum(count(p.prompt) for p in self.pairs) / n if n else None,
                "t_ratio": 100.0 * sum(p.kind == "taxonomy" for p in self.pairs) / n if n else None, "test": test_size,
                "dropped_test_documents": self.dropped_test_documents, "no_type_pair": self.no_type_pair}

    def to_jsonl_rows(self) -> list[dict[str, Any]]:
        return [asdict(p) for p in self.pairs]


def build(setting: str, set_one: list[FaithExample], test: list[FaithExample], set_two: list[FaithExample] = (),
          t_ratio: float | None = None, seed: int = 0) -> TrainingSet:
    if setting not in SETTINGS:
        raise ConfigError(f"unknown setting {setting!r}; choose one of {SETTINGS}")
    test_docs = {doc_key(e.document) for e in test}
    pool = list(set_one) + (list(set_two) if setting == "I&II-Taxonomy" else [])
    kept = [e for e in pool if doc_key(e.document) not in test_docs and e.label is not None]
    dropped = sum(doc_key(e.document) in test_docs for e in pool)
    pairs = [binary_pair(e) for e in kept]
    typed: list[Pair] = []
    missing = 0
    if setting != "I-Binary":
        typed_datasets = {x.dataset for x in set_one if x.error_types}  # datasets with converted error types
        ones = {id(x) for x in set_one}
        for e in kept:
            if id(e) in ones and e.dataset in typed_datasets:
                p = taxonomy_pair(e)
                typed += [p] if p else []
                missing += p is None
    if t_ratio is not None and typed:
        pairs, typed = ratio_control(pairs, typed, t_ratio, seed)
    return TrainingSet(setting=setting, pairs=pairs + typed, dropped_test_documents=dropped, no_type_pair=missing)


def ratio_control(binary: list[Pair], typed: list[Pair], t_ratio: float, seed: int = 0
                  ) -> tuple[list[Pair], list[Pair]]:
    """Table 5's I&II-Taxonomy: the total stays the number of binary pairs; ``t_ratio`` of it are typed pairs
    (a seeded sample, with replacement beyond the distinct ones), the rest a seeded sample of the binary pairs
    (kept in their order)."""
    if not 0 < t_ratio < 1:
        raise ConfigError(f"t_ratio={t_ratio}: expected a share between 0 and 1")
    total = len(binary)
    want = round(t_ratio * total)
    rng = random.Random(seed)
    kept = sorted(rng.sample(range(total), total - want))
    picked = (rng.sample(typed, want) if want <= len(typed)
              else typed + rng.choices(typed, k=want - len(typed)))
    return [binary[i] for i in kept], picked


def sample_set_two(datasets: dict[str, list[FaithExample]], test: list[FaithExample], per_dataset: int = 50_000,
                   seed: int = 0) -> list[FaithExample]:
    """Training Set II as the paper keeps it (Section 5.1): from each synthetic dataset (DocNLI, FalseSum),
    ``per_dataset`` randomly sampled examples whose document is not a test document.

    DocNLI's release (``{train,dev,test}.json``: premise, hypothesis, label entailment / not_entailment) reads
    as ``file:train.json?document=premise&summary=hypothesis&labels=entailment:1,not_entailment:0``."""
    test_docs = {doc_key(e.document) for e in test}
    rng = random.Random(seed)
    out: list[FaithExample] = []
    for name in sorted(datasets):
        pool = [e for e in datasets[name] if doc_key(e.document) not in test_docs and e.label is not None]
        out += pool if len(pool) <= per_dataset else [pool[i] for i in sorted(rng.sample(range(len(pool)), per_dataset))]
    return out
