"""Weights prepared once in bf16 for a module whose weights do not change between calls.

Why: under ``torch.autocast`` every fp32 weight that does not require grad (a frozen backbone
under the ``adapter`` and ``head`` policies, every weight in inference) is cast to bf16 again
on every call: autocast caches only casts of leaf tensors that require grad. For cbramod-base
that is 4.9 M parameters read, converted and written per forward pass. :func:`prepared` builds
the bf16 tensors (and anything derived from them, e.g. concatenated biases) once per module and
reuses them while the module's parameters are unchanged.

Staleness: the cache is keyed by every parameter's storage address and version counter, which
every in-place update bumps (an optimizer step, ``load_state_dict``, ``copy_`` under
``no_grad``), so a changed weight is never read from a stale copy. The prepared tensors live in
a plain attribute, not in buffers: ``state_dict`` and saved checkpoints and bundles are
unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import torch
from torch import nn

_ATTR = "_frozen_cast"
#: What a module's prepared form is (a dict of tensors, or an object holding them).
T = TypeVar("T")


def _stamp(module: nn.Module, dtype: torch.dtype) -> tuple:
    return (dtype, *((q.data_ptr(), q._version, q.device) for q in module.parameters()))


def prepared(module: nn.Module, dtype: torch.dtype, build: Callable[[], T]) -> T:
    """Return ``build()``'s tensors for ``module`` in ``dtype``, built once while its parameters are unchanged.

    ``build`` runs without autograd and outside inference mode, so the tensors it returns can
    be used both in ``torch.inference_mode`` and in a graph whose backward passes through them
    (they never require grad themselves: use this for frozen weights only).
    """
    stamp = _stamp(module, dtype)
    cached = module.__dict__.get(_ATTR)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    with torch.inference_mode(False), torch.no_grad():
        tensors = build()
    module.__dict__[_ATTR] = (stamp, tensors)
    return tensors


def forget(module: nn.Module) -> None:
    """Drop the prepared tensors of ``module`` and its submodules (memory; they are rebuilt on demand)."""
    for sub in module.modules():
        sub.__dict__.pop(_ATTR, None)


__all__ = ["forget", "prepared"]
