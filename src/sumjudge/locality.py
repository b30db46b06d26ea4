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


def serving_from_log(path: Path) -> dict[str, Any] | None:
    """The run's serving figures, or None where no answered call says where it was served or what was cached:

    - ``replicas``: calls answered per replica;
    - ``examples``: examples with at least two answered calls that name a replica; ``example_locality``: over
      those, the mean share of an example's calls answered by the replica that answered most of them (1.0: every
      example stayed on one replica; 1/N: scattered evenly over N);
    - ``examples_on_one_replica``: how many of those examples were answered wholly by one replica;
    - ``prompt_tokens`` and ``cached_tokens`` of the calls that report cached tokens, and ``prefix_hit_share``, the
      second over the first."""
    if not path.exists():
        return None
    replicas: Counter[str] = Counter()
    by_example: dict[str, Counter[str]] = defaultdict(Counter)
    prompt = cached = reported = 0
    with path.open(encoding="utf-8") as f:
        for line in f:
            if '"served_by"' not in line and '"cached_tokens"' not in line:
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:  # a line cut by a kill
                continue
            if rec.get("event") != "chat" or rec.get("cache_hit"):
                continue
            resp = rec.get("response") or {}
            where = resp.get("served_by")
            if where:
                replicas[where] += 1
                by_example[str(rec.get("scope"))][where] += 1
            if isinstance(resp.get("cached_tokens"), int):
                reported += 1
                prompt += int(resp.get("prompt_tokens") or 0)
                cached += resp["cached_tokens"]
    if not replicas and not reported:
        return None
    shared = [c for c in by_example.values() if sum(c.values()) >= 2]
    shares = [max(c.values()) / sum(c.values()) for c in shared]
    return {"replicas": dict(sorted(replicas.items())), "examples": len(shared),
            "example_locality": round(sum(shares) / len(shares), 4) if shares else None,
            "examples_on_one_replica": sum(len(c) == 1 for c in shared),
            "calls_reporting_cache": reported, "prompt_tokens": prompt, "cached_tokens": cached,
            "prefix_hit_share": round(cached / prompt, 4) if prompt else None}
