"""The whole criss-cross layer as one op, sample by sample (``criss_cross_layer``, ``amx.cpp``).

``criss_cross_layer(x, ...)`` runs ``attention_input``, ``criss_cross_attention`` and
``attention_output_feed_forward``'s block routines and attention on one sample's rows at a time
(per-thread scratch in the L2 cache): the same bits as the three ops. Inference takes it where the
samples split evenly over the threads (``lowp_layer.per_sample``); the adapter step never does.
Tests skip where the library is not built or the CPU or kernel gives no AMX.
"""

from __future__ import annotations

from unittest import mock

import pytest
import torch

from passport_kit.model.lowp import layer as lowp_layer
from passport_kit.model.lowp import loader
from passport_kit.model.lowp.cast import forget
from passport_kit.model.transformer import CrissCrossEncoder

BF16 = torch.bfloat16


def _encoder(n_layers: int = 2, d: int = 200, heads: int = 8, f: int = 800) -> CrissCrossEncoder:
    encoder = CrissCrossEncoder(n_layers, d, heads, f, 0.1).eval()
    encoder.requires_grad_(False)
    with torch.no_grad():  # non-trivial norms and biases
        g = torch.Generator().manual_seed(d + f)
        for name, t in encoder.named_parameters():
            if name.endswith("bias") or "norm" in name:
                t.add_(0.2 * torch.randn(t.shape, generator=g))
    return encoder


def _three_ops(amx, layer, x: torch.Tensor) -> torch.Tensor:  # noqa: ANN001
    w = lowp_layer.prepare(layer, BF16).w
    qkv = amx.attention_input(x, w["norm1_w"], w["norm1_b"], layer.norm1.eps, w["in_wp"], w["in_b"])
    att = amx.criss_cross_attention(qkv, layer.self_attn_s.n_heads, layer.self_attn_t.n_heads)
    return amx.attention_output_feed_forward(att, x, w["out_wp"], w["out_b"], w["norm2_w"], w["norm2_b"],
                                             layer.norm2.eps, w["linear1_wp"], w["linear1_b"], w["linear2_wp"],
                                             w["linear2_b"])


def _one_op(amx, layer, x: torch.Tensor) -> torch.Tensor:  # noqa: ANN001
    w = lowp_layer.prepare(layer, BF16).w
    return amx.criss_cross_layer(x, w["norm1_w"], w["norm1_b"], layer.norm1.eps, w["in_wp"], w["in_b"],
                                 layer.self_attn_s.n_heads, layer.self_attn_t.n_heads, w["out_wp"], w["out_b"],
                                 w["norm2_w"], w["norm2_b"], layer.norm2.eps, w["linear1_wp"], w["linear1_b"],
                                 w["linear2_wp"], w["linear2_b"])


@pytest.mark.parametrize(("b", "c", "p"), [(1, 1, 1), (2, 5, 7), (3, 12, 30), (1, 30, 12), (16, 12, 30)])
def test_the_layer_op_equals_the_three_ops(amx, b: int, c: int, p: int) -> None:  # noqa: ANN001
    layer = _encoder(1).layers[0]
    x = (torch.randn(b, c, p, 200, generator=torch.Generator().manual_seed(b * c * p)) * 2).to(BF16)
    expected = _three_ops(amx, layer, x)
    for threads in (1, 2):  # scratch reused across calls and threads
        before = torch.get_num_threads()
        torch.set_num_threads(threads)
        try:
            got = _one_op(amx, layer, x)
        finally:
            torch.set_num_threads(before)
        assert torch.equal(got, expected)


@pytest.mark.parametrize(("d", "heads", "f", "c", "p"), [(64, 4, 96, 3, 11), (300, 6, 520, 4, 9)])
def test_other_widths_and_alternating_shapes(amx, d: int, heads: int, f: int, c: int, p: int) -> None:  # noqa: ANN001
    # E not a multiple of 32, F not of 32, sample rows below and above a block; wider than the
    # in-register LayerNorm takes (d = 300); the per-thread scratch rebuilt when shapes change
    layer = _encoder(1, d, heads, f).layers[0]
    for shape in ((2, c, p), (3, p, c), (2, c, p)):
        x = torch.randn(*shape, d, generator=torch.Generator().manual_seed(sum(shape))).to(BF16)
        assert torch.equal(_one_op(amx, layer, x), _three_ops(amx, layer, x))


def test_non_contiguous_empty_and_wrong_inputs(amx) -> None:  # noqa: ANN001
    layer = _encoder(1).layers[0]
    x = torch.randn(3, 4, 5, 200).to(BF16)
    xt = x.transpose(1, 2).contiguous().transpose(1, 2)
    assert torch.equal(_one_op(amx, layer, xt), _three_ops(amx, layer, x))
    assert _one_op(amx, layer, x[:0]).shape == (0, 4, 5, 200)
    with pytest.raises(RuntimeError, match="criss_cross_layer"):
        _one_op(amx, layer, x.reshape(60, 200))
    with pytest.raises(RuntimeError, match="criss_cross_layer"):
        _one_op(amx, layer, x.float())


@pytest.mark.parametrize(("samples", "threads", "one_op"), [
    (1, 1, True), (2, 1, True), (1, 2, False), (2, 2, True), (3, 2, False), (9, 2, False), (16, 2, True),
    (33, 2, False), (35, 2, True), (64, 2, True), (4, 4, True), (6, 4, False), (101, 4, True), (3, 0, True),
])
def test_the_fallback_rule(samples: int, threads: int, one_op: bool) -> None:
    assert lowp_layer.per_sample(samples, threads) is one_op


def _spy(kernels):  # noqa: ANN001, ANN202
    spy = mock.MagicMock(wraps=kernels)
    for name in ("attention_input", "attention_output_feed_forward", "criss_cross_attention", "criss_cross_layer",
                 "layer_norm", "feed_forward", "pack_feed_forward_weight", "pack_attention_weight"):
        setattr(spy, name, mock.MagicMock(wraps=getattr(kernels, name)))
    spy.amx_available = mock.MagicMock(return_value=True)
    return spy


def _bf16(encoder: CrissCrossEncoder, x: torch.Tensor) -> torch.Tensor:
    with torch.inference_mode(), torch.autocast("cpu", dtype=BF16):
        return encoder(x).float()


@pytest.mark.parametrize(("b", "one_op"), [(4, True), (1, False)])
def test_inference_takes_the_layer_op_by_the_rule_and_the_adapter_step_does_not(amx, b: int, one_op: bool) -> None:  # noqa: ANN001
    encoder = _encoder()
    forget(encoder)
    spy = _spy(amx)
    x = torch.randn(b, 3, 4, 200)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with mock.patch.object(loader, "ops", return_value=spy):
            out = _bf16(encoder, x)
            n = len(encoder.layers)
            assert spy.criss_cross_layer.call_count == (n if one_op else 0)
            assert spy.attention_input.call_count == (0 if one_op else n)
            assert spy.criss_cross_attention.call_count == (0 if one_op else n)
            assert spy.layer_norm.call_count == 0 and spy.feed_forward.call_count == 0
            spy.criss_cross_layer.reset_mock()
            xi = x.clone().requires_grad_(True)  # the adapter step: frozen layers, input gradient
            with torch.autocast("cpu", dtype=BF16):
                encoder(xi).float().sum().backward()
            assert spy.criss_cross_layer.call_count == 0 and xi.grad is not None
        with mock.patch.object(lowp_layer, "per_sample", return_value=not one_op):
            assert torch.equal(out, _bf16(encoder, x))  # the other form: the same bits
    finally:
        torch.set_num_threads(before)
        forget(encoder)
