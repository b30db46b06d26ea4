"""Engine benchmark: a MADISSE-round-shaped workload, one ``generate`` per request vs the batched engine.

K documents of about ``doc_tokens`` Llama-3 tokens; 4 agents per document see the same document
with different initial stances; greedy decoding with a fixed ``max_new_tokens`` (no eos, so every
request decodes the same number of tokens and both paths do identical work). (a) calls
``model.generate`` once per request in a loop, as the papers' released code does; (b) sends all
requests through ``LLM.chat_many`` (no cache), which the hf backend micro-batches. Prints JSON.
"""

from __future__ import annotations

import asyncio
import json
import time

STANCES = ("The summary is faithful.", "The summary is unfaithful.")
# HBM bandwidth used for the memory-bound decode ceiling (bytes/s).
H100_SXM_BANDWIDTH = 3.35e12


def _documents(k: int, doc_tokens: int, tok) -> list[tuple[str, str]]:
    """(document, summary) pairs: real MeetingBank transcripts when the data is present, else synthetic text."""
    docs: list[tuple[str, str]] = []
    try:
        from .data.registry import load

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
    out = []
    for d, s in docs[:k]:
        ids = tok(d, add_special_tokens=False).input_ids[:doc_tokens]
        out.append((tok.decode(ids), s))
    return out


def build_requests(tok, k: int, doc_tokens: int, max_new_tokens: int):
    from .llm import ChatRequest
    from .prompts import render

    reqs = []
    for di, (doc, summ) in enumerate(_documents(k, doc_tokens, tok)):
        base = render("madisse/table26_zero_shot", doc=doc, summary=summ)
        for agent in range(4):
            text = f"{base}\n\nYou are agent {agent + 1}. Your initial belief: {STANCES[agent % 2]}"
            reqs.append(ChatRequest(messages=[{"role": "user", "content": text}], max_new_tokens=max_new_tokens,
                                    tag=f"doc{di}/agent{agent}"))
    return reqs


def _model_for_shape(shape: str, device: str):
    """tiny: built on disk once (data/models/tiny-llama3); llama3-8b: random bf16 weights in memory."""
    from .llm.models import LLAMA3_8B_SHAPE, llama3_tokenizer, resolve_model

    if shape == "tiny":
        return resolve_model("tiny"), None
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tok = llama3_tokenizer()
    cfg = LlamaConfig(vocab_size=len(tok), tie_word_embeddings=False, bos_token_id=tok.bos_token_id,
                      eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id, **LLAMA3_8B_SHAPE)
    with torch.device(device):
        model = LlamaForCausalLM(cfg).to(torch.bfloat16)
    return model, tok


def main(args) -> int:
    import torch

    from .llm.engine import LLM
    from .llm.hf import HFBackend

    model_or_path, tok = _model_for_shape(args.shape, args.device)
    if tok is None:
        be = HFBackend(model_or_path, device=args.device, token_budget=args.token_budget)
    else:
        be = HFBackend.from_loaded(model_or_path, tok, name="random-llama3-8b-shape", token_budget=args.token_budget)
    be.eos_ids = []  # decode exactly max_new_tokens in both paths
    be.decoder.eos = set()
    reqs = build_requests(be.tokenizer, args.docs, args.doc_tokens, args.max_new_tokens)

    # (a) one generate call per request
    from transformers import GenerationConfig

    gen_cfg = GenerationConfig(max_new_tokens=args.max_new_tokens, do_sample=False, eos_token_id=None,
                               pad_token_id=be.tokenizer.pad_token_id)
    sync = torch.cuda.synchronize if str(be.device).startswith("cuda") else (lambda: None)

    def sequential():
        texts = []
        with torch.inference_mode():
            for r in reqs:
                ids = torch.tensor([be.encode(r.messages)], device=be.device)
                out = be.model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), generation_config=gen_cfg)
                texts.append(be.tokenizer.decode(out[0, ids.shape[1]:], skip_special_tokens=True))
        return texts

    def engine():  # (b) the engine, no cache: every request is computed
        be.generate_calls = 0
        return asyncio.run(LLM(be).chat_many(reqs))

    def best_of(fn):
        """Fastest of ``args.repeats`` runs (the usual way to take noise out of a wall-clock benchmark)."""
        times, result = [], None
        for _ in range(max(1, args.repeats)):
            sync()
            t0 = time.perf_counter()
            result = fn()
            sync()
            times.append(time.perf_counter() - t0)
        return result, min(times)

    seq_texts, seq_s = best_of(sequential)
    resps, eng_s = best_of(engine)

    prompt_tokens = sum(r.prompt_tokens for r in resps)
    completion_tokens = sum(r.completion_tokens for r in resps)
    same = [a == b.text for a, b in zip(seq_texts, resps)]
    result = {
        "shape": args.shape, "device": str(be.device), "dtype": be.info.extra.get("dtype"),
        "requests": len(reqs), "docs": args.docs, "agents_per_doc": 4, "repeats": args.repeats,
        "mean_prompt_tokens": round(prompt_tokens / len(reqs), 1), "max_new_tokens": args.max_new_tokens,
        "sequential_s": round(seq_s, 3), "engine_s": round(eng_s, 3), "speedup": round(seq_s / eng_s, 2),
        "engine_generate_calls": be.generate_calls,
        "engine_prompt_tokens_per_s": round(prompt_tokens / eng_s, 1),
        "engine_completion_tokens_per_s": round(completion_tokens / eng_s, 1),
        "sequential_completion_tokens_per_s": round(completion_tokens / seq_s, 1),
        "identical_outputs": all(same), "identical_count": sum(same),
    }
    if str(be.device).startswith("cuda"):
        weight_bytes = sum(p.numel() * p.element_size() for p in be.model.parameters())
        rows = len(reqs) / max(1, be.generate_calls)
        bound = H100_SXM_BANDWIDTH / weight_bytes * rows  # every decode step reads all weights once
        result.update({"weight_gb": round(weight_bytes / 1e9, 2), "mean_batch_rows": rows,
                       "decode_bound_tokens_per_s": round(bound, 1),
                       "decode_fraction_of_bandwidth_bound": round(completion_tokens / eng_s / bound, 3),
                       "gpu": torch.cuda.get_device_name()})
    print(json.dumps(result, indent=2))
    return 0 if result["identical_outputs"] else 1
