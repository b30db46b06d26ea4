"""The ``fused`` decode lever: the decode step's small elementwise parts each compiled into fused kernels, the rest of
the step as it is.

A decode step of a Llama-shaped model launches, per layer, seven matrix products and about thirty small elementwise
kernels: two RMS norms of six to eight operations each, the rotary embedding of queries and keys (slices, a
concatenation, products, sums), the gated activation, residual sums, cache writes. Replayed as a CUDA graph each
still costs a few microseconds of GPU time, and all of them together about as much as the step's attention at the
8B bench's shape. The
``compiled`` lever compiles the whole model and was slower than the engine's own step on an H100
(docs/benchmark.md); this compiles only the pieces with no cache, mask or attention in them, each one function for
every layer:

- the RMS norms (``LlamaRMSNorm``, ``Qwen2RMSNorm``, ``MistralRMSNorm``): their class's own ``forward``;
- the gated MLPs (``LlamaMLP``, ``Qwen2MLP``, ``MistralMLP``): their class's own ``forward`` (the three products stay
  the BLAS's; the activation and the product of the gate's and the up projection's outputs fused);
- the rotary embedding (``apply_rotary_pos_emb`` of the model's modelling module, and an attention's ``rotary_fn``
  where transformers attaches it).

The model's own functions are compiled, so the numbers are theirs up to the order of floating-point operations.
A piece's compiled function serves every instance of its class: its module is an argument (``torch.compile`` guards
its type and settings, such as a norm's epsilon, not which layer it is). Pieces are swapped in for the step's
forward pass only (``fused_parts``) and put back after: prefill and the other levers run the model as it is.
``pieces`` finds what a model has of each kind (once, when the lever is switched on); a model with none of them runs unchanged, and the bench's stats say
so (``fused_pieces``). On a CPU whose float32 linear layers go through oneDNN (``cpu_linear``), torch's own compiler
refuses the MLPs' (an ``InductorError``, as for the ``compiled`` lever): the lever is for a GPU, and the CPU tests
check it through a backend that runs the traced graphs as they are.
"""

from __future__ import annotations

import contextlib
import functools
import sys

from sumjudge.llm.attribute_swaps import attributes_set
from sumjudge.llm.compile_versions import allow_versions

NORMS = ("LlamaRMSNorm", "Qwen2RMSNorm", "MistralRMSNorm")
MLPS = ("LlamaMLP", "Qwen2MLP", "MistralMLP")
_compiled: dict = {}  # a function's compiled version, once per process
PIECE_VERSIONS = 64  # compiled versions a piece may have: row buckets (7 up to 64 rows) x input layouts, with room


def compiled(fn):
    """``fn`` through ``torch.compile`` (fixed shapes; once per process), keeping up to ``PIECE_VERSIONS`` versions
    (``compile_versions``): one per row bucket and input layout met (with the ``merged`` lever, the rotary
    embedding's queries and keys are slices of one product: other strides, other versions)."""
    if fn not in _compiled:
        import torch

        allow_versions(PIECE_VERSIONS)
        _compiled[fn] = torch.compile(fn, dynamic=False)
    return _compiled[fn]


def pieces(model) -> dict[str, list]:
    """The model's fusable pieces: ``norms`` and ``mlps`` (modules of the classes above), ``rotary`` (modelling
    modules with an ``apply_rotary_pos_emb``) and ``rotary_attrs`` (modules holding it as ``rotary_fn``)."""
    found: dict[str, list] = {"norms": [], "mlps": [], "rotary": [], "rotary_attrs": []}
    for module in model.modules():
        name = type(module).__name__
        if name in NORMS:
            found["norms"].append(module)
        elif name in MLPS:
            found["mlps"].append(module)
        if callable(getattr(module, "rotary_fn", None)):
            found["rotary_attrs"].append(module)
        home = sys.modules.get(type(module).__module__)
        if home is not None and callable(getattr(home, "apply_rotary_pos_emb", None)) and home not in found["rotary"]:
            found["rotary"].append(home)
    return found


def counts(found: dict[str, list]) -> dict[str, int]:
    """How many of each piece ``pieces`` found."""
    return {k: len(v) for k, v in found.items()}


@contextlib.contextmanager
def fused_parts(found: dict[str, list]):
    """The pieces ``pieces`` found (norms, MLPs, rotary embedding) replaced by their compiled versions while the block
    runs."""
    with attributes_set() as swap:
        for module in found["norms"] + found["mlps"]:
            swap(module, "forward", functools.partial(compiled(type(module).forward), module))
        for home in found["rotary"]:
            swap(home, "apply_rotary_pos_emb", compiled(home.apply_rotary_pos_emb))
        for module in found["rotary_attrs"]:
            swap(module, "rotary_fn", compiled(module.rotary_fn))
        yield found
