"""Criss-cross encoder: the no-graph (inference / frozen) path equals the autograd path, and
the attention halves attend along the right axis."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from model_helpers import make_meta, needs_cpu_bf16

from passport_kit.model import Classifier, apply_policy, build_backbone, model_config
from passport_kit.model.transformer import CrissCrossEncoder, CrissCrossLayer


def _encoder(n_layers: int = 2) -> CrissCrossEncoder:
    torch.manual_seed(0)
    return CrissCrossEncoder(n_layers, 200, 8, 800, 0.1).eval()


def _graph_path(encoder: CrissCrossEncoder, x: torch.Tensor) -> torch.Tensor:
    for layer in encoder.layers:
        x = layer(x)
    return x


@pytest.mark.parametrize(("b", "c", "p"), [(1, 1, 1), (3, 5, 7), (4, 12, 30), (5, 19, 2)])
@pytest.mark.parametrize("chunk_tokens", [1, 100, 10**9])
def test_no_graph_path_equals_graph_path(b: int, c: int, p: int, chunk_tokens: int) -> None:
    encoder = _encoder()
    encoder.chunk_tokens = chunk_tokens  # 1: one sample per micro-batch; 10**9: one micro-batch
    x = torch.randn(b, c, p, 200)
    with torch.inference_mode():
        fast = encoder(x)
    torch.testing.assert_close(fast, _graph_path(encoder, x), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(("requires_grad", "train", "expect_graph"), [(True, False, True), (False, False, False), (False, True, True)])
def test_path_choice(requires_grad: bool, train: bool, expect_graph: bool) -> None:
    encoder = _encoder(1).train(train)
    encoder.requires_grad_(False)
    x = torch.randn(2, 3, 4, 200, requires_grad=requires_grad)
    assert encoder._needs_graph(x) is expect_graph
    assert encoder(x).requires_grad is requires_grad


def test_gradient_reaches_the_input_through_a_frozen_encoder() -> None:
    encoder = _encoder()
    encoder.requires_grad_(False)
    x = torch.randn(2, 3, 4, 200, requires_grad=True)
    encoder(x).square().sum().backward()
    assert x.grad is not None and float(x.grad.abs().sum()) > 0
    assert all(q.grad is None for q in encoder.parameters())


@pytest.mark.parametrize(("axis", "half"), [(1, slice(0, 100)), (2, slice(100, 200))])
def test_each_half_attends_only_along_its_axis(axis: int, half: slice) -> None:
    # Changing one token may change the attention half only at tokens that share its patch
    # (spatial, axis 1) or its channel (temporal, axis 2).
    layer = _encoder(1).layers[0]
    attention = layer.self_attn_s if axis == 1 else layer.self_attn_t
    h = torch.randn(1, 4, 5, 200)
    h2 = h.clone()
    h2[0, 1, 2] += 1.0
    with torch.inference_mode():
        delta = (attention.attend(h2[..., half], axis) - attention.attend(h[..., half], axis)).abs().amax(-1)[0]
    reached = delta > 1e-6
    expected = torch.zeros(4, 5, dtype=torch.bool)
    if axis == 1:
        expected[:, 2] = True
    else:
        expected[1, :] = True
    assert torch.equal(reached, expected)


def test_attention_equals_multihead_attention() -> None:
    # The packed weights are nn.MultiheadAttention's: the same tensors give the same output.
    layer = _encoder(1).layers[0]
    mha = torch.nn.MultiheadAttention(100, 4, batch_first=True).eval()
    mha.load_state_dict(layer.self_attn_s.state_dict())
    h = torch.randn(2, 6, 3, 100)
    seqs = h.transpose(1, 2).reshape(6, 6, 100)  # (B·P, C, E): the channels of each patch
    with torch.inference_mode():
        expected = mha(seqs, seqs, seqs, need_weights=False)[0]
        got = F.linear(layer.self_attn_s.attend(h, 1), mha.out_proj.weight, mha.out_proj.bias)
    torch.testing.assert_close(got.transpose(1, 2).reshape(6, 6, 100), expected, rtol=1e-5, atol=1e-5)


def test_head_policy_training_uses_no_encoder_graph(monkeypatch: pytest.MonkeyPatch) -> None:
    model = Classifier(build_backbone(model_config("cbramod-tiny", "mlp-experts")), 3)
    apply_policy(model, "head")
    model.train()

    def graph_forward(self: object, x: torch.Tensor) -> torch.Tensor:
        raise AssertionError("the frozen encoder took the autograd path")

    monkeypatch.setattr(CrissCrossLayer, "forward", graph_forward)
    x = torch.randn(2, 3, 4, 200)
    F.cross_entropy(model(x, make_meta(3)), torch.tensor([0, 2])).backward()
    assert all(q.grad is not None for q in model.head.parameters())
    assert all(q.grad is None for q in model.backbone.parameters())


@pytest.mark.parametrize("head_dim", [25, 16])
def test_padded_heads_give_the_same_attention(head_dim: int) -> None:
    # The CUDA path pads CBraMod's 25-wide heads to 32 for the fused kernels: same numbers, same gradients.
    from passport_kit.model.transformer import fused_attention

    torch.manual_seed(0)
    q, k, v = (torch.randn(3, 4, 12, head_dim, requires_grad=True) for _ in range(3))
    plain = fused_attention(q, k, v, pad_heads=False)
    padded = fused_attention(q, k, v, pad_heads=True)
    assert padded.shape == plain.shape
    torch.testing.assert_close(padded, plain, rtol=1e-5, atol=1e-6)
    grads = torch.autograd.grad(plain.square().sum(), (q, k, v))
    torch.testing.assert_close(torch.autograd.grad(padded.square().sum(), (q, k, v)), grads, rtol=1e-5, atol=1e-5)


def test_cpu_attention_is_not_padded() -> None:
    from passport_kit.model.transformer import fused_attention

    q, k, v = (torch.randn(2, 4, 30, 25) for _ in range(3))
    assert torch.equal(fused_attention(q, k, v), F.scaled_dot_product_attention(q, k, v))


@needs_cpu_bf16
@pytest.mark.parametrize("kind", ["mlp", "probe"])
def test_heads_run_in_fp32_under_bf16_autocast(kind: str) -> None:
    # the head is a negligible share of the work; in bf16 its rounding was the main cause of
    # classes differing between bf16 and fp32 inference (issue 36)
    torch.manual_seed(0)
    options = {"n_channels": 3} if kind == "probe" else {}
    model = Classifier(build_backbone(model_config("cbramod-tiny", "mlp-experts")), 4, kind=kind, **options).eval()
    if kind == "probe":
        torch.nn.init.normal_(model.head.linear.weight)
    x = torch.randn(5, 3, 4, 200)
    meta = make_meta(3)
    with torch.inference_mode():
        with torch.autocast("cpu", dtype=torch.bfloat16):
            feats = model.backbone(x, meta, None, None, getattr(model.head, "layer", None))
            under_autocast = model.head(feats, x) if kind == "probe" else model.head(feats)
        plain = model.head(feats.float(), x) if kind == "probe" else model.head(feats.float())
    assert under_autocast.dtype == torch.float32
    torch.testing.assert_close(under_autocast, plain, rtol=1e-6, atol=1e-6)
