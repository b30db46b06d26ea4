"""Answers a results page recorded, taken into the response cache for a new recording with the same weights.

A recording asks the model only what its cache does not hold. The cache names a local model by its weights' content
(``llm.models.local_revision``), so answers recorded on another machine, or before the model was converted again, are
the same model's answers to the same requests. ``make reproduce REUSE=1`` (``--reuse-answers``) puts them in the cache
first, so that a notebook recorded again asks only its new requests, and two notebooks that ask the same request
(a judge of the arena and of a paper's notebook) show the same answer, where sampling it twice would
give two (a sampled answer depends on what else was in its batch).

Taken only from a notebook whose recorded ``weights_sha256`` is the local model folder's, only the answers of that
model (not of adapters trained in the run), each under the key the model has now; where two notebooks recorded one
request, the first in the numbered order wins, and an answer the cache already holds stays.
"""

from __future__ import annotations

import json
from pathlib import Path

from sumjudge.llm.models import local_revision
from sumjudge.llm.recording import Recording
from sumjudge.llm.types import BackendInfo, ChatRequest, OptionRequest, cache_key
from sumjudge.results.model_files import weights_sha256


def reusable_answers(page: Path, model_dir: Path, revision: str) -> tuple[list[tuple], dict[str, str]]:
    """(cache rows, what each notebook gave or why not) for the answers ``page`` recorded of ``model_dir``'s weights,
    keyed for ``revision`` (the model's revision now), in the notebooks' numbered order."""
    prov = json.loads((page / "provenance.json").read_text(encoding="utf-8"))["notebooks"]
    weights = weights_sha256(model_dir)
    rows, said = [], {}
    for nb in sorted(prov):
        rec = prov[nb]
        if not rec.get("answers"):
            continue
        if rec.get("weights_sha256") != weights:
            said[nb] = "not taken: recorded with other weights"
            continue
        recording = Recording.load(page / rec["answers"], nb)
        before = len(rows)
        for a in recording.answers.values():
            spec = recording.engines[a.engine]
            if spec.backend != "hf" or spec.info.get("model") != model_dir.name:
                continue  # another model's, or an adapter trained in the run
            info = BackendInfo(**{**spec.info, "revision": revision})
            req = (ChatRequest if a.kind == "chat" else OptionRequest)(**a.request)
            rows.append((cache_key(a.kind, info, req.key_fields()), a.kind, info.name, info.model, a.request,
                         a.responses[0], revision, info.server))
        said[nb] = f"{len(rows) - before} answers"
    return rows, said


def reuse_recorded_answers(page: Path, model_dir: Path, cache) -> str:
    """Put the answers ``page`` recorded of ``model_dir``'s weights in ``cache`` (a ``ResponseCache``); one line
    saying how many, from which notebooks."""

    revision = local_revision(str(model_dir))
    rows, said = reusable_answers(page, model_dir, revision)
    added = cache.put_new(rows) if rows else 0
    return (f"recorded answers of these weights ({model_dir.name}, {revision}) taken into the response cache: "
            f"{added} new of {len(rows)} ({'; '.join(f'{k}: {v}' for k, v in said.items()) or 'none recorded'})")
