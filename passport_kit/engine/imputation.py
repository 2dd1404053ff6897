"""A probe head's band powers of dead channel-windows, taken from the nearest live channel of the same window.

Why impute and not drop: the read-out is one linear layer with a weight for every channel's
band powers, fitted with every channel live; it has no input for "this channel is missing". A
dead channel's log powers (log10 of ~1e-12) lie tens of spreads outside its training range and
its weights carry them into every logit (issue 46: one zeroed channel of 12 staged a whole night
REM at confidence 0.999). Where the channel is dead, its band powers are replaced by those of
the nearest live channel in the same window (montage positions), its absolute powers moved by the
two channels' ratio of training amplitude (power goes with amplitude squared): what a neighbour
sees is the best guess at what the electrode would have seen, and it keeps the window's sleep
stage in the features, which the channel's training mean would not. MNE's ``interpolate_bads``
does the same for the signal, by spherical splines; a neighbour's band powers suffice for a
read-out of band powers.

The backbone's features are left as they are: the contact policy masks or distrusts poor
channels there (``--mask-bad-channels``), and they pool over channels.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from passport_kit.signals.dead_channels import DeadChannels


def spectral_layout(head: Any) -> tuple[int, int, int]:
    """Return ``(first column, columns per channel, absolute-power columns per channel)`` of a head's spectral block
    in its read-out inputs (the head's own :meth:`~passport_kit.model.heads.ProbeHead.spectral_layout`)."""
    return head.spectral_layout()


def donor_order(positions: np.ndarray) -> np.ndarray:
    """Return ``(C, C-1)``: for every channel the other channels, nearest first (positions ``(C, 3)`` in metres;
    channels without a position last, in montage order)."""
    positions = np.asarray(positions, dtype=np.float64)
    distance = np.linalg.norm(positions[:, None, :] - positions[None, :, :], axis=-1)
    distance = np.where(np.isfinite(distance), distance, np.inf)
    np.fill_diagonal(distance, np.nan)  # sorted last, then dropped
    return np.argsort(distance, axis=1, kind="stable")[:, :-1]


def impute_dead_channels(z: np.ndarray, dead: DeadChannels, head: Any, positions: np.ndarray) -> np.ndarray:
    """Return read-out inputs ``z`` ``(N, F)`` with the band powers of ``dead`` channel-windows imputed (a copy).

    ``dead.windows`` ``(N, C)`` marks them; ``head`` is the probe head whose inputs ``z`` are
    (its spectral layout: :func:`spectral_layout`); ``positions`` ``(C, 3)`` the montage's.
    A window without a live channel is left as it is (its windows are flagged elsewhere).
    """
    windows = np.asarray(dead.windows, dtype=bool)
    if not windows.any():
        return z
    start, per_channel, n_absolute = spectral_layout(head)
    n_channels = windows.shape[1]
    spectral = z[:, start:start + n_channels * per_channel].reshape(len(z), n_channels, per_channel).copy()
    log_uv = None if dead.expected_uv is None else np.log10(dead.expected_uv)
    order = donor_order(positions)
    for n, c in zip(*np.nonzero(windows)):
        live = order[c][~windows[n, order[c]]]
        if not live.size:
            continue
        donor = live[0]
        spectral[n, c] = spectral[n, donor]
        if log_uv is not None:  # log10 power moves by twice the log10 amplitude ratio
            spectral[n, c, :n_absolute] += 2.0 * (log_uv[c] - log_uv[donor])
    out = z.copy()
    out[:, start:start + n_channels * per_channel] = spectral.reshape(len(z), -1)
    return out


__all__ = ["donor_order", "impute_dead_channels", "spectral_layout"]
