"""The bf16 encoder path (CPUs with native bf16): agrees with fp32, leaves fp32 and saved weights alone."""

from __future__ import annotations

import io
from unittest import mock

import pytest
import torch
import torch.nn.functional as F
from tests.model.model_helpers import make_meta, needs_cpu_bf16

from passport_kit.model import Classifier, apply_policy, build_backbone, model_config
from passport_kit.model.lowp import layer as lowp_layer
from passport_kit.model.lowp.linear import linear_lowp
from passport_kit.model.transformer import CrissCrossEncoder

BF16 = torch.bfloat16


def _encoder(n_layers: int = 2) -> CrissCrossEncoder:
    encoder = CrissCrossEncoder(n_layers, 200, 8, 800, 0.1).eval()
    encoder.requires_grad_(False)
    return encoder


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.float() - b.float()).norm() / b.float().norm())


def _input_grad(encoder: CrissCrossEncoder, x: torch.Tensor, *, bf16: bool) -> tuple[torch.Tensor, torch.Tensor]:
    xi = x.clone().requires_grad_(True)
    with torch.autocast("cpu", dtype=BF16, enabled=bf16):
        y = encoder(xi)
    weights = torch.randn(y.shape, generator=torch.Generator().manual_seed(1))
    (y.float() * weights).sum().backward()
    return y.detach().float(), xi.grad


@needs_cpu_bf16
@pytest.mark.parametrize(("gelu", "add"), [(False, False), (True, False), (False, True)])
def test_linear_lowp_matches_f_linear(gelu: bool, add: bool) -> None:
    x = torch.randn(2, 5, 7, 200)[..., 50:150].to(BF16)  # a strided slice
    weight, bias = torch.randn(300, 100).to(BF16), torch.randn(300).to(BF16)
    other = torch.randn(2, 5, 7, 300).to(BF16)
    expected = F.linear(x.float(), weight.float(), bias.float())
    expected = F.gelu(expected) if gelu else expected
    expected = expected + other.float() if add else expected
    got = linear_lowp(x, weight, bias, gelu=gelu, add=other if add else None)
    assert got.dtype == BF16
    assert _rel(got, expected) < 1e-2


@pytest.mark.parametrize("gap", [0.0, 200.0])
def test_attention_matches_the_row_wise_softmax(gap: float) -> None:
    # gap 200: the first query's scores lie 200 below the rest of its sequence's (shifted by the
    # sequence's maximum, its exponentials underflow), so the row-wise shift must be taken.
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(6, 12, 25, generator=gen) for _ in range(3))
    k[:, :, 0] = 1.0
    q[:, :, 0] = 0.0
    q[:, 0, 0] = -gap
    q16, k16, v16 = (t.to(BF16) for t in (q, k, v))
    expected_w = torch.softmax(torch.bmm(q16, k16.transpose(1, 2)).float(), -1)  # the same bf16 scores
    out, weights = lowp_layer.attention(q16, k16, v16)
    assert torch.isfinite(weights.float()).all()
    assert (weights.float() - expected_w).abs().max() < 4e-3  # bf16 rounding of the weights
    assert _rel(out, expected_w.to(BF16).float() @ v16.float()) < 1e-2


@needs_cpu_bf16
@pytest.mark.parametrize(("b", "c", "p"), [(1, 1, 1), (3, 5, 7), (4, 12, 30)])
@pytest.mark.parametrize("chunk_tokens", [1, 10**9])
def test_bf16_inference_agrees_with_fp32(b: int, c: int, p: int, chunk_tokens: int) -> None:
    encoder = _encoder()
    encoder.chunk_tokens = chunk_tokens
    x = torch.randn(b, c, p, 200)
    with torch.inference_mode():
        ref = encoder(x)
        with torch.autocast("cpu", dtype=BF16):
            low = encoder(x)
            autocast_graph = x.to(BF16)  # as the patch embedding gives it under autocast
            for layer in encoder.layers:  # plain autocast over the layers' ordinary forward
                autocast_graph = layer(autocast_graph)
    assert low.dtype == BF16
    assert _rel(low, ref) < 0.02
    assert _rel(low, ref) <= 1.5 * _rel(autocast_graph, ref) + 1e-3


@needs_cpu_bf16
@pytest.mark.parametrize("chunk_tokens", [1, 10**9])
def test_frozen_bf16_input_gradient_agrees_with_fp32(chunk_tokens: int) -> None:
    encoder = _encoder()
    encoder.chunk_tokens = chunk_tokens  # 1: one sample per micro-batch
    x = torch.randn(3, 5, 7, 200)
    y32, g32 = _input_grad(encoder, x, bf16=False)
    with mock.patch.object(lowp_layer.FrozenLayerLowp, "apply", wraps=lowp_layer.FrozenLayerLowp.apply) as spy:
        y16, g16 = _input_grad(encoder, x, bf16=True)
    assert spy.call_count == len(encoder.layers) * (3 if chunk_tokens == 1 else 1)
    assert _rel(y16, y32) < 0.02
    assert _rel(g16, g32) < 0.03
    assert all(q.grad is None for q in encoder.parameters())


def test_fp32_takes_none_of_the_bf16_code() -> None:
    encoder = _encoder()
    x = torch.randn(2, 3, 4, 200)
    with mock.patch.object(lowp_layer, "prepare", side_effect=AssertionError("bf16 path in fp32")):
        with torch.inference_mode():
            fast = encoder(x)
        _input_grad(encoder, x, bf16=False)
    expected = x
    with torch.no_grad():
        for layer in encoder.layers:
            expected = layer.forward_no_graph(expected)
    assert torch.equal(fast, expected)  # the fp32 no-graph path, bit for bit


def test_trainable_layers_keep_the_autograd_path_under_bf16() -> None:
    model = Classifier(build_backbone(model_config("cbramod-tiny", "mlp-experts")), 3)
    apply_policy(model, "full")
    with mock.patch.object(lowp_layer.FrozenLayerLowp, "apply", side_effect=AssertionError("frozen path for trainable weights")):
        with torch.autocast("cpu", dtype=BF16):
            loss = model(torch.randn(2, 4, 3, 200), make_meta(4)).float().sum()
        loss.backward()
    assert model.backbone.encoder.layers[0].linear1.weight.grad is not None


@needs_cpu_bf16
def test_adapter_step_in_bf16_trains_only_the_policy_parameters() -> None:
    model = Classifier(build_backbone(model_config("cbramod-tiny", "mlp-experts")), 3)
    apply_policy(model, "adapter")
    model.train()
    x, meta = torch.randn(3, 4, 6, 200), make_meta(4)
    with torch.autocast("cpu", dtype=BF16):
        loss = F.cross_entropy(model(x, meta).float(), torch.tensor([0, 1, 2]))
    loss.backward()
    grads = {n for n, q in model.named_parameters() if q.grad is not None}
    assert grads == {n for n, q in model.named_parameters() if q.requires_grad}
    assert all(torch.isfinite(model.get_parameter(n).grad).all() for n in grads)


@needs_cpu_bf16
def test_changed_weights_are_never_read_from_the_cast_copy() -> None:
    encoder, other = _encoder(1), _encoder(1)
    torch.nn.init.normal_(other.layers[0].linear1.weight)  # differ from `encoder`
    x = torch.randn(2, 3, 4, 200)
    with torch.inference_mode(), torch.autocast("cpu", dtype=BF16):
        before = encoder(x)
    encoder.load_state_dict(other.state_dict())
    with torch.inference_mode(), torch.autocast("cpu", dtype=BF16):
        after, expected = encoder(x), other(x)
    assert not torch.equal(after, before)
    assert torch.equal(after, expected)


@needs_cpu_bf16
def test_bf16_run_leaves_the_state_dict_byte_identical() -> None:
    encoder = _encoder()

    def saved() -> bytes:
        buf = io.BytesIO()
        torch.save(encoder.state_dict(), buf)
        return buf.getvalue()

    before = saved()
    with torch.inference_mode(), torch.autocast("cpu", dtype=BF16):
        encoder(torch.randn(2, 3, 4, 200))
    _input_grad(encoder, torch.randn(2, 3, 4, 200), bf16=True)
    assert saved() == before
