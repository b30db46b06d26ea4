"""Linear layers of a float32 model on a CPU through oneDNN when they see few rows (decode steps).

``torch.nn.functional.linear`` on a CPU calls MKL's GEMM, which is slow for the shapes decoding has: a few rows
times a large weight. Measured on a 2-core AMD EPYC (AVX2) with Qwen2.5-0.5B's shapes, 20 rows: the output
layer (151,936 x 896) 175 ms through MKL against 85 ms through oneDNN's inner product
(``torch.ops.mkldnn._linear_pointwise``, the kernel torch's own CPU compiler emits for linear layers), an MLP
layer 4.4 against 2.7 ms; from about 1,000 rows on (a prefill chunk) MKL is the faster, so those keep it. The
numbers are those of a different summation order (differences around 1e-6), as another batch would give.

Only float32 weights on a CPU whose oneDNN builds the kernel (checked once on a small layer), and only without
gradients: training keeps transformers' path.
"""

from __future__ import annotations

import types

ROWS_AT_MOST = 512  # rows (tokens) a call may have to go through oneDNN; more: MKL (measured crossover ~1,000)


def onednn_forward(self, x):
    import torch

    rows = x.numel() // x.shape[-1] if x.shape[-1] else 0
    if rows > ROWS_AT_MOST or (torch.is_grad_enabled() and (x.requires_grad or self.weight.requires_grad)):
        return torch.nn.functional.linear(x, self.weight, self.bias)
    return torch.ops.mkldnn._linear_pointwise(x, self.weight, self.bias, "none", [], "")


def onednn_works() -> bool:
    """Whether this CPU's oneDNN computes a small float32 linear layer as ``linear`` does."""
    import torch

    op = getattr(torch.ops.mkldnn, "_linear_pointwise", None) if torch.backends.mkldnn.is_available() else None
    if op is None:
        return False
    g = torch.Generator().manual_seed(0)
    x, w, b = (torch.randn(shape, generator=g) for shape in ((3, 16), (8, 16), (8,)))
    try:
        with torch.inference_mode():
            return bool(torch.allclose(op(x, w, b, "none", [], ""), torch.nn.functional.linear(x, w, b), atol=1e-5))
    except RuntimeError:  # no primitive for this CPU
        return False


def use_onednn_linear(model) -> int:
    """Route ``model``'s ``torch.nn.Linear`` layers through ``onednn_forward`` when its weights are float32 on a
    CPU and oneDNN works here; returns the number of layers routed (0: the model is left as it was)."""
    import torch

    params = list(model.parameters())
    if not params or any(p.device.type != "cpu" or p.dtype != torch.float32 for p in params) or not onednn_works():
        return 0
    layers = [m for m in model.modules() if type(m) is torch.nn.Linear]
    for layer in layers:
        # this layer's own forward, not the class's: the point of the routing
        layer.forward = types.MethodType(onednn_forward, layer)  # type: ignore[method-assign]
    return len(layers)
