"""Notebook 43's steps that call no model through the engine but whose results its tables use: the base model
resolved (the smoke model is converted on first use) and each setting's fine-tuning. Both go through
``Session.step``, so a replay (``make reproduce REPLAY=1``) takes their recorded results and neither converts,
loads nor trains a model; the trained models' answers come from the recording like every other answer."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from sumjudge.papers.factax.sft.train import base_model_for, train
from sumjudge.run.replay import model_label


def base_model(session, name: str) -> tuple[str, bool]:
    """(the model to fine-tune, whether it is the tiny stand-in), as ``base_model_for`` resolves it. Recorded as
    its folder's name (a path differs between machines; the engine names a local model by its folder)."""
    if session.recording is not None:  # a replay: the recorded folder name; nothing is resolved or converted
        label, tiny = session.recording.step("base model")
        return label, tiny
    path, tiny = base_model_for(name, session.prof.name, session.runs_dir())
    session.step("base model", lambda: [model_label(path), tiny])
    return path, tiny


def fine_tune(session, base: str, sets: dict[str, Any], config: str, **overrides: Any) -> dict[str, tuple[Path, dict]]:
    """Each setting's model fine-tuned from ``base`` on its pairs (``sets``: setting -> ``pairs.TrainingSet``):
    setting -> (its folder, {pairs, accumulation steps, losses, reused}). A replay returns the recorded summary and
    the folder its answers were recorded under, and trains nothing."""
    out: dict[str, tuple[Path, dict]] = {}
    for s, ts in sets.items():
        folder = session.runs_dir() / trained_folder(s, config)

        def run(ts=ts, folder=folder) -> dict[str, Any]:
            info = train(base, ts.pairs, folder, config, **overrides)
            return {"pairs": len(ts.pairs), "gradient_accumulation_steps": info["gradient_accumulation_steps"],
                    "losses": info["losses"], "precision": info.get("precision"), "reused": info["reused"]}

        out[s] = (folder, session.step(f"fine-tune {s} ({config})", run))
    return out


def trained_folder(setting: str, config: str) -> str:
    """The folder of ``setting``'s model fine-tuned under ``config``: the name the engine, and so its runs, give it."""
    return f"sft-{setting}-{config}"


def trained_from(model: str | None) -> tuple[str, str] | None:
    """(setting, config) of a model named by ``trained_folder``; None for any other model."""

    m = re.fullmatch(r"sft-(.+)-([^-]+)", model or "")
    return (m.group(1), m.group(2)) if m else None
