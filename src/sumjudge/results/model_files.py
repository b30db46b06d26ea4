"""What a local model folder's files say of the model: its weights' sha256 (a results page names the weights it
ran) and its parameter count (from the ``*.safetensors`` headers: each tensor's shape)."""

from __future__ import annotations

import hashlib
import json
import struct
from functools import lru_cache
from pathlib import Path

from sumjudge.paths import models_dir


def weights_sha256(model_dir: Path) -> dict[str, str]:
    """sha256 of each weights file of a local model folder (``*.safetensors``, ``*.bin``, ``*.gguf``)."""
    out = {}
    for f in sorted(model_dir.iterdir()):
        if f.suffix in (".safetensors", ".bin", ".gguf"):
            h = hashlib.sha256()
            with f.open("rb") as fh:
                for chunk in iter(lambda: fh.read(1 << 22), b""):
                    h.update(chunk)
            out[f.name] = h.hexdigest()
    return out


def safetensors_parameters(folder: Path) -> int | None:
    """The parameters stored in a model folder's ``*.safetensors`` files, or None where it has none."""
    files = sorted(folder.glob("*.safetensors"))
    if not files:
        return None
    total = 0
    for f in files:
        with f.open("rb") as fh:
            size = struct.unpack("<Q", fh.read(8))[0]
            header = json.loads(fh.read(size))
        for name, t in header.items():
            if name != "__metadata__":
                count = 1
                for d in t["shape"]:
                    count *= d
                total += count
    return total


@lru_cache(maxsize=None)
def _parameters_if_weights(folder: str, weights: str) -> int | None:
    path = Path(folder)
    if not (path / "config.json").exists() or weights_sha256(path) != json.loads(weights):
        return None
    return safetensors_parameters(path)


def local_parameters(label: str | None, weights: dict[str, str] | None) -> int | None:
    """The parameter count of a recorded model from its folder on this machine (``data/models/<label>``), only
    where that folder's weights are the recorded ones (their sha256); else None: a count is never guessed."""

    if not label or not weights or "/" in label:
        return None
    folder = models_dir() / label
    if not folder.is_dir():
        return None
    return _parameters_if_weights(str(folder), json.dumps(weights, sort_keys=True))
