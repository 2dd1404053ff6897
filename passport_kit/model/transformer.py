"""The criss-cross transformer: pre-norm layers with spatial and temporal attention halves.

Attention runs through ``scaled_dot_product_attention`` on strided *views* of the q/k/v
projections, with parameter names equal to ``nn.MultiheadAttention``'s (``in_proj_weight``
rows [q; k; v], ``in_proj_bias``, ``out_proj``) so CBraMod's weights load unchanged.

Two execution paths give the same numbers (to float rounding):

- **graph path** (autograd needs this layer: training, or any input that requires grad): plain
  out-of-place ops, so autograd saves what backward needs.
- **no-graph path** (inference, or a frozen encoder whose input needs no grad): the encoder runs
  all layers on micro-batches of about ``chunk_tokens`` tokens, so a micro-batch's activations
  (including the 4x wide feed-forward hidden layer) stay in the CPU caches and the allocator
  reuses warm memory instead of page-faulting fresh buffers; GELU runs in place and the
  feed-forward output and the attention output projections accumulate into the residual
  stream with ``addmm_`` (no bias-broadcast copy, no ``cat``).

On a CPU under bf16 autocast (``--precision auto`` on CPUs with AVX-512 BF16 or AMX) frozen
layers take the fast path's bf16 forms instead, where it is installed (:mod:`passport_kit.model.fast_path`):
the no-graph path for inference, and an input-gradient-only autograd function for a frozen
encoder whose input needs a gradient (the ``adapter`` step). Trainable encoder weights keep the
graph path, and so does everything without the fast path (autocast over the graph path).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from passport_kit.model.fast_linear import linear
from passport_kit.model.fast_path import LOWP

#: Tokens (channels x patches x samples) per micro-batch of the no-graph encoder path. Whole
#: samples only (attention mixes a sample's tokens). 8192 tokens keep the feed-forward hidden
#: layer (8192 x 800 floats, 26 MB) within the 32 MB L3 of the team's 2-core EPYC. At 1 thread
#: 1440-2880 tokens were slightly faster still, but with 2 threads on a loaded machine small
#: micro-batches were much slower (each parallel region waits for a descheduled thread).
CHUNK_TOKENS = 8192


class AxisAttention(nn.Module):
    """Multi-head self-attention along one axis (channels or patches) of a ``(B, C, P, E)`` grid."""

    def __init__(self, embed_dim: int, n_heads: int, dropout: float) -> None:
        super().__init__()
        self.n_heads = n_heads
        self.dropout = dropout
        self.in_proj_weight = nn.Parameter(torch.empty(3 * embed_dim, embed_dim))
        self.in_proj_bias = nn.Parameter(torch.zeros(3 * embed_dim))
        self.out_proj = nn.Linear(embed_dim, embed_dim)
        nn.init.xavier_uniform_(self.in_proj_weight)
        nn.init.zeros_(self.out_proj.bias)

    def attend(self, h: Tensor, axis: int, *, fused: bool = True) -> Tensor:
        """Return attention outputs ``(B, C, P, E)`` (before ``out_proj``) of ``h`` ``(B, C, P, E)``.

        ``axis`` 1: each patch's C channels form a sequence (spatial); ``axis`` 2: each channel's
        P patches do (temporal). ``h`` may be a strided slice of the last dimension: the
        projections read it in place, since BLAS needs unit stride only along E.
        ``fused`` False computes softmax(q k^T / sqrt(hd)) v with two batched matrix products
        instead of SDPA (no-graph path only; see :func:`_attention_math`).
        """
        b, c, p, e = h.shape
        n_heads, head_dim = self.n_heads, e // self.n_heads
        w, bias = self.in_proj_weight, self.in_proj_bias
        if axis == 2:
            # One packed projection (B, C, P, 3E): B·C sequences of length P, and the heads of
            # q, k, v are strided views of it.
            qkv = linear(h, w, bias).view(b * c, p, 3, n_heads, head_dim)
            q, k, v = (t.transpose(1, 2) for t in qkv.unbind(2))  # (B·C, H, P, hd) views
        else:
            # Three projections, each (B, C, P, E) contiguous, so (B, C, P·H, hd) is a view and
            # (B, P·H, C, hd) reads the channel axis as the sequence with no transpose copy:
            # every (patch, head) pair is one "head" of SDPA. (A packed (…, 3E) output would
            # interleave q/k/v and break the P·H merge.)
            q, k, v = (
                linear(h, w[i * e : (i + 1) * e], bias[i * e : (i + 1) * e]).view(b, c, p * n_heads, head_dim).transpose(1, 2)
                for i in range(3)
            )
        if fused:
            out = fused_attention(q, k, v, dropout_p=self.dropout if self.training else 0.0)
        else:
            out = _attention_math(q, k, v)
        # SDPA's CPU kernel writes (batch, L, heads, hd) memory, so this reshape is a view there
        # (one copy after the math path).
        return out.transpose(1, 2).reshape(b, c, p, e)


#: GPU attention kernels (flash, memory-efficient) need a head size that is a multiple of this.
FUSED_HEAD_MULTIPLE = 8


def fused_attention(q: Tensor, k: Tensor, v: Tensor, *, dropout_p: float = 0.0,
                    pad_heads: bool | None = None) -> Tensor:
    """Return SDPA's attention ``(N, H, L, hd)`` of ``(N, H, L, hd)`` inputs, on a fused kernel where one exists.

    Why the padding: CBraMod's heads are 25 wide (100 dims over 4 heads), and CUDA's flash and
    memory-efficient kernels take only multiples of 8, so SDPA would fall back to its unfused
    math kernel on a GPU. Zero columns appended to q, k and v leave q kᵀ and the weights unchanged
    and give zero output columns, which are cut off again; the scale stays 1/sqrt(25). Exact up to
    float rounding, and on by default on CUDA only (``pad_heads`` None), where it pays: on a CPU
    SDPA has no such restriction and the copy would cost time.
    """
    head_dim = q.shape[-1]
    if pad_heads is None:
        pad_heads = q.device.type == "cuda"
    extra = -head_dim % FUSED_HEAD_MULTIPLE if pad_heads else 0
    if not extra:
        return F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p)
    q, k, v = (F.pad(t, (0, extra)) for t in (q, k, v))
    out = F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p, scale=head_dim ** -0.5)
    return out[..., :head_dim]


def _attention_math(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
    """Return softmax(q k^T / sqrt(hd)) v for ``(N, H, L, hd)`` inputs, without autograd.

    Why not SDPA here: the sequences are short (C channels or P patches, tens of tokens) and
    SDPA's CPU flash kernel pays per-block overhead that two batched matrix products do not:
    measured on the 2-core EPYC (cbramod-base shapes, 16 x 12 ch x 30 patches, 2 threads) 5.2 vs
    1.4 ms for the spatial half and 3.3 vs 2.5 ms for the temporal half. With autograd the
    flash kernel wins (its backward recomputes instead of saving), so the graph path keeps SDPA.
    """
    scores = torch.matmul(q, k.transpose(-1, -2)).mul_(q.shape[-1] ** -0.5)
    return torch.matmul(torch.softmax(scores, dim=-1), v)


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
        """Return the layer output ``(B, C, P, D)`` for ``x`` ``(B, C, P, D)`` (graph path)."""
        half = x.shape[-1] // 2
        h = self.norm1(x)
        s = self.self_attn_s.attend(h[..., :half], axis=1)
        t = self.self_attn_t.attend(h[..., half:], axis=2)
        s = linear(s, self.self_attn_s.out_proj.weight, self.self_attn_s.out_proj.bias)
        t = linear(t, self.self_attn_t.out_proj.weight, self.self_attn_t.out_proj.bias)
        x = x + self.dropout1(torch.cat([s, t.to(s.dtype)], dim=-1))
        # linear() fuses bias and GELU on the opt-in oneDNN path; see fast_linear.
        hidden = linear(self.norm2(x), self.linear1.weight, self.linear1.bias, gelu=True)
        ff = linear(self.dropout(hidden), self.linear2.weight, self.linear2.bias)
        return x + self.dropout2(ff)

    def forward_no_graph(self, x: Tensor) -> Tensor:
        """Return the layer output ``(B, C, P, D)`` for ``x`` ``(B, C, P, D)``, without autograd.

        Same numbers as :meth:`forward` in eval mode, up to float rounding (bias and residual are
        summed in another order). Requires grad mode off and inactive dropout.
        """
        b, c, p, d = x.shape
        half = d // 2
        h = self.norm1(x)
        s = self.self_attn_s.attend(h[..., :half], axis=1, fused=False)
        t = self.self_attn_t.attend(h[..., half:], axis=2, fused=False)
        # x1 = x + [s Ws^T + bs | t Wt^T + bt]: one pass for the residual + biases, then each
        # output projection accumulates into its half of x1 (BLAS writes the strided half).
        bias = torch.cat([self.self_attn_s.out_proj.bias, self.self_attn_t.out_proj.bias])
        x1 = torch.add(x, bias.to(x.dtype)).view(-1, d)
        x1[:, :half].addmm_(s.reshape(-1, half), self.self_attn_s.out_proj.weight.t())
        x1[:, half:].addmm_(t.reshape(-1, half), self.self_attn_t.out_proj.weight.t())
        hidden = torch.addmm(self.linear1.bias, self.norm2(x1), self.linear1.weight.t())
        torch.ops.aten.gelu_(hidden)  # in place: no second (tokens, 800) buffer
        out = torch.add(x1, self.linear2.bias).addmm_(hidden, self.linear2.weight.t())
        return out.view(b, c, p, d)


class CrissCrossEncoder(nn.Module):
    """A stack of criss-cross layers (``layers.{i}``), no final norm (as in CBraMod)."""

    def __init__(self, n_layers: int, d_model: int, n_heads: int, d_ff: int, dropout: float) -> None:
        super().__init__()
        self.layers = nn.ModuleList(
            CrissCrossLayer(d_model, n_heads, d_ff, dropout) for _ in range(n_layers)
        )
        self.chunk_tokens = CHUNK_TOKENS

    def _needs_graph(self, x: Tensor) -> bool:
        # Autograd must see the ops when grad mode is on and either the input or a weight needs
        # a gradient; active dropout (training mode) also takes the ordinary path.
        if self.training and any(layer.dropout.p > 0 for layer in self.layers):
            return True
        if not torch.is_grad_enabled():
            return False
        return x.requires_grad or any(q.requires_grad for q in self.parameters())

    @staticmethod
    def _frozen_eval(layers: nn.ModuleList) -> bool:
        # The bf16 frozen-layer function computes no weight gradient and no dropout.
        return all(not layer.training and not any(q.requires_grad for q in layer.parameters()) for layer in layers)

    def forward(self, x: Tensor, depth: int | None = None) -> Tensor:
        """Return encoder features ``(B, C, P, D)`` for ``x`` ``(B, C, P, D)``.

        ``depth``: run only the first ``depth`` layers (0 returns ``x``; None: all of them).
        """
        layers = self.layers if depth is None else self.layers[:depth]
        if len(layers) == 0:
            return x
        lowp = cpu_lowp_dtype(x)
        if self._needs_graph(x) and lowp is not None and self._frozen_eval(layers):
            # bf16 on the CPU, weights frozen (the `adapter` policy): input gradients only, on
            # micro-batches as below (each one's graph is separate, so backward runs them in turn).
            step = _even_step(x.shape[0], self.chunk_tokens // (x.shape[1] * x.shape[2]))
            outs = []
            for start in range(0, x.shape[0], step):
                h = x[start : start + step].to(lowp)
                for layer in layers:
                    h = LOWP.FrozenLayerLowp.apply(h, layer)
                outs.append(h)
            return outs[0] if len(outs) == 1 else torch.cat(outs)
        if (self._needs_graph(x) or x.device.type != "cpu"
                or (torch.is_autocast_enabled(x.device.type) and lowp is None)):
            for layer in layers:
                x = layer(x)
            return x
        b, c, p, _ = x.shape
        if lowp is None:
            step = max(1, self.chunk_tokens // (c * p))
        else:
            # bf16: the same budget, split evenly. (At 1 thread, CPU time, 8 + 8 samples and 16 at
            # once were within 4 % of each other; with 2 threads on the loaded machine the batch
            # at once was faster, as in fp32: fewer parallel regions to wait in.)
            step = _even_step(b, self.chunk_tokens // (c * p))
        chunks = []
        with torch.no_grad(), torch.autocast("cpu", enabled=False):
            for start in range(0, b, step):
                if lowp is None:
                    h = x[start : start + step]
                    for layer in layers:
                        h = layer.forward_no_graph(h)
                else:
                    h = x[start : start + step].to(lowp)
                    for layer in layers:
                        h = LOWP.layer_forward(layer, h)[0]
                chunks.append(h)
        return chunks[0] if len(chunks) == 1 else torch.cat(chunks)


def _even_step(batch: int, most: int) -> int:
    """Return a micro-batch size of at most ``most`` (at least 1) that splits ``batch`` into near-equal parts.

    16 samples at most 11 per part: 8 + 8, not 11 + 5 (a small remainder runs at a lower rate).
    """
    most = max(1, most)
    parts = -(-batch // most)
    return max(1, -(-batch // parts))


def cpu_lowp_dtype(x: Tensor) -> torch.dtype | None:
    """Return bf16 when ``x`` is on the CPU under bf16 autocast and the fast path is installed, else None."""
    if LOWP is None or x.device.type != "cpu" or not torch.is_autocast_enabled("cpu"):
        return None
    dtype = torch.get_autocast_dtype("cpu")
    return dtype if dtype == torch.bfloat16 else None
