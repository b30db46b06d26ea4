"""Where a profiled engine pass spent its time, by phase and by kind of work (``bench --profile``).

The decoder marks an admission ``sumjudge.prefill`` and a decode step ``sumjudge.decode`` while a profiler runs
(``llm.decode.phase``). Each recorded piece of work is put in the phase whose range encloses the operator that
launched it (kernels on a GPU: each kernel under the operator or range that launched it, a replayed CUDA graph's
under the step; operators' own time on a CPU), and in a kind read from its name (``KINDS``, the first that matches;
anything else is ``elementwise and other``), or ``attention`` where an attention operator encloses it. What no
phase encloses (the engine's own work between steps) is ``other``. On a GPU the kernels the profiler saw but could
tie to no operator are counted apart (``unattributed_ms``), so the phases' sums are never silently short of the
table's total. On a CPU flex attention runs as PyTorch's reference inside a compiled region of its own: its parts
count as what they are (matmuls, copies, reductions), not as attention.
"""

from __future__ import annotations

import re
from collections import Counter

from sumjudge.llm.decode import PHASE

# (kind, what its names contain), the first that matches: kernels on a GPU (cuBLAS' nvjet/gemm, PyTorch's attention
# kernels, flex attention's Triton templates, the cascade kernels, inductor's fused kernels by their prefix:
# reductions and pointwise, whatever they fuse) and operators on a CPU (aten::mm, aten::_scaled_dot_product_...,
# oneDNN linear)
KINDS = (
    ("attention", r"attention|attn|fmha|flash|flex|cascade|triton_tem"),
    ("matmul", r"gemm|nvjet|cublas|xmma|wgmma|aten::(mm|addmm|bmm|matmul|linear)\b|mkldnn|_linear"),
    ("norm and reduce", r"^triton_(red|per)_"),
    ("elementwise and other", r"^triton_poi_"),
    ("copy and index", r"copy|\bcat\b|catarray|index|scatter|gather|fill|clone|contiguous|where"),
    ("norm and reduce", r"reduce|norm|mean|sum|rsqrt|argmax|max"),
)
_KINDS = tuple((kind, re.compile(pattern, re.IGNORECASE)) for kind, pattern in KINDS)
OTHER_KIND = "elementwise and other"


def kind_of(name: str) -> str:
    """The kind of a kernel or operator by its name: the first of ``KINDS`` whose pattern it contains."""
    return next((kind for kind, pattern in _KINDS if pattern.search(name)), OTHER_KIND)


def phase_of(event) -> tuple[str, bool]:
    """The innermost decoder phase (``prefill``, ``decode``) enclosing a profiler event, or ``other``; and whether
    the event is attention or inside it (an operator whose name is attention's encloses it: on a CPU the matmuls
    and softmax of attention computed by its reference)."""
    at, inside = event, False
    while at is not None:
        if at.name.startswith(PHASE):
            return at.name[len(PHASE):], inside
        inside = inside or _KINDS[0][1].search(at.name) is not None
        at = at.cpu_parent
    return "other", inside


def phase_kinds(events, cuda: bool, decode_steps: int) -> dict:
    """``events`` (a profile's ``events()``) summed by phase and kind, in ms: on a GPU each kernel's time, on a CPU
    each operator's own time (the phases' own ranges left out). With ``decode_steps``, the decode phase's time a
    step by kind too, and on a GPU the kernel time no operator claimed (``unattributed_ms``)."""
    from torch.autograd import DeviceType

    by_phase: dict[str, Counter] = {}
    attributed = seen = 0.0
    for e in events:
        if getattr(e, "is_user_annotation", False):  # a range drawn again on the device's timeline: no work
            continue
        if cuda:
            if e.device_type != DeviceType.CPU:  # a kernel (or a copy) as the device ran it
                seen += e.time_range.elapsed_us()
                continue
            items = [(k.name, k.duration) for k in e.kernels]
        else:
            items = [] if e.name.startswith(PHASE) else [(e.name, e.self_cpu_time_total)]
        if not items:
            continue
        phase, attention = phase_of(e)
        counts = by_phase.setdefault(phase, Counter())
        for name, us in items:
            counts["attention" if attention else kind_of(name)] += us
            attributed += us
    out: dict = {ph: {kind: round(us / 1e3, 3) for kind, us in sorted(c.items())} for ph, c in sorted(by_phase.items())}
    result: dict = {"ms_by_phase_and_kind": out,
                    "ms_by_phase": {ph: round(sum(c.values()) / 1e3, 3) for ph, c in sorted(by_phase.items())}}
    if decode_steps and "decode" in by_phase:
        result["decode_steps"] = decode_steps
        result["decode_ms_a_step_by_kind"] = {kind: round(us / 1e3 / decode_steps, 4)
                                              for kind, us in sorted(by_phase["decode"].items())}
    if cuda:
        result["unattributed_ms"] = round(max(0.0, seen - attributed) / 1e3, 3)
    return result
