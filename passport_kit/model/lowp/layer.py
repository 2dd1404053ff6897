"""The criss-cross layer in bf16 on CPUs with native bf16 (AVX-512 BF16, AMX): inference and frozen training.

Why a separate form: under plain ``torch.autocast`` the bf16 products were fast but everything
around them was not. Profiled on the AMX Xeon (cbramod-base, 16 x 12 ch x 30 patches,
docs/history/speed.md, issue 36): at inference the products took a sixth of the time and
the bf16 GELU on fresh buffers, SDPA's flash kernel on 12- and 30-token sequences, the casts of
the frozen weights on every call and dtype round trips around LayerNorm the rest; in the
``adapter`` step SDPA's flash *backward* in bf16 took half of the whole step. Here:

- the frozen weights are cast once (:mod:`passport_kit.model.lowp.cast`), with the softmax
  scale folded into the q rows, the q/k/v projections of both halves packed into one
  block-diagonal ``(6E, 2E)`` product and both output projections into one ``(2E, 2E)`` one
  (twice those products' FLOPs, 15 % of the layer's, run at the AMX rate in one call instead of
  four strided ones);
- products run on oneDNN with bias, GELU and residual add fused (:func:`~passport_kit.model.lowp.linear.linear_lowp`);
- attention is two batched products with the softmax written out in fp32 (:func:`attention`);
  at inference, where the compiled kernels are built, one fused op per layer instead, with
  LayerNorm (:mod:`passport_kit.model.lowp.loader`);
- LayerNorm statistics and the softmax accumulate in fp32 inside their kernels; activations
  and the residual stream are bf16, as under autocast.

Training with frozen layers (the ``adapter`` policy: the gradient must reach the channel
embedding through every layer, and no weight gradient is wanted) uses :class:`FrozenLayerLowp`,
an autograd function whose backward computes the input gradient only, by hand: transposed
products with the same cast weights, the softmax's and LayerNorm's input gradients
(``native_layer_norm_backward`` with the weight gradients switched off) and GELU's derivative.

Which form a layer's inference runs (:data:`LowpPath`: ``eager``, ``avx512`` or ``amx``) is chosen
once, when its weights are prepared (:func:`prepare`), from what this process can run: named in
:class:`PreparedLayer`, logged once per process (``--verbose`` shows it) and printed by
``benchmarks/bench_model.py``. Training with frozen layers always takes the eager form (its
backward is written for it).

Numbers differ from fp32 by bf16 rounding (about 1 % relative on the encoder output, as bf16
autocast); agreement of predicted classes with fp32 is measured by ``benchmarks/bench_model.py``
and tested in ``tests/model/lowp/test_lowp_layer.py``.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from typing import Any, Literal, get_args

import torch
from torch import Tensor, nn

from passport_kit.model.lowp import loader
from passport_kit.model.lowp.cast import prepared
from passport_kit.model.lowp.linear import linear_lowp

log = logging.getLogger(__name__)

#: The forms a layer's inference runs. ``eager``: torch ops and oneDNN products (no compiled
#: library loaded here: not built, stale, switched off, or a CPU without AVX-512 BF16);
#: ``avx512``: the compiled attention and LayerNorm (AVX-512 BF16) between oneDNN products;
#: ``amx``: the compiled ops with every product on AMX tiles (the attention's inputs, the
#: attention, the output projection, LayerNorm and the feed-forward block).
LowpPath = Literal["eager", "avx512", "amx"]
PATHS: tuple[str, ...] = get_args(LowpPath)

#: A criss-cross layer (:class:`passport_kit.model.transformer.CrissCrossLayer`): this room reads its
#: weights and never imports the class (the model does not depend on the fast path, nor the reverse).
Layer = nn.Module


def process_path(dtype: torch.dtype = torch.bfloat16) -> LowpPath:
    """Return the form this process runs a layer's inference in for activations of ``dtype``."""
    kernels = loader.ops()
    if dtype != torch.bfloat16 or kernels is None:
        return "eager"
    return "amx" if kernels.amx_available() else "avx512"


@functools.cache
def _announce(path: str) -> None:
    """Log once per process which form the layers run (``--verbose`` prints it)."""
    why = {"eager": "eager bf16 (torch ops and oneDNN products; compiled kernels not loaded here)",
           "avx512": "compiled attention and LayerNorm (AVX-512 BF16) between oneDNN products",
           "amx": "compiled ops on AMX tiles"}[path]
    log.info("bf16 fast path: %s: %s", path, why)


@dataclass(frozen=True)
class PreparedLayer:
    """A layer's weights cast once for the bf16 forms, and the form its inference runs (``path``)."""

    path: LowpPath
    w: dict[str, Tensor]


def prepare(layer: Layer, dtype: torch.dtype) -> PreparedLayer:
    """Return ``layer``'s weights in ``dtype`` packed for :func:`layer_forward` and its path, built once while unchanged.

    The path (:data:`LowpPath`) is chosen here, once, by :func:`process_path`; an ``amx`` layer
    also holds its weights in AMX tile order (about 1 MB a layer of cbramod-base).
    """

    def build() -> PreparedLayer:
        half = layer.self_attn_s.out_proj.weight.shape[0]
        # q/k/v of both halves: rows [q_s; k_s; v_s] read columns :E, rows [q_t; k_t; v_t] read E:.
        w_in = torch.zeros(6 * half, 2 * half)
        b_in = torch.zeros(6 * half)
        for i, attn in enumerate((layer.self_attn_s, layer.self_attn_t)):
            w, b = attn.in_proj_weight.clone(), attn.in_proj_bias.clone()
            scale = (half // attn.n_heads) ** -0.5  # softmax scale, folded into q
            w[:half] *= scale
            b[:half] *= scale
            w_in[3 * half * i : 3 * half * (i + 1), half * i : half * (i + 1)] = w
            b_in[3 * half * i : 3 * half * (i + 1)] = b
        w_out = torch.zeros(2 * half, 2 * half)
        w_out[:half, :half] = layer.self_attn_s.out_proj.weight
        w_out[half:, half:] = layer.self_attn_t.out_proj.weight
        b_out = torch.cat([layer.self_attn_s.out_proj.bias, layer.self_attn_t.out_proj.bias])
        out = {"in_w": w_in, "in_b": b_in, "out_w": w_out, "out_b": b_out}
        for name, mod in (("norm1", layer.norm1), ("norm2", layer.norm2), ("linear1", layer.linear1),
                          ("linear2", layer.linear2)):
            out[f"{name}_w"], out[f"{name}_b"] = mod.weight, mod.bias
        # Transposed copies for the backward products (input gradients run as linears on oneDNN too).
        for name in ("in", "out", "linear1", "linear2"):
            out[f"{name}_wt"] = out[f"{name}_w"].t()
        out = {k: v.detach().to(dtype).contiguous() for k, v in out.items()}
        path = process_path(dtype)
        if path == "amx":
            kernels = loader.ops()
            # each half's q/k/v and output projection blocks and the feed-forward weights in AMX tile order
            # (no zero blocks), for attention_input, attention_output_feed_forward and criss_cross_layer
            for name, pack in (("in", kernels.pack_attention_weight), ("out", kernels.pack_attention_weight),
                               ("linear1", kernels.pack_feed_forward_weight),
                               ("linear2", kernels.pack_feed_forward_weight)):
                out[f"{name}_wp"] = pack(out[f"{name}_w"])
        _announce(path)
        return PreparedLayer(path, out)

    return prepared(layer, dtype, build)


def _heads(t: Tensor, axis: int, n_heads: int, parts: int = 1) -> Tensor:
    """Return ``t`` ``(B, C, P, parts·E)`` as ``parts`` stacked contiguous sequences ``(parts, N, L, hd)``.

    ``parts`` 3: q, k and v of one half side by side; 1: one tensor (a gradient of an attention
    output). ``axis`` 1 (spatial): N = B·P·H sequences over the C channels; 2 (temporal): N = B·C·H
    over the P patches. ``t`` may be a slice of the last dimension. One copy for q, k and v
    together (15 % faster than three on the AMX Xeon, 1 thread); a copy at all because bf16
    products on permuted 5-d views took 100x longer than the copy.
    """
    b, c, p, e = t.shape
    hd = e // parts // n_heads
    t = t.reshape(b, c, p, parts, n_heads, hd)
    if axis == 1:
        return t.permute(3, 0, 2, 4, 1, 5).reshape(parts, b * p * n_heads, c, hd)
    return t.permute(3, 0, 1, 4, 2, 5).reshape(parts, b * c * n_heads, p, hd)


def _unheads(t: Tensor, axis: int, shape: tuple[int, int, int, int], n_heads: int) -> Tensor:
    """Return ``t`` ``(N, L, hd)`` as a ``(B, C, P, H, hd)`` view (the inverse of :func:`_heads`, without the copy)."""
    b, c, p, _ = shape
    hd = t.shape[-1]
    if axis == 1:
        return t.view(b, p, n_heads, c, hd).permute(0, 3, 1, 2, 4)
    return t.view(b, c, n_heads, p, hd).permute(0, 1, 3, 2, 4)


#: A row of scores whose exponentials, shifted by its sequence's largest score, sum below this
#: has its largest score more than ~46 below that maximum: :func:`attention` then shifts row by row.
_SHIFT_FLOOR = 1e-20


def attention(q: Tensor, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
    """Return (softmax(q kᵀ) v ``(N, L, hd)``, the weights ``(N, L, L)``) for bf16 inputs whose q carries the scale.

    The products run in bf16, the softmax in fp32, written out (max, exp, sum, divide, in
    place) because ``torch.softmax`` over rows shorter than a vector register (12 channels)
    took 3-10x longer on the AMX Xeon (1 thread, 960 x 12 x 12 scores: 0.83 ms for the whole
    attention written out, 2.8 ms with ``torch.softmax``). Why not SDPA: the sequences are
    12-30 tokens long and SDPA's CPU flash kernel pays per-block overhead (same shapes: 4.2 vs
    0.8 ms spatial, 2.5 vs 1.3 ms temporal), and its bf16 backward was half of the adapter step.

    The shift before ``exp`` is each sequence's largest score, not each row's: softmax does not
    depend on the shift, and ``amax`` over rows of 30 (or 12) scores took as long as the
    attention's two products, over a sequence's L·L scores a fifth of that (AMX Xeon, 1 thread,
    cbramod-base shapes: the attention 24 % faster for 30 patches, 13 % for 12 channels). A
    row whose own largest score lies far below its sequence's (its exponentials would lose
    precision in fp32) makes the call shift row by row instead, as before; no output differs
    from the row-wise form by more than fp32 rounding.
    """
    scores = torch.bmm(q, k.transpose(1, 2)).float()
    n = scores.shape[0]
    scores = scores.sub_(scores.view(n, -1).amax(-1).view(n, 1, 1)).exp_()
    total = scores.sum(-1, keepdim=True)
    if n and float(total.amin()) < _SHIFT_FLOOR:  # rare: recompute with each row's own maximum
        scores = torch.bmm(q, k.transpose(1, 2)).float()
        scores = scores.sub_(scores.amax(-1, keepdim=True)).exp_()
        total = scores.sum(-1, keepdim=True)
    weights = scores.div_(total).to(v.dtype)
    return torch.bmm(weights, v), weights


def _attention_backward(grad: Tensor, q: Tensor, k: Tensor, v: Tensor, weights: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Return the gradients of q, k, v ``(N, L, hd)`` of :func:`attention` for its output gradient ``grad``."""
    grad_v = torch.bmm(weights.transpose(1, 2), grad)
    grad_w = torch.bmm(grad, v.transpose(1, 2)).float()
    w32 = weights.float()
    # softmax: dS = W * (dW - rowsum(dW * W))
    grad_s = (grad_w.sub_((grad_w * w32).sum(-1, keepdim=True))).mul_(w32).to(q.dtype)
    return torch.bmm(grad_s, k), torch.bmm(grad_s.transpose(1, 2), q), grad_v


def layer_forward(layer: Layer, x: Tensor, *, save: bool = False) -> tuple[Tensor, dict[str, Tensor] | None]:
    """Return (the layer output ``(B, C, P, D)`` for bf16 ``x`` ``(B, C, P, D)``, what backward needs or None).

    Eval-mode arithmetic (no dropout); call without autocast and without autograd. Without
    ``save`` (inference) the layer runs its prepared path (:func:`prepare`): ``avx512`` and
    ``amx`` on the compiled kernels (:func:`_forward_avx512`, :func:`_forward_amx`), ``eager``
    here; with ``save`` (the frozen layers' training step) always here.
    """
    prep = prepare(layer, x.dtype)
    w = prep.w
    if not save and prep.path != "eager":
        forward = _forward_amx if prep.path == "amx" else _forward_avx512
        return forward(layer, x, w, loader.ops()), None
    b, c, p, d = x.shape
    half = d // 2
    heads = (layer.self_attn_s.n_heads, layer.self_attn_t.n_heads)
    h, mean1, rstd1 = torch.native_layer_norm(x, (d,), w["norm1_w"], w["norm1_b"], layer.norm1.eps)
    qkv = linear_lowp(h, w["in_w"], w["in_b"])  # (B, C, P, 6E/2): spatial q k v | temporal q k v
    att = torch.empty_like(x)
    saved: dict[str, Tensor] = {}
    for axis, cols, n_heads in ((1, slice(0, 3 * half), heads[0]), (2, slice(3 * half, 6 * half), heads[1])):
        q, k, v = _heads(qkv[..., cols], axis, n_heads, parts=3)
        o, weights = attention(q, k, v)
        dst = att[..., :half] if axis == 1 else att[..., half:]
        dst.view(b, c, p, n_heads, half // n_heads).copy_(_unheads(o, axis, (b, c, p, d), n_heads))
        if save:
            saved.update({f"q{axis}": q, f"k{axis}": k, f"v{axis}": v, f"w{axis}": weights})
    x1 = linear_lowp(att, w["out_w"], w["out_b"], add=x)
    h2, mean2, rstd2 = torch.native_layer_norm(x1, (d,), w["norm2_w"], w["norm2_b"], layer.norm2.eps)
    if not save:
        hidden = linear_lowp(h2, w["linear1_w"], w["linear1_b"], gelu=True)
        return linear_lowp(hidden, w["linear2_w"], w["linear2_b"], add=x1), None
    pre = linear_lowp(h2, w["linear1_w"], w["linear1_b"])
    out = linear_lowp(torch.nn.functional.gelu(pre), w["linear2_w"], w["linear2_b"], add=x1)
    saved.update({"x": x, "mean1": mean1, "rstd1": rstd1, "x1": x1, "mean2": mean2, "rstd2": rstd2, "pre": pre})
    return out, saved


#: Thread-time a split of the samples over the threads may leave idle for the one-op layer.
_IDLE_SHARE = 0.03


def per_sample(samples: int, threads: int) -> bool:
    """Return whether a layer over ``samples`` samples runs as one op per layer on ``threads`` threads (else three).

    ``criss_cross_layer`` is parallel over samples only: at least as many samples as threads, and
    an uneven split may leave at most 3 % of the threads' time idle (B a multiple of the thread
    count, or large). Paired, interleaved, one layer of cbramod-base, 12 ch x 30 patches, on the
    AMX Xeon (issue 36), one op / three ops: 2 threads B=1 1.62, B=2 0.95, B=3 1.26, B=9 1.05,
    B=16 0.97, B=64 0.85; 1 thread B=1 0.98, B=16 0.95, B=64 0.83.
    """
    threads = max(threads, 1)
    if samples < threads:
        return False
    padded = -(-samples // threads) * threads
    return padded <= (1 + _IDLE_SHARE) * samples


def _forward_avx512(layer: Layer, x: Tensor, w: dict[str, Tensor], kernels: Any) -> Tensor:
    """Return the layer output ``(B, C, P, D)`` for bf16 ``x`` ``(B, C, P, D)``: the ``avx512`` path.

    The same steps as :func:`layer_forward`'s eager form; LayerNorm and the attention are compiled:
    the attention reads q/k/v from the packed product and writes the packed output projection's
    input directly (no regrouping copies), in fp32 inside (its products are not rounded to bf16 in
    between, so it is nearer fp32 than the eager form). The products stay on oneDNN.
    """
    heads = (layer.self_attn_s.n_heads, layer.self_attn_t.n_heads)
    h = kernels.layer_norm(x, w["norm1_w"], w["norm1_b"], layer.norm1.eps)
    att = kernels.criss_cross_attention(linear_lowp(h, w["in_w"], w["in_b"]), *heads)
    x1 = linear_lowp(att, w["out_w"], w["out_b"], add=x)
    h2 = kernels.layer_norm(x1, w["norm2_w"], w["norm2_b"], layer.norm2.eps)
    hidden = linear_lowp(h2, w["linear1_w"], w["linear1_b"], gelu=True)
    return linear_lowp(hidden, w["linear2_w"], w["linear2_b"], add=x1)


def _forward_amx(layer: Layer, x: Tensor, w: dict[str, Tensor], kernels: Any) -> Tensor:
    """Return the layer output ``(B, C, P, D)`` for bf16 ``x`` ``(B, C, P, D)``: the ``amx`` path.

    Every product on AMX tiles (``amx.cpp``): ``attention_input`` is LN1 and each half's q/k/v
    product per 32-row block (K = E padded to 128, not the packed product's zero blocks), then
    the compiled attention, then ``attention_output_feed_forward``: each half's output projection,
    the residual, LN2 and the feed-forward block (both products on the tiles, bias, GELU and the
    residual on the fp32 accumulators), with x1 kept in fp32 and neither x1, the LayerNorms'
    outputs nor the hidden layer written to memory.

    Where the samples split evenly over the threads (:func:`per_sample`), the whole layer is one op
    instead, ``criss_cross_layer``: the same block routines and attention (the same bits), but each
    thread takes whole samples and keeps a sample's q/k/v and attention output in its L2 cache, never
    in memory (every attention sequence lies inside one sample). This is a split of the work over
    the threads, not another arithmetic.
    """
    heads = (layer.self_attn_s.n_heads, layer.self_attn_t.n_heads)
    if per_sample(x.shape[0], torch.get_num_threads()):
        return kernels.criss_cross_layer(
            x, w["norm1_w"], w["norm1_b"], layer.norm1.eps, w["in_wp"], w["in_b"], *heads, w["out_wp"], w["out_b"],
            w["norm2_w"], w["norm2_b"], layer.norm2.eps, w["linear1_wp"], w["linear1_b"], w["linear2_wp"],
            w["linear2_b"])
    qkv = kernels.attention_input(x, w["norm1_w"], w["norm1_b"], layer.norm1.eps, w["in_wp"], w["in_b"])
    att = kernels.criss_cross_attention(qkv, *heads)
    return kernels.attention_output_feed_forward(
        att, x, w["out_wp"], w["out_b"], w["norm2_w"], w["norm2_b"], layer.norm2.eps,
        w["linear1_wp"], w["linear1_b"], w["linear2_wp"], w["linear2_b"])


def layer_backward(layer: Layer, grad: Tensor, saved: dict[str, Tensor]) -> Tensor:
    """Return the gradient of :func:`layer_forward`'s input for its output gradient ``grad`` ``(B, C, P, D)`` (weights frozen)."""
    w = prepare(layer, grad.dtype).w
    b, c, p, d = grad.shape
    half = d // 2
    heads = (layer.self_attn_s.n_heads, layer.self_attn_t.n_heads)
    # feed-forward block: out = x1 + gelu(LN2(x1) W1ᵀ + b1) W2ᵀ + b2
    g_pre = torch.ops.aten.gelu_backward(linear_lowp(grad, w["linear2_wt"], None), saved["pre"])
    g_h2 = linear_lowp(g_pre, w["linear1_wt"], None)
    g_x1 = torch.ops.aten.native_layer_norm_backward(
        g_h2, saved["x1"], (d,), saved["mean2"], saved["rstd2"], w["norm2_w"], w["norm2_b"], [True, False, False])[0]
    g_x1 = g_x1.add_(grad)
    # attention block: x1 = x + att W_outᵀ + b_out
    g_att = linear_lowp(g_x1, w["out_wt"], None)
    g_qkv = torch.empty(b, c, p, 6 * half, dtype=grad.dtype)
    for axis, n_heads in ((1, heads[0]), (2, heads[1])):
        src = g_att[..., :half] if axis == 1 else g_att[..., half:]
        g_o = _heads(src, axis, n_heads)[0]
        grads = _attention_backward(g_o, saved[f"q{axis}"], saved[f"k{axis}"], saved[f"v{axis}"], saved[f"w{axis}"])
        base = 0 if axis == 1 else 3 * half
        dst = g_qkv[..., base : base + 3 * half].view(b, c, p, 3, n_heads, half // n_heads)
        for i, gi in enumerate(grads):
            dst[:, :, :, i].copy_(_unheads(gi, axis, (b, c, p, d), n_heads))
    g_h = linear_lowp(g_qkv, w["in_wt"], None)
    g_x = torch.ops.aten.native_layer_norm_backward(
        g_h, saved["x"], (d,), saved["mean1"], saved["rstd1"], w["norm1_w"], w["norm1_b"], [True, False, False])[0]
    return g_x.add_(g_x1)


class FrozenLayerLowp(torch.autograd.Function):
    """One frozen criss-cross layer in bf16 whose backward gives the input gradient only (no weight gradients)."""

    @staticmethod
    def forward(ctx, x: Tensor, layer: Layer) -> Tensor:  # noqa: ANN001
        with torch.autocast("cpu", enabled=False):
            out, saved = layer_forward(layer, x, save=True)
        ctx.layer = layer
        ctx.keys = list(saved)  # type: ignore[union-attr]
        ctx.save_for_backward(*saved.values())  # type: ignore[union-attr]
        return out

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple[Tensor, None]:  # noqa: ANN001
        saved = dict(zip(ctx.keys, ctx.saved_tensors, strict=True))
        with torch.autocast("cpu", enabled=False):
            return layer_backward(ctx.layer, grad.to(saved["x"].dtype).contiguous(), saved), None


__all__ = ["PATHS", "FrozenLayerLowp", "LowpPath", "PreparedLayer", "attention", "layer_backward", "layer_forward",
           "per_sample", "prepare", "process_path"]
