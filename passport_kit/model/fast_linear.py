"""Linear layers on a CPU fast path when no weight gradient is needed (inference, frozen layers).

PyTorch's ``F.linear`` on CPU runs an MKL ``addmm``: it copies the bias into the output, then
accumulates the product; a following GELU is one more pass over memory. oneDNN's linear
primitive (``torch.ops.mkldnn._linear_pointwise``, the kernel Inductor uses on CPU) fuses bias
and GELU into the product and was 1.2-2.9x faster per projection on the AVX2 EPYC under load, but slower
end to end on a quiet machine, so it is opt-in (see ``_ONEDNN_LINEAR``). The op has no autograd formula,
so it is used only where no weight gradient is wanted: under ``torch.no_grad`` /
``inference_mode``, or for frozen weights (the ``adapter`` and ``head`` policies), where
:class:`_FrozenLinear` supplies the input gradient. Everything else (autocast, CUDA, trainable
weights, ``torch.compile`` tracing) takes ``F.linear`` unchanged.
"""

from __future__ import annotations

import os

import torch
import torch.nn.functional as F
from torch import Tensor

#: oneDNN's linear primitive, or None when this torch build lacks oneDNN or the op (the bf16 fast path's
#: products run on it too: :mod:`passport_kit.model.lowp.linear`).
ONEDNN_OP = getattr(torch.ops.mkldnn, "_linear_pointwise", None) if torch.backends.mkldnn.is_available() else None
# Off by default (None: every call takes F.linear). Measured on a quiet machine, the lever made
# whole-model inference and the adapter step 10-18 % *slower* than plain F.linear (docs/history/speed.md,
# "Model speed on CPU"); the earlier gain was seen only under heavy load. Opt in with
# PASSPORT_KIT_ONEDNN_LINEAR=1 to measure it on other processors.
_ONEDNN_LINEAR = ONEDNN_OP if os.environ.get("PASSPORT_KIT_ONEDNN_LINEAR") == "1" else None


class _FrozenLinear(torch.autograd.Function):
    """``x @ W.T + b`` through oneDNN; backward returns the input gradient only (W, b frozen)."""

    @staticmethod
    def forward(ctx, x: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:  # noqa: ANN001
        ctx.save_for_backward(weight)
        return _ONEDNN_LINEAR(x, weight, bias, "none", [], "")

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple[Tensor, None, None]:  # noqa: ANN001
        (weight,) = ctx.saved_tensors
        return grad.matmul(weight), None, None


def _weights_need_grad(weight: Tensor, bias: Tensor | None) -> bool:
    return torch.is_grad_enabled() and (weight.requires_grad or (bias is not None and bias.requires_grad))


def linear(x: Tensor, weight: Tensor, bias: Tensor | None, *, gelu: bool = False) -> Tensor:
    """Return ``x @ weight.T + bias`` ``(*, out)`` for ``x`` ``(*, in)``, then GELU if ``gelu``.

    Same numbers as ``F.linear`` (+ ``F.gelu``) up to float rounding (~1e-6 relative).
    """
    fast = (
        _ONEDNN_LINEAR is not None
        and x.device.type == "cpu"
        and x.dtype == torch.float32
        and weight.dtype == torch.float32
        and not torch.is_autocast_enabled("cpu")
        and not torch.compiler.is_compiling()
        and not _weights_need_grad(weight, bias)
    )
    if not fast:
        out = F.linear(x, weight, bias)
        return F.gelu(out) if gelu else out
    if torch.is_grad_enabled() and x.requires_grad:
        out = _FrozenLinear.apply(x, weight, bias)
        return F.gelu(out) if gelu else out
    return _ONEDNN_LINEAR(x, weight, bias, "gelu" if gelu else "none", [], "none" if gelu else "")
