"""The criss-cross transformer: pre-norm layers with spatial and temporal attention halves.

Attention runs through ``scaled_dot_product_attention`` on views of one packed q/k/v
projection, with parameter names equal to ``nn.MultiheadAttention``'s (``in_proj_weight``
rows [q; k; v], ``in_proj_bias``, ``out_proj``) so CBraMod's weights load unchanged.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from passport_kit.model.fast_linear import linear


class AxisAttention(nn.Module):
    """Multi-head self-attention along one axis of a ``(B, C, P, E)`` grid."""

    def __init__(self, embed_dim: int, n_heads: int, dropout: float) -> None:
        super().__init__()
        self.n_heads = n_heads
        self.dropout = dropout
        self.in_proj_weight = nn.Parameter(torch.empty(3 * embed_dim, embed_dim))
        self.in_proj_bias = nn.Parameter(torch.zeros(3 * embed_dim))
        self.out_proj = nn.Linear(embed_dim, embed_dim)
        nn.init.xavier_uniform_(self.in_proj_weight)
        nn.init.zeros_(self.out_proj.bias)

    def attend(self, h: Tensor) -> Tensor:
        """Return attention outputs ``(N, L, E)`` for sequences ``h`` ``(*, L, E)``, N = prod(*).

        ``h`` may be a strided view (a slice of the last dimension): the projection reads it in
        place, since BLAS only needs unit stride along E.
        """
        length, e = h.shape[-2:]
        # (*, L, 3E) comes out contiguous, so flattening the leading dims is a view.
        qkv = linear(h, self.in_proj_weight, self.in_proj_bias).view(-1, length, 3 * e)
        n = qkv.shape[0]
        # (N, L, 3, H, e) → three (N, H, L, e) *views*; the fused kernel reads the strides.
        q, k, v = qkv.view(n, length, 3, self.n_heads, e // self.n_heads).unbind(2)
        out = F.scaled_dot_product_attention(
            q.transpose(1, 2),
            k.transpose(1, 2),
            v.transpose(1, 2),
            dropout_p=self.dropout if self.training else 0.0,
        )
        return linear(out.transpose(1, 2).reshape(n, length, e), self.out_proj.weight, self.out_proj.bias)


class CrissCrossLayer(nn.Module):
    """One pre-norm criss-cross layer on ``(B, C, P, D)``: dims :D/2 attend over channels,
    dims D/2: over patches, then a GELU feed-forward block. Names follow CBraMod."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float) -> None:
        super().__init__()
        half = d_model // 2
        self.self_attn_s = AxisAttention(half, n_heads // 2, dropout)
        self.self_attn_t = AxisAttention(half, n_heads // 2, dropout)
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        """Return the layer output ``(B, C, P, D)`` for ``x`` ``(B, C, P, D)``."""
        b, c, p, d = x.shape
        half = d // 2
        h = self.norm1(x)
        # Spatial: sequences are the C channels of one patch. One transpose copy of half the
        # features in, one on the way out (inside cat). Temporal needs no copy: the slice
        # (B, C, P, D/2) is projected in place and is already B·C sequences of length P.
        hs = h[..., :half].transpose(1, 2).reshape(b * p, c, half)
        s = self.self_attn_s.attend(hs).view(b, p, c, half).transpose(1, 2)
        t = self.self_attn_t.attend(h[..., half:]).view(b, c, p, half)
        x = x + self.dropout1(torch.cat([s, t.to(s.dtype)], dim=-1))
        # linear() fuses bias and GELU on the CPU fast path (frozen or inference); see fast_linear.
        hidden = linear(self.norm2(x), self.linear1.weight, self.linear1.bias, gelu=True)
        ff = linear(self.dropout(hidden), self.linear2.weight, self.linear2.bias)
        return x + self.dropout2(ff)


class CrissCrossEncoder(nn.Module):
    """A stack of criss-cross layers (``layers.{i}``), no final norm (as in CBraMod)."""

    def __init__(self, n_layers: int, d_model: int, n_heads: int, d_ff: int, dropout: float) -> None:
        super().__init__()
        self.layers = nn.ModuleList(
            CrissCrossLayer(d_model, n_heads, d_ff, dropout) for _ in range(n_layers)
        )

    def forward(self, x: Tensor) -> Tensor:
        """Return encoder features ``(B, C, P, D)``."""
        for layer in self.layers:
            x = layer(x)
        return x
