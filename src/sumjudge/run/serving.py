"""Where a run's calls were answered, from its ``calls.jsonl``: which replica answered each call a server answered
(its ``served_by``, where the server names itself), how many of an example's calls landed on one replica, and how
many prompt tokens the servers found in their prefix caches (``cached_tokens``, where they report them).

This is what decides whether many replicas behind a router keep the prefix cache that makes the paper profile
affordable: a multi-agent protocol's agents, rounds, error types and windows all share one document's prefix, and a
router that scatters an example's calls over replicas prefills that document again on each.
Cache hits are left out (nothing was served for them).
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any


class ServingTally:
    """The serving figures of a run, fed one parsed ``calls.jsonl`` record at a time (``folder.usage_from_log`` feeds
    it in the pass that counts the run's usage, so a large log is read once)."""

    def __init__(self) -> None:
        self.replicas: Counter[str] = Counter()
        self.by_example: dict[str, Counter[str]] = defaultdict(Counter)
        self.prompt = self.cached = self.reported = 0

    def add(self, rec: dict[str, Any]) -> None:
        if rec.get("event") != "chat" or rec.get("cache_hit"):
            return
        resp = rec.get("response") or {}
        where = resp.get("served_by")
        if where:
            self.replicas[where] += 1
            self.by_example[str(rec.get("scope"))][where] += 1
        if isinstance(resp.get("cached_tokens"), int):
            self.reported += 1
            self.prompt += int(resp.get("prompt_tokens") or 0)
            self.cached += resp["cached_tokens"]

    def result(self) -> dict[str, Any] | None:
        """The figures, or None where no answered call says where it was served or what was cached:

        - ``replicas``: calls answered per replica;
        - ``examples``: examples with at least two answered calls that name a replica; ``example_locality``: over
          those, the mean share of an example's calls answered by the replica that answered most of them (1.0: every
          example stayed on one replica; 1/N: scattered evenly over N);
        - ``examples_on_one_replica``: how many of those examples were answered wholly by one replica;
        - ``prompt_tokens`` and ``cached_tokens`` of the calls that report cached tokens, and ``prefix_hit_share``,
          the second over the first."""
        if not self.replicas and not self.reported:
            return None
        shared = [c for c in self.by_example.values() if sum(c.values()) >= 2]
        shares = [max(c.values()) / sum(c.values()) for c in shared]
        return {"replicas": dict(sorted(self.replicas.items())), "examples": len(shared),
                "example_locality": round(sum(shares) / len(shares), 4) if shares else None,
                "examples_on_one_replica": sum(len(c) == 1 for c in shared),
                "calls_reporting_cache": self.reported, "prompt_tokens": self.prompt, "cached_tokens": self.cached,
                "prefix_hit_share": round(self.cached / self.prompt, 4) if self.prompt else None}


def serving_from_log(path: Path) -> dict[str, Any] | None:
    """``ServingTally`` over a whole ``calls.jsonl`` (a line cut by a kill skipped); None where there is none."""
    if not path.exists():
        return None
    tally = ServingTally()
    with path.open(encoding="utf-8") as f:
        for line in f:
            try:
                tally.add(json.loads(line))
            except json.JSONDecodeError:  # a line cut by a kill
                continue
    return tally.result()
