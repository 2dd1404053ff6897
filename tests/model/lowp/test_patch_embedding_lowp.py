"""The patch embedding's bf16 inference form (conv blocks as products, compiled GroupNorm + GELU) matches autocast's.

Tests of the compiled ops skip when the library is not built (``python -m passport_kit.model.lowp.build``,
an opt-in: ``make fast``); nothing here compiles it. :func:`conv_as_matrix` is tested everywhere.
"""

from __future__ import annotations

from unittest import mock

import pytest
import torch
import torch.nn.functional as F

from passport_kit.model import build_backbone, model_config
from passport_kit.model import lowp
from passport_kit.model.lowp import loader
from passport_kit.model.lowp import patch as lowp_patch
from passport_kit.model.lowp.patch import conv_as_matrix
from passport_kit.model.patch_embedding import _CONV_BLOCKS, PatchEmbedding

BF16 = torch.bfloat16


def _embedding(seed: int = 0) -> PatchEmbedding:
    torch.manual_seed(seed)
    return build_backbone(model_config("cbramod-tiny", "mlp-experts")).eval().patch_embedding


def _windows(b: int, c: int, p: int, seed: int = 0) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    t = torch.arange(p * 200, dtype=torch.float32).view(1, 1, p, 200) / 200
    return torch.randn(b, c, p, 200, generator=gen) + 2 * torch.sin(2 * torch.pi * 10 * t)


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.double() - b.double()).norm() / b.double().norm())


def test_each_conv_block_is_its_matrix() -> None:
    emb = _embedding()
    h = torch.randn(7, 1, 5, 200, dtype=torch.float64)
    for i in range(len(_CONV_BLOCKS)):
        conv = emb.proj_in[3 * i].double()
        expect = conv(h)  # (7, O, 5, L)
        matrix, bias = conv_as_matrix(conv, h.shape[-1])
        rows = h.permute(0, 2, 1, 3).reshape(7 * 5, -1)  # channel-major rows
        got = (rows @ matrix.T + bias).view(7, 5, conv.out_channels, -1).permute(0, 2, 1, 3)
        assert got.shape == expect.shape
        torch.testing.assert_close(got, expect, rtol=0, atol=1e-12)
        h = expect


def test_group_norm_gelu_matches_native(kernels) -> None:  # noqa: ANN001
    gen = torch.Generator().manual_seed(1)
    for b, r, d, groups in ((2, 360, 200, 5), (1, 7, 200, 5), (3, 4, 40, 4), (1, 1, 16, 1)):
        x = (torch.randn(b, r, d, generator=gen) * 3 + 1).to(BF16)
        gamma, beta = torch.rand(d, generator=gen) + 0.5, torch.randn(d, generator=gen)
        add = torch.randn(b, r, d, generator=gen).to(BF16)
        # the native op on (B, D, R): groups of D/G consecutive columns, each column a "channel"
        ref = F.gelu(F.group_norm(x.double().transpose(1, 2), groups, gamma.double(), beta.double(), 1e-5)).transpose(1, 2)
        out = kernels.group_norm_gelu(x, groups, gamma, beta, 1e-5, None)
        assert out.dtype == BF16 and out.shape == x.shape
        # one bf16 rounding of the result: within half a bf16 step (2^-9 relative) plus fp32 noise
        assert (out.double() - ref).abs().max() <= ref.abs().max() * 2.0**-8
        summed = kernels.group_norm_gelu(x, groups, gamma, beta, 1e-5, add)
        assert (summed.double() - (ref + add.double())).abs().max() <= (ref + add.double()).abs().max() * 2.0**-8


def test_group_norm_gelu_rejects_what_it_cannot_do(kernels) -> None:  # noqa: ANN001
    x = torch.randn(1, 4, 30).to(BF16)
    with pytest.raises(RuntimeError, match="whole groups"):
        kernels.group_norm_gelu(x, 4, torch.ones(30), torch.zeros(30), 1e-5, None)
    with pytest.raises(RuntimeError, match="bf16"):
        kernels.group_norm_gelu(x.float(), 5, torch.ones(30), torch.zeros(30), 1e-5, None)


@pytest.mark.parametrize("n", [1, 15, 16, 17, 101, 5760 * 101])
def test_spectrum_magnitude_matches_abs(kernels, n: int) -> None:  # noqa: ANN001
    z = torch.randn(n, dtype=torch.complex64, generator=torch.Generator().manual_seed(n)) * 5
    got = kernels.spectrum_magnitude(torch.view_as_real(z))
    assert got.dtype == BF16 and got.shape == (n,)
    torch.testing.assert_close(got, z.abs().to(BF16), rtol=2.0**-8, atol=0)


@pytest.mark.parametrize(("b", "c", "p"), [(1, 1, 1), (2, 4, 5), (3, 12, 30)])
def test_inference_form_is_as_near_fp32_as_autocast(kernels, monkeypatch, b: int, c: int, p: int) -> None:  # noqa: ANN001
    emb = _embedding()
    x = _windows(b, c, p)
    with torch.inference_mode():
        exact = emb.embed_patches(x)
        with torch.autocast("cpu", BF16):
            fast = emb.embed_patches(x)
        monkeypatch.setattr(loader, "ops", lambda: None)
        with torch.autocast("cpu", BF16):
            eager = emb.embed_patches(x)
    assert fast.dtype == eager.dtype == BF16 and fast.shape == eager.shape == (b, c, p, emb.spectral_proj[0].out_features)
    assert _rel(fast, exact) <= 1.05 * _rel(eager, exact)
    assert _rel(fast, exact) < 0.01


def test_masked_patches_are_the_mask_token(kernels, monkeypatch) -> None:  # noqa: ANN001
    emb = _embedding()
    x = _windows(2, 3, 4)
    mask = torch.zeros(2, 3, 4, dtype=torch.bool)
    mask[0, 1, 2] = mask[1, 0, :] = True
    with torch.inference_mode(), torch.autocast("cpu", BF16):
        fast = emb.embed_patches(x, mask)
        monkeypatch.setattr(loader, "ops", lambda: None)
        eager = emb.embed_patches(x, mask)
    assert _rel(fast, eager) < 0.01


def test_the_form_is_taken_only_where_nothing_needs_its_gradient(kernels) -> None:  # noqa: ANN001
    emb = _embedding()
    x = _windows(1, 2, 3)
    taken: list[bool] = []

    def fast_form(embedding: PatchEmbedding, x: torch.Tensor) -> torch.Tensor | None:
        out = lowp_patch.embed_patches(embedding, x)
        taken.append(out is not None)
        return out

    with mock.patch.object(lowp, "embed_patches", fast_form):
        with torch.autocast("cpu", BF16):
            emb.embed_patches(x)  # trainable weights, grad mode on: autograd must see the convs
            assert sum(taken) == 0
            with torch.no_grad():
                emb.embed_patches(x)
            assert sum(taken) == 1
            for q in (*emb.proj_in.parameters(), *emb.spectral_proj.parameters()):
                q.requires_grad_(False)
            emb.embed_patches(x)  # frozen (the adapter step): no graph needed
            assert sum(taken) == 2
            emb.embed_patches(x.requires_grad_())  # a gradient wanted for the input
            assert sum(taken) == 2
        with torch.no_grad():
            emb.embed_patches(x)  # fp32: unchanged
        assert sum(taken) == 2


def test_frozen_weights_are_prepared_once_and_follow_changes(kernels) -> None:  # noqa: ANN001
    emb = _embedding()
    x = _windows(1, 2, 3)
    with torch.no_grad(), torch.autocast("cpu", BF16):
        before = emb.embed_patches(x)
        assert torch.equal(before, emb.embed_patches(x))
        emb.proj_in[0].weight.mul_(2)  # an in-place update (an optimizer step, load_state_dict)
        after = emb.embed_patches(x)
        emb.proj_in[0].weight.div_(2)
        with mock.patch.object(loader, "ops", lambda: None):
            emb.proj_in[0].weight.mul_(2)
            eager = emb.embed_patches(x)
    assert not torch.equal(before, after)
    assert _rel(after, eager) < 0.01
