"""How many compiled versions of one function ``torch.compile`` keeps in this process.

torch.compile keeps at most ``recompile_limit`` (8) versions of a function (one per input shape, stride and type it
met, at fixed shapes) and then runs it uncompiled, with a warning only. The decode levers compile at every step
shape they meet (flex attention, the ``fused`` lever's pieces), so the limit is raised for them.
"""

from __future__ import annotations


def allow_versions(n: int) -> None:
    """torch.compile's limits raised (``torch._dynamo.config``, settings of the whole process, never lowered) so that
    a function keeps ``n`` versions, and all functions together four times as many."""
    import torch._dynamo

    config = torch._dynamo.config
    config.recompile_limit = max(config.recompile_limit, n)
    config.accumulated_recompile_limit = max(config.accumulated_recompile_limit, 4 * n)
