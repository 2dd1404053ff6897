"""Windowing into ``(N, C, P, 200)`` and per-window quality flags.

A window is ``config.window_seconds`` long and starts at a whole multiple of it from the start
of the recording; a trailing partial window is dropped. Flags are bits per window and channel
(``(N, C)`` uint8), so a bad channel is visible and never passed on silently:

=========  =====  =============================================================================
flag       bit    meaning
=========  =====  =============================================================================
NAN        1      the raw signal holds NaN or ±inf in this window (set to 0 before filtering)
FLAT       2      the raw signal is constant, or its standard deviation is under 0.1 µV
CLIPPED    4      at least 5 raw samples sit exactly at the channel's maximum (or minimum): saturation
OVER_LIMIT 8      the preprocessed window exceeds ``config.amplitude_limit_uv`` somewhere
=========  =====  =============================================================================
"""

from __future__ import annotations

import numpy as np

from passport_kit.errors import DataError
from passport_kit.signals.preprocess import PreprocessConfig

FLAG_NAN = np.uint8(1)
FLAG_FLAT = np.uint8(2)
FLAG_CLIPPED = np.uint8(4)
FLAG_OVER_LIMIT = np.uint8(8)
FLAG_NAMES: dict[int, str] = {1: "nan", 2: "flat", 4: "clipped", 8: "over_limit"}

#: A channel whose raw standard deviation in a window is below this (volts) is flat.
FLAT_STD_V = 0.1e-6
#: Samples at the channel's maximum (or minimum) in one window that mark it as clipped.
CLIP_MIN_SAMPLES = 5
#: Guards instance normalisation against flat windows (in normalised units).
_NORM_EPS = 1e-6


def n_windows(n_samples: int, sfreq: float, window_seconds: float) -> int:
    """Return how many whole windows fit into ``n_samples`` samples at ``sfreq`` Hz."""
    return int(np.floor(n_samples / sfreq / window_seconds + 1e-9))


def check_length(n_samples: int, sfreq: float, config: PreprocessConfig, *, source: str = "recording") -> int:
    """Return the number of windows, raising :class:`DataError` when not even one fits."""
    n = n_windows(n_samples, sfreq, config.window_seconds)
    if n < 1:
        raise DataError(
            f"{source}: recording is {n_samples / sfreq:.1f} s long, shorter than one window of "
            f"{config.window_seconds:g} s; use a longer recording or a shorter window_seconds"
        )
    return n


def make_windows(data: np.ndarray, config: PreprocessConfig) -> np.ndarray:
    """Return non-overlapping windows, shape ``(N, C, P, 200)`` float32.

    ``data`` is ``(C, T)`` at ``config.sfreq`` (the output of
    :func:`~passport_kit.signals.preprocess.preprocess`). With ``config.instance_norm`` each
    window and channel is z-scored on its own (mean 0, standard deviation 1).
    """
    n_chan, n_times = data.shape
    per_window = config.window_samples
    n = check_length(n_times, config.sfreq, config)
    # A view where data is float32 (splitting the time axis needs no copy); the one copy is the
    # transposition into window-major order below.
    x = np.asarray(data[:, : n * per_window], dtype=np.float32)
    x = x.reshape(n_chan, n, config.n_patches, config.samples_per_patch).transpose(1, 0, 2, 3)
    x = np.ascontiguousarray(x)
    return instance_normalise(x) if config.instance_norm else x


def instance_normalise(x: np.ndarray) -> np.ndarray:
    """Return ``x`` ``(N, C, P, 200)`` with each window and channel z-scored (float32)."""
    flat = x.reshape(x.shape[0], x.shape[1], -1)
    mean = flat.mean(axis=-1, keepdims=True)
    std = flat.std(axis=-1, keepdims=True)
    return ((flat - mean) / (std + _NORM_EPS)).reshape(x.shape).astype(np.float32, copy=False)


def _window_bounds(n: int, sfreq: float, window_seconds: float) -> np.ndarray:
    """Return the raw-sample start index of each of ``n`` windows plus the end, shape ``(n + 1,)``."""
    return np.round(np.arange(n + 1) * window_seconds * sfreq).astype(np.int64)


def window_flags(
    raw_data: np.ndarray, sfreq: float, windows: np.ndarray, config: PreprocessConfig
) -> np.ndarray:
    """Return quality flags, shape ``(N, C)`` uint8 (bits in the module docstring).

    ``raw_data`` is the mapped recording before preprocessing, ``(C, T)`` in volts at ``sfreq``;
    ``windows`` is the ``(N, C, P, 200)`` output of :func:`make_windows` *before* instance
    normalisation (the amplitude limit is in µV).
    """
    n = windows.shape[0]
    n_chan = raw_data.shape[0]
    bounds = _window_bounds(n, sfreq, config.window_seconds)
    starts = bounds[:-1]
    counts = np.diff(bounds).astype(np.float64)
    flags = np.zeros((n, n_chan), dtype=np.uint8)
    for c in range(n_chan):
        sig = np.asarray(raw_data[c, : bounds[-1]], dtype=np.float64)
        finite = np.isfinite(sig)
        # A night is millions of samples per channel: the NaN branch and the copies it needs only
        # where a channel has a non-finite sample at all.
        all_finite = bool(finite.all())
        clean = sig
        if not all_finite:
            bad = ~finite
            flags[:, c] |= np.where(np.add.reduceat(bad, starts) > 0, FLAG_NAN, 0).astype(np.uint8)
            clean = np.where(bad, 0.0, sig)
        total, total_sq = _window_sums(clean, bounds)
        var = np.maximum(total_sq / counts - (total / counts) ** 2, 0.0)
        flags[:, c] |= np.where(np.sqrt(var) < FLAT_STD_V, FLAG_FLAT, 0).astype(np.uint8)
        values = sig if all_finite else sig[finite]
        high, low = (values.max(), values.min()) if values.size else (0.0, 0.0)
        if high > low:
            # Saturation pins the signal at one extreme; count each extreme on its own, since a
            # quantised signal can touch its maximum once and its minimum twice by chance.
            # The samples at an extreme are few: count them per window from their indices.
            at_max = _per_window(sig == high if all_finite else (sig == high) & finite, starts, n)
            at_min = _per_window(sig == low if all_finite else (sig == low) & finite, starts, n)
            clipped = np.maximum(at_max, at_min) >= CLIP_MIN_SAMPLES
            flags[:, c] |= np.where(clipped, FLAG_CLIPPED, 0).astype(np.uint8)
    if config.amplitude_limit_uv is not None:
        peak_uv = np.abs(windows).max(axis=(2, 3)) * config.scale_uv
        flags |= np.where(peak_uv > config.amplitude_limit_uv, FLAG_OVER_LIMIT, 0).astype(np.uint8)
    return flags


#: Windows whose sums are taken at once: the squares of a night's channel would be tens of MB, mapped afresh
#: per channel; a few MB at a time are reused (the same sums: each window is summed on its own either way).
_SUM_WINDOWS = 64


def _window_sums(sig: np.ndarray, bounds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(sum, sum of squares)`` of ``sig`` over each window ``bounds[i]:bounds[i + 1]``, each ``(n,)``."""
    n = len(bounds) - 1
    total, total_sq = np.empty(n), np.empty(n)
    for w0 in range(0, n, _SUM_WINDOWS):
        w1 = min(n, w0 + _SUM_WINDOWS)
        part, at = sig[bounds[w0]:bounds[w1]], bounds[w0:w1] - bounds[w0]
        total[w0:w1] = np.add.reduceat(part, at)
        total_sq[w0:w1] = np.add.reduceat(part * part, at)
    return total, total_sq


def _per_window(hits: np.ndarray, starts: np.ndarray, n: int) -> np.ndarray:
    """Return ``(n,)`` how many True samples of ``hits`` fall in each window (windows start at ``starts``)."""
    window = np.searchsorted(starts, np.flatnonzero(hits), side="right") - 1
    return np.bincount(window, minlength=n)


def describe_flags(flags: np.ndarray) -> dict[str, int]:
    """Return how many window × channel cells carry each flag, by flag name."""
    return {name: int(np.count_nonzero(flags & np.uint8(bit))) for bit, name in FLAG_NAMES.items()}
