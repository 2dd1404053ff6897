"""Synthetic poor-contact corruption of training windows (``adapt/pretrain --corrupt-prob``).

Wearables lose electrode contact every night; a model that never saw a bad channel in
training trusts it at test time (the paper's EESM17 limitation). With probability ``prob``
per window, ``k`` random channels (1 to a quarter of the channels, never all of them) are
*replaced* by one of four faults, drawn uniformly:

==========  ===============================================================================
``noise``   white noise, RMS 1.5-6x the window's median channel RMS (a loose contact's
            thermal and electrode noise; the simulator's ``noise`` channels sit about 2-3x
            above the EEG after band-pass)
``drift``   a wander from 3 sinusoids at 0.1-0.5 Hz, RMS 2-10x the median channel RMS (what
            a 0.3 Hz high-pass leaves of a moving contact's drift)
``flat``    zeros (a disconnected input after preprocessing)
``line``    mains hum at 50 or 60 Hz with a slowly varying amplitude, RMS 1-4x the median
            channel RMS (what a notch leaves of a floating electrode's hum)
==========  ===============================================================================

Amplitudes are relative to the window's own median channel RMS, so the faults look the same
with and without per-window instance normalisation. ``prob = 0`` (the default) is the paper's
recipe: nothing is changed. The draws come from a ``torch.Generator`` the caller seeds per step,
so a resumed run corrupts the very windows the interrupted one would have.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

#: The faults, in the order their index is drawn.
FAULTS = ("noise", "drift", "flat", "line")
#: RMS ranges (× the window's median channel RMS) of the faults that have one.
NOISE_RMS, DRIFT_RMS, LINE_RMS = (1.5, 6.0), (2.0, 10.0), (1.0, 4.0)
#: Frequencies (Hz) of the drift components, and the mains frequencies of the hum.
DRIFT_HZ, MAINS_HZ = (0.1, 0.5), (50.0, 60.0)
#: Smallest reference RMS (100 µV units, i.e. 1 µV): a near-flat window still gets visible faults.
_RMS_FLOOR = 0.01


def corrupt_windows(x: Tensor, prob: float, generator: torch.Generator, *, sfreq: float = 200.0) -> tuple[Tensor, Tensor]:
    """Return ``(corrupted copy of x, which (B, C) bool)`` with random channels replaced by faults.

    ``x`` is ``(B, C, P, S)`` (any units; amplitudes are relative to each window's median
    channel RMS); ``x`` itself is not modified. ``generator`` (CPU) makes the draws
    reproducible. With ``prob`` 0, or a single channel, ``x`` is returned as is.
    """
    b, c, p, s = x.shape
    which = torch.zeros(b, c, dtype=torch.bool)
    if prob <= 0 or c < 2:
        return x, which.to(x.device)
    hit = torch.rand(b, generator=generator) < prob
    max_k = max(1, c // 4)
    out = x.clone()
    flat_x = out.reshape(b, c, p * s)
    t = torch.arange(p * s, dtype=torch.float32) / sfreq
    rms = x.detach().float().reshape(b, c, -1).pow(2).mean(-1).sqrt().median(dim=1).values.clamp_min(_RMS_FLOOR)
    for i in torch.nonzero(hit).flatten().tolist():
        k = int(torch.randint(1, max_k + 1, (1,), generator=generator))
        channels = torch.randperm(c, generator=generator)[:k]
        for ch in channels.tolist():
            fault = FAULTS[int(torch.randint(len(FAULTS), (1,), generator=generator))]
            signal = _fault(fault, t, float(rms[i]), generator)
            flat_x[i, ch] = signal.to(device=x.device, dtype=x.dtype)
            which[i, ch] = True
    return flat_x.reshape(b, c, p, s), which.to(x.device)


def drop_channels(present: Tensor, prob: float, generator: torch.Generator) -> Tensor:
    """Return ``(B, C)`` bool: random channels to mask (channel dropout), never a row's last one.

    ``present`` ``(B, C)`` bool marks the channels still unmasked in each window. With
    probability ``prob`` per window, 1 to a quarter of the channels (at least 1) of those present
    are drawn, leaving at least one present. This is the training-time counterpart of
    ``predict --mask-bad-channels``: the model learns to read a window with some channels
    replaced by the mask token, so masking a bad channel at test time is not out of distribution.
    """
    b, c = present.shape
    drop = torch.zeros(b, c, dtype=torch.bool)
    if prob <= 0:
        return drop
    hit = torch.rand(b, generator=generator) < prob
    max_k = max(1, c // 4)
    for i in torch.nonzero(hit).flatten().tolist():
        live = torch.nonzero(present[i]).flatten()
        if len(live) < 2:
            continue
        k = min(int(torch.randint(1, max_k + 1, (1,), generator=generator)), len(live) - 1)
        drop[i, live[torch.randperm(len(live), generator=generator)[:k]]] = True
    return drop


def _uniform(bounds: tuple[float, float], generator: torch.Generator, n: int = 1) -> Tensor:
    """Return ``n`` uniform draws in ``bounds``."""
    return bounds[0] + (bounds[1] - bounds[0]) * torch.rand(n, generator=generator)


def _fault(fault: str, t: Tensor, rms: float, generator: torch.Generator) -> Tensor:
    """Return one fault signal ``(T,)`` float32 at times ``t`` (seconds), scaled to ``rms`` × its range."""
    if fault == "flat":
        return torch.zeros_like(t)
    if fault == "noise":
        wave = torch.randn(t.shape[0], generator=generator)
        target = _uniform(NOISE_RMS, generator)
    elif fault == "drift":
        freqs = _uniform(DRIFT_HZ, generator, 3)
        phases = 2 * math.pi * torch.rand(3, generator=generator)
        wave = torch.sin(2 * math.pi * freqs[:, None] * t[None, :] + phases[:, None]).sum(0)
        target = _uniform(DRIFT_RMS, generator)
    else:  # line
        mains = MAINS_HZ[int(torch.randint(2, (1,), generator=generator))]
        envelope = 1.0 + 0.5 * torch.sin(2 * math.pi * 0.05 * t + 2 * math.pi * float(torch.rand(1, generator=generator)))
        wave = envelope * torch.sin(2 * math.pi * mains * t)
        target = _uniform(LINE_RMS, generator)
    wave = wave - wave.mean()
    return wave * (float(target) * rms / float(wave.pow(2).mean().sqrt().clamp_min(1e-12)))


__all__ = ["FAULTS", "corrupt_windows", "drop_channels"]
