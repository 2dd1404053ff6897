"""The fused feed-forward op on AMX and the fast GELU (``amx.cpp``) against fp64 and the oneDNN path.

``feed_forward(h2, x1, w1p, b1, w2p, b2) = x1 + GELU(h2 W1ᵀ + b1) W2ᵀ + b2`` must never be further
from fp64 (of the same bf16 inputs) than the current pair of oneDNN products
(:func:`~passport_kit.model.lowp.linear.linear_lowp`, GELU post-op, then the add). Tests skip where
the library is not built, lacks these ops, or (feed_forward) the CPU or kernel gives no AMX; nothing
here compiles it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from passport_kit.model.lowp import loader
from passport_kit.model.lowp.linear import linear_lowp

BF16 = torch.bfloat16
CPUINFO = Path("/proc/cpuinfo")


def _cpu_flags() -> set[str]:
    for line in CPUINFO.read_text(encoding="utf-8").splitlines() if CPUINFO.exists() else []:
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


def _weights(d: int, f: int, seed: int) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(seed)
    w1 = (torch.randn(f, d, generator=g) / d**0.5).to(BF16)
    b1 = (torch.randn(f, generator=g) * 0.5).to(BF16)
    w2 = (torch.randn(d, f, generator=g) / f**0.5).to(BF16)
    b2 = (torch.randn(d, generator=g) * 0.5).to(BF16)
    return w1, b1, w2, b2


def _exact(h2, x1, w1, b1, w2, b2) -> torch.Tensor:  # noqa: ANN001
    d = torch.float64
    hidden = torch.nn.functional.gelu(h2.to(d) @ w1.to(d).T + b1.to(d))
    return x1.to(d) + hidden @ w2.to(d).T + b2.to(d)


def test_amx_available_only_with_the_cpu_flags(kernels) -> None:  # noqa: ANN001
    flags = _cpu_flags()
    if not {"amx_tile", "amx_bf16"} <= flags:
        assert not kernels.amx_available()  # e.g. an EPYC with AVX-512 BF16: the op must not run
    assert kernels.amx_available() == kernels.amx_available()  # cached, no second request


@pytest.mark.parametrize("rows", [1, 15, 16, 17, 33, 5760])
def test_feed_forward_is_no_further_from_fp64_than_onednn(amx, rows: int) -> None:  # noqa: ANN001
    d, f = 200, 800
    w1, b1, w2, b2 = _weights(d, f, seed=rows)
    g = torch.Generator().manual_seed(1000 + rows)
    h2 = torch.randn(rows, d, generator=g).to(BF16)
    x1 = torch.randn(rows, d, generator=g).to(BF16)
    out = amx.feed_forward(h2, x1, amx.pack_feed_forward_weight(w1), b1, amx.pack_feed_forward_weight(w2), b2)
    assert out.dtype == BF16 and out.shape == (rows, d)
    current = linear_lowp(linear_lowp(h2, w1, b1, gelu=True), w2, b2, add=x1)
    exact = _exact(h2, x1, w1, b1, w2, b2)
    err, err_cur = (out.double() - exact).abs(), (current.double() - exact).abs()
    # Both round the output to bf16 once (~2^-9 relative); the fused op keeps the hidden layer's
    # pre-GELU sums in fp32 where oneDNN's post-op may not: never worse, with a margin for ties.
    assert float(err.max()) <= 1.05 * float(err_cur.max()) + 1e-6, (
        f"max abs error {float(err.max()):.3g} vs oneDNN {float(err_cur.max()):.3g}")
    assert float(err.mean()) <= 1.02 * float(err_cur.mean()) + 1e-7, (
        f"mean abs error {float(err.mean()):.3g} vs oneDNN {float(err_cur.mean()):.3g}")
    # And absolutely: within a bf16 rounding of the output (plus the hidden layer's bf16 rounding).
    assert float(err.max()) <= 2.0**-7 * float(exact.abs().max()) + 0.02


@pytest.mark.parametrize(("d", "f"), [(200, 800), (40, 48), (17, 33), (64, 16), (1, 1)])
def test_feed_forward_odd_sizes_and_batch_shapes(amx, d: int, f: int) -> None:  # noqa: ANN001
    w1, b1, w2, b2 = _weights(d, f, seed=d * f)
    g = torch.Generator().manual_seed(d + f)
    h2 = torch.randn(2, 3, 7, d, generator=g).to(BF16)
    x1 = torch.randn(2, 3, 7, d, generator=g).to(BF16)
    out = amx.feed_forward(h2, x1, amx.pack_feed_forward_weight(w1), b1, amx.pack_feed_forward_weight(w2), b2)
    assert out.shape == h2.shape
    exact = _exact(h2, x1, w1, b1, w2, b2)
    current = linear_lowp(linear_lowp(h2, w1, b1, gelu=True), w2, b2, add=x1)
    err, err_cur = float((out.double() - exact).abs().max()), float((current.double() - exact).abs().max())
    bound = 1.05 * err_cur + 1e-3 * float(exact.abs().max()) + 1e-6
    assert err <= bound, f"max abs error {err:.3g} vs oneDNN {err_cur:.3g}"


def test_feed_forward_takes_non_contiguous_inputs(amx) -> None:  # noqa: ANN001
    w1, b1, w2, b2 = _weights(200, 800, seed=3)
    w1p, w2p = amx.pack_feed_forward_weight(w1), amx.pack_feed_forward_weight(w2)
    g = torch.Generator().manual_seed(4)
    h2 = torch.randn(200, 50, generator=g).to(BF16).T  # (50, 200), column-major
    x1 = torch.randn(50, 400, generator=g).to(BF16)[:, ::2]  # a strided slice
    out = amx.feed_forward(h2, x1, w1p, b1, w2p, b2)
    assert torch.equal(out, amx.feed_forward(h2.contiguous(), x1.contiguous(), w1p, b1, w2p, b2))
    empty = amx.feed_forward(h2[:0], x1[:0], w1p, b1, w2p, b2)
    assert empty.shape == (0, 200)


def test_feed_forward_rejects_what_it_cannot_take(amx) -> None:  # noqa: ANN001
    w1, b1, w2, b2 = _weights(200, 800, seed=5)
    w1p, w2p = amx.pack_feed_forward_weight(w1), amx.pack_feed_forward_weight(w2)
    h2 = torch.randn(8, 200).to(BF16)
    with pytest.raises(RuntimeError, match="bf16"):
        amx.feed_forward(h2.float(), h2, w1p, b1, w2p, b2)
    with pytest.raises(RuntimeError, match="same shape"):
        amx.feed_forward(h2, h2[:4], w1p, b1, w2p, b2)
    with pytest.raises(RuntimeError, match="w1p"):
        amx.feed_forward(h2, h2, w2p, b1, w2p, b2)  # packed weights swapped
    with pytest.raises(RuntimeError, match="w1p"):
        amx.feed_forward(h2, h2, w1, b1, w2p, b2)  # not packed
    with pytest.raises(RuntimeError, match="b2"):
        amx.feed_forward(h2, h2, w1p, b1, w2p, b2[:10])


@pytest.mark.parametrize(("n", "k"), [(800, 200), (200, 800), (17, 33), (1, 1), (16, 32)])
def test_packed_weight_round_trip(kernels, n: int, k: int) -> None:  # noqa: ANN001
    w = torch.randn(n, k, generator=torch.Generator().manual_seed(n + k)).to(BF16)
    packed = kernels.pack_feed_forward_weight(w)
    nt, kt = -(-n // 16), -(-k // 32)
    assert packed.shape == (nt, kt, 16, 32) and packed.dtype == BF16
    # tile (i, j)[p][2c + q] = w[16 i + c][32 j + 2 p + q]: undo it
    unpacked = packed.view(nt, kt, 16, 16, 2).permute(0, 3, 1, 2, 4).reshape(nt * 16, kt * 32)
    assert torch.equal(unpacked[:n, :k], w)
    assert not unpacked[n:].any() and not unpacked[:, k:].any()  # zero padding
    assert torch.equal(kernels.pack_feed_forward_weight(w.T.contiguous().T), packed)  # any strides
    with pytest.raises(RuntimeError, match="bf16"):
        kernels.pack_feed_forward_weight(w.float())


def _gelu64(x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.gelu(x.double())


def test_gelu_phi_error_on_a_dense_grid(kernels) -> None:  # noqa: ANN001
    x = torch.linspace(-12.0, 12.0, 2_400_001, dtype=torch.float32)
    y = kernels.gelu_(x.clone()).double()
    exact = _gelu64(x)
    nonzero = x.abs() > 1e-3
    phi_err = ((y - exact)[nonzero] / x.double()[nonzero]).abs().max()
    assert float(phi_err) < 3e-6, f"max |Phi error| {float(phi_err):.3g}"
    assert float((y - exact).abs().max()) < 5e-6, f"max |GELU error| {float((y - exact).abs().max()):.3g}"


def test_gelu_bf16_over_all_finite_inputs_in_range(kernels) -> None:  # noqa: ANN001
    bits = torch.arange(0, 1 << 16, dtype=torch.int32).to(torch.int16).view(BF16)
    x = bits[torch.isfinite(bits) & (bits.abs() <= 10)]
    y = kernels.gelu_(x.clone()).double()
    exact = _gelu64(x)
    # One bf16 rounding of a value within 3e-6·|x| of the exact GELU.
    ulp_half = torch.where(exact != 0, 2.0 ** (torch.floor(torch.log2(exact.abs().clamp_min(1e-38))) - 8), 0.0)
    bound = ulp_half * (1 + 2**-7) + 3e-6 * x.double().abs() + 1e-30
    assert bool(((y - exact).abs() <= bound).all()), f"max |error| {float((y - exact).abs().max()):.3g}"
    assert float((y - exact).abs().max()) <= 2**-9 * 10 + 1e-5


@pytest.mark.parametrize("n", [1, 15, 16, 31, 33, 1000, 70001])
def test_gelu_tails_and_special_values(kernels, n: int) -> None:  # noqa: ANN001
    x = torch.randn(n, generator=torch.Generator().manual_seed(n)).mul(4).to(BF16)
    y = kernels.gelu_(x.clone())
    assert (y.double() - _gelu64(x)).abs().max() <= 0.02
    special = torch.tensor([float("nan"), float("inf"), -float("inf"), -1e30, 1e30, 0.0, -0.0], dtype=BF16)
    out = kernels.gelu_(special.clone()).float()
    assert out[0].isnan() and out[1] == float("inf") and out[2] == 0 and out[3] == 0
    assert out[4] == torch.tensor(1e30, dtype=BF16).float() and out[5] == 0 and out[6] == 0


def test_gelu_rejects_non_contiguous_and_other_dtypes(kernels) -> None:  # noqa: ANN001
    with pytest.raises(RuntimeError, match="contiguous"):
        kernels.gelu_(torch.randn(8, 8).to(BF16).T)
    with pytest.raises(RuntimeError, match="bf16 or fp32"):
        kernels.gelu_(torch.randn(8, dtype=torch.float64))
