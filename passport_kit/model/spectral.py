"""Band-power features as the field computes them: log absolute and relative power per channel and band.

This is the spectral block of the probe head (:class:`~passport_kit.model.heads.ProbeHead`) and
the "band power + logistic regression" model every EEG user would build without us: per channel,
Welch's power spectral density, integrated over the standard bands (δ 0.5–4, θ 4–8, α 8–12,
σ 12–16, β 16–30, γ 30–45 Hz, each clipped to what the recording carries), then log10 of the
absolute power and log10 of the power relative to the whole range. Relative power is what
survives amplitude differences between subjects, sessions and devices (issue 24).

Why scipy: ``scipy.signal.welch`` is the estimate YASA's ``bandpower`` and MNE's
``psd_array_welch`` build on (Hann-tapered, half-overlapping segments, mean of periodograms,
one-sided density); a hand-written FFT only invites drift. The same function serves adapt,
evaluate, check and predict (through the head's forward pass), so training and prediction
cannot compute different features.

Why on the model's 200-Hz input and not at the recording's own rate: the input is the
recording resampled by MNE's polyphase filter and band-passed up to ``h_freq``, which is
already lowered below the recording's Nyquist frequency (``fit_band_to_rate``). Below that
top the resampled spectrum is the recording's own (checked against Welch at the native rate in
``tests/model/test_spectral.py``), and :func:`carried_bands` drops what lies above it. One
input for every block keeps one windowing, one quality mask and one cache.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

#: The standard EEG bands (Hz): delta, theta, alpha, sigma, beta, gamma.
STANDARD_BANDS: tuple[tuple[float, float], ...] = ((0.5, 4.0), (4.0, 8.0), (8.0, 12.0), (12.0, 16.0),
                                                   (16.0, 30.0), (30.0, 45.0))
#: A band clipped narrower than this (Hz) by the recording's top frequency is dropped.
MIN_BAND_WIDTH = 2.0
#: Welch segment length (s): 4-s segments (0.25-Hz bins, as YASA's ``bandpower``); a shorter window uses itself.
SEGMENT_SECONDS = 4.0


def carried_bands(top_hz: float, bands: tuple[tuple[float, float], ...] = STANDARD_BANDS
                  ) -> tuple[tuple[float, float], ...]:
    """Return ``bands`` clipped to ``top_hz`` (the recording's band-pass top); bands left narrower than 2 Hz dropped.

    Example::

        >>> carried_bands(22.0)
        ((0.5, 4.0), (4.0, 8.0), (8.0, 12.0), (12.0, 16.0), (16.0, 22.0))
    """
    out = []
    for lo, hi in bands:
        hi = min(hi, float(top_hz))
        if hi - lo >= MIN_BAND_WIDTH:
            out.append((float(lo), float(hi)))
    return tuple(out)


def band_power_features(x: Tensor, bands: tuple[tuple[float, float], ...], sfreq: float = 200.0) -> Tensor:
    """Return ``(B, C · 2 · len(bands))`` features of windows ``x`` ``(B, C, P, n)`` or ``(B, C, T)`` at ``sfreq`` Hz.

    Per channel: log10 absolute power of every band, then log10 of every band's share of the
    power between the first band's lower and the last band's upper edge. Computed in float64
    with ``scipy.signal.welch`` (Hann, ``SEGMENT_SECONDS`` segments, 50 % overlap) on a CPU copy:
    the spectral block needs no gradient (it reads the input, not a parameter).
    """
    from scipy.signal import welch

    signal = x.detach().reshape(x.shape[0], x.shape[1], -1).to("cpu", torch.float64).numpy()
    n = int(min(round(SEGMENT_SECONDS * sfreq), signal.shape[-1]))
    freqs, psd = welch(signal, fs=sfreq, nperseg=n, noverlap=n // 2, axis=-1)  # (B, C, F)
    df = freqs[1] - freqs[0]
    absolute = np.stack([psd[..., (freqs >= lo) & (freqs < hi)].sum(-1) * df for lo, hi in bands], axis=-1)
    whole = psd[..., (freqs >= bands[0][0]) & (freqs < bands[-1][1])].sum(-1, keepdims=True) * df
    tiny = 1e-12  # a flat channel: log of ~0, finite
    feats = np.concatenate([np.log10(absolute + tiny), np.log10((absolute + tiny) / (whole + tiny * len(bands)))],
                           axis=-1)
    return torch.from_numpy(feats.reshape(x.shape[0], -1)).to(device=x.device, dtype=torch.float32)


__all__ = ["MIN_BAND_WIDTH", "SEGMENT_SECONDS", "STANDARD_BANDS", "band_power_features", "carried_bands"]
