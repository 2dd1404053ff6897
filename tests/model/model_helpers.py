"""Helpers for model tests: channel metadata of any size."""

from __future__ import annotations

import torch

from passport_kit.model import ChannelMeta


def make_meta(n_channels: int, *, bipolar: tuple[int, ...] = (), seed: int = 0) -> ChannelMeta:
    """Return metadata of ``n_channels`` named channels at distinct scalp-like positions (m)."""
    gen = torch.Generator().manual_seed(seed)
    positions = torch.randn(n_channels, 3, generator=gen) * 0.06
    reference = torch.full((n_channels, 3), float("nan"))
    for c in bipolar:
        reference[c] = torch.randn(3, generator=gen) * 0.06
    return ChannelMeta.create([f"CH{c}" for c in range(n_channels)], positions, reference)
