"""Channel metadata that travels with every batch: names and electrode positions."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

import numpy as np
import torch
from torch import Tensor

from passport_kit.errors import ChannelMappingError



class ChannelLayoutSource(Protocol):
    """What :meth:`ChannelMeta.from_montage` reads (a ``passport_kit.montage.Montage`` has it).

    A protocol, not an import: the model never imports the montage registry or the data layer;
    positions arrive as tensors (DESIGN.md §5, dependency directions).
    """

    @property
    def ch_names(self) -> Sequence[str]: ...

    @property
    def positions(self) -> Any: ...

    @property
    def reference_positions(self) -> Any: ...


@dataclass(frozen=True, eq=False)
class ChannelMeta:
    """Names and positions of the C channels of a batch, in the order of the input tensor.

    ``positions`` is ``(C, 3)`` float32 in metres (MNE head frame). ``reference_positions`` is
    ``(C, 3)`` with NaN rows for monopolar channels and the reference electrode's position for
    bipolar derivations. Kinds that do not use positions (``ape``, ``channel-id``, ``acpe``)
    accept NaN positions. ``quality`` ``(B, C)`` float in [0, 1] (1 = good): each window's channel
    quality scores for a quality-gated channel embedding, scored by the data pipeline
    (:func:`passport_kit.engine.forward.gate_meta`) and handed in with the batch
    (:meth:`with_quality`); None where nothing is gated.
    """

    names: tuple[str, ...]
    positions: Tensor
    reference_positions: Tensor
    quality: Tensor | None = None

    def __post_init__(self) -> None:
        c = len(self.names)
        if c == 0:
            raise ChannelMappingError("no channels given; a montage needs at least one channel")
        for label, value in (("positions", self.positions), ("reference_positions", self.reference_positions)):
            if tuple(value.shape) != (c, 3):
                raise ChannelMappingError(
                    f"{label} has shape {tuple(value.shape)} for {c} channel names; expected ({c}, 3)"
                )
        lowered = [n.casefold() for n in self.names]
        if len(set(lowered)) != c:
            dup = sorted({n for n in self.names if lowered.count(n.casefold()) > 1})
            raise ChannelMappingError(f"duplicate channel names {dup}; give every channel a unique name")
        if self.quality is not None and (self.quality.dim() != 2 or self.quality.shape[1] != c):
            raise ValueError(f"quality has shape {tuple(self.quality.shape)}; expected (batch, {c})")

    @classmethod
    def create(
        cls,
        names: Sequence[str],
        positions: np.ndarray | Tensor | Sequence[Sequence[float]] | None = None,
        reference_positions: np.ndarray | Tensor | Sequence[Sequence[float]] | None = None,
    ) -> ChannelMeta:
        """Return a ChannelMeta from names and optional positions in metres (missing = NaN)."""
        c = len(names)
        pos = _as_float32(positions, c)
        ref = _as_float32(reference_positions, c)
        return cls(tuple(str(n) for n in names), pos, ref)

    @classmethod
    def from_montage(cls, montage: ChannelLayoutSource) -> ChannelMeta:
        """Return the metadata of a montage (its channel order, positions, reference positions)."""
        return cls.create(montage.ch_names, montage.positions, montage.reference_positions)

    @property
    def n_channels(self) -> int:
        """Return the number of channels C."""
        return len(self.names)

    @property
    def is_bipolar(self) -> Tensor:
        """Return a ``(C,)`` bool tensor: True where the channel has a reference position."""
        return torch.isfinite(self.reference_positions).all(dim=-1)

    def to(self, device: torch.device | str) -> ChannelMeta:
        """Return a copy with the position tensors on ``device`` (the quality scores stay where they are)."""
        return ChannelMeta(self.names, self.positions.to(device), self.reference_positions.to(device), self.quality)

    def with_quality(self, quality: Tensor | None) -> ChannelMeta:
        """Return this metadata carrying a batch's channel quality scores ``(B, C)`` (None: none)."""
        return replace(self, quality=quality)

    def permute(self, order: Sequence[int]) -> ChannelMeta:
        """Return the metadata with channels taken in ``order`` (indices into this one)."""
        idx = torch.as_tensor(list(order), dtype=torch.long)
        return ChannelMeta(
            tuple(self.names[i] for i in idx.tolist()),
            self.positions[idx],
            self.reference_positions[idx],
            None if self.quality is None else self.quality[:, idx],
        )

    def require_positions(self, kind: str) -> None:
        """Raise ChannelMappingError unless every channel has a finite position."""
        missing = [n for n, ok in zip(self.names, torch.isfinite(self.positions).all(-1).tolist()) if not ok]
        if missing:
            raise ChannelMappingError(
                f"the {kind!r} channel embedding needs electrode positions; channels {missing} have"
                " none - use a montage with positions for every channel"
            )


def _as_float32(value: np.ndarray | Tensor | Sequence[Sequence[float]] | None, c: int) -> Tensor:
    """Return ``value`` as a float32 tensor, or a ``(c, 3)`` NaN table when it is None."""
    if value is None:
        return torch.full((c, 3), float("nan"))
    if isinstance(value, Tensor):
        return value.detach().to(torch.float32)
    return torch.as_tensor(np.asarray(value, dtype=np.float32))
