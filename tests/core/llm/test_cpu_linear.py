"""Linear layers through oneDNN for few rows on a CPU: the same numbers as transformers' path, training untouched."""

import pytest
import torch

from sumjudge.llm import cpu_linear

needs_onednn = pytest.mark.skipif(not cpu_linear.onednn_works(), reason="this CPU's oneDNN has no float32 kernel")


def load(tiny_model_dir, dtype=torch.float32):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=dtype).eval()


@needs_onednn
def test_routed_layers_give_transformers_logits(tiny_model_dir, monkeypatch):
    stock, ours = load(tiny_model_dir), load(tiny_model_dir)
    routed = cpu_linear.use_onednn_linear(ours)
    assert routed == sum(type(m) is torch.nn.Linear for m in stock.modules()) > 0
    calls = []
    op = torch.ops.mkldnn._linear_pointwise
    ids = torch.randint(10, 1000, (4, 9), generator=torch.Generator().manual_seed(0))
    with torch.inference_mode():
        want, got = stock(input_ids=ids).logits, ours(input_ids=ids).logits
    assert (want - got).abs().max() < 1e-4
    # a call over more rows than ROWS_AT_MOST keeps torch's linear (MKL is faster there)
    monkeypatch.setattr(cpu_linear, "ROWS_AT_MOST", 8)
    monkeypatch.setattr(torch.ops.mkldnn, "_linear_pointwise", lambda *a: calls.append(a[0].shape) or op(*a),
                        raising=False)
    with torch.inference_mode():
        ours(input_ids=ids[:1, :4])  # 4 rows: oneDNN
        n_small = len(calls)
        ours(input_ids=ids)  # 36 rows: torch, except the output layer's last position
    assert n_small == routed and len(calls) - n_small <= 1


@needs_onednn
def test_training_keeps_gradients(tiny_model_dir):
    model = load(tiny_model_dir)
    cpu_linear.use_onednn_linear(model)
    model.train()
    ids = torch.randint(10, 1000, (2, 6), generator=torch.Generator().manual_seed(1))
    loss = model(input_ids=ids, labels=ids).loss
    loss.backward()
    grads = [p.grad for m in model.modules() if type(m) is torch.nn.Linear for p in m.parameters()]
    assert grads and all(g is not None and torch.isfinite(g).all() for g in grads)


def test_other_dtypes_are_left_as_they_were(tiny_model_dir):
    model = load(tiny_model_dir, dtype=torch.bfloat16)
    assert cpu_linear.use_onednn_linear(model) == 0
    assert all("forward" not in vars(m) for m in model.modules())


def test_the_backend_records_its_linear_layers(tiny_backend):
    assert tiny_backend.info.extra["linear"] == ("onednn-few-rows" if cpu_linear.onednn_works() else "torch")
