"""Helpers for model tests: channel metadata of any size; a skip for the bf16 tests where the CPU has no bf16 path."""

from __future__ import annotations

import os

import pytest
import torch

from passport_kit import runtime
from passport_kit.model import ChannelMeta

#: The CPU flags oneDNN's bf16 products and pointwise ops need ("bf16 path needs the cpu support
#: avx_ne_convert or avx512bw, avx512vl and avx512dq"), as /proc/cpuinfo names them.
_ONEDNN_BF16_FLAGS = (frozenset({"avx512bw", "avx512vl", "avx512dq"}), frozenset({"avx_ne_convert"}))


def cpu_runs_bf16() -> bool:
    """Return whether torch computes bf16 on this CPU (oneDNN's bf16 path), as torch itself decides it.

    With ``PASSPORT_KIT_CPU_FLAGS`` (another CPU simulated) the flags decide, as torch's check does.
    """
    if runtime.CPU_FLAGS_ENV in os.environ:
        return any(needed <= runtime.cpu_flags() for needed in _ONEDNN_BF16_FLAGS)
    return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())


#: Marks a test that runs bf16 arithmetic on the CPU: skipped where there is none (an AVX2-only CPU,
#: issue 54: 19 such tests failed there with oneDNN's "could not create a primitive descriptor").
needs_cpu_bf16 = pytest.mark.skipif(not cpu_runs_bf16(), reason="no CPU bf16 path here (oneDNN needs AVX-512 BW/VL/DQ "
                                    "or AVX-NE-CONVERT): the bf16 tests run on CPUs that have one")


def make_meta(n_channels: int, *, bipolar: tuple[int, ...] = (), seed: int = 0) -> ChannelMeta:
    """Return metadata of ``n_channels`` named channels at distinct scalp-like positions (m)."""
    gen = torch.Generator().manual_seed(seed)
    positions = torch.randn(n_channels, 3, generator=gen) * 0.06
    reference = torch.full((n_channels, 3), float("nan"))
    for c in bipolar:
        reference[c] = torch.randn(3, generator=gen) * 0.06
    return ChannelMeta.create([f"CH{c}" for c in range(n_channels)], positions, reference)
