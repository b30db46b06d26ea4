"""Decode steps of fixed shapes, replayed as CUDA graphs, for the hf backend's batched decoder.

On a GPU a decode step of an 8B model is a few milliseconds of reading weights, but an eager forward pass launches
hundreds of kernels one by one from Python: on an H200 with Llama-3-8B-shaped weights a step over 64 rows took
23 ms where reading the weights takes 3.3 ms. A CUDA graph launches the whole step at once, but it replays fixed
shapes and fixed addresses, where the decoder's cache is one column wider every step and loses rows as they finish.

So a step is given fixed shapes (what vLLM and transformers' static cache do, bucketed):

- rows: the live rows padded to ``row_bucket`` (a power of two); a padding row reads its own new column only (the
  pad token at position 0), so its numbers stay finite and it touches no live row;
- columns: every layer reads the first ``width`` columns of its buffer (``kv_cache.GrowingLayer.window``), ``width``
  the used part's end rounded up to ``COLUMN_BUCKET``; the step's mask (rows, 1, 1, width) shows each row the
  columns its own mask shows, columns outside the used part (zeros, or keys of rows that left) stay hidden;
- the new column's place is a tensor (``index_copy_``), so one graph serves every step of a bucket.

A graph is captured the first time a (rows, width) bucket is met over the cache's current buffers, after one eager
warm-up step on a side stream, and replayed after that; when a buffer is copied into a larger one (more rows, more
columns) the graphs captured over the old ones are dropped. A step that cannot be captured (a model whose forward
pass reads a value back to the CPU, say) is run eagerly at the same shapes from then on, the error kept in
``stats["capture_error"]``. Without CUDA (``capture=False``) the same fixed-shape
step runs eagerly: that is how the CPU tests check it answers as the decoder's own step does.

Five levers change what a step runs, all off by default (``BatchDecoder.use_fixed_steps``): ``flex`` passes the
step's mask to the model's attention as a flex-attention block mask (``flex_decode.decode_blocks``, built inside the
captured step from the step's mask); ``shared_prefix`` reads each prefix group's shared columns once a step
(``flex_decode``: the rows' prefix spans are step inputs, filled before each replay, and a step's shape includes its
largest group, rounded up to a power of two); ``cascade`` reads them once too, from the same inputs, in two Triton
kernels a layer (``cascade_decode``); the decoder's ``compiled`` forward is ``torch.compile``'s (elementwise work
fused) before the step is captured over it, and its ``fused`` forward compiles only the model's norms, MLPs and
rotary embedding (``fused_parts``).

A masked column adds an exact zero to a row's attention, but the kernels sum over more columns than the eager step
does, so in bfloat16 a logit can move by rounding; in float32 the answers are the eager step's (``tests/gpu``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sumjudge.llm.cascade_decode import cascade_blocks
from sumjudge.llm.flex_decode import SharedPrefixInputs, decode_blocks, dense_mask_mod, plan_sharing
from sumjudge.llm.merged_projections import weights_moved

COLUMN_BUCKET = 128  # a step reads its cache's columns rounded up to this many: one graph per 128 steps of a row


def row_bucket(rows: int) -> int:
    """The rows a step of ``rows`` live rows computes: the next power of two."""
    return 1 << max(0, rows - 1).bit_length()


def column_bucket(end: int) -> int:
    """The columns a step reads when the used part ends before column ``end`` (the new one is written there)."""
    return -(-(end + 1) // COLUMN_BUCKET) * COLUMN_BUCKET


@dataclass
class _Step:
    """One bucket's fixed inputs and, once captured, its graph and output."""

    # torch tensors (torch is imported where the decoder runs)
    ids: Any
    positions: Any
    mask: Any
    at: Any
    graph: object = None
    logits: object = None
    mask_mod: object = None  # flex attention's function over ``mask`` (``flex``), made once
    shared: SharedPrefixInputs | None = None  # the ``shared_prefix`` lever's inputs


class FixedShapeSteps:
    """Runs the decoder's decode steps at fixed shapes: captured as CUDA graphs and replayed (``capture=True``, a
    CUDA device), or eagerly (the same shapes, for checking on a CPU). ``stats``: graphs captured, steps replayed,
    buffer changes that dropped graphs."""

    def __init__(self, forward, pad_id: int, device, capture: bool, flex: bool = False, shared_prefix: bool = False,
                 cascade: bool = False):
        import torch

        self.torch = torch
        self.forward = forward  # (ids, mask, positions, cache, **attention kwargs) -> last position's logits
        self.pad = pad_id
        self.device = device
        self.capture = capture
        self.flex = flex  # the step's attention on flex attention's block mask (``flex_decode.decode_blocks``)
        self.shared_prefix = shared_prefix  # ... reading each prefix group's shared columns once (``flex_decode``)
        self.cascade = cascade  # ... the same, in Triton kernels of its own (``cascade_decode``)
        self.steps: dict[tuple[int, int, int], _Step] = {}  # by (rows, columns, largest group)
        self.buffers: tuple = ()
        # counters, and the message of a capture that failed (capture_error)
        self.stats: dict[str, Any] = {"graphs_captured": 0, "graph_replays": 0, "graphs_dropped": 0}

    def clear(self) -> None:
        self.stats["graphs_dropped"] += sum(s.graph is not None for s in self.steps.values())
        self.steps, self.buffers = {}, ()

    def run(self, cache, ids, mask, positions, spans=None):
        """The next-token logits of ``ids`` (rows, 1) at ``positions`` (rows, 1) with the live ``mask`` (rows, used
        columns + 1) over ``cache`` (every layer a ``GrowingLayer``); the layers take the step's column in. ``spans``
        (``shared_prefix``): each row's prefix group and its columns (``decode.LiveBatch.spans``)."""
        torch = self.torch
        layers = cache.layers
        rows = ids.shape[0]
        padded = row_bucket(rows)
        for layer in layers:
            layer.reserve(padded, column_bucket(layer.span()[1]))
        start, end = layers[0].span()
        if mask.shape[1] != end - start + 1:
            raise ValueError(f"a decode mask of {mask.shape[1]} columns over a cache of {end - start} (+1 new)")
        width = column_bucket(end)
        # a graph reads the cache's buffers and the weights where they were when it was captured: new buffers, or
        # weights moved since (the ``merged`` lever's merge), and the graphs are captured again
        buffers = (weights_moved(), *((b.data_ptr(), tuple(b.shape)) for layer in layers for b in layer.buffers()))
        if buffers != self.buffers:
            self.clear()
            self.buffers = buffers
        plan = plan_sharing(spans or [(None, 0, 0)] * rows) if self.shared_prefix or self.cascade else None
        members = row_bucket(plan.width()) if plan is not None else 0
        step = self.steps.get((padded, width, members))
        if step is None:
            step = self.steps[(padded, width, members)] = _Step(
                ids=torch.full((padded, 1), self.pad, dtype=torch.long, device=self.device),
                positions=torch.zeros((padded, 1), dtype=torch.long, device=self.device),
                mask=torch.zeros((padded, 1, 1, width), dtype=torch.bool, device=self.device),
                at=torch.zeros(1, dtype=torch.long, device=self.device),
                shared=SharedPrefixInputs.empty(padded, members, width, self.device) if plan is not None else None)
        step.ids.fill_(self.pad)
        step.ids[:rows] = ids
        step.positions.zero_()
        step.positions[:rows] = positions
        step.mask.zero_()
        step.mask[:rows, 0, 0, start:end + 1] = mask.bool()
        step.mask[rows:, 0, 0, end] = True
        step.at.fill_(end)
        if plan is not None and step.shared is not None:
            step.shared.fill(plan, offset=start)
        for layer in layers:
            layer.window = (step.at, padded, width)
        try:
            if not self.capture:
                logits = self._forward(step, cache)
            else:
                if step.graph is None:
                    self._capture(step, cache)
                if step.graph is None:  # the capture failed: this and every later step eagerly, at fixed shapes
                    logits = self._forward(step, cache)
                else:
                    step.graph.replay()
                    self.stats["graph_replays"] += 1
                    logits = step.logits
        finally:
            for layer in layers:
                layer.window = None
        for layer in layers:
            layer.advance(1)
        return logits[:rows].clone()

    def _forward(self, step: _Step, cache):
        """The step's forward pass over its fixed inputs (with ``flex``, ``shared_prefix`` or ``cascade``, the
        attention's inputs made from the step's first)."""
        blocks: Any
        if self.cascade and step.shared is not None:
            blocks = cascade_blocks(step.mask, step.shared)
        elif step.shared is not None:
            blocks = step.shared.blocks(step.mask)
        elif self.flex:
            if step.mask_mod is None:
                step.mask_mod = dense_mask_mod(step.mask[:, 0, 0, :])
            blocks = decode_blocks(step.mask, step.mask_mod)
        else:
            return self.forward(step.ids, step.mask, step.positions, cache)
        return self.forward(step.ids, step.mask, step.positions, cache, decode_blocks=blocks)

    def _capture(self, step: _Step, cache) -> None:
        """One eager warm-up step on a side stream (it writes the column the graph will write again), then the
        capture of the same step."""
        torch = self.torch
        side = torch.cuda.Stream(device=self.device)
        side.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(side):
            self._forward(step, cache)
        torch.cuda.current_stream(self.device).wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(graph):  # a memory pool of its own
                step.logits = self._forward(step, cache)
        except Exception as e:  # noqa: BLE001 - a model whose step cannot be captured still decodes, eagerly
            self.capture = False
            self.stats["capture_error"] = f"{type(e).__name__}: {e}"[:500]
            torch.cuda.synchronize(self.device)
            return
        step.graph = graph
        self.stats["graphs_captured"] += 1
