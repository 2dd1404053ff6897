"""Band-power features as the field computes them: log absolute and relative power per channel and band.

This is the spectral block of the probe head (:class:`~passport_kit.model.heads.ProbeHead`) and
the "band power + logistic regression" model every EEG user would build without us: per channel,
Welch's power spectral density, integrated over the standard bands (δ 0.5–4, θ 4–8, α 8–12,
σ 12–16, β 16–30, γ 30–45 Hz, each clipped to what the recording carries), then log10 of the
absolute power and log10 of the power relative to the whole range. Relative power is what
survives amplitude differences between subjects, sessions and devices (issue 24).

Why Welch as scipy defines it: ``scipy.signal.welch`` is the estimate YASA's ``bandpower`` and
MNE's ``psd_array_welch`` build on (Hann-tapered, half-overlapping segments, each mean-removed,
mean of periodograms, one-sided density). :func:`welch_density` computes exactly that definition
with NumPy's FFT on a strided view of the segments, and is tested against ``scipy.signal.welch``
to 1e-12 relative (``tests/model/test_spectral.py``): scipy's general STFT machinery (a per-segment
detrend pass, its own copies) took 1.7× the CPU for the same numbers, and this block is most of a
band-power bundle's ``predict`` once the backbone is skipped (issue 47). The same function serves
adapt, evaluate, check and predict (through the head's forward pass), so training and prediction
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


def welch_density(signal: np.ndarray, sfreq: float, nperseg: int) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(freqs (F,), psd (..., F))``: ``scipy.signal.welch(signal, sfreq, nperseg=nperseg)`` along the last axis.

    Periodic Hann window, ``nperseg // 2`` overlap, each segment's mean removed, one-sided power
    spectral density (units² / Hz), mean over the segments that fit whole; float64.
    """
    from scipy.signal import get_window

    step = nperseg - nperseg // 2
    window = get_window("hann", nperseg)
    segments = np.lib.stride_tricks.sliding_window_view(signal, nperseg, axis=-1)[..., ::step, :]
    segments = (segments - segments.mean(axis=-1, keepdims=True)) * window
    power = np.abs(np.fft.rfft(segments, axis=-1)) ** 2
    power *= 1.0 / (sfreq * (window * window).sum())
    power[..., 1 : None if nperseg % 2 else -1] *= 2  # one-sided: every bin but DC (and Nyquist) twice
    return np.fft.rfftfreq(nperseg, 1.0 / sfreq), power.mean(axis=-2)


def band_power_features(x: Tensor, bands: tuple[tuple[float, float], ...], sfreq: float = 200.0) -> Tensor:
    """Return ``(B, C · 2 · len(bands))`` features of windows ``x`` ``(B, C, P, n)`` or ``(B, C, T)`` at ``sfreq`` Hz.

    Per channel: log10 absolute power of every band, then log10 of every band's share of the
    power between the first band's lower and the last band's upper edge. Computed in float64
    with Welch's estimate as scipy defines it (:func:`welch_density`: Hann, ``SEGMENT_SECONDS``
    segments, 50 % overlap) on a CPU copy: the spectral block needs no gradient (it reads the
    input, not a parameter).
    """
    signal = x.detach().reshape(x.shape[0], x.shape[1], -1).to("cpu", torch.float64).numpy()
    n = int(min(round(SEGMENT_SECONDS * sfreq), signal.shape[-1]))
    freqs, psd = welch_density(signal, sfreq, n)  # (B, C, F)
    df = freqs[1] - freqs[0]
    absolute = np.stack([psd[..., (freqs >= lo) & (freqs < hi)].sum(-1) * df for lo, hi in bands], axis=-1)
    whole = psd[..., (freqs >= bands[0][0]) & (freqs < bands[-1][1])].sum(-1, keepdims=True) * df
    tiny = 1e-12  # a flat channel: log of ~0, finite
    feats = np.concatenate([np.log10(absolute + tiny), np.log10((absolute + tiny) / (whole + tiny * len(bands)))],
                           axis=-1)
    return torch.from_numpy(feats.reshape(x.shape[0], -1)).to(device=x.device, dtype=torch.float32)


__all__ = ["MIN_BAND_WIDTH", "SEGMENT_SECONDS", "STANDARD_BANDS", "band_power_features", "carried_bands",
           "welch_density"]
