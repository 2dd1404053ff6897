"""CBraMod's patch embedding: time convolutions + spectral branch, then the channel embedding.

On a CPU with native bf16 where the compiled kernels are built (:mod:`passport_kit.model.lowp_kernels`),
bf16 inference takes a faster form of the same arithmetic (:meth:`PatchEmbedding.embed_patches_lowp`).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from passport_kit.model import lowp_kernels
from passport_kit.model.channel_embedding import ChannelEmbedding
from passport_kit.model.config import PATCH_SAMPLES
from passport_kit.model.fast_linear import linear_lowp
from passport_kit.model.frozen_cast import prepared
from passport_kit.model.meta import ChannelMeta

#: (out channels, kernel, stride, padding) of the three time-domain conv blocks (cbramod.md §1.2).
_CONV_BLOCKS = ((25, 49, 25, 24), (25, 3, 1, 1), (25, 3, 1, 1))
_GROUPS = 5
_SPECTRAL_BINS = PATCH_SAMPLES // 2 + 1  # 101 rfft bins, 0..100 Hz at 200 Hz


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


class PatchEmbedding(nn.Module):
    """Embed each 200-sample patch to a d_model vector and add the channel embedding.

    State-dict names follow CBraMod: ``proj_in.{0,1,3,4,6,7}``, ``spectral_proj.0``,
    ``mask_encoding`` (a persistent buffer of zeros) and ``positional_encoding`` (the channel
    embedding of the configured kind).
    """

    def __init__(self, d_model: int, dropout: float, positional_encoding: ChannelEmbedding) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        in_ch = 1
        for out_ch, kernel, stride, pad in _CONV_BLOCKS:
            layers += [
                nn.Conv2d(in_ch, out_ch, kernel_size=(1, kernel), stride=(1, stride), padding=(0, pad)),
                nn.GroupNorm(_GROUPS, out_ch),
                nn.GELU(),
            ]
            in_ch = out_ch
        self.proj_in = nn.Sequential(*layers)
        self.spectral_proj = nn.Sequential(nn.Linear(_SPECTRAL_BINS, d_model), nn.Dropout(dropout))
        # Not trainable in CBraMod either; a buffer keeps it out of every optimizer and policy.
        self.register_buffer("mask_encoding", torch.zeros(PATCH_SAMPLES))
        self.positional_encoding = positional_encoding

    def embed_patches(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        """Return patch embeddings ``(B, C, P, D)`` of ``x`` ``(B, C, P, 200)``, before position.

        Masked patches (``mask`` ``(B, C, P)`` True) are replaced by the zero mask token first.
        """
        if mask is not None:
            x = torch.where(mask.bool().unsqueeze(-1), self.mask_encoding.to(x.dtype), x)
        ops = self._lowp_ops(x)
        if ops is not None:
            return self.embed_patches_lowp(x, ops)
        b, c, p, s = x.shape
        # GroupNorm sees all C·P rows of a sample at once, as in CBraMod (weight-compatible).
        conv = self.proj_in(x.reshape(b, 1, c * p, s))  # (B, 25, C·P, 8)
        # Feature order is conv-channel-major: index = conv_channel * 8 + time_position.
        time_branch = conv.permute(0, 2, 1, 3).reshape(b, c, p, -1)
        with torch.autocast(device_type=x.device.type, enabled=False):
            spectrum = torch.fft.rfft(x.float(), dim=-1, norm="forward").abs()  # (B, C, P, 101)
        return time_branch + self.spectral_proj(spectrum)

    def _lowp_ops(self, x: Tensor) -> Any | None:
        """Return the compiled kernels where :meth:`embed_patches_lowp` applies to ``x``, else None.

        It applies under bf16 autocast on the CPU (inference, or a frozen patch embedding in the
        ``adapter`` step) when no gradient must flow through it and no dropout is active.
        """
        if x.device.type != "cpu" or not torch.is_autocast_enabled("cpu") or x.numel() == 0:
            return None
        if torch.get_autocast_dtype("cpu") != torch.bfloat16:
            return None
        if torch.is_grad_enabled() and (x.requires_grad or any(
                q.requires_grad for q in (*self.proj_in.parameters(), *self.spectral_proj.parameters()))):
            return None
        if self.training and self.spectral_proj[1].p > 0:
            return None
        return lowp_kernels.ops()

    def _time_weights(self) -> dict[str, Tensor]:
        """Return the conv blocks as bf16 product matrices and fp32 per-column GroupNorm parameters."""
        out: dict[str, Tensor] = {}
        length = PATCH_SAMPLES
        for i in range(len(_CONV_BLOCKS)):
            conv, norm = self.proj_in[3 * i], self.proj_in[3 * i + 1]
            matrix, bias = conv_as_matrix(conv, length)
            length = matrix.shape[0] // conv.out_channels
            out[f"w{i}"] = matrix.to(torch.bfloat16).contiguous()
            out[f"b{i}"] = bias.to(torch.bfloat16)
            out[f"gamma{i}"] = norm.weight.detach().float().repeat_interleave(length).contiguous()
            out[f"beta{i}"] = norm.bias.detach().float().repeat_interleave(length).contiguous()
        return out

    def embed_patches_lowp(self, x: Tensor, ops: Any) -> Tensor:
        """Return :meth:`embed_patches` of ``x`` ``(B, C, P, 200)`` (already masked) in its bf16 inference form.

        Same arithmetic as under bf16 autocast, arranged for a CPU with native bf16: each conv block
        acts on a patch row alone, so it runs as one bf16 product with a 200 × 200 matrix
        (:func:`conv_as_matrix`; oneDNN runs it on AMX), its output already in the feature order;
        GroupNorm (statistics per sample and group in fp32) and GELU are one compiled pass
        (``group_norm_gelu``), the last one also adding the spectral branch. The spectrum is the
        fp32 FFT as before, its magnitude one compiled pass into bf16 for the spectral product.
        On the AMX Xeon, batch 16 × 12 ch × 30 patches, 2 threads: ~3× faster than the
        convolution form under autocast (docs/history/speed.md, issue 36). Returns bf16, as autocast does.
        """
        b, c, p, s = x.shape
        t = prepared(self.proj_in, torch.bfloat16, self._time_weights)
        proj = self.spectral_proj[0]
        spec = prepared(self.spectral_proj, torch.bfloat16, lambda: {
            "w": proj.weight.detach().to(torch.bfloat16).contiguous(), "b": proj.bias.detach().to(torch.bfloat16)})
        rows = x.reshape(b * c * p, s)
        spectrum = torch.fft.rfft(rows.float(), dim=-1, norm="forward")
        spectral = linear_lowp(ops.spectrum_magnitude(torch.view_as_real(spectrum)), spec["w"], spec["b"])
        h = rows.to(torch.bfloat16)
        last = len(_CONV_BLOCKS) - 1
        for i in range(len(_CONV_BLOCKS)):
            norm = self.proj_in[3 * i + 1]
            h = linear_lowp(h, t[f"w{i}"], t[f"b{i}"]).view(b, c * p, -1)
            h = ops.group_norm_gelu(h, norm.num_groups, t[f"gamma{i}"], t[f"beta{i}"], norm.eps,
                                    spectral.view(b, c * p, -1) if i == last else None)
            h = h.view(b * c * p, -1)
        return h.view(b, c, p, -1)

    def forward(self, x: Tensor, meta: ChannelMeta, mask: Tensor | None = None,
                distrust: Tensor | None = None) -> Tensor:
        """Return positionally encoded patch embeddings ``(B, C, P, D)`` of ``x`` ``(B, C, P, 200)``."""
        emb = self.embed_patches(x, mask)
        return self.positional_encoding(emb, meta, mask, distrust)
