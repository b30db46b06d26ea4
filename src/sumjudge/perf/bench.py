"""Engine benchmark: a debate-round-shaped workload (4 agents per document), one ``generate`` per request vs
the batched engine.

The model is the tiny random Llama-3 (``--shape tiny``), random Llama-3-8B-shaped weights (``--shape
llama3-8b``, GPU) or any model the hf backend loads (``--model smoke``, a folder, a Hugging Face id).

K documents of about ``doc_tokens`` Llama-3 tokens; 4 agents per document see the same document
with different initial stances; greedy decoding with a fixed ``max_new_tokens`` (no eos, so every
request decodes the same number of tokens and both paths do identical work). (a) calls
``model.generate`` once per request in a loop, as the papers' released code does; (b) sends all
requests through ``LLM.chat_many`` (no cache), which the hf backend micro-batches. Prints JSON with
the timings and an output check (``check_outputs``): identical text in fp32; in bf16, divergences only
at numerical near-ties of the sequential run's logits, reported as information: a reduced-precision run's exit
status is decided by ``fp32_check`` (the tiny model in fp32 on the same device). ``--levers`` also times the
decoder's decode levers (``LEVERS``), each against the engine's own steps.
"""

from __future__ import annotations

import asyncio
import json
import math
import sys
import time
from argparse import Namespace
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, TypeVar

from sumjudge.data.registry import load
from sumjudge.errors import ConfigError
from sumjudge.llm import ChatRequest, NullCache, OptionRequest
from sumjudge.llm.decode import PREFILL_BUDGET
from sumjudge.llm.engine import LLM, run_sync
from sumjudge.llm.extras import require
from sumjudge.llm.hf import HFBackend
from sumjudge.llm.models import LLAMA3_8B_SHAPE, llama3_tokenizer, resolve_model
from sumjudge.llm.openai import OpenAIBackend
from sumjudge.perf.machine import machine
from sumjudge.perf.profile_kinds import phase_kinds
from sumjudge.prompts import render
from sumjudge.run.methods import get_method
from sumjudge.run.runs import server_stats

T = TypeVar("T")
STANCES = ("The summary is faithful.", "The summary is unfaithful.")
# HBM bandwidth of the memory-bound decode ceiling (bytes/s), by a word of the GPU's name (datasheet figures)
GPU_BANDWIDTH = {"H200": 4.8e12, "H100": 3.35e12, "A100": 2.0e12}
H100_SXM_BANDWIDTH = GPU_BANDWIDTH["H100"]
# G-Eval's scale: the option set scored for every prompt by ``--option-sets``
GEVAL_OPTIONS = ("1", "2", "3", "4", "5")


def gpu_bandwidth(name: str) -> tuple[float, str]:
    """(bytes/s, how it was chosen) for a GPU named ``name``; an unknown GPU is taken as an H100 (said so)."""
    for word, bw in GPU_BANDWIDTH.items():
        if word in name:
            return bw, word
    return H100_SXM_BANDWIDTH, "H100 (assumed: unknown GPU)"


def _documents(k: int, doc_tokens: int, cut, long_docs: int = 0, long_doc_tokens: int = 0) -> list[tuple[str, str]]:
    """(document, summary) pairs: real MeetingBank transcripts when the data is present, else synthetic text; ``k``
    cut to ``doc_tokens``, then ``long_docs`` others cut to ``long_doc_tokens`` (rows of two lengths in one batch).
    A text shorter than its cut is repeated up to it, so every row has the length asked for."""
    lengths = [doc_tokens] * k + [long_doc_tokens] * long_docs
    k = len(lengths)
    docs: list[tuple[str, str]] = []
    try:
        for ex in load("tofueval-meetingbank", level="summary"):
            if len(docs) == k:
                break
            if ex.document not in {d for d, _ in docs}:
                docs.append((ex.document, ex.summary))
    except Exception:  # no data mirror: synthetic meeting text
        pass
    i = 0
    while len(docs) < k:
        body = " ".join(f"Speaker {j % 5}: item {i}-{j} was discussed and the council voted {j % 3} times." for j in range(200))
        docs.append((body, f"The council discussed item {i}."))
        i += 1
    # at least 6 characters a token (MeetingBank under Llama-3's or Qwen's tokenizer: about 4)
    return [(cut("\n\n".join([d] * max(1, -(-6 * n // max(1, len(d))))), n), s) for (d, s), n in zip(docs, lengths)]


def tokenizer_cut(tok):
    """The first ``n`` tokens of a text under a transformers tokenizer."""
    return lambda text, n: tok.decode(tok(text, add_special_tokens=False).input_ids[:n])


def counted_cut(count):
    """The longest word prefix of a text with at most ``n`` tokens under ``count`` (a server's tokenizer)."""
    def cut(text: str, n: int) -> str:
        words = text.split()
        lo, hi = 0, len(words)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if count(" ".join(words[:mid])) <= n:
                lo = mid
            else:
                hi = mid - 1
        return " ".join(words[:lo])

    return cut


def build_requests(cut, k: int, doc_tokens: int, max_new_tokens: int, salt: str = "", long_docs: int = 0,
                   long_doc_tokens: int = 0):
    """4 agents per document, as a round of a stance-initialised debate; ``salt`` starts every prompt (a
    benchmark pass of its own against a server's prefix cache, with the same token count in every pass);
    ``long_docs`` more documents of ``long_doc_tokens`` (a batch of short rows beside long ones)."""

    zero_shot = get_method("zero-shot").config_cls.template  # the zero-shot judge's prompt
    reqs = []
    for di, (doc, summ) in enumerate(_documents(k, doc_tokens, cut, long_docs, long_doc_tokens)):
        base = salt + render(zero_shot, doc=doc, summary=summ)
        for agent in range(4):
            text = f"{base}\n\nYou are agent {agent + 1}. Your initial belief: {STANCES[agent % 2]}"
            reqs.append(ChatRequest(messages=[{"role": "user", "content": text}], max_new_tokens=max_new_tokens,
                                    tag=f"doc{di}/agent{agent}"))
    return reqs


def _model_for_shape(shape: str, device: str, dtype: str):
    """tiny: built on disk once (data/models/tiny-llama3); llama3-8b: random weights in memory."""

    if shape == "tiny":
        return resolve_model("tiny"), None
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tok = llama3_tokenizer()
    cfg = LlamaConfig(vocab_size=len(tok), tie_word_embeddings=False, bos_token_id=tok.bos_token_id,
                      eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id, **LLAMA3_8B_SHAPE)
    default = torch.get_default_dtype()
    torch.set_default_dtype(getattr(torch, dtype))  # initialise in the target dtype: no fp32 copy of 8B weights
    try:
        with torch.device(device):
            model = LlamaForCausalLM(cfg)
    finally:
        torch.set_default_dtype(default)
    return model, tok


def resolve_dtype(dtype: str, device: str) -> str:
    """``auto``: bf16 on a GPU, fp32 on CPU (the hf backend's own rule)."""
    if dtype != "auto":
        return dtype
    return "bfloat16" if device.startswith("cuda") else "float32"


def first_divergence(a: list[int], b: list[int]) -> int | None:
    """Index of the first differing token (the shorter length when one is a prefix of the other), None if equal."""
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


def ulp(value: float, dtype) -> float:
    """Spacing of ``dtype`` numbers at ``|value|`` (one unit in the last place)."""

    import torch

    eps = torch.finfo(dtype).eps
    return eps * 2.0 ** math.floor(math.log2(abs(value))) if value else torch.finfo(dtype).tiny


def decode_without_eos(be) -> None:
    """Both paths decode exactly ``max_new_tokens``: the engine's decoder and ``generate()`` stop at no token.
    ``generate()`` fills an ``eos_token_id`` left None in the config it is given from the model's own generation
    config, so that one is cleared too (else the sequential path stops at an end-of-turn token the engine decodes
    through, and the outputs differ where nothing diverged)."""
    be.eos_ids = []
    be.decoder.eos = set()
    be.model.generation_config.eos_token_id = None


def forget_prefixes(be) -> None:
    """Empty the backend's prefix store, so that a pass computes every prompt as the first did (a later repeat
    would otherwise reuse the earlier one's keys/values: faster, and in reduced precision other rounding)."""
    be.decoder.forget_prefixes()


def greedy_config(be, max_new_tokens: int, **extra):
    """The sequential path's ``generate`` settings: greedy, no eos, exactly ``max_new_tokens``."""
    from transformers import GenerationConfig

    return GenerationConfig(max_new_tokens=max_new_tokens, do_sample=False, eos_token_id=None,
                            pad_token_id=be.tokenizer.pad_token_id, **extra)


def check_outputs(be, reqs, seq_texts: list[str], eng_texts: list[str], max_new_tokens: int,
                  tie_ulps: float) -> dict:
    """Compare the engine's greedy outputs with one-``generate``-per-request outputs.

    Identical text is the strict check. In reduced precision (bf16) a batch of rows runs through
    different kernels (other matrix shapes, padding, a shared prefix) than one row alone, so the
    logits differ in their last bits and an arg-max over two logits that tie to within that noise can
    flip; after that the two continuations differ. For every request whose text differs, this finds
    the first differing token and reads, in the sequential run's own logits at that step, how far the
    engine's token is below the sequential arg-max. A divergence is a numerical near-tie when that
    margin is at most ``tie_ulps`` units in the last place of the model's dtype at the top logit; a
    bug (wrong mask, position or cache) diverges at clear winners and fails the check.
    """
    import torch

    forget_prefixes(be)  # as the timed run began: no prompt's keys/values kept
    eng_ids = be.token_ids(reqs)  # untimed re-run: the engine's tokens, same micro-batches
    consistent = [be.tokenizer.decode(ids, skip_special_tokens=True) == t for ids, t in zip(eng_ids, eng_texts)]
    cfg = greedy_config(be, max_new_tokens, output_scores=True, return_dict_in_generate=True)
    divergences = []
    with torch.inference_mode():
        for i, r in enumerate(reqs[:len(seq_texts)]):  # the requests the sequential loop answered
            if seq_texts[i] == eng_texts[i]:
                continue
            ids = torch.tensor([be.encode(r.messages)], device=be.device)
            out = be.model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), generation_config=cfg)
            seq_ids = out.sequences[0, ids.shape[1]:].tolist()
            step = first_divergence(seq_ids, eng_ids[i])
            d = {"request": r.tag, "step": step, "top_logit": None, "margin": None, "ulps": None}
            if step is not None and step < min(len(seq_ids), len(eng_ids[i])):
                logits = out.scores[step][0]  # generate() upcasts to fp32; the model computed them in its dtype
                top = float(logits.max())
                margin = float(logits[seq_ids[step]]) - float(logits[eng_ids[i][step]])
                d.update(top_logit=top, margin=round(margin, 6), ulps=round(margin / ulp(top, be.model.dtype), 2))
            divergences.append(d)
    near_ties = [d for d in divergences if d["ulps"] is not None and d["ulps"] <= tie_ulps]
    scored = [d["ulps"] for d in divergences if d["ulps"] is not None]
    return {
        "identical_outputs": not divergences, "identical_count": len(seq_texts) - len(divergences),
        "divergences": divergences, "tie_tolerance_ulps": tie_ulps,
        # the widest margin where an answer parted from the loop's (None: none parted, or none had a score)
        "largest_divergence_ulps": max(scored) if scored else None,
        "unscored_divergences": len(divergences) - len(scored),
        "equivalent_outputs": len(near_ties) == len(divergences) and all(consistent),
        "engine_rerun_consistent": all(consistent),
    }


def bench_backend(args, dtype: str, *, name: str, **options):
    """The hf backend a benchmark decodes with: ``--model`` loaded by the backend, or the ``--shape`` model built
    here (named ``name``); every answer decoded to its ``max_new_tokens`` (no eos)."""

    model = getattr(args, "model", None)
    model_or_path, tok = (model, None) if model else _model_for_shape(args.shape, args.device, dtype)
    be = (HFBackend(model_or_path, device=args.device, dtype=dtype, **options) if tok is None
          else HFBackend.from_loaded(model_or_path, tok, name=name, **options))
    decode_without_eos(be)
    return be


@dataclass
class BenchSetup:
    """What every measured phase of ``run`` uses: the hf backend and its workload, the ``generate`` baselines'
    greedy config, how many requests the loop is timed over, and a wait for the device."""

    args: Any
    be: Any
    dtype: str
    reqs: list
    long_docs: int
    long_doc_tokens: int
    gen_cfg: Any
    timed: int  # the loop over the first `timed` requests
    sync: Callable[[], None]


@dataclass(frozen=True)
class EnginePass:
    """One pass of the engine (no cache): its answers, the backend's ``generate`` calls and the decoder's counters."""

    resps: list
    calls: int
    stats: dict


@dataclass(frozen=True)
class Measured:
    """What ``run`` measured: each phase's result and its best time in seconds (``best_of``); None where a phase
    was not asked for."""

    sequential: tuple[list[str], float]
    engine: tuple[EnginePass, float]
    eager: tuple[EnginePass, float] | None  # the engine without decode graphs
    batched: tuple[list[str], float] | None
    compiled: tuple[list[str], float, float] | None  # texts, best time, the first (compiling) call's time
    scored: tuple[tuple[int, list[str]], float] | None  # (option sets, scoring methods), time
    # (lever, its pass or its error, best time, the first pass's time)
    levers: list[tuple[str, EnginePass | str, float, float]] | None = None
    profiles: dict[str, dict] | None = None  # ``profile_passes``: where each pass's time went


def setup_run(args) -> BenchSetup:
    """The backend (``bench_backend``), the workload and the baselines' settings."""
    import torch


    dtype = resolve_dtype(args.dtype, args.device)
    args.prefill_budget = getattr(args, "prefill_budget", None) or PREFILL_BUDGET
    be = bench_backend(args, dtype, name="random-llama3-8b-shape", token_budget=args.token_budget,
                       prefill_budget=args.prefill_budget)
    long_docs, long_doc_tokens = getattr(args, "long_docs", 0) or 0, getattr(args, "long_doc_tokens", 0) or 0
    reqs = build_requests(tokenizer_cut(be.tokenizer), args.docs, args.doc_tokens, args.max_new_tokens,
                          long_docs=long_docs, long_doc_tokens=long_doc_tokens)
    gen_cfg = greedy_config(be, args.max_new_tokens)
    sync = torch.cuda.synchronize if str(be.device).startswith("cuda") else (lambda: None)
    timed = getattr(args, "sequential_limit", None) or len(reqs)
    return BenchSetup(args=args, be=be, dtype=dtype, reqs=reqs, long_docs=long_docs, long_doc_tokens=long_doc_tokens,
                      gen_cfg=gen_cfg, timed=timed, sync=sync)


def best_of(s: BenchSetup, fn: Callable[[], T]) -> tuple[T, float]:
    """Fastest of ``args.repeats`` runs (the usual way to take noise out of a wall-clock benchmark)."""
    best: tuple[T, float] | None = None
    for _ in range(max(1, s.args.repeats)):
        s.sync()
        t0 = time.perf_counter()
        result = fn()
        s.sync()
        dt = time.perf_counter() - t0
        if best is None or dt < best[1]:
            best = (result, dt)
    assert best is not None  # at least one run
    return best


def sequential(s: BenchSetup) -> list[str]:
    """(a) one ``generate`` call per request, over the first ``timed`` requests."""
    import torch

    be = s.be
    texts = []
    with torch.inference_mode():
        for r in s.reqs[:s.timed]:
            ids = torch.tensor([be.encode(r.messages)], device=be.device)
            out = be.model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), generation_config=s.gen_cfg)
            texts.append(be.tokenizer.decode(out[0, ids.shape[1]:], skip_special_tokens=True))
    return texts


def engine_pass(s: BenchSetup) -> EnginePass:
    """(b) the engine, no cache: every request is computed."""

    be = s.be
    forget_prefixes(be)
    be.generate_calls = 0
    for k in ("prefill_s", "decode_s", "decode_tokens", "prefill_tokens", "decode_steps", "row_steps",
              "underfilled_s", "shared_prefix_tokens_saved"):
        be.decoder.stats[k] = 0
    return EnginePass(asyncio.run(LLM(be).chat_many(s.reqs)), be.generate_calls, dict(be.decoder.stats))


def eager_engine(s: BenchSetup) -> tuple[EnginePass, float]:
    """The engine with its decode steps run eagerly (no CUDA graphs), timed after a warm-up pass (graphs captured,
    kernels chosen), so that neither it nor the timed pass with graphs pays for that."""
    decoder = s.be.decoder
    engine_pass(s)
    fixed, decoder.fixed_steps = decoder.fixed_steps, None
    eager = best_of(s, lambda: engine_pass(s))
    decoder.fixed_steps = fixed
    return eager


def batched_generate(s: BenchSetup, config=None) -> list[str]:
    """(c) every request left-padded into one ``model.generate`` call, transformers' own cache."""
    import torch

    be = s.be
    enc = [be.encode(r.messages) for r in s.reqs]
    width = max(map(len, enc))
    pad = be.tokenizer.pad_token_id
    ids = torch.tensor([[pad] * (width - len(e)) + e for e in enc], device=be.device)
    mask = torch.tensor([[0] * (width - len(e)) + [1] * len(e) for e in enc], device=be.device)
    with torch.inference_mode():
        out = be.model.generate(input_ids=ids, attention_mask=mask, generation_config=config or s.gen_cfg)
    return [be.tokenizer.decode(o[width:], skip_special_tokens=True) for o in out]


def compiled_generate(s: BenchSetup) -> tuple[list[str], float]:
    """(d) the batched ``generate`` with transformers' static cache, which it compiles (``torch.compile``, CUDA
    graphs: its documented fast path); the first call compiles, the second is timed."""
    cfg = greedy_config(s.be, s.args.max_new_tokens, cache_implementation="static")
    t0 = time.perf_counter()
    texts = batched_generate(s, cfg)
    s.sync()
    return texts, time.perf_counter() - t0


# The decode levers ``--levers`` times, each against the engine's own steps: (name, ``use_fixed_steps`` settings)
LEVERS = (("flex", {"flex": True}), ("shared_prefix", {"shared_prefix": True}), ("cascade", {"cascade": True}),
          ("fused", {"fused": True}), ("cascade_fused", {"cascade": True, "fused": True}),
          ("merged", {"merged": True}), ("cascade_fused_merged", {"cascade": True, "fused": True, "merged": True}),
          ("compiled", {"compiled": True}),
          ("flex_compiled", {"flex": True, "compiled": True}))


def chosen_levers(asked) -> tuple:
    """``--levers``' value: True or "all" for every lever of ``LEVERS``, else a comma-separated list of their names."""
    if asked is True or asked == "all":
        return LEVERS
    names = [n.strip() for n in str(asked).split(",") if n.strip()]
    known = dict(LEVERS)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ConfigError(f"bench --levers: unknown lever {', '.join(unknown)} (known: {', '.join(known)}, all)")
    return tuple((n, known[n]) for n in names)


@contextmanager
def steps_switched(s: BenchSetup, settings: dict | None):
    """The decoder's fixed-shape steps switched to a lever's ``settings`` (``use_fixed_steps``; captured as CUDA graphs
    where the engine's own are; None: the engine's own steps) for the block, and the engine's own put back after."""
    decoder = s.be.decoder
    base = decoder.fixed_steps
    try:
        if settings is not None:
            decoder.use_fixed_steps(capture=base is not None and base.capture, **settings)
        yield
    finally:
        decoder.fixed_steps = base


def lever_passes(s: BenchSetup) -> list[tuple[str, EnginePass | str, float, float]]:
    """Each of ``LEVERS`` in turn: the decoder's fixed-shape steps switched to it (captured as CUDA graphs on a GPU,
    eagerly elsewhere), a first pass (graphs captured, kernels compiled; its time kept), then the timed passes; the
    decoder's own steps are put back after. A lever that fails is reported by its error (the pass is a string) and
    the others still run."""
    decoder = s.be.decoder
    out: list[tuple[str, EnginePass | str, float, float]] = []
    for name, settings in chosen_levers(getattr(s.args, "levers", True)):
        try:
            with steps_switched(s, settings):
                t0 = time.perf_counter()
                engine_pass(s)
                s.sync()
                first_s = time.perf_counter() - t0
                lever, best = best_of(s, lambda: engine_pass(s))
                if decoder.fixed_steps is not None:
                    lever.stats.update({f"fixed_{k}": v for k, v in decoder.fixed_steps.stats.items()})
        except Exception as e:  # noqa: BLE001 - one lever's failure (a compiler's, say) is its result
            out.append((name, f"{type(e).__name__}: {e}"[:500], 0.0, 0.0))
            continue
        out.append((name, lever, best, first_s))
        steps = lever.stats["decode_steps"]
        print(f"bench: lever {name}: first pass {first_s:.1f} s, decode step "
              f"{1e3 * lever.stats['decode_s'] / max(1, steps):.2f} ms", file=sys.stderr, flush=True)
    return out


PROFILE_ROWS = 40  # the kernels (or CPU operators) a profile's table lists, the costliest first


def profile_passes(s: BenchSetup, folder: str) -> dict[str, dict]:
    """``--profile FOLDER``: one more engine pass under ``torch.profiler`` with the engine's own steps and with each
    lever asked for (``--levers``; after a warm-up pass of its own), each written to ``FOLDER/profile-NAME.txt``: the
    costliest ``PROFILE_ROWS`` kernels by their own device time (CPU operators on a CPU), with their calls. Returns
    per pass the file, the time the table covers, the calls that took any of it (kernel launches on a GPU), the
    ten costliest rows' shares, and the time by phase and kind of work (``profile_kinds``: prefill, decode, and the
    decode phase a step); a lever that fails gets its error, and the other passes still run."""
    from torch.profiler import ProfilerActivity, profile

    out_dir = Path(folder)
    out_dir.mkdir(parents=True, exist_ok=True)
    cuda = str(s.be.device).startswith("cuda")
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    key = "self_device_time_total" if cuda else "self_cpu_time_total"
    passes = [("engine", None)] + (list(chosen_levers(s.args.levers)) if getattr(s.args, "levers", False) else [])
    found: dict[str, dict] = {}
    for name, settings in passes:
        try:
            with steps_switched(s, settings):
                engine_pass(s)  # warm: graphs captured, kernels compiled, outside the profile
                s.sync()
                fixed = s.be.decoder.fixed_steps
                captured = fixed.stats["graphs_captured"] if fixed is not None else 0
                with profile(activities=activities, **all_threads()) as prof:
                    steps = engine_pass(s).stats["decode_steps"]
                    s.sync()
                # graphs captured inside the profiled pass: their warm-up steps are in its decode phase
                recaptured = fixed.stats["graphs_captured"] - captured if fixed is not None else 0
        except Exception as e:  # noqa: BLE001 - a lever that cannot run (as in lever_passes) is its profile's result
            found[name] = {"error": f"{type(e).__name__}: {e}"[:500]}
            continue
        averages = prof.key_averages()
        # a range drawn again on the device's timeline (a user's ``record_function``) is no work of its own
        rows = sorted((e for e in averages if not getattr(e, "is_user_annotation", False)),
                      key=lambda e: getattr(e, key), reverse=True)
        total_us = sum(getattr(e, key) for e in rows)
        path = out_dir / f"profile-{name}.txt"
        path.write_text(averages.table(sort_by=key, row_limit=PROFILE_ROWS), encoding="utf-8")
        found[name] = {"file": str(path), "device": "cuda" if cuda else "cpu", "total_ms": round(total_us / 1e3, 3),
                       "calls": sum(e.count for e in rows if getattr(e, key) > 0),
                       "top": [{"name": e.key[:120], "calls": e.count,
                                "share": round(getattr(e, key) / total_us, 4) if total_us else 0.0}
                               for e in rows[:10]],
                       "graphs_captured_in_pass": recaptured, **phase_kinds(prof.events(), cuda, steps)}
        print(f"bench: profile {name} written to {path}", file=sys.stderr, flush=True)
    return found


def all_threads() -> dict:
    """The profiler's setting that records the CPU operators of every thread (the hf backend decodes on a thread of
    its own), where this torch has it; kernels on a GPU are recorded from every thread either way."""
    from torch._C._profiler import _ExperimentalConfig

    try:
        return {"experimental_config": _ExperimentalConfig(profile_all_threads=True)}
    except TypeError:  # an older torch
        return {}


def progress(phase: str, since: float) -> None:
    """One line on stderr as each phase ends (a long GPU run shows how far it got; the JSON comes at the end)."""
    print(f"bench: {phase} done after {time.perf_counter() - since:.1f} s", file=sys.stderr, flush=True)


def measure(s: BenchSetup) -> Measured:
    """Every phase asked for, in turn: the loop, the engine (and without graphs), the batched and the compiled
    ``generate``, option sets, the decode levers."""
    args, be = s.args, s.be
    t0 = time.perf_counter()
    seq = best_of(s, lambda: sequential(s))
    progress("the loop", t0)
    eager = None
    if getattr(args, "compare_decode_graphs", False) and be.decoder.fixed_steps is not None:
        eager = eager_engine(s)  # its warm-up pass warms the engine too
    else:
        engine_pass(s)  # untimed: the first kernels chosen, cuBLAS set up, as before every timed lever
    eng = best_of(s, lambda: engine_pass(s))
    progress("the engine", t0)
    batched = best_of(s, lambda: batched_generate(s)) if getattr(args, "batched_generate", False) else None
    compiled = None
    if getattr(args, "compiled_generate", False):
        first_s = compiled_generate(s)[1]
        compiled = (*best_of(s, lambda: compiled_generate(s)[0]), first_s)
    progress("the generate baselines", t0)
    option_sets = getattr(args, "option_sets", 0) or 0
    scored = best_of(s, lambda: score_option_sets(be, s.reqs, option_sets)) if option_sets else None
    levers = lever_passes(s) if getattr(args, "levers", False) else None
    progress("option sets and levers", t0)
    profiles = profile_passes(s, args.profile) if getattr(args, "profile", None) else None
    if profiles:
        progress("the profiles", t0)
    return Measured(sequential=seq, engine=eng, eager=eager, batched=batched, compiled=compiled, scored=scored,
                    levers=levers, profiles=profiles)


def engine_report(s: BenchSetup, m: Measured, prompt_tokens: int, completion_tokens: int,
                  decode_tps: float | None) -> dict:
    """The workload, the loop's and the engine's times and throughput, the engine's prefill and decode."""
    args, be, reqs, timed = s.args, s.be, s.reqs, s.timed
    seq_s = m.sequential[1]
    eng, eng_s = m.engine
    stats = eng.stats
    model = getattr(args, "model", None)
    return {
        "model": model or args.shape, "shape": None if model else args.shape, "device": str(be.device),
        "dtype": s.dtype, "requests": len(reqs), "docs": args.docs, "agents_per_doc": 4, "repeats": args.repeats,
        "long_docs": s.long_docs, "long_doc_tokens": s.long_doc_tokens if s.long_docs else None,
        "mean_prompt_tokens": round(prompt_tokens / len(reqs), 1), "max_new_tokens": args.max_new_tokens,
        # the loop timed over `timed` requests of equal length: its time for all of them is that times n / timed
        "sequential_timed_requests": timed, "sequential_s": round(seq_s * len(reqs) / timed, 3),
        "engine_s": round(eng_s, 3), "speedup": round(seq_s * len(reqs) / timed / eng_s, 2),
        "engine_generate_calls": eng.calls,
        "engine_prompt_tokens_per_s": round(prompt_tokens / eng_s, 1),
        "engine_completion_tokens_per_s": round(completion_tokens / eng_s, 1),
        "prefill_budget": args.prefill_budget,
        "engine_prefill_s": round(stats["prefill_s"], 3), "engine_decode_s": round(stats["decode_s"], 3),
        # tokens the prefill computed (a shared document prefix counts once) per second of prefill
        "engine_prefill_tokens_per_s": round(stats["prefill_tokens"] / stats["prefill_s"], 1) if stats["prefill_s"]
        else None,
        "engine_decode_tokens_per_s": round(decode_tps, 1) if decode_tps else None,
        # one decode step (every live row one token on), and how the steps ran: graphs captured and replayed
        "engine_decode_steps": stats["decode_steps"],
        "engine_decode_step_ms": round(1e3 * stats["decode_s"] / stats["decode_steps"], 2) if stats["decode_steps"]
        else None,
        "decode_graphs": be.decoder.fixed_steps is not None and be.decoder.fixed_steps.capture,
        **({f"decode_{k}": v for k, v in be.decoder.fixed_steps.stats.items()} if be.decoder.fixed_steps else {}),
        "sequential_completion_tokens_per_s": round(completion_tokens * timed / len(reqs) / seq_s, 1),
    }


def baselines_report(m: Measured) -> dict:
    """The batched ``generate``, the engine without graphs, the compiled ``generate`` and the option sets, each
    against the engine (and its texts against the loop's), where measured."""
    seq_texts = m.sequential[0]
    eng, eng_s = m.engine
    result: dict = {}
    if m.batched is not None:
        texts, b_s = m.batched
        result.update({"batched_generate_s": round(b_s, 3), "engine_vs_batched_generate": round(b_s / eng_s, 2),
                       "batched_generate_identical_to_sequential": sum(a == b for a, b in zip(texts, seq_texts))})
    if m.eager is not None:
        e_pass, e_s = m.eager
        e_stats = e_pass.stats
        result.update({"eager_engine_s": round(e_s, 3), "eager_decode_s": round(e_stats["decode_s"], 3),
                       "eager_decode_step_ms": round(1e3 * e_stats["decode_s"] / e_stats["decode_steps"], 2)
                       if e_stats["decode_steps"] else None,
                       "graphs_identical_to_eager": sum(a.text == b.text for a, b in zip(eng.resps, e_pass.resps))})
    if m.compiled is not None:
        texts, c_s, first_s = m.compiled
        result.update({"compiled_generate_s": round(c_s, 3), "compiled_generate_first_call_s": round(first_s, 3),
                       "engine_vs_compiled_generate": round(c_s / eng_s, 2),
                       "compiled_generate_identical_to_sequential": sum(a == b for a, b in zip(texts, seq_texts))})
    for name, lever, l_s, first_s in m.levers or ():
        if isinstance(lever, str):
            result[f"lever_{name}_error"] = lever
            continue
        st = lever.stats
        result.update({f"lever_{name}_engine_s": round(l_s, 3), f"lever_{name}_first_pass_s": round(first_s, 3),
                       f"lever_{name}_decode_step_ms": round(1e3 * st["decode_s"] / st["decode_steps"], 2)
                       if st["decode_steps"] else None,
                       f"lever_{name}_decode_tokens_per_s": round(st["decode_tokens"] / st["decode_s"], 1)
                       if st["decode_s"] else None,
                       f"lever_{name}_identical_to_engine": sum(a.text == b.text for a, b in zip(eng.resps, lever.resps)),
                       f"lever_{name}_graphs_captured": st.get("fixed_graphs_captured"),
                       f"lever_{name}_capture_error": st.get("fixed_capture_error")})
        for part in ("fused_pieces", "merged_parts", "merged_calls"):
            if st.get(f"fixed_{part}") is not None:
                result[f"lever_{name}_{part}"] = st[f"fixed_{part}"]
    if m.scored is not None:
        (sets, methods), s_s = m.scored
        result.update({"option_sets": sets, "option_set_options": len(GEVAL_OPTIONS), "option_scoring": methods,
                       "option_sets_s": round(s_s, 3), "option_sets_per_s": round(sets / s_s, 1)})
    return result


def bandwidth_report(s: BenchSetup, calls: int, prompt_tokens: int, decode_tps: float | None,
                     shared_saved: int = 0) -> dict:
    """On a CUDA GPU: the decode's tokens per second against what the GPU's memory bandwidth allows."""
    import torch

    be, reqs = s.be, s.reqs
    weight_bytes = sum(p.numel() * p.element_size() for p in be.model.parameters())
    rows = len(reqs) / max(1, calls)
    gpu = torch.cuda.get_device_name()
    bandwidth, bandwidth_of = gpu_bandwidth(gpu)
    bound = bandwidth / weight_bytes * rows  # every decode step reads all weights once
    # ... and every row's keys and values: its prompt and, on average, half its new tokens
    cfg = be.model.config.get_text_config(decoder=True)
    heads_kv = getattr(cfg, "num_key_value_heads", None) or cfg.num_attention_heads
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    kv_token_bytes = 2 * cfg.num_hidden_layers * heads_kv * head_dim * next(be.model.parameters()).element_size()
    kv_bytes = rows * (prompt_tokens / len(reqs) + s.args.max_new_tokens / 2) * kv_token_bytes
    bound_kv = bandwidth / (weight_bytes + kv_bytes) * rows
    # with each prefix group's shared columns read once (the shared_prefix lever): the tokens its members share less
    row_tokens = rows * (prompt_tokens / len(reqs) + s.args.max_new_tokens / 2)
    saved = shared_saved / max(1, calls)
    return {"weight_gb": round(weight_bytes / 1e9, 2), "mean_batch_rows": rows,
            "bandwidth_tb_s": bandwidth / 1e12, "bandwidth_of": bandwidth_of,
            "decode_bound_tokens_per_s": round(bound, 1),
            "decode_fraction_of_bandwidth_bound": round(decode_tps / bound, 3) if decode_tps else None,
            "kv_gb_per_step": round(kv_bytes / 1e9, 2),
            "kv_gb_per_step_shared_prefix": round(kv_bytes * max(0.0, 1 - saved / row_tokens) / 1e9, 2),
            "decode_bound_with_kv_tokens_per_s": round(bound_kv, 1),
            "decode_fraction_of_bound_with_kv": round(decode_tps / bound_kv, 3) if decode_tps else None,
            "gpu": gpu}


def lever_bandwidth(result: dict) -> dict:
    """Each lever's decode tokens/s as a share of the weights' bound (``bandwidth_report``'s)."""
    bound = result.get("decode_bound_tokens_per_s")
    return {f"lever_{name}_decode_fraction_of_bandwidth_bound":
            round(result[f"lever_{name}_decode_tokens_per_s"] / bound, 3)
            for name, _ in LEVERS if bound and result.get(f"lever_{name}_decode_tokens_per_s")}


def report(s: BenchSetup, m: Measured) -> dict:
    """``run``'s JSON: the engine against the loop, the other baselines, the output check (``check_outputs``) and,
    on a CUDA GPU, the bandwidth bound."""
    eng = m.engine[0]
    prompt_tokens = sum(r.prompt_tokens for r in eng.resps)
    completion_tokens = sum(r.completion_tokens for r in eng.resps)
    stats = eng.stats
    decode_tps = stats["decode_tokens"] / stats["decode_s"] if stats["decode_s"] else None
    result = engine_report(s, m, prompt_tokens, completion_tokens, decode_tps)
    result.update(baselines_report(m))
    result.update(check_outputs(s.be, s.reqs, m.sequential[0], [r.text for r in eng.resps], s.args.max_new_tokens,
                                s.args.tie_ulps))
    if str(s.be.device).startswith("cuda"):
        result.update(bandwidth_report(s, eng.calls, prompt_tokens, decode_tps,
                                       stats.get("shared_prefix_tokens_saved", 0)))
        result.update(lever_bandwidth(result))
    if m.profiles:
        result["profiles"] = m.profiles
    return result


def run(args) -> dict:
    """The benchmark on the hf backend (module docstring): set up, measure each phase asked for, report; in reduced
    precision, with the check that decides its exit status (``fp32_check``)."""
    s = setup_run(args)
    result = report(s, measure(s))
    if result["dtype"] != "float32":
        result["fp32_check"] = fp32_check(args)
    return result


def fp32_check(args) -> dict:
    """The output check where it means something. In reduced precision the engine's batched kernels and the loop's
    one-row kernels round differently, and on random weights' near-flat logits an arg-max flips at margins of a few
    units in the last place (``check_outputs``; kept in the result as information). So a reduced-precision run is
    judged by the tiny random model (peaked logits) in fp32 on the same device: 8 requests, the engine against one
    ``generate`` per request, identical text."""
    small = Namespace(shape="tiny", model=None, device=args.device, dtype="float32", docs=2, doc_tokens=200,
                      max_new_tokens=16, token_budget=65536, repeats=1, tie_ulps=args.tie_ulps)
    r = run(small)
    return {"model": "tiny", "dtype": "float32", "device": r["device"], "requests": r["requests"],
            "identical_count": r["identical_count"], "identical_outputs": r["identical_outputs"],
            "engine_rerun_consistent": r["engine_rerun_consistent"]}


TABLE_LEVERS = tuple(name for name, _ in LEVERS)  # the levers' columns of the GPU table, in ``LEVERS``' order
_LEVER_HEADS = " / ".join(n.replace("_", " ") for n in TABLE_LEVERS)
_EACH = " / ".join("{}" for _ in TABLE_LEVERS)
# rows both tables show: (row, the fields it shows, their format)
WORKLOAD_ROW = ("requests x mean prompt tokens, new tokens", ("requests", "mean_prompt_tokens", "max_new_tokens"),
                "{} x {:.0f}, {}")
LOOP_ROW = ("one `generate` per request, s (timed over)", ("sequential_s", "sequential_timed_requests"), "{} ({})")
ENGINE_ROW = ("engine, s (prefill, decode)", ("engine_s", "engine_prefill_s", "engine_decode_s"), "{} ({}, {})")
GPU_TABLE_ROWS = (  # (row, the fields it shows, their format): docs/benchmark.md's GPU table (``gpu_table``)
    WORKLOAD_ROW,
    ("rows decoded at once", ("mean_batch_rows",), "{:.0f}"),
    LOOP_ROW,
    ("one batched `generate`, s", ("batched_generate_s",), "{}"),
    ("static cache, compiled `generate`, s (first call)", ("compiled_generate_s", "compiled_generate_first_call_s"),
     "{} ({})"),
    ENGINE_ROW,
    ("engine over the loop / batched / compiled", ("speedup", "engine_vs_batched_generate",
                                                   "engine_vs_compiled_generate"), "{}x / {}x / {}x"),
    ("decode step, ms: graphs / eager", ("engine_decode_step_ms", "eager_decode_step_ms"), "{} / {}"),
    ("graphs captured / replayed (all passes)", ("decode_graphs_captured", "decode_graph_replays"), "{} / {}"),
    ("answers equal with and without graphs", ("graphs_identical_to_eager", "requests"), "{} of {}"),
    (f"levers' decode step, ms: {_LEVER_HEADS}", tuple(f"lever_{n}_decode_step_ms" for n in TABLE_LEVERS), _EACH),
    ("levers' share of the weights' bound",
     tuple(f"lever_{n}_decode_fraction_of_bandwidth_bound" for n in TABLE_LEVERS), _EACH.replace("{}", "{:.1%}")),
    ("levers' answers equal to the engine's", (*(f"lever_{n}_identical_to_engine" for n in TABLE_LEVERS), "requests"),
     _EACH + " of {}"),
    ("levers' first pass (capture, compile), s", tuple(f"lever_{n}_first_pass_s" for n in TABLE_LEVERS), _EACH),
    ("keys/values a step: all rows / shared prefixes read once", ("kv_gb_per_step", "kv_gb_per_step_shared_prefix"),
     "{} / {} GB"),
    ("decode tokens/s, share of the weights' bound", ("engine_decode_tokens_per_s",
                                                      "decode_fraction_of_bandwidth_bound"), "{:,.0f}, {:.1%}"),
    ("share of the bound with keys/values read", ("decode_fraction_of_bound_with_kv", "kv_gb_per_step"),
     "{:.1%} ({} GB a step)"),
    ("prefill tokens/s", ("engine_prefill_tokens_per_s",), "{:,.0f}"),
    ("G-Eval option sets/s", ("option_sets_per_s",), "{}"),
)


# docs/benchmark.md's CPU table (``cpu_table``): the rows a CPU run measures, and how its answers compare
CPU_TABLE_ROWS = (
    ("model, dtype", ("model", "dtype"), "{}, {}"),
    WORKLOAD_ROW,
    ("tokens a prefill pass at most (-: the engine's default, 4,096)", ("prefill_budget",), "{:,}"),
    LOOP_ROW,
    ENGINE_ROW,
    ("engine over the loop", ("speedup",), "{}x"),
    ("decode step, ms (steps)", ("engine_decode_step_ms", "engine_decode_steps"), "{} ({})"),
    ("prefill / decode tokens/s", ("engine_prefill_tokens_per_s", "engine_decode_tokens_per_s"), "{:,.0f} / {:,.1f}"),
    ("answers identical to the loop's, of those it answered", ("identical_count", "sequential_timed_requests"),
     "{} of {}"),
    ("largest margin where an answer parted, ulps (partings without a margin)",
     ("largest_divergence_ulps", "unscored_divergences"), "{:g} ({})"),
    ("the rest near-ties (output check passed)", ("equivalent_outputs",), "{}"),
    ("fp32 check (the tiny model in fp32, its own requests): answers identical",
     ("fp32_check.identical_count", "fp32_check.requests"), "{} of {}"),
)


# docs/benchmark.md's table of ``bench --backend openai`` runs (``openai_table``): one request at a time against the
# engine's concurrent requests on a server
OPENAI_TABLE_ROWS = (
    ("served model", ("server_model.id",), "{}"),
    WORKLOAD_ROW,
    ("one request at a time, s", ("sequential_s",), "{}"),
    ("engine (concurrent requests), s", ("engine_s",), "{}"),
    ("engine over one at a time", ("speedup",), "{}x"),
    ("server's prefix-cache hits: one at a time / engine", ("prefix_cache_hit_rate_sequential",
                                                            "prefix_cache_hit_rate_engine"), "{:.0%} / {:.0%}"),
)  # no answers compared: each pass's prompts begin with a marker of their own, so a random model's answers differ


def gpu_table(runs: list[tuple[str, dict]]) -> str:
    """``bench_table`` with the GPU rows (``GPU_TABLE_ROWS``)."""
    return bench_table(runs, GPU_TABLE_ROWS)


def cpu_table(runs: list[tuple[str, dict]]) -> str:
    """``bench_table`` with the CPU rows (``CPU_TABLE_ROWS``)."""
    return bench_table(runs, CPU_TABLE_ROWS)


def openai_table(runs: list[tuple[str, dict]]) -> str:
    """``bench_table`` with the server rows (``OPENAI_TABLE_ROWS``)."""
    return bench_table(runs, OPENAI_TABLE_ROWS)


def bench_table(runs: list[tuple[str, dict]], rows) -> str:
    """A markdown table of ``sumjudge bench`` runs' JSON (label, result), one column each, one row each of ``rows``
    (name, fields, format); what a run did not measure shows as a dash: the cell when its first field is missing,
    else the missing part."""
    lines = ["| | " + " | ".join(f"`{label}`" for label, _ in runs) + " |", "|---" * (len(runs) + 1) + "|"]
    for name, fields, fmt in rows:
        cells = []
        for _, r in runs:
            values = [field_of(r, f) for f in fields]
            if values[0] is None:
                cells.append("-")
                continue
            parts = fmt.replace("{", "\x00{").split("\x00")[1:]  # one format piece per field, text kept
            lead = fmt[:fmt.index("{")]
            cells.append(lead + "".join(piece.format(v) if v is not None else "-" + piece[piece.index("}") + 1:]
                                        for v, piece in zip(values, parts)).replace("-x", "-"))
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def field_of(result: dict, field: str):
    """A bench JSON's value at ``field``, where a dot reaches into a nested result (``fp32_check.identical_count``);
    None where the run has none."""
    value = result
    for key in field.split("."):
        value = value.get(key) if isinstance(value, dict) else None
    return value


def score_option_sets(be, reqs, n: int) -> tuple[int, list[str]]:
    """G-Eval-style option scoring: ``n`` prompts (the workload's, cycled; each the n-th with its own tag so none
    repeats another's key) each scored over the 1-5 scale through the engine, no cache. Returns (sets, methods)."""

    prompts = [reqs[i % len(reqs)] for i in range(n)]
    opts = []
    for i, r in enumerate(prompts):
        last = {**r.messages[-1], "content": r.messages[-1]["content"] + f"\n\nRate it from 1 to 5 (set {i})."}
        opts.append(OptionRequest(messages=[*r.messages[:-1], last], options=GEVAL_OPTIONS, tag=f"set{i}"))
    llm = LLM(be)

    async def score():
        return await asyncio.gather(*(llm.score_options(o.messages, o.options, tag=o.tag) for o in opts))

    scores = asyncio.run(score())
    return len(scores), sorted({s.method for s in scores})


def run_openai(args) -> dict:
    """The same workload against an OpenAI-compatible server (``--backend openai``): every request sent one at a
    time and awaited, as a loop over the papers' prompts would, vs all of them through the engine at once (the
    server batches them). Each pass starts its prompts with its own short marker, so neither reuses the other's
    prefix cache; within a pass the 4 agents of a document share its prefix as in a debate round. vLLM is
    asked to ignore end-of-sequence tokens so that both passes decode exactly ``max_new_tokens`` per request."""

    be = OpenAIBackend.connect(args.model, base_url=args.base_url, concurrency=args.concurrency, extra_body={"ignore_eos": True})
    cut = counted_cut(be.count_tokens) if be.tokenizes else (lambda t, n: " ".join(t.split()[: int(n * 0.75)]))
    llm = LLM(be, cache=NullCache())

    async def one_at_a_time(reqs):
        return [await llm.chat(r) for r in reqs]

    passes = {}
    for k, (name, fn) in enumerate((("sequential", one_at_a_time), ("engine", llm.chat_many)), start=1):
        reqs = build_requests(cut, args.docs, args.doc_tokens, args.max_new_tokens, salt=f"[bench pass {k}]\n")
        before = be.server_counters()
        t0 = time.perf_counter()
        resps = run_sync(fn(reqs))
        dt = time.perf_counter() - t0
        passes[name] = {"s": dt, "resps": resps, "server": server_stats(before, be.server_counters())}
    seq, eng = passes["sequential"], passes["engine"]
    prompt_tokens = sum(r.prompt_tokens for r in eng["resps"])
    completion_tokens = sum(r.completion_tokens for r in eng["resps"])
    rate = (lambda p: p["server"]["prefix_cache_hit_rate"] if p["server"] else None)  # noqa: E731
    return {
        "backend": "openai", "server": be.where, "model": args.model, "server_model": be.info.server_model,
        "requests": len(eng["resps"]), "docs": args.docs, "agents_per_doc": 4, "concurrency": args.concurrency,
        "mean_prompt_tokens": round(prompt_tokens / len(eng["resps"]), 1), "max_new_tokens": args.max_new_tokens,
        "sequential_s": round(seq["s"], 3), "engine_s": round(eng["s"], 3), "speedup": round(seq["s"] / eng["s"], 2),
        "engine_prompt_tokens_per_s": round(prompt_tokens / eng["s"], 1),
        "engine_completion_tokens_per_s": round(completion_tokens / eng["s"], 1),
        "sequential_completion_tokens_per_s": round(sum(r.completion_tokens for r in seq["resps"]) / seq["s"], 1),
        "prefix_cache_hit_rate_sequential": rate(seq), "prefix_cache_hit_rate_engine": rate(eng),
        # the server batches the engine's requests: its kernels may break near-ties otherwise than one by one
        "identical_count": sum(a.text == b.text for a, b in zip(seq["resps"], eng["resps"])),
    }


def run_turns(args) -> dict:
    """A flood and a chain on one engine: one source queues ``docs`` x 4 requests at once, another then asks
    ``turns`` requests one after another (a debate's rounds, a multi-step judge's steps: each waits for the one
    before). Timed twice on the same backend: both from one source (first come, first served: every turn queues behind the
    flood's rest) and as two sources taking turns (``HFBackend`` ``source``). Greedy, no eos, no cache: both
    passes decode the same tokens."""
    dtype = resolve_dtype(args.dtype, args.device)
    model = getattr(args, "model", None)
    be = bench_backend(args, dtype, name=args.shape, token_budget=args.token_budget, max_batch=args.max_batch,
                       prefix_store_mb=0)
    cut = tokenizer_cut(be.tokenizer)
    flood = build_requests(cut, args.docs, args.doc_tokens, args.max_new_tokens, salt="flood ")
    chain = build_requests(cut, -(-args.turns // 4), args.doc_tokens, args.max_new_tokens, salt="chain ")[:args.turns]

    async def scenario(flood_source: str, chain_source: str) -> dict:
        steps = lambda: be.decoder.stats["decode_steps"]  # noqa: E731
        t0, s0 = time.perf_counter(), steps()
        queued = asyncio.ensure_future(be.generate(flood, source=flood_source))
        while not be._queue and not queued.done():  # the flood is queued before the first turn
            await asyncio.sleep(0.01)
        for r in chain:
            await be.generate([r], source=chain_source)
        chain_s, chain_steps = time.perf_counter() - t0, steps() - s0
        await queued
        return {"chain_s": round(chain_s, 2), "chain_decode_steps": chain_steps,
                "all_s": round(time.perf_counter() - t0, 2), "all_decode_steps": steps() - s0}

    fcfs = asyncio.run(scenario("", ""))
    turns = asyncio.run(scenario("flood", "chain"))
    return {"model": model or args.shape, "dtype": dtype, "flood_requests": len(flood), "chain_turns": len(chain),
            "max_new_tokens": args.max_new_tokens, "max_batch": args.max_batch, "token_budget": args.token_budget,
            "one_source": fcfs, "two_sources": turns,
            "chain_speedup": round(fcfs["chain_s"] / turns["chain_s"], 2) if turns["chain_s"] else None,
            "chain_steps_ratio": round(fcfs["chain_decode_steps"] / turns["chain_decode_steps"], 2)
            if turns["chain_decode_steps"] else None}


def turns_table(result: dict) -> str:
    """``run_turns``' JSON as the markdown table docs/benchmark.md quotes: for each way of serving (one source, two
    taking turns), the decode steps and seconds until the chain's last answer and until the whole workload's."""
    ways = (("one source (first come, first served)", result["one_source"]),
            ("two sources taking turns", result["two_sources"]))
    lines = ["| | " + " | ".join(name for name, _ in ways) + " |", "|---" * (len(ways) + 1) + "|"]
    for row, what in (("the chain's last answer: decode steps (s)", "chain"),
                      ("the whole workload: decode steps (s)", "all")):
        lines.append(f"| {row} | " + " | ".join(f"{w[what + '_decode_steps']} ({w[what + '_s']})" for _, w in ways)
                     + " |")
    return "\n".join(lines)


def passed(result: dict) -> bool:
    """fp32 must be identical to the loop; a reduced-precision run passes when the engine answers the same on a rerun
    and its ``fp32_check`` (the tiny model in fp32 on the same device) is identical to the loop. Its own comparison
    with the loop (``equivalent_outputs``: divergences only at near-ties) is information, not a failure."""
    if result["dtype"] == "float32":
        return result["identical_outputs"]
    check = result.get("fp32_check") or {}
    return bool(result["engine_rerun_consistent"] and check.get("identical_outputs")
                and check.get("engine_rerun_consistent"))


def main(args) -> int:
    """The JSON of the benchmark asked for, on stdout, with the machine it ran on (``machine``: CPU model, cores,
    Python, date; a GPU run also names its GPU)."""
    if getattr(args, "backend", "hf") == "openai":
        if not args.model or not args.base_url:
            raise ConfigError("bench --backend openai needs --base-url and --model (the name the server serves)")
        print(json.dumps({**run_openai(args), "machine": machine()}, indent=2))
        return 0

    require("sumjudge bench on the hf backend (`bench --backend openai` needs no extra)")
    if getattr(args, "turns", 0):
        print(json.dumps({**run_turns(args), "machine": machine()}, indent=2))
        return 0
    result = {**run(args), "machine": machine()}
    print(json.dumps(result, indent=2))
    return 0 if passed(result) else 1
