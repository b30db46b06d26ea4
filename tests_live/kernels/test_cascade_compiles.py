"""The cascade kernels compiled for NVIDIA GPUs without one (Triton's compiler and the ``ptxas`` its wheel carries):
what the interpreter does not check (the kernels' types as the compiler sees them) and what decides their speed
there (registers spilled to memory), launched as the decoder launches them (``cascade_decode``'s ``BLOCK_N``,
``NUM_WARPS``) at the shapes it meets: the 8B bench's attention (32
query heads over 8 of 128, 4 agents a document) in bf16, Qwen2.5-0.5B's (14 over 2 of 64) and the tiny model's in
fp32, for an H100 (sm_90) and an A100 (sm_80)."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

import pytest

triton = pytest.importorskip("triton")

from sumjudge.llm import cascade_decode, cascade_kernels  # noqa: E402
from sumjudge.llm.cascade_decode import merge_constants, partials_constants  # noqa: E402

POINTERS = {"Reads": "*u8", "First": "*i64", "Start": "*i64", "End": "*i64", "Leads": "*i1", "Members": "*i64",
            "PartO": "*fp32", "PartL": "*fp32"}


def compiled(fn, pointers: dict, constants: dict, capability: int, num_warps: int = 4):
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    signature = {n: "constexpr" if n in constants else pointers.get(n, "fp32" if n == "scale" else "i32")
                 for n in fn.arg_names}
    return triton.compile(ASTSource(fn, signature, constexprs=constants), target=GPUTarget("cuda", capability, 32),
                          options={"num_warps": num_warps})


def resources(kernel) -> dict:
    """``cuobjdump -res-usage`` of the kernel's binary: registers, stack and local memory (spills), bytes."""
    tool = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
    binary = Path(tempfile.mkdtemp()) / "kernel.cubin"
    binary.write_bytes(kernel.asm["cubin"])
    line = subprocess.run([str(tool), "-res-usage", str(binary)], capture_output=True, text=True,
                          check=True).stdout.strip().splitlines()[-1]
    return {k: int(v) for k, v in (part.split(":") for part in line.split() if part.split(":")[0] in
                                   ("REG", "STACK", "LOCAL"))}


@pytest.mark.parametrize("capability", [90, 80], ids=["sm_90", "sm_80"])
@pytest.mark.parametrize("heads,kv_heads,dim,members,dtype", [(32, 8, 128, 4, "bf16"), (14, 2, 64, 4, "fp32"),
                                                              (4, 2, 16, 4, "fp32")],
                         ids=["llama3-8b-bf16", "qwen-0.5b-fp32", "tiny-fp32"])
def test_the_cascade_kernels_compile_for_the_gpu_without_spilling(capability, heads, kv_heads, dim, members, dtype):
    if cascade_decode.interpreted():
        pytest.fail("compiled for a GPU in a process without TRITON_INTERPRET (its kernels are the interpreter's "
                    "here): `make test-kernels` runs this file apart")
    tensors = {name: f"*{dtype}" for name in ("Q", "K", "V")}
    partials = compiled(cascade_kernels.cascade_partials, {**POINTERS, **tensors},
                        partials_constants(heads, kv_heads, dim, members), capability, cascade_decode.NUM_WARPS)
    merge = compiled(cascade_kernels.cascade_merge, {"PartO": "*fp32", "PartL": "*fp32", "Out": f"*{dtype}"},
                     merge_constants(dim), capability)
    for kernel in (partials, merge):
        used = resources(kernel)
        assert used["STACK"] == 0 and used["LOCAL"] == 0, used  # nothing spilled
        assert used["REG"] <= 255
