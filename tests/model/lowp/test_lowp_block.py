"""The fused products around the attention on AMX (``amx.cpp``) against fp64 and today's op sequence.

``attention_input(x, norm_w, norm_b, eps, w_in_packed, b_in) = LN1(x) W_inᵀ + b_in`` and
``attention_output_feed_forward(att, x, w_out_packed, b_out, norm2_w, norm2_b, eps, w1p, b1, w2p, b2)
= x1 + FFN(LN2(x1))``, ``x1 = x + att W_outᵀ + b_out``, with W_in and W_out the layer's block-diagonal
packed projections: never further from fp64 (of the same bf16 inputs) than the unfused sequence
(``layer_norm``, oneDNN's products, ``feed_forward``), and the encoder no further from fp32. Tests
skip where the library is not built, lacks these ops, or the CPU or kernel gives no AMX.
"""

from __future__ import annotations

from unittest import mock

import pytest
import torch

from passport_kit.model.lowp import layer as lowp_layer
from passport_kit.model.lowp import loader
from passport_kit.model.lowp.linear import linear_lowp
from passport_kit.model.lowp.cast import forget
from passport_kit.model.transformer import CrissCrossEncoder

BF16 = torch.bfloat16
F64 = torch.float64
EPS = 1e-5


def _block_diagonal(n: int, k: int, g: torch.Generator) -> torch.Tensor:
    w = torch.zeros(2 * n, 2 * k)
    w[:n, :k] = torch.randn(n, k, generator=g) / k**0.5
    w[n:, k:] = torch.randn(n, k, generator=g) / k**0.5
    return w.to(BF16)


def _norm(d: int, g: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    return (1 + 0.2 * torch.randn(d, generator=g)).to(BF16), (0.2 * torch.randn(d, generator=g)).to(BF16)


def _ln64(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.layer_norm(x.to(F64), (x.shape[-1],), w.to(F64), b.to(F64), EPS)


def _errors(got: torch.Tensor, exact: torch.Tensor) -> tuple[float, float]:
    err = (got.to(F64) - exact).abs()
    return float(err.max()), float(err.mean())


def _no_further(got: torch.Tensor, current: torch.Tensor, exact: torch.Tensor) -> None:
    (mx, mean), (mx_cur, mean_cur) = _errors(got, exact), _errors(current, exact)
    assert mx <= 1.05 * mx_cur + 1e-6, f"max abs error {mx:.3g} vs today's {mx_cur:.3g}"
    assert mean <= 1.05 * mean_cur + 1e-7, f"mean abs error {mean:.3g} vs today's {mean_cur:.3g}"


def _attention_input_case(amx, shape: tuple[int, ...], e: int, seed: int):  # noqa: ANN001, ANN202
    g = torch.Generator().manual_seed(seed)
    x = (torch.randn(*shape, 2 * e, generator=g) * 2 + 0.5).to(BF16)
    nw, nb = _norm(2 * e, g)
    w_in = _block_diagonal(3 * e, e, g)
    b_in = (0.5 * torch.randn(6 * e, generator=g)).to(BF16)
    got = amx.attention_input(x, nw, nb, EPS, amx.pack_attention_weight(w_in), b_in)
    current = linear_lowp(amx.layer_norm(x, nw, nb, EPS), w_in, b_in)
    exact = _ln64(x, nw, nb) @ w_in.to(F64).T + b_in.to(F64)
    return got, current, exact


@pytest.mark.parametrize("rows", [1, 15, 16, 17, 33, 5760])
def test_attention_input_is_no_further_from_fp64_than_today(amx, rows: int) -> None:  # noqa: ANN001
    got, current, exact = _attention_input_case(amx, (rows,), 100, seed=rows)
    assert got.dtype == BF16 and got.shape == (rows, 600)
    _no_further(got, current, exact)


@pytest.mark.parametrize("e", [100, 40, 17, 1, 33, 150])  # 150: LayerNorm of rows past 256 columns
def test_attention_input_odd_widths_and_batch_shapes(amx, e: int) -> None:  # noqa: ANN001
    got, current, exact = _attention_input_case(amx, (2, 3, 7), e, seed=e)
    assert got.shape == (2, 3, 7, 6 * e)
    mx, mx_cur = _errors(got, exact)[0], _errors(current, exact)[0]
    assert mx <= 1.05 * mx_cur + 1e-3 * float(exact.abs().max()) + 1e-6


def _output_case(amx, shape: tuple[int, ...], e: int, f: int, seed: int):  # noqa: ANN001, ANN202
    g = torch.Generator().manual_seed(seed)
    d = 2 * e
    att = torch.randn(*shape, d, generator=g).to(BF16)
    x = (torch.randn(*shape, d, generator=g) * 2).to(BF16)
    w_out, b_out = _block_diagonal(e, e, g), (0.3 * torch.randn(d, generator=g)).to(BF16)
    nw, nb = _norm(d, g)
    w1, b1 = (torch.randn(f, d, generator=g) / d**0.5).to(BF16), (0.5 * torch.randn(f, generator=g)).to(BF16)
    w2, b2 = (torch.randn(d, f, generator=g) / f**0.5).to(BF16), (0.5 * torch.randn(d, generator=g)).to(BF16)
    w1p, w2p = amx.pack_feed_forward_weight(w1), amx.pack_feed_forward_weight(w2)
    got = amx.attention_output_feed_forward(att, x, amx.pack_attention_weight(w_out), b_out, nw, nb, EPS,
                                            w1p, b1, w2p, b2)
    x1 = linear_lowp(att, w_out, b_out, add=x)
    current = amx.feed_forward(amx.layer_norm(x1, nw, nb, EPS), x1, w1p, b1, w2p, b2)
    x1_64 = x.to(F64) + att.to(F64) @ w_out.to(F64).T + b_out.to(F64)
    hidden = torch.nn.functional.gelu(_ln64(x1_64, nw, nb) @ w1.to(F64).T + b1.to(F64))
    exact = x1_64 + hidden @ w2.to(F64).T + b2.to(F64)
    return got, current, exact


@pytest.mark.parametrize("rows", [1, 15, 16, 17, 33, 5760])
def test_attention_output_feed_forward_is_no_further_from_fp64_than_today(amx, rows: int) -> None:  # noqa: ANN001
    got, current, exact = _output_case(amx, (rows,), 100, 800, seed=rows)
    assert got.dtype == BF16 and got.shape == (rows, 200)
    _no_further(got, current, exact)  # x1 stays fp32 here, bf16 between the unfused ops


@pytest.mark.parametrize(("e", "f"), [(100, 800), (20, 48), (17, 33), (1, 1), (33, 16), (150, 64)])
def test_attention_output_feed_forward_odd_sizes_and_batch_shapes(amx, e: int, f: int) -> None:  # noqa: ANN001
    got, current, exact = _output_case(amx, (2, 3, 7), e, f, seed=e * f)
    assert got.shape == (2, 3, 7, 2 * e)
    mx, mx_cur = _errors(got, exact)[0], _errors(current, exact)[0]
    assert mx <= 1.05 * mx_cur + 1e-3 * float(exact.abs().max()) + 1e-6


def test_non_contiguous_and_empty_inputs(amx) -> None:  # noqa: ANN001
    g = torch.Generator().manual_seed(7)
    w_in, b_in = amx.pack_attention_weight(_block_diagonal(300, 100, g)), torch.randn(600, generator=g).to(BF16)
    w_out, b = amx.pack_attention_weight(_block_diagonal(100, 100, g)), torch.randn(200, generator=g).to(BF16)
    nw, nb = _norm(200, g)
    w1p = amx.pack_feed_forward_weight(torch.randn(800, 200, generator=g).div(15).to(BF16))
    w2p = amx.pack_feed_forward_weight(torch.randn(200, 800, generator=g).div(30).to(BF16))
    b1 = torch.randn(800, generator=g).to(BF16)
    x = torch.randn(200, 50, generator=g).to(BF16).T  # (50, 200), column-major
    att = torch.randn(50, 400, generator=g).to(BF16)[:, ::2]
    assert torch.equal(amx.attention_input(x, nw, nb, EPS, w_in, b_in),
                       amx.attention_input(x.contiguous(), nw, nb, EPS, w_in, b_in))
    ff = amx.attention_output_feed_forward
    assert torch.equal(ff(att, x, w_out, b, nw, nb, EPS, w1p, b1, w2p, b),
                       ff(att.contiguous(), x.contiguous(), w_out, b, nw, nb, EPS, w1p, b1, w2p, b))
    assert amx.attention_input(x[:0], nw, nb, EPS, w_in, b_in).shape == (0, 600)
    assert ff(att[:0], x[:0], w_out, b, nw, nb, EPS, w1p, b1, w2p, b).shape == (0, 200)


def test_the_ops_reject_what_they_cannot_take(amx) -> None:  # noqa: ANN001
    g = torch.Generator().manual_seed(8)
    w_in, b_in = amx.pack_attention_weight(_block_diagonal(300, 100, g)), torch.randn(600, generator=g).to(BF16)
    w_out, b = amx.pack_attention_weight(_block_diagonal(100, 100, g)), torch.randn(200, generator=g).to(BF16)
    nw, nb = _norm(200, g)
    w1p = amx.pack_feed_forward_weight(torch.randn(800, 200, generator=g).to(BF16))
    w2p = amx.pack_feed_forward_weight(torch.randn(200, 800, generator=g).to(BF16))
    b1 = torch.randn(800, generator=g).to(BF16)
    x = torch.randn(8, 200).to(BF16)
    with pytest.raises(RuntimeError, match="bf16"):
        amx.attention_input(x.float(), nw, nb, EPS, w_in, b_in)
    with pytest.raises(RuntimeError, match="pack_attention_weight"):
        amx.attention_input(x, nw, nb, EPS, w_out, b_in)  # the output projection's packing
    with pytest.raises(RuntimeError, match="b_in"):
        amx.attention_input(x, nw, nb, EPS, w_in, b_in[:300])
    ff = amx.attention_output_feed_forward
    with pytest.raises(RuntimeError, match="same shape"):
        ff(x, x[:4], w_out, b, nw, nb, EPS, w1p, b1, w2p, b)
    with pytest.raises(RuntimeError, match="pack_attention_weight"):
        ff(x, x, w_in, b, nw, nb, EPS, w1p, b1, w2p, b)
    with pytest.raises(RuntimeError, match="w1p"):
        ff(x, x, w_out, b, nw, nb, EPS, w2p, b1, w2p, b)


@pytest.mark.parametrize(("n", "k"), [(300, 100), (100, 100), (17, 33), (1, 1)])
def test_packed_attention_weight_round_trip(amx, n: int, k: int) -> None:  # noqa: ANN001
    w = _block_diagonal(n, k, torch.Generator().manual_seed(n + k))
    packed = amx.pack_attention_weight(w)
    nt, kt = -(-n // 16), -(-k // 32)
    assert packed.shape == (2, nt, kt, 16, 32) and packed.dtype == BF16
    for h in range(2):  # [h] is pack_feed_forward_weight's layout of the diagonal block h
        unpacked = packed[h].reshape(nt, kt, 16, 16, 2).permute(0, 3, 1, 2, 4).reshape(nt * 16, kt * 32)
        assert torch.equal(unpacked[:n, :k], w[h * n : (h + 1) * n, h * k : (h + 1) * k])
        assert not unpacked[n:].any() and not unpacked[:, k:].any()
    off = w.clone()
    off[0, -1] = 1.0
    with pytest.raises(RuntimeError, match="off-diagonal"):
        amx.pack_attention_weight(off)


# --- the encoder ---------------------------------------------------------------------------------


def _encoder(n_layers: int = 2) -> CrissCrossEncoder:
    encoder = CrissCrossEncoder(n_layers, 200, 8, 800, 0.1).eval()
    encoder.requires_grad_(False)
    return encoder


def _bf16(encoder: CrissCrossEncoder, x: torch.Tensor) -> torch.Tensor:
    with torch.inference_mode(), torch.autocast("cpu", dtype=BF16):
        return encoder(x).float()


def _on_the_avx512_path(monkeypatch, encoder: CrissCrossEncoder) -> None:  # noqa: ANN001
    """Make the encoder's layers take the ``avx512`` path (compiled LayerNorm and attention, oneDNN products)."""
    forget(encoder)
    monkeypatch.setattr(lowp_layer, "process_path", lambda dtype: "avx512")


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.double() - b.double()).norm() / b.double().norm())


@pytest.mark.parametrize(("b", "c", "p"), [(1, 1, 1), (3, 5, 7), (4, 12, 30)])
def test_amx_path_is_no_further_from_fp32_than_the_avx512_path(amx, monkeypatch, b: int, c: int, p: int) -> None:  # noqa: ANN001
    encoder = _encoder()
    forget(encoder)
    x = torch.randn(b, c, p, 200, generator=torch.Generator().manual_seed(b * c * p))
    with torch.inference_mode():
        ref = encoder(x)
    fused = _bf16(encoder, x)
    assert {lowp_layer.prepare(layer, BF16).path for layer in encoder.layers} == {"amx"}
    _on_the_avx512_path(monkeypatch, encoder)
    avx512 = _bf16(encoder, x)
    assert {lowp_layer.prepare(layer, BF16).path for layer in encoder.layers} == {"avx512"}
    forget(encoder)
    assert _rel(fused, ref) <= 1.05 * _rel(avx512, ref) + 1e-4, f"{_rel(fused, ref):.4g} vs avx512's {_rel(avx512, ref):.4g}"


def _spy(kernels, *, amx: bool = True):  # noqa: ANN001, ANN202
    spy = mock.MagicMock(wraps=kernels)
    for name in ("attention_input", "attention_output_feed_forward", "criss_cross_attention", "layer_norm",
                 "feed_forward", "pack_feed_forward_weight", "pack_attention_weight"):
        setattr(spy, name, mock.MagicMock(wraps=getattr(kernels, name)))
    spy.amx_available = mock.MagicMock(return_value=amx)
    return spy


def test_inference_takes_the_fused_ops_and_the_adapter_step_does_not(amx) -> None:  # noqa: ANN001
    encoder = _encoder()
    forget(encoder)  # the packed weights are built with the spy below
    spy = _spy(amx)
    x = torch.randn(2, 3, 4, 200)
    # the three ops (where the samples split evenly over the threads, the one-op layer:
    # test_lowp_sample_layer.py)
    with mock.patch.object(loader, "ops", return_value=spy), \
            mock.patch.object(lowp_layer, "per_sample", return_value=False):
        _bf16(encoder, x)
        n = len(encoder.layers)
        assert spy.attention_input.call_count == n and spy.attention_output_feed_forward.call_count == n
        assert spy.criss_cross_attention.call_count == n
        assert spy.layer_norm.call_count == 0 and spy.feed_forward.call_count == 0
        spy.attention_input.reset_mock()
        spy.attention_output_feed_forward.reset_mock()
        spy.criss_cross_attention.reset_mock()
        xi = x.clone().requires_grad_(True)  # the adapter step: frozen layers, input gradient
        with torch.autocast("cpu", dtype=BF16):
            encoder(xi).float().sum().backward()
        assert spy.attention_input.call_count == 0 and spy.attention_output_feed_forward.call_count == 0
        assert spy.criss_cross_attention.call_count == 0
        assert xi.grad is not None
    forget(encoder)


def test_without_amx_the_avx512_path(kernels) -> None:  # noqa: ANN001
    encoder = _encoder()
    forget(encoder)
    spy = _spy(kernels, amx=False)
    x = torch.randn(2, 3, 4, 200)
    with mock.patch.object(loader, "ops", return_value=spy):
        out = _bf16(encoder, x)
    n = len(encoder.layers)
    assert spy.attention_input.call_count == 0 and spy.attention_output_feed_forward.call_count == 0
    assert spy.pack_attention_weight.call_count == 0 and spy.feed_forward.call_count == 0
    assert spy.layer_norm.call_count == 2 * n and spy.criss_cross_attention.call_count == n
    assert {lowp_layer.prepare(layer, BF16).path for layer in encoder.layers} == {"avx512"}
    forget(encoder)
    assert _rel(out, _bf16(encoder, x)) < 2e-2  # the same layer, another op sequence
