"""The ``merged`` decode lever: each layer's query, key and value projections as one matrix product, and its gated
MLP's gate and up projections as one.

A decode step's products are thin (64 rows at the 8B bench's shape), and the smaller a weight the further below the
memory's bandwidth the BLAS seems to read it (docs/benchmark.md, ``merged``: a reading of the H200 profile in
figures/gpu, whose kernels are matched to projections by their calls). One product over the concatenated weight
reads the same bytes in one kernel, as vLLM's ``QKVParallelLinear`` and ``MergedColumnParallelLinear`` do.

``merge`` (once a model, when the lever is switched on) concatenates each attention's query, key and value weights
(and biases, which Qwen2 has) and each MLP's gate and up weights into one tensor, and makes the projections' own
weights views of it: no memory added, and the model's own forward pass reads the same numbers as before. Each
merged product is a linear layer that computes as the projections do (on a CPU the same oneDNN path,
``cpu_linear``). ``merged_parts`` swaps in, for the decode step's forward pass only:

- the query projection's forward: the one product; the query part is returned, the key and value parts are handed
  to the key and value projections, which return them when called on the same input (and compute their own product
  for any other, so a model that calls them in another order is still right, only not faster);
- the MLP's forward: ``down(act(gate) * up)`` from the one product. An MLP is merged only when this gives its own
  forward's numbers on a probe input when the lever is switched on; an MLP of another form is left as it is (the
  stats say how many were merged, ``merged_parts``).

The products' sums run in another order than the separate products' (one kernel, other tiles): numbers move in
their last bits, as in another batch; the answers are checked equal to the decoder's own steps on the tiny model
in float32 (``tests/core/llm/test_decode_graphs.py``), and on a GPU by ``tests/gpu`` (not yet run there).
"""

from __future__ import annotations

import contextlib
import types
from dataclasses import dataclass, field
from typing import Any

from sumjudge.llm.attribute_swaps import attributes_set

ATTENTION = ("q_proj", "k_proj", "v_proj")
MLP = ("gate_proj", "up_proj", "down_proj")
_moves = [0]  # how many times weights were moved in this process (``weights_moved``)


def weights_moved() -> int:
    """How many times a merge moved a model's weights in this process: a CUDA graph captured before a move reads
    freed memory, so ``decode_graphs`` captures its steps again when this changes."""
    return _moves[0]


@dataclass
class MergedAttention:
    """One attention's merged query/key/value product and the sizes of its three parts."""
    module: Any
    product: Any  # a linear layer over the concatenated weight
    sizes: tuple  # the query's, the key's and the value's output sizes


@dataclass
class MergedMLP:
    """One gated MLP's merged gate/up product and the gate's size."""
    module: Any
    product: Any
    size: int


@dataclass
class Merged:
    """What ``merge`` found and merged in a model, and what the merged forwards did (``calls``)."""
    attention: list[MergedAttention] = field(default_factory=list)
    mlps: list[MergedMLP] = field(default_factory=list)
    mlps_left: int = 0  # gated-looking MLPs whose probe did not match their own forward: left as they are
    calls: dict = field(default_factory=dict)  # ``merged_parts``' counts, a new dict each time the lever is switched on

    def counts(self) -> dict[str, int]:
        return {"attention": len(self.attention), "mlps": len(self.mlps), "mlps_left": self.mlps_left}


def _linears(module, names: tuple[str, ...]) -> list[Any] | None:
    """The module's linear layers of those names, when all are plain linear layers on one device and dtype with
    biases all present or all absent; else None."""
    import torch

    found: list[Any] = [getattr(module, n, None) for n in names]
    if not all(isinstance(lin, torch.nn.Linear) for lin in found):
        return None
    weights = [lin.weight for lin in found]
    if len({(w.device, w.dtype, w.shape[1]) for w in weights}) != 1 or len({lin.bias is None for lin in found}) != 1:
        return None
    return found


def _product(parts: list) -> Any:
    """One linear layer over ``parts``' concatenated weights (and biases), computing as the first part does (its
    own forward, where it has one: ``cpu_linear``'s)."""
    import torch

    with torch.no_grad():
        weight = torch.cat([p.weight for p in parts])
        bias = torch.cat([p.bias for p in parts]) if parts[0].bias is not None else None
        product: Any = torch.nn.Linear(weight.shape[1], weight.shape[0], bias=bias is not None, device="meta")
        product.weight = torch.nn.Parameter(weight, requires_grad=False)
        if bias is not None:
            product.bias = torch.nn.Parameter(bias, requires_grad=False)
    own = vars(parts[0]).get("forward")
    if own is not None and hasattr(own, "__func__"):
        product.forward = types.MethodType(own.__func__, product)
    return product


def _share(parts: list, product) -> None:
    """The parts' weights (and biases) made views of the merged product's: their own storage is freed."""
    import torch

    _moves[0] += 1
    with torch.no_grad():
        at = 0
        for p in parts:
            n = p.weight.shape[0]
            p.weight.data = product.weight[at:at + n]
            if p.bias is not None:
                p.bias.data = product.bias[at:at + n]
            at += n


def merged_mlp(module, product, size: int, x):
    """A gated MLP's forward from its merged gate/up ``product``: ``down(act(gate) * up)`` (the module and the
    product are arguments, so that one compiled version serves every layer: ``fused``)."""
    gate_up = product(x)
    return module.down_proj(module.act_fn(gate_up[..., :size]) * gate_up[..., size:])


def _probe_matches(module, product, size: int) -> bool:
    """Whether the merged forward gives the MLP's own forward's numbers on a probe input (a few random rows)."""
    import torch

    w = product.weight
    g = torch.Generator(device="cpu").manual_seed(0)
    x = torch.randn((3, w.shape[1]), generator=g).to(device=w.device, dtype=w.dtype)
    with torch.inference_mode():
        own, merged = module(x), merged_mlp(module, product, size, x)
    # within rounding of the output's own scale (random weights of any size; a product's sums in another order)
    tol = 1e-4 if w.dtype == torch.float32 else 2e-2
    if own.shape != merged.shape:
        return False
    scale = float(own.float().abs().max())
    return float((own.float() - merged.float()).abs().max()) <= tol * max(scale, 1e-6)


def merge(model) -> Merged:
    """The model's attentions and gated MLPs with their products merged (once a model: a second call returns what
    the first merged)."""
    done = getattr(model, "_sumjudge_merged", None)
    if done is not None and all(a.module.q_proj.weight.data_ptr() == a.product.weight.data_ptr()
                                for a in done.attention):
        return done  # else the model's weights were replaced since (moved, reloaded): merged again
    found = Merged()
    for module in model.modules():
        attn = _linears(module, ATTENTION)
        if attn is not None:
            product = _product(attn)
            _share(attn, product)
            found.attention.append(MergedAttention(module, product, tuple(lin.weight.shape[0] for lin in attn)))
        mlp = _linears(module, MLP[:2])
        if mlp is not None and hasattr(module, "down_proj") and callable(getattr(module, "act_fn", None)):
            product, size = _product(mlp), mlp[0].weight.shape[0]
            if _probe_matches(module, product, size):
                _share(mlp, product)
                found.mlps.append(MergedMLP(module, product, size))
            else:  # another form of MLP: left as it is
                found.mlps_left += 1
    object.__setattr__(model, "_sumjudge_merged", found)
    if any(a.product.weight.is_cuda for a in found.attention):
        import torch

        torch.cuda.empty_cache()  # the projections' old blocks, too small for the merged weights, given back
    return found


def _query_forward(found: Merged, attn: MergedAttention, x):
    q_size, k_size, _ = attn.sizes
    out = attn.product(x)
    found.calls["qkv"] += 1
    module = attn.module
    vars(module.k_proj)["_sumjudge_pending"] = (x, out[..., q_size:q_size + k_size])
    vars(module.v_proj)["_sumjudge_pending"] = (x, out[..., q_size + k_size:])
    return out[..., :q_size]


def _mlp_forward(found: Merged, mlp: MergedMLP, run, x):
    found.calls["mlp"] += 1
    return run(mlp.module, mlp.product, mlp.size, x)


def _handed_forward(found: Merged, linear, own, x):
    pending = vars(linear).pop("_sumjudge_pending", None)
    if pending is not None and pending[0] is x:
        return pending[1]
    found.calls["kv_own"] += 1
    return own(x)


@contextlib.contextmanager
def merged_parts(found: Merged, mlp_forward=None):
    """The merged products swapped in while the block runs: each attention's query projection computes all three
    parts, each merged MLP runs ``merged_mlp`` (or ``mlp_forward``, the same function compiled, with the ``fused``
    lever); everything put back after, nothing handed on left behind. Counted in ``found.calls``: ``qkv`` merged
    products, ``kv_own`` key/value projections that computed their own, ``mlp`` merged MLPs run (as Python runs
    them: on a GPU when a step's graph is captured, not at its replays)."""
    for name in ("qkv", "kv_own", "mlp"):
        found.calls.setdefault(name, 0)
    run_mlp = mlp_forward or merged_mlp
    try:
        with attributes_set() as swap:
            for attn in found.attention:
                m = attn.module
                swap(m.q_proj, "forward", lambda x, a=attn: _query_forward(found, a, x))
                for lin in (m.k_proj, m.v_proj):
                    swap(lin, "forward", lambda x, lin=lin, own=lin.forward: _handed_forward(found, lin, own, x))
            for mlp in found.mlps:
                swap(mlp.module, "forward", lambda x, m=mlp: _mlp_forward(found, m, run_mlp, x))
            yield found
    finally:
        for attn in found.attention:
            for linear in (attn.module.k_proj, attn.module.v_proj):
                vars(linear).pop("_sumjudge_pending", None)
