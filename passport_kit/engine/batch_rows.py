"""Which rows of which array a batch tensor holds, as read: how a cache of per-window outputs finds its windows.

The batch makers of training and inference (:func:`passport_kit.onboard.finetune._training_batch`,
:func:`passport_kit.engine.forward._batches`) read rows of a window array into a tensor and note them on it
(:func:`note`); a cache keyed by row (LP-FT's frozen blocks, :class:`~passport_kit.onboard.lpft.FrozenMemo`)
asks :func:`rows_of`. The answer holds only for the same array (its identity, not its content) and only
while the tensor is as it was read: a tensor changed in place since (its version counter moved), one the
input regularisers replaced, or a copy made by an operation carries no rows, and its windows are computed.
Inference tensors have no version counter; they are made and used inside one inference pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from torch import Tensor

_ATTRIBUTE = "_passport_kit_rows"


@dataclass(frozen=True)
class _Rows:
    source: Any            # the array the rows index (compared by identity)
    rows: np.ndarray
    version: int | None    # the tensor's version counter when noted (None: an inference tensor)


def _version(xb: Tensor) -> int | None:
    return None if xb.is_inference() else xb._version


def note(xb: Tensor, source: Any, rows: np.ndarray) -> Tensor:
    """Note on ``xb`` that its windows are rows ``rows`` of ``source``, as read; return ``xb``."""
    setattr(xb, _ATTRIBUTE, _Rows(source, np.asarray(rows, dtype=np.int64), _version(xb)))
    return xb


def rows_of(xb: Tensor, source: Any) -> np.ndarray | None:
    """Return the rows of ``source`` that ``xb``'s windows are, or None: not noted, another array, or changed since."""
    noted = getattr(xb, _ATTRIBUTE, None)
    if noted is None or noted.source is not source or noted.version != _version(xb) or len(noted.rows) != len(xb):
        return None
    return noted.rows


__all__ = ["note", "rows_of"]
