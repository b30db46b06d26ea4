"""``sumjudge bench --attention``: one decode step's attention of one layer, timed alone for each way the decoder can
run it, at the shape of the bench's workload (``--docs`` documents x 4 agents sharing each document's prompt prefix).

A whole-model bench run (``--levers``) gives a lever's decode step, in which attention is one part among the
matrix products and the elementwise work; this gives the attention kernels' own time and the bytes they read, which
is what tells whether a kernel reads the keys and values at the memory's speed. Every variant is the function the
decoder's step calls, on the inputs the decoder builds for it (``flex_decode``, ``cascade_decode``):

- ``engine``: the engine's own step (``attention.gqa_decode_sdpa``: PyTorch's SDPA over the unrepeated key/value
  heads with the step's dense mask, under the backends the engine allows, ``attention_backends``);
- ``flex``: flex attention on the step's block mask;
- ``shared_prefix``: each document's prefix read once (two flex-attention calls joined by log-sum-exp);
- ``cascade``: the same reading plan in the cascade lever's Triton kernels.

Each layer's keys and values: every row holds ``--doc-tokens`` columns of its document (a copy shared with its group's
other rows, as the decoder's prefix sharing leaves them), ``SUFFIX`` of its own prompt and half of ``--max-new-tokens``
generated, in a buffer whose width is the decoder's column bucket. On a CUDA device each variant's ``--repeats`` calls
are captured in one CUDA graph (as the decoder replays its steps) and the replay is timed; a variant that cannot be
captured is timed eagerly and says so. On a CPU the calls are timed eagerly. Each variant's output is compared with
attention computed densely in float32 (the largest absolute difference), and each is reported by its error if it
fails, the others still run.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from typing import Any

from sumjudge.errors import ConfigError
from sumjudge.llm.extras import require
from sumjudge.llm.models import LLAMA3_8B_SHAPE, TINY_SHAPE
from sumjudge.perf.bench import gpu_bandwidth, resolve_dtype

SUFFIX = 32  # a row's own prompt tokens after its document (the agent's instructions)
AGENTS = 4  # rows sharing a document
VARIANTS = ("engine", "flex", "shared_prefix", "cascade")
# the cascade kernels' launch settings timed besides the default (``cascade_decode``'s BLOCK_N, NUM_WARPS, SPLITS),
# where the default ran: which to make the default is a GPU's measurement
CASCADE_SWEEP = ((16, 4, 4), (32, 4, 4), (32, 8, 2), (32, 8, 8), (64, 8, 4))


@dataclass
class DecodeShape:
    rows: int
    heads: int
    kv_heads: int
    dim: int
    layers: int
    prefix: int  # shared columns of a document
    own: int  # a row's columns after its document's
    width: int  # the buffer's columns a step reads (the decoder's column bucket)

    def kv_bytes(self, itemsize: int, shared: bool) -> int:
        """Bytes of keys and values one layer's step reads: every row's columns, or each group's prefix once."""
        columns = self.rows * self.own + (self.rows // AGENTS if shared else self.rows) * self.prefix
        return 2 * columns * self.kv_heads * self.dim * itemsize


def decode_shape(args) -> DecodeShape:
    from sumjudge.llm.decode_graphs import column_bucket

    cfg = LLAMA3_8B_SHAPE if args.shape == "llama3-8b" else TINY_SHAPE
    heads = cfg["num_attention_heads"]
    own = SUFFIX + args.max_new_tokens // 2
    used = args.doc_tokens + own
    return DecodeShape(rows=args.docs * AGENTS, heads=heads, kv_heads=cfg["num_key_value_heads"],
                       dim=cfg["hidden_size"] // heads, layers=cfg["num_hidden_layers"], prefix=args.doc_tokens,
                       own=own, width=column_bucket(used - 1))


def inputs(shape: DecodeShape, device, dtype, seed: int = 0) -> dict[str, Any]:
    """Random queries, keys and values in the decoder's layout; each group's prefix copied to its rows; the step's
    mask (rows, 1, 1, width) and the sharing plan's step inputs, as ``FixedShapeSteps`` fills them."""
    import torch

    from sumjudge.llm.flex_decode import SharedPrefixInputs, plan_sharing

    g = torch.Generator(device="cpu").manual_seed(seed)
    s = shape
    query = torch.randn(s.rows, s.heads, 1, s.dim, generator=g).to(device, dtype)
    key = torch.randn(s.rows, s.kv_heads, s.width, s.dim, generator=g).to(device, dtype)
    value = torch.randn(s.rows, s.kv_heads, s.width, s.dim, generator=g).to(device, dtype)
    for lead in range(0, s.rows, AGENTS):
        key[lead + 1:lead + AGENTS, :, :s.prefix] = key[lead, :, :s.prefix]
        value[lead + 1:lead + AGENTS, :, :s.prefix] = value[lead, :, :s.prefix]
    mask = torch.zeros(s.rows, 1, 1, s.width, dtype=torch.bool, device=device)
    mask[:, 0, 0, :s.prefix + s.own] = True
    plan = plan_sharing([(r // AGENTS, 0, s.prefix) for r in range(s.rows)])
    shared = SharedPrefixInputs.empty(s.rows, AGENTS, s.width, device)
    shared.fill(plan, offset=0)
    return {"query": query, "key": key, "value": value, "mask": mask, "shared": shared}


def variant_call(name: str, x: dict[str, Any], scale: float):
    """The decoder's attention call of variant ``name`` over ``x`` (its per-step inputs made here, once)."""
    from sumjudge.llm.attention import attention_backends, gqa_decode_sdpa
    from sumjudge.llm.cascade_decode import cascade_blocks, cascade_decode_attention, check_available
    from sumjudge.llm.flex_decode import decode_blocks, flex_decode_attention

    q, k, v, mask = x["query"], x["key"], x["value"], x["mask"]
    if name == "engine":
        module = type("Layer", (), {"num_key_value_groups": q.shape[1] // k.shape[1]})()

        def engine():
            with attention_backends(q.device):  # the backends the engine's forward passes allow (no cuDNN)
                return gqa_decode_sdpa(module, q, k, v, mask, scaling=scale)[0]

        return engine
    if name == "flex":
        blocks = decode_blocks(mask)
        return lambda: flex_decode_attention(q, k, v, blocks, scale, True)
    if name == "shared_prefix":
        shared_blocks = x["shared"].blocks(mask)
        return lambda: flex_decode_attention(q, k, v, shared_blocks, scale, True)
    if name == "cascade":
        check_available(q.device)
        cascade = cascade_blocks(mask, x["shared"])
        return lambda: cascade_decode_attention(q, k, v, cascade, scale)
    raise ValueError(f"unknown attention variant {name!r} (known: {', '.join(VARIANTS)})")


def dense(q, k, v, reads, scale: float):
    """Each row's queries ``q`` (rows, heads, 1, dim) over the columns ``reads`` (rows, width) shows, over its own keys
    and values (rows, kv_heads, width, dim), in float32: (rows, 1, heads, dim)."""
    import torch

    groups = q.shape[1] // k.shape[1]
    scores = torch.einsum("rhd,rhcd->rhc", q[:, :, 0].float(), k.float().repeat_interleave(groups, 1)) * scale
    weights = scores.masked_fill(~reads[:, None, :], float("-inf")).softmax(-1)
    return torch.einsum("rhc,rhcd->rhd", weights, v.float().repeat_interleave(groups, 1))[:, None]


def timed(call, repeats: int, device) -> tuple[float, str]:
    """Seconds a call (the best of a few timings of ``repeats`` calls, averaged), and how: a CUDA graph's replay, or
    eager calls (on a CPU, or where the capture failed: its error said)."""
    import torch

    call()  # first call: compiled, kernels chosen
    if getattr(device, "type", str(device)) != "cuda":
        best = float("inf")
        for _ in range(3):
            t0 = time.perf_counter()
            for _ in range(repeats):
                call()
            best = min(best, (time.perf_counter() - t0) / repeats)
        return best, "eager"
    how = "cuda graph"
    graph = torch.cuda.CUDAGraph()
    try:
        side = torch.cuda.Stream(device=device)
        side.wait_stream(torch.cuda.current_stream(device))
        with torch.cuda.stream(side):
            call()
        torch.cuda.current_stream(device).wait_stream(side)
        with torch.cuda.graph(graph):
            for _ in range(repeats):
                call()
        run = graph.replay
    except Exception as e:  # noqa: BLE001 - timed eagerly instead, the reason kept
        torch.cuda.synchronize(device)
        how = f"eager (capture failed: {type(e).__name__}: {e})"[:300]

        def run():
            for _ in range(repeats):
                call()
    best = float("inf")
    for _ in range(3):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        end.record()
        end.synchronize()
        best = min(best, start.elapsed_time(end) / 1e3 / repeats)
    return best, how


def run(args) -> dict:
    """Every variant (``--attention``: all, or a comma-separated list) timed at the workload's decode shape."""
    import torch

    device = torch.device(args.device)
    dtype = resolve_dtype(args.dtype, args.device)
    shape = decode_shape(args)
    x = inputs(shape, device, getattr(torch, dtype))
    scale = shape.dim ** -0.5
    want = dense(x["query"], x["key"], x["value"], x["mask"][:, 0, 0, :], scale)
    itemsize = x["key"].element_size()
    asked = VARIANTS if args.attention in (True, "all") else tuple(n.strip() for n in args.attention.split(","))
    unknown = [n for n in asked if n not in VARIANTS]
    if unknown:
        raise ConfigError(f"bench --attention: unknown variant {', '.join(unknown)} (known: {', '.join(VARIANTS)}, "
                          "all)")
    on_gpu = device.type == "cuda"
    bandwidth, bandwidth_of = gpu_bandwidth(torch.cuda.get_device_name(device)) if on_gpu else (None, None)
    result: dict[str, Any] = {
        "what": "one layer's decode-step attention, each variant alone", "device": str(device),
        "gpu": torch.cuda.get_device_name(device) if on_gpu else None, "dtype": dtype, "shape": args.shape,
        "rows": shape.rows, "heads": shape.heads, "kv_heads": shape.kv_heads, "head_dim": shape.dim,
        "shared_prefix_columns": shape.prefix, "own_columns": shape.own, "buffer_columns": shape.width,
        "repeats": args.repeats, "kv_mb_all_rows": round(shape.kv_bytes(itemsize, False) / 1e6, 2),
        "kv_mb_prefix_once": round(shape.kv_bytes(itemsize, True) / 1e6, 2),
        "bandwidth_tb_s": bandwidth / 1e12 if bandwidth else None, "bandwidth_of": bandwidth_of}
    for name in asked:
        try:
            call = variant_call(name, x, scale)
            seconds, how = timed(call, args.repeats, device)
            got = call()
        except Exception as e:  # noqa: BLE001 - one variant's failure is its result; the others still run
            result[f"{name}_error"] = f"{type(e).__name__}: {e}"[:500]
            continue
        read = shape.kv_bytes(itemsize, name in ("shared_prefix", "cascade"))
        result.update({f"{name}_us": round(seconds * 1e6, 1), f"{name}_timed_as": how,
                       f"{name}_max_abs_diff_vs_dense_fp32": float((got.float() - want).abs().max()),
                       f"{name}_step_ms_all_layers": round(seconds * 1e3 * shape.layers, 3)})
        if bandwidth:
            result[f"{name}_fraction_of_bandwidth"] = round(read / seconds / bandwidth, 3)
        print(f"bench: attention {name}: {seconds * 1e6:.1f} us a layer ({how})", file=sys.stderr, flush=True)
    if "cascade_us" in result:
        result["cascade_launch"] = launch_settings()
        result.update(cascade_sweep(x, scale, args.repeats, device, want))
    return result


def launch_settings() -> str:
    from sumjudge.llm import cascade_decode as c

    return f"BLOCK_N={c.BLOCK_N} NUM_WARPS={c.NUM_WARPS} SPLITS={c.SPLITS}"


def cascade_sweep(x: dict[str, Any], scale: float, repeats: int, device, want) -> dict:
    """The cascade kernels timed at each of ``CASCADE_SWEEP``'s launch settings (the module's put back after):
    ``cascade_sweep_us`` by setting, each checked against dense attention (the largest difference kept)."""
    from sumjudge.llm import cascade_decode as c

    kept = (c.BLOCK_N, c.NUM_WARPS, c.SPLITS)
    times, worst = {}, 0.0
    try:
        for c.BLOCK_N, c.NUM_WARPS, c.SPLITS in CASCADE_SWEEP:
            try:
                call = variant_call("cascade", x, scale)
                seconds, _ = timed(call, repeats, device)
                worst = max(worst, float((call().float() - want).abs().max()))
                times[launch_settings()] = round(seconds * 1e6, 1)
            except Exception as e:  # noqa: BLE001 - a setting that does not compile is its result
                times[launch_settings()] = f"{type(e).__name__}: {e}"[:200]
    finally:
        c.BLOCK_N, c.NUM_WARPS, c.SPLITS = kept
    return {"cascade_sweep_us": times, "cascade_sweep_max_abs_diff_vs_dense_fp32": worst}


TOLERANCE = {"float32": 1e-4, "bfloat16": 3e-2, "float16": 1e-2}  # largest difference from dense fp32 attention


def agrees(result: dict) -> bool:
    """Every variant that ran gives dense attention's numbers within its dtype's ``TOLERANCE`` (a variant that
    cannot run here, such as the cascade kernels on a CPU, is reported by its error and fails nothing)."""
    limit = TOLERANCE[result["dtype"]]
    return all(v <= limit for k, v in result.items() if k.endswith("_max_abs_diff_vs_dense_fp32"))


def main(args) -> int:
    """``sumjudge bench --attention``: the JSON printed; exit 1 where a variant disagrees with dense attention."""
    require("sumjudge bench --attention")
    found = run(args)
    print(json.dumps(found, indent=2))
    return 0 if agrees(found) else 1
