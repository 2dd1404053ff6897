"""Signal fingerprints: is a recording one an adapter was trained on, whatever file it is read from now?

The bundle's ``training_data`` holds the SHA-256 of every training file, so a training recording
predicted again is marked in-sample (its scorer agreement is not a held-out score). A hash knows
bytes, not signals: the same DREAMS night read from its PSG EDF instead of the text export it
was trained from got an unflagged kappa 0.435 (issue 45). So ``adapt`` also stores, per training
recording, the log RMS of its first :data:`LENGTH` preprocessed windows (``metrics.fingerprints``),
and ``predict`` compares the recording's own: the same night in another format, rate or unit
gives the same shape over time (correlation above :data:`SAME_R` over at least :data:`MIN_WINDOWS`
windows from its start), another night of the same person does not.
"""

from __future__ import annotations

import numpy as np

#: Windows stored per training recording (from its start).
LENGTH = 240
#: Windows two fingerprints must share to be compared.
MIN_WINDOWS = 10
#: Correlation of the log RMS sequences above which two recordings are the same signal.
SAME_R = 0.99
#: Windows read at once (the training windows are often a memmap); small buffers, reused (issue 47).
_CHUNK = 32


def window_fingerprint(x: np.ndarray) -> list[float]:
    """Return the log10 RMS of each of the first :data:`LENGTH` windows ``x`` ``(N, C, P, S)``, over channels and
    samples (rounded to 4 decimals; NaN-free: a flat window counts as -12)."""
    n = min(len(x), LENGTH)
    out = np.empty(n)
    for start in range(0, n, _CHUNK):
        chunk = np.array(x[start:min(n, start + _CHUNK)], dtype=np.float64)
        if not np.isfinite(chunk.sum()):  # non-finite samples (rare) count as 0
            chunk[~np.isfinite(chunk)] = 0.0
        out[start:start + len(chunk)] = np.log10(np.sqrt((chunk ** 2).mean(axis=(1, 2, 3))) + 1e-12)
    return np.round(out, 4).tolist()


def training_fingerprints(x: np.ndarray, recording: np.ndarray, onset_s: np.ndarray) -> dict[str, list[float]]:
    """Return ``{recording: fingerprint}`` of the training windows ``x`` ``(N, C, P, S)``, each recording's windows in
    time order (``recording`` and ``onset_s`` ``(N,)`` per window)."""
    recording, onset_s = np.asarray(recording).astype(str), np.asarray(onset_s, dtype=np.float64)
    prints = {}
    for rec in dict.fromkeys(recording.tolist()):
        rows = np.flatnonzero(recording == rec)
        rows = rows[np.argsort(onset_s[rows], kind="stable")][:LENGTH]
        prints[rec] = window_fingerprint(np.stack([np.asarray(x[i]) for i in rows]))
    return prints


def same_signal(x: np.ndarray, prints: dict[str, list[float]] | None) -> str | None:
    """Return the training recording whose fingerprint the windows ``x`` ``(N, C, P, S)`` of a new recording match
    (None: none does, or no fingerprints are stored)."""
    if not prints or len(x) < MIN_WINDOWS:
        return None
    own = np.asarray(window_fingerprint(x))
    for rec, stored in prints.items():
        n = min(len(own), len(stored))
        if n < MIN_WINDOWS:
            continue
        a, b = own[:n], np.asarray(stored[:n])
        if a.std() > 0 and b.std() > 0 and float(np.corrcoef(a, b)[0, 1]) > SAME_R:
            return rec
    return None


__all__ = ["LENGTH", "MIN_WINDOWS", "SAME_R", "same_signal", "training_fingerprints", "window_fingerprint"]
