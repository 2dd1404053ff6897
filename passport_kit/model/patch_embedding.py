"""CBraMod's patch embedding: time convolutions + spectral branch, then the channel embedding.

On a CPU with native bf16 where the compiled kernels are built, bf16 inference takes a faster form of
the same arithmetic from the fast path (:func:`passport_kit.model.lowp.patch.embed_patches`), where installed.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from passport_kit.model.channel_embedding import ChannelEmbedding
from passport_kit.model.config import PATCH_SAMPLES
from passport_kit.model.fast_path import LOWP
from passport_kit.model.meta import ChannelMeta

#: (out channels, kernel, stride, padding) of the three time-domain conv blocks (cbramod.md §1.2).
_CONV_BLOCKS = ((25, 49, 25, 24), (25, 3, 1, 1), (25, 3, 1, 1))
_GROUPS = 5
_SPECTRAL_BINS = PATCH_SAMPLES // 2 + 1  # 101 rfft bins, 0..100 Hz at 200 Hz


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
        if LOWP is not None and (fast := LOWP.embed_patches(self, x)) is not None:
            return fast
        b, c, p, s = x.shape
        # GroupNorm sees all C·P rows of a sample at once, as in CBraMod (weight-compatible).
        conv = self.proj_in(x.reshape(b, 1, c * p, s))  # (B, 25, C·P, 8)
        # Feature order is conv-channel-major: index = conv_channel * 8 + time_position.
        time_branch = conv.permute(0, 2, 1, 3).reshape(b, c, p, -1)
        with torch.autocast(device_type=x.device.type, enabled=False):
            spectrum = torch.fft.rfft(x.float(), dim=-1, norm="forward").abs()  # (B, C, P, 101)
        return time_branch + self.spectral_proj(spectrum)

    def forward(self, x: Tensor, meta: ChannelMeta, mask: Tensor | None = None,
                distrust: Tensor | None = None) -> Tensor:
        """Return positionally encoded patch embeddings ``(B, C, P, D)`` of ``x`` ``(B, C, P, 200)``."""
        emb = self.embed_patches(x, mask)
        return self.positional_encoding(emb, meta, mask, distrust)
