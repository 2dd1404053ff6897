"""What a sleep stager reads of a recording: its own samples of the channels a stager may read, at the stager's rate.

A pretrained stager (YASA, GSSC: :mod:`passport_kit.sleep`) was trained on PSG recordings as
they were recorded, resampled to its own rate, and filters them itself. So it reads the mapped
samples of the recording (:func:`~passport_kit.signals.channels.mapped_data`: the montage's
channels, renames, bipolar derivations and unit corrections exactly as the windows get them), in
µV, resampled to its rate with a polyphase filter (scipy's ``resample_poly``, by the ratio and
edge padding of the windows' own resampling) where the file's rate differs, and with none of the band-pass, notch or
amplitude scaling of the package's 200-Hz windows. Only the EEG, EOG and EMG channels are kept
(:data:`STAGER_KINDS`), as float32: an 8-h night at 100 Hz is 11.5 MB per channel.

:func:`read_windows <passport_kit.signals.recording.read_windows>` keeps such a copy beside
the windows when asked for a stager's rates (``predict``), and a
:class:`~passport_kit.signals.dataset.WindowSet` re-reads each of its files through the same
reader (``adapt``, ``evaluate``: windows may come from the cache): both end in
:func:`stager_signal`, so training and prediction give a stager the very same signal.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from passport_kit.signals.preprocess import resample_ratio

#: The montage channel kinds a stager may read (YASA: EEG, EOG, EMG; GSSC: EEG, EOG).
STAGER_KINDS = ("eeg", "eog", "emg")


@dataclass(frozen=True)
class StagerSignal:
    """The channels of one recording a stager may read, from its first sample: ``data`` ``(C, T)`` float32 in µV at
    ``sfreq`` Hz, one row per name of ``names`` (montage channel names)."""

    data: np.ndarray
    names: tuple[str, ...]
    sfreq: float

    def channel(self, name: str) -> np.ndarray:
        """Return channel ``name`` ``(T,)`` float64 in µV (KeyError when it is not one a stager may read)."""
        return np.asarray(self.data[self.names.index(name)], dtype=np.float64)


def stager_signal(data: np.ndarray, sfreq: float, names: list[str], kinds: list[str], rate: float) -> StagerSignal:
    """Return the rows of ``data`` of :data:`STAGER_KINDS` in µV at ``rate`` Hz (as near as a ratio of small integers).

    ``data`` ``(C, T)`` in volts at ``sfreq`` Hz, rows named ``names`` with montage ``kinds``
    (:func:`~passport_kit.signals.channels.mapped_data`'s samples). Non-finite samples are set
    to zero first, as the windows' preprocessing does; each channel is resampled alone (the
    night at the file's rate is held once per channel, not per montage).
    """
    rows = [i for i, kind in enumerate(kinds) if kind in STAGER_KINDS]
    up, down = resample_ratio(float(sfreq), float(rate))
    channels = [_resampled(np.asarray(data[i], dtype=np.float64), up, down) for i in rows]
    n = min((len(c) for c in channels), default=0)
    out = np.stack([c[:n] for c in channels]) if channels else np.zeros((0, 0), dtype=np.float32)
    return StagerSignal(data=out, names=tuple(names[i] for i in rows), sfreq=float(sfreq) * up / down)


def _resampled(volts: np.ndarray, up: int, down: int) -> np.ndarray:
    """Return one channel in µV, float32, resampled by ``up / down`` (polyphase; padtype 'line', as the windows'
    resampling: a DC offset does not ring at the edges)."""
    from scipy.signal import resample_poly

    x = volts * 1e6
    if not np.isfinite(x).all():
        x = np.where(np.isfinite(x), x, 0.0)
    if up != down:
        x = resample_poly(x, up, down, padtype="line")
    return x.astype(np.float32)


def read_stager_signal(raw: Any, montage: Any, rate: float, *, renames: dict[str, str] | None = None,
                       source: str = "recording") -> StagerSignal:
    """Return what a stager reads of the opened recording ``raw`` (an MNE Raw in volts) at ``rate`` Hz: its montage
    channels mapped as the windows' (:func:`~passport_kit.signals.channels.mapped_data`), then :func:`stager_signal`."""
    from passport_kit.signals.channels import mapped_data

    data = mapped_data(raw, montage, renames, source=source)
    return stager_signal(data, float(raw.info["sfreq"]), list(montage.ch_names), list(montage.kinds), rate)


__all__ = ["STAGER_KINDS", "StagerSignal", "read_stager_signal", "stager_signal"]
