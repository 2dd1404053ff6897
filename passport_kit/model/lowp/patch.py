"""The patch embedding's bf16 inference form: its conv blocks as products, GroupNorm + GELU compiled.

:func:`embed_patches` is what :meth:`~passport_kit.model.patch_embedding.PatchEmbedding.embed_patches`
asks first; None sends it to its own (autocast) form.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from passport_kit.model.config import PATCH_SAMPLES
from passport_kit.model.lowp import loader
from passport_kit.model.lowp.cast import prepared
from passport_kit.model.lowp.linear import linear_lowp


def conv_as_matrix(conv: nn.Conv2d, in_len: int) -> tuple[Tensor, Tensor]:
    """Return ``(W, b)``: ``conv`` (kernel ``(1, k)``) over one row of ``in_len`` samples as a product.

    The convolution acts on each patch row alone, so it is a linear map from the row's
    ``I · in_len`` values (channel-major: index ``i · in_len + position``) to its ``O · out_len``
    outputs (index ``o · out_len + t``, the order in which the patch embedding concatenates
    them): ``y = x Wᵀ + b``. Zero padding is the matrix's missing entries.
    """
    weight = conv.weight.detach()[:, :, 0, :]  # (O, I, k)
    n_out, n_in, k = weight.shape
    stride, pad = conv.stride[1], conv.padding[1]
    out_len = (in_len + 2 * pad - k) // stride + 1
    tap = torch.arange(in_len).view(1, -1) - torch.arange(out_len).view(-1, 1) * stride + pad  # (t, position)
    valid = (tap >= 0) & (tap < k)
    taps = weight[:, :, tap.clamp(0, k - 1)] * valid  # (O, I, t, position)
    matrix = taps.permute(0, 2, 1, 3).reshape(n_out * out_len, n_in * in_len)
    return matrix, conv.bias.detach().repeat_interleave(out_len)


def applies(embedding: nn.Module, x: Tensor) -> bool:
    """Return whether the bf16 inference form applies to ``x`` ``(B, C, P, 200)`` in ``embedding`` (a PatchEmbedding).

    It applies under bf16 autocast on the CPU (inference, or a frozen patch embedding in the
    ``adapter`` step) when no gradient must flow through it and no dropout is active.
    """
    if x.device.type != "cpu" or not torch.is_autocast_enabled("cpu") or x.numel() == 0:
        return False
    if torch.get_autocast_dtype("cpu") != torch.bfloat16:
        return False
    if torch.is_grad_enabled() and (x.requires_grad or any(
            q.requires_grad for q in (*embedding.proj_in.parameters(), *embedding.spectral_proj.parameters()))):
        return False
    return not (embedding.training and embedding.spectral_proj[1].p > 0)


def _time_weights(proj_in: nn.Sequential) -> dict[str, Tensor]:
    """Return the conv blocks of ``proj_in`` as bf16 product matrices and fp32 per-column GroupNorm parameters."""
    out: dict[str, Tensor] = {}
    length = PATCH_SAMPLES
    for i in range(len(proj_in) // 3):
        conv, norm = proj_in[3 * i], proj_in[3 * i + 1]
        matrix, bias = conv_as_matrix(conv, length)
        length = matrix.shape[0] // conv.out_channels
        out[f"w{i}"] = matrix.to(torch.bfloat16).contiguous()
        out[f"b{i}"] = bias.to(torch.bfloat16)
        out[f"gamma{i}"] = norm.weight.detach().float().repeat_interleave(length).contiguous()
        out[f"beta{i}"] = norm.bias.detach().float().repeat_interleave(length).contiguous()
    return out


def embed_patches(embedding: nn.Module, x: Tensor) -> Tensor | None:
    """Return ``embedding.embed_patches`` of ``x`` ``(B, C, P, 200)`` (already masked) in bf16, or None where it does not apply.

    None: the compiled kernels are not loaded here, or :func:`applies` says no. Same arithmetic
    as under bf16 autocast, arranged for a CPU with native bf16: each conv block acts on a patch
    row alone, so it runs as one bf16 product with a 200 × 200 matrix (:func:`conv_as_matrix`;
    oneDNN runs it on AMX), its output already in the feature order; GroupNorm (statistics per
    sample and group in fp32) and GELU are one compiled pass (``group_norm_gelu``), the last one
    also adding the spectral branch. The spectrum is the fp32 FFT as before, its magnitude one
    compiled pass into bf16 for the spectral product. On the AMX Xeon, batch 16 × 12 ch × 30
    patches, 2 threads: ~3× faster than the convolution form under autocast
    (docs/history/speed.md, issue 36). Returns bf16, as autocast does.
    """
    ops = loader.ops() if applies(embedding, x) else None
    if ops is None:
        return None
    b, c, p, s = x.shape
    t = prepared(embedding.proj_in, torch.bfloat16, lambda: _time_weights(embedding.proj_in))
    proj = embedding.spectral_proj[0]
    spec = prepared(embedding.spectral_proj, torch.bfloat16, lambda: {
        "w": proj.weight.detach().to(torch.bfloat16).contiguous(), "b": proj.bias.detach().to(torch.bfloat16)})
    rows = x.reshape(b * c * p, s)
    spectrum = torch.fft.rfft(rows.float(), dim=-1, norm="forward")
    spectral = linear_lowp(ops.spectrum_magnitude(torch.view_as_real(spectrum)), spec["w"], spec["b"])
    h = rows.to(torch.bfloat16)
    blocks = len(embedding.proj_in) // 3
    for i in range(blocks):
        norm = embedding.proj_in[3 * i + 1]
        h = linear_lowp(h, t[f"w{i}"], t[f"b{i}"]).view(b, c * p, -1)
        h = ops.group_norm_gelu(h, norm.num_groups, t[f"gamma{i}"], t[f"beta{i}"], norm.eps,
                                spectral.view(b, c * p, -1) if i == blocks - 1 else None)
        h = h.view(b * c * p, -1)
    return h.view(b, c, p, -1)


__all__ = ["applies", "conv_as_matrix", "embed_patches"]
