"""Products of the bf16 fast path: oneDNN's linear primitive with its post-ops fused, without autograd."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from passport_kit.model.fast_linear import ONEDNN_OP


def linear_lowp(x: Tensor, weight: Tensor, bias: Tensor | None, *, gelu: bool = False,
                add: Tensor | None = None) -> Tensor:
    """Return ``x @ weight.T + bias`` ``(*, out)`` for bf16 ``x`` ``(*, in)`` and weights, without autograd.

    Then GELU if ``gelu``, or ``+ add`` (same shape as the output) if ``add`` is given: the
    bf16 no-graph encoder path (:func:`passport_kit.model.lowp.layer.layer_forward`).
    Where this torch build has oneDNN's linear primitive it runs there, with the GELU or the
    add fused into the product as post-ops (on a CPU with AMX the product itself is a fraction
    of what a separate GELU or add pass costs); otherwise ``F.linear`` and separate passes.
    ``x`` may be a slice with unit stride along the last dimension.
    """
    if ONEDNN_OP is not None and x.device.type == "cpu":
        if add is not None:
            return torch.ops.mkldnn._linear_pointwise.binary(x, add, weight, bias, "add")
        return ONEDNN_OP(x, weight, bias, "gelu" if gelu else "none", [], "none" if gelu else "")
    out = F.linear(x, weight, bias)
    if add is not None:
        return out.add_(add)
    return F.gelu(out) if gelu else out


__all__ = ["linear_lowp"]
