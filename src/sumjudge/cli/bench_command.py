"""``sumjudge bench``: the engine against one generate per request."""

from __future__ import annotations

from sumjudge.cli.subcommand import Subcommand
from sumjudge.llm.backend_registry import backend_names
from sumjudge.perf.bench import main as bench_main


def add_arguments(p) -> None:
    p.add_argument("--shape", default="tiny", choices=("tiny", "llama3-8b"))
    p.add_argument("--model", help="a real model instead of --shape: smoke | a local folder | a Hugging Face id; "
                                   "with --backend openai, the name the server serves")
    p.add_argument("--backend", default="hf", choices=backend_names(serving=True),
                   help="openai: the workload against the server at --base-url (one request at a time vs the engine)")
    p.add_argument("--base-url", help="with --backend openai, e.g. http://host:8000/v1")
    p.add_argument("--concurrency", type=int, default=32, help="with --backend openai: requests in flight at most")
    p.add_argument("--device", default="cpu")
    p.add_argument("--docs", type=int, default=8, help="K documents (x 4 agents)")
    p.add_argument("--doc-tokens", type=int, default=600)
    p.add_argument("--long-docs", type=int, default=0, help="M more documents (x 4 agents) of --long-doc-tokens: "
                   "short rows beside long ones in one batch (what row-by-row decode attention is for)")
    p.add_argument("--long-doc-tokens", type=int, default=3000)
    p.add_argument("--max-new-tokens", type=int, default=128)
    p.add_argument("--token-budget", type=int, default=65536)
    p.add_argument("--prefill-budget", type=int,
                   help="tokens per prefill forward pass (rows x padded width; default the engine's, 4096; a huge "
                   "value: one pass per admission)")
    p.add_argument("--repeats", type=int, default=3, help="time each path this many times, report the fastest")
    p.add_argument("--dtype", default="auto", choices=("auto", "float32", "bfloat16", "float16"),
                   help="auto: bf16 on a GPU, fp32 on CPU")
    p.add_argument("--turns", type=int, default=0, help="instead: a flood of --docs x 4 requests and a chain of this "
                   "many turns, one source vs two taking turns (the chain's wall time each way)")
    p.add_argument("--sequential-limit", type=int, help="time the one-generate-per-request loop over this many "
                   "requests only (all of equal length) and scale its time to all of them; outputs checked on those")
    p.add_argument("--batched-generate", action="store_true", help="also time one model.generate call with every "
                   "request padded into it (transformers' own cache): the engine's ratio to it")
    p.add_argument("--compare-decode-graphs", action="store_true", help="on a CUDA GPU, also time the engine with "
                   "its decode steps run eagerly instead of replayed as CUDA graphs (the step time of each)")
    p.add_argument("--compiled-generate", action="store_true", help="also time one batched model.generate with "
                   "transformers' static cache, compiled (torch.compile, its documented fast path; first call apart)")
    p.add_argument("--option-sets", type=int, default=0, help="also time this many G-Eval option sets (1-5) "
                   "scored through the engine: option sets per second")
    p.add_argument("--levers", nargs="?", const="all", help="also time the engine's decode levers, each against "
                   "its own steps (step times, answers equal to the engine's): flex (flex attention on a block mask), "
                   "shared_prefix (each prefix group's shared keys/values read once a step), cascade (the same in "
                   "Triton kernels of its own; a CUDA GPU), fused (the step's norms, MLPs and rotary embedding "
                   "compiled), cascade_fused (both), merged (each layer's q/k/v and gate/up products as one each), "
                   "cascade_fused_merged (all three), compiled (the step through torch.compile), "
                   "flex_compiled (both); all of them, or a comma-separated list")
    p.add_argument("--attention", nargs="?", const="all", help="instead: one layer's decode-step attention at the "
                   "workload's shape (--shape, --docs x 4 agents sharing each document's --doc-tokens), timed alone "
                   "for each way the decoder runs it (engine, flex, shared_prefix, cascade; all, or a comma-separated "
                   "list), each against dense attention in fp32, with the bytes it reads; --repeats calls timed")
    p.add_argument("--profile", metavar="FOLDER", help="also profile one engine pass (torch.profiler), and one with "
                   "each lever of --levers, into FOLDER/profile-NAME.txt: the costliest kernels by their own device "
                   "time (CPU operators on a CPU); the JSON gets each pass's top rows and its time by phase (prefill, "
                   "decode) and kind of work, and the decode phase a step by kind")
    p.add_argument("--max-batch", type=int, default=64, help="rows the engine decodes at once")
    p.add_argument("--tie-ulps", type=float, default=2.0,
                   help="reduced precision: a divergence counts as a numerical near-tie within this many ulps")


def main(a) -> int:
    if getattr(a, "attention", None):
        from sumjudge.perf import attention_bench

        return attention_bench.main(a)
    return bench_main(a)


COMMAND = Subcommand("bench", help="engine vs one-generate-per-request benchmark (prints JSON)",
                     add_arguments=add_arguments, run=main)
