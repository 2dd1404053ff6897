"""The compiled bf16 kernels (fused attention, LayerNorm) match the eager bf16 path; without them the eager path runs.

Tests that need the library skip when it is not built (an opt-in: ``make fast``; ``make test-fast``
builds it and runs them); nothing here compiles it. The build and the child processes that keep a
library that can crash out of the caller's process: test_lowp_build.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import warnings
from unittest import mock

import pytest
import torch

from passport_kit.errors import PassportWarning
from passport_kit.model.lowp import layer as lowp_layer
from passport_kit.model.lowp import loader, probe
from passport_kit.model.lowp.cast import forget
from passport_kit.model.transformer import CrissCrossEncoder
from passport_kit.runtime import CPU_FLAGS_ENV

BF16 = torch.bfloat16
#: The flags of a CPU that runs the library (x86-64-v4, AVX-512 BF16), for the loader's checks on any CPU.
RUNS_IT = " ".join(sorted(probe.REQUIRED_FLAGS))


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.double() - b.double()).norm() / b.double().norm())


def _attention(qkv: torch.Tensor, heads: tuple[int, int], *, dtype: torch.dtype) -> torch.Tensor:
    """Both attention halves of ``qkv`` ``(B, C, P, 6E)`` the eager way (lowp_layer's regrouping), in ``dtype``."""
    b, c, p, six_e = qkv.shape
    e = six_e // 6
    out = torch.empty(b, c, p, 2 * e, dtype=dtype)
    x = qkv.to(dtype)
    for axis, cols, n_heads in ((1, slice(0, 3 * e), heads[0]), (2, slice(3 * e, 6 * e), heads[1])):
        q, k, v = lowp_layer._heads(x[..., cols], axis, n_heads, parts=3)
        if dtype == BF16:
            o = lowp_layer.attention(q, k, v)[0]
        else:
            o = torch.softmax(q @ k.transpose(1, 2), -1) @ v
        dst = out[..., :e] if axis == 1 else out[..., e:]
        dst.view(b, c, p, n_heads, e // n_heads).copy_(lowp_layer._unheads(o, axis, (b, c, p, 2 * e), n_heads))
    return out


@pytest.mark.parametrize(("b", "c", "p"), [(1, 1, 1), (2, 4, 4), (3, 12, 30), (1, 30, 12), (2, 5, 60), (1, 17, 33)])
@pytest.mark.parametrize(("e", "heads"), [(100, (4, 4)), (40, (2, 5)), (100, (2, 1))])
def test_attention_matches_the_eager_form(kernels, b: int, c: int, p: int, e: int, heads: tuple[int, int]) -> None:  # noqa: ANN001
    qkv = (torch.randn(b, c, p, 6 * e, generator=torch.Generator().manual_seed(c * p)) * 1.5).to(BF16)
    exact = _attention(qkv, heads, dtype=torch.float64)
    eager = _attention(qkv, heads, dtype=BF16)
    with torch.inference_mode():
        got = kernels.criss_cross_attention(qkv, *heads)
    assert got.dtype == BF16 and got.shape == (b, c, p, 2 * e)
    assert _rel(got, eager) < 2e-2  # bf16 tolerance
    # fp32 sums of bf16 products, the weights rounded once: never further from exact than the
    # eager form (which also rounds the scores)
    assert _rel(got, exact) <= max(_rel(eager, exact), 4e-3)


@pytest.mark.parametrize("n", range(1, 61))
def test_attention_of_every_sequence_length_up_to_60(kernels, n: int) -> None:  # noqa: ANN001
    # odd and even lengths pair keys with a zero differently; lengths past 16 and 32 take more
    # vectors of queries; spatial and temporal sequences both n long
    qkv = torch.randn(1, n, n, 600, generator=torch.Generator().manual_seed(n)).to(BF16)
    eager = _attention(qkv, (4, 4), dtype=BF16)
    exact = _attention(qkv, (4, 4), dtype=torch.float64)
    with torch.inference_mode():
        got = kernels.criss_cross_attention(qkv, 4, 4)
    assert _rel(got, eager) < 2e-2  # bf16 tolerance
    assert _rel(got, exact) <= max(_rel(eager, exact), 4e-3)


def test_attention_of_a_strided_input_and_large_scores(kernels) -> None:  # noqa: ANN001
    # a non-contiguous input is read correctly; scores of ±200 (exponentials that underflow in
    # the rest of a row) give finite weights
    wide = torch.randn(2, 6, 9, 1200).to(BF16)
    qkv = wide[..., ::2]
    qkv[..., :100] *= 60.0  # spatial q: large scores
    exact = _attention(qkv, (4, 4), dtype=torch.float64)
    with torch.inference_mode():
        got = kernels.criss_cross_attention(qkv, 4, 4)
    assert torch.isfinite(got.float()).all()
    assert _rel(got, exact) < 8e-3


@pytest.mark.parametrize("d", [1, 7, 16, 200, 203])
def test_layer_norm_matches_native(kernels, d: int) -> None:  # noqa: ANN001
    gen = torch.Generator().manual_seed(d)
    x = (torch.randn(3, 5, d, generator=gen) * 4 + 2).to(BF16)
    weight, bias = torch.randn(d, generator=gen).to(BF16), torch.randn(d, generator=gen).to(BF16)
    expected = torch.native_layer_norm(x, (d,), weight, bias, 1e-5)[0]
    got = kernels.layer_norm(x, weight, bias, 1e-5)
    assert got.dtype == BF16
    torch.testing.assert_close(got.float(), expected.float(), rtol=8e-3, atol=8e-3)  # one bf16 step


def _encoder(n_layers: int = 2) -> CrissCrossEncoder:
    encoder = CrissCrossEncoder(n_layers, 200, 8, 800, 0.1).eval()
    encoder.requires_grad_(False)
    return encoder


def _bf16(encoder: CrissCrossEncoder, x: torch.Tensor, *, kernels: bool) -> torch.Tensor:
    forget(encoder)  # the path is chosen when the weights are prepared: prepare them under this setting
    with mock.patch.object(loader, "ops", return_value=None) if not kernels else mock.MagicMock():
        with torch.inference_mode(), torch.autocast("cpu", dtype=BF16):
            out = encoder(x).float()
        assert {lowp_layer.prepare(layer, BF16).path for layer in encoder.layers} <= (
            {"avx512", "amx"} if kernels else {"eager"})
    forget(encoder)
    return out


@pytest.mark.parametrize(("b", "c", "p"), [(1, 1, 1), (3, 5, 7), (4, 12, 30)])
def test_encoder_with_kernels_agrees_with_fp32_as_the_eager_form(kernels, b: int, c: int, p: int) -> None:  # noqa: ANN001
    encoder = _encoder()
    x = torch.randn(b, c, p, 200)
    with torch.inference_mode():
        ref = encoder(x)
    fused, eager = _bf16(encoder, x, kernels=True), _bf16(encoder, x, kernels=False)
    assert _rel(fused, ref) < 0.02
    assert _rel(fused, ref) <= 1.1 * _rel(eager, ref) + 1e-3


def test_predicted_classes_agree_with_fp32_as_often_as_the_eager_form(kernels) -> None:  # noqa: ANN001
    encoder = _encoder(4)
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(192, 6, 8, 200, generator=gen)
    head = torch.randn(200, 5, generator=gen)

    def classes(features: torch.Tensor) -> torch.Tensor:
        pooled = features.float().mean((1, 2))
        return ((pooled - pooled.mean(0)) / pooled.std(0) @ head).argmax(-1)

    with torch.inference_mode():
        ref = classes(encoder(x))
    fused = (classes(_bf16(encoder, x, kernels=True)) == ref).float().mean()
    eager = (classes(_bf16(encoder, x, kernels=False)) == ref).float().mean()
    assert len(ref.unique()) == 5
    assert fused >= 0.97
    assert fused >= eager - 2 / len(ref)


def test_inference_takes_the_kernels_and_the_adapter_step_does_not(kernels) -> None:  # noqa: ANN001
    encoder = _encoder()
    spy = mock.MagicMock(wraps=kernels)
    spy.criss_cross_attention = mock.MagicMock(wraps=kernels.criss_cross_attention)
    spy.layer_norm = mock.MagicMock(wraps=kernels.layer_norm)
    x = torch.randn(2, 3, 4, 200)
    # the op-by-op layer (with AMX and samples split evenly over the threads, one op per layer:
    # test_lowp_sample_layer.py)
    with mock.patch.object(loader, "ops", return_value=spy), \
            mock.patch.object(lowp_layer, "per_sample", return_value=False):
        _bf16(encoder, x, kernels=True)
        assert spy.criss_cross_attention.call_count == len(encoder.layers)
        # with AMX the LayerNorms run inside attention_input and attention_output_feed_forward (test_lowp_block.py)
        fused = lowp_layer.prepare(encoder.layers[0], BF16).path == "amx"
        assert spy.layer_norm.call_count == (0 if fused else 2 * len(encoder.layers))
        spy.reset_mock()
        xi = x.clone().requires_grad_(True)  # the adapter step: frozen layers, input gradient
        with torch.autocast("cpu", dtype=BF16):
            encoder(xi).float().sum().backward()
        assert spy.criss_cross_attention.call_count == 0 and spy.layer_norm.call_count == 0
        assert xi.grad is not None


@pytest.mark.parametrize("flags", ["fpu sse4_2 avx avx2 fma bmi1 bmi2 f16c movbe abm xsave",  # AVX2 only
                                   "avx2 avx512f avx512bw avx512cd avx512dq avx512vl"])  # AVX-512 without BF16
def test_a_cpu_without_avx512_bf16_means_the_eager_path(no_library_cache, monkeypatch, flags: str) -> None:  # noqa: ANN001
    monkeypatch.setenv(CPU_FLAGS_ENV, flags)
    monkeypatch.setattr(loader, "LIBRARY", mock.MagicMock(exists=lambda: True))
    monkeypatch.setattr(loader, "library_key", lambda: "stamp")
    monkeypatch.setattr(loader, "TORCH_STAMP", mock.MagicMock(is_file=lambda: True, read_text=lambda **_: "stamp"))
    with mock.patch.object(torch.ops, "load_library") as load, mock.patch.object(probe, "verified") as child:
        assert loader.ops() is None
    # its instructions would be illegal here: neither loaded nor tried in a child
    assert load.call_count == 0 and child.call_count == 0


@pytest.mark.parametrize("case", ["absent", "built for another torch", "built from other sources", "damaged",
                                  "truncated", "a fifo", "stamped before digests"])
def test_no_usable_library_means_the_eager_path(no_library_cache, tmp_path, monkeypatch, case: str) -> None:  # noqa: ANN001
    library, stamp = tmp_path / "_loader.so", tmp_path / "_loader.so.torch"
    monkeypatch.delenv(loader.SWITCH, raising=False)  # a user's "0" would stop before the load
    monkeypatch.setattr(loader, "LIBRARY", library)
    monkeypatch.setattr(loader, "TORCH_STAMP", stamp)
    if case != "absent":
        library.write_bytes(b"not a shared library, but stamped as built")
        stamped = f"{loader.library_key()}\n{loader.library_stamp(library)}\n"
        stamp.write_text({"built for another torch": "1.0.0 cxx11abi=1 sources=" + loader.library_key().split("=")[-1],
                          "built from other sources": loader.torch_version() + " sources=0123456789abcdef",
                          "stamped before digests": loader.library_key()}.get(case, stamped))
        if case == "truncated":  # issue 46: what a full disk leaves; it loaded, then SIGBUS at the first op
            library.write_bytes(library.read_bytes()[:10])
        if case == "a fifo":  # issue 46: the load hung
            library.unlink()
            os.mkfifo(library)
    monkeypatch.setenv(CPU_FLAGS_ENV, RUNS_IT)  # the same on every CPU
    with mock.patch.object(torch.ops, "load_library", wraps=torch.ops.load_library) as load, \
            warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        assert loader.ops() is None  # and no exception
    assert load.call_count == 0  # never loaded here: "damaged" fails its self-test in a child (issue 54)
    lines = [str(w.message) for w in said if issubclass(w.category, PassportWarning)]
    if case in ("truncated", "a fifo", "stamped before digests", "damaged"):  # a built library not used: one line says why
        assert len(lines) == 1 and "rebuild it" in lines[0], lines
        assert ("failed its self-test (does not load" in lines[0]) == (case == "damaged"), lines
    else:
        assert not lines


def test_a_library_without_the_expected_ops_falls_back_with_one_line(stamped_library, monkeypatch) -> None:  # noqa: ANN001
    # Issue 46: another valid shared library in its place gave a 104-line AttributeError at the first op.
    monkeypatch.setattr(probe, "verified", lambda library, line: None)  # as if its self-test had passed
    monkeypatch.setattr(loader, "missing_ops", lambda namespace: ["criss_cross_attention", "layer_norm"])
    with mock.patch.object(torch.ops, "load_library") as load, \
            pytest.warns(PassportWarning, match="lacks the ops criss_cross_attention, layer_norm; the eager"):
        assert loader.ops() is None
    assert load.call_count == 1


def test_missing_ops_names_what_a_namespace_lacks() -> None:
    from types import SimpleNamespace

    names = loader.expected_ops()
    assert {"criss_cross_attention", "layer_norm", "feed_forward"} <= set(names)
    assert loader.missing_ops(SimpleNamespace(**{n: None for n in names[1:]})) == names[:1]


def test_the_switch_keeps_the_eager_path(no_library_cache, monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.setenv(loader.SWITCH, "0")
    assert loader.ops() is None


# --- the attention on AMX tiles (attend_amx) and the AVX-512 BF16 form (attend) ------------------


def _ulp(x: torch.Tensor) -> torch.Tensor:
    """One bf16 step at |x| (8 significant bits), as float64."""
    return torch.exp2(torch.floor(torch.log2(x.double().abs().clamp_min(1e-30))) - 7)


@pytest.mark.parametrize(
    ("b", "c", "p", "e", "heads", "seed"),
    [(1, n, n, 100, (4, 4), n) for n in (1, 2, 3, 7, 12, 15, 16, 17, 30, 31, 32, 33, 47, 60)]
    + [(3, 12, 30, 100, (4, 4), 0), (2, 33, 17, 66, (3, 2), 1), (2, 5, 60, 40, (2, 5), 2), (1, 17, 33, 200, (4, 8), 3)],
)
def test_the_amx_and_avx512_attention_agree_within_a_bf16_step(kernels, b, c, p, e, heads, seed) -> None:  # noqa: ANN001
    if not kernels.amx_available():
        pytest.skip("needs AMX (amx_tile, amx_bf16): the AVX-512 BF16 form is tested alone where it is absent")
    # every weight within one bf16 step (2^-7 of it) of the other path's, so an output within
    # 2^-7 · Σ w|v| plus its own rounding; head widths 25, 20, 8, 22, 33 (two K steps of a tile), 50
    qkv = (torch.randn(b, c, p, 6 * e, generator=torch.Generator().manual_seed(seed)) * 1.5).to(BF16)
    with torch.inference_mode():
        amx = kernels.criss_cross_attention(qkv, *heads, amx=True)
        avx = kernels.criss_cross_attention(qkv, *heads, amx=False)
    abs_v = qkv.clone()
    abs_v[..., 2 * e : 3 * e] = abs_v[..., 2 * e : 3 * e].abs()
    abs_v[..., 5 * e :] = abs_v[..., 5 * e :].abs()
    bound = 2.0**-7 * _attention(abs_v, heads, dtype=torch.float64) + torch.maximum(_ulp(amx), _ulp(avx))
    assert ((amx.double() - avx.double()).abs() <= bound).all()
    assert (amx == avx).float().mean() > 0.99


@pytest.mark.parametrize("amx", [True, False])
def test_the_attention_weights_are_the_softmax_rounded_once(kernels, amx: bool) -> None:  # noqa: ANN001
    # v one-hot per key (key t: column t of each head), so the output is the weights themselves:
    # each within half a bf16 step (2^-8 of it) of the exact softmax, plus the exp's error (the
    # AMX form's degree-4 polynomial: about 1e-5)
    if amx and not kernels.amx_available():
        pytest.skip("needs AMX (amx_tile, amx_bf16): the AVX-512 BF16 form is tested alone where it is absent")
    n, e, heads = 20, 100, 4
    qkv = (torch.randn(2, n, n, 600, generator=torch.Generator().manual_seed(5)) * 1.5).to(BF16)
    hd = e // heads
    onehot = torch.zeros(n, e)
    for h in range(heads):
        onehot[torch.arange(n), h * hd + torch.arange(n)] = 1.0
    qkv[..., 2 * e : 3 * e] = onehot.view(1, n, 1, e).to(BF16)  # spatial: key = channel
    qkv[..., 5 * e :] = onehot.view(1, 1, n, e).to(BF16)  # temporal: key = patch
    with torch.inference_mode():
        got = kernels.criss_cross_attention(qkv, heads, heads, amx=amx).double()
    exact = _attention(qkv, (heads, heads), dtype=torch.float64)
    assert ((got - exact).abs() <= (2.0**-8 + 3e-5) * exact.abs() + 1e-38).all()


def test_the_attention_takes_amx_where_available_and_the_avx512_form_where_not(kernels) -> None:  # noqa: ANN001
    if not kernels.amx_available():
        pytest.skip("needs AMX (amx_tile, amx_bf16): the AVX-512 BF16 form is tested alone where it is absent")
    qkv = (torch.randn(2, 12, 30, 600, generator=torch.Generator().manual_seed(9)) * 2).to(BF16)
    with torch.inference_mode():
        default = kernels.criss_cross_attention(qkv, 4, 4)
        assert torch.equal(default, kernels.criss_cross_attention(qkv, 4, 4, amx=True))
        assert not torch.equal(default, kernels.criss_cross_attention(qkv, 4, 4, amx=False))  # the paths differ here
    # a process whose CPU acts as one without AMX (PASSPORT_KIT_LOWP_NO_AMX=1): the AVX-512 form, and amx=True refused
    script = """
import sys, torch
from passport_kit.model.lowp import loader, probe
k = loader.ops()
assert k is not None and not k.amx_available()
qkv = (torch.randn(2, 12, 30, 600, generator=torch.Generator().manual_seed(9)) * 2).to(torch.bfloat16)
with torch.inference_mode():
    assert torch.equal(k.criss_cross_attention(qkv, 4, 4), k.criss_cross_attention(qkv, 4, 4, amx=False))
    try:
        k.criss_cross_attention(qkv, 4, 4, amx=True)
    except RuntimeError as err:
        assert "no AMX" in str(err)
    else:
        sys.exit("amx=True ran without AMX")
torch.save(k.criss_cross_attention(qkv, 4, 4), sys.argv[1])
"""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "out.pt")
        env = {**os.environ, "PASSPORT_KIT_LOWP_NO_AMX": "1"}
        done = subprocess.run([sys.executable, "-c", script, path], env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        without = torch.load(path)
    with torch.inference_mode():
        assert torch.equal(without, kernels.criss_cross_attention(qkv, 4, 4, amx=False))
