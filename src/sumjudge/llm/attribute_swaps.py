"""Attributes set for the length of a block and put back after: how the decode levers swap their functions into a
step (``fused_parts``, ``merged_projections``) and leave the model as it was outside it."""

from __future__ import annotations

import contextlib


@contextlib.contextmanager
def attributes_set():
    """Yields ``swap(owner, attribute, value)``: each attribute so set until the block ends, then put back as it was,
    the last set first (an owner's own value restored; one it only had from its class removed again)."""
    saved: list[tuple[object, str, object, bool]] = []  # (owner, attribute, old value, was it the owner's own)

    def swap(owner, attr: str, value) -> None:
        saved.append((owner, attr, getattr(owner, attr), attr in vars(owner)))
        setattr(owner, attr, value)

    try:
        yield swap
    finally:
        for owner, attr, old, own in reversed(saved):
            if own:
                setattr(owner, attr, old)
            else:
                delattr(owner, attr)
