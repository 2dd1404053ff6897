"""One read-out of the ladder, as a value: which blocks it reads with which weights, its context, pooling, scaling
and regularisation (torch-free: the CLI's option models and the rungs name read-outs at start-up)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ReadOutChoice:
    """One read-out: which blocks it reads with which weights, its context, pooling and scaling, and its C.

    ``backbone_weight`` 0 and ``prior_weight`` 0 with context 0 and scaling "none" is the textbook
    band-power classifier. ``offset``: the read-out is fitted *around* the sleep stager's output (its
    log-probabilities as a fixed offset, the deviation shrunk by ``c``: :mod:`passport_kit.onboard.offset`),
    rows unweighted (the stager's class balance kept); ``diagonal``: each class re-weights only its own
    stage's log-probability (per-class scale and bias); ``bandpower_weight`` 0 leaves band power out.
    """

    c: float
    backbone_weight: float = 0.0
    context: int = 0
    pooling: str = "mean"
    scaling: str = "none"
    prior_weight: float = 0.0
    bandpower_weight: float = 1.0
    offset: bool = False
    diagonal: bool = False

    def with_c(self, c: float) -> ReadOutChoice:
        """Return this read-out with regularisation ``c``."""
        return dataclasses.replace(self, c=c)

    def as_dict(self) -> dict[str, Any]:
        """Return the choice as adapter.json's selection block names it (the stager-side keys where they are set)."""
        out: dict[str, Any] = {"C": self.c, "backbone_weight": self.backbone_weight, "context": self.context,
                               "pooling": self.pooling, "scaling": self.scaling, "prior_weight": self.prior_weight}
        if self.offset or self.bandpower_weight != 1.0:
            out |= {"bandpower_weight": self.bandpower_weight, "offset": self.offset, "diagonal": self.diagonal}
        return out

    @property
    def reads_prior(self) -> bool:
        """Return whether the read-out's inputs hold the stager's block (stacked, or as the offset)."""
        return bool(self.prior_weight) or self.offset


__all__ = ["ReadOutChoice"]
