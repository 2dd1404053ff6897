"""Causal staging: each 30-s epoch staged from the samples up to its end (plus an optional look-ahead), the same way
live and from a file.

:class:`CausalStager` takes samples as they come (``push``), and when an epoch completes it
hands the last ``history`` epochs to the scorer (:mod:`passport_kit.live.prediction`: predict's
pipeline on a recording that ends with that epoch) and keeps the epoch's own answer. An
adapter's night smoothing, forward-backward over a whole night in ``predict``
(:func:`passport_kit.model.night.smooth`), runs here as a forward filter: an epoch's stage
uses no later epoch, or, with ``look_ahead`` = k, the k epochs after it (fixed-lag smoothing,
so its stage comes k x 30 s later). A gap (``gap``) ends the segment: the epochs waiting for
their look-ahead are staged with what there is, the history is dropped and the filter starts
afresh, so nothing is ever bridged across it.

:func:`stage_recording_causally` stages a file through the same class: the offline reference
that a live stream of the same samples reproduces stage for stage (the parity tests).

Memory is bounded: ``history`` epochs of samples, the epochs waiting for their look-ahead, and
the filter's state, whatever the length of the night.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from passport_kit.errors import ConfigError
from passport_kit.live.prediction import EpochScore, EpochScorer

#: Seconds per staged epoch (AASM).
EPOCH_SECONDS = 30.0


@dataclass(frozen=True)
class CausalSettings:
    """How epochs are staged causally: ``look_ahead`` later epochs the night smoothing may read (each costs 30 s of
    delay), ``history`` epochs of samples the scorer reads (the epoch's own included; None: the scorer's own,
    :data:`~passport_kit.live.prediction.NIGHT_HISTORY` or :data:`~passport_kit.live.prediction.WINDOW_HISTORY`)."""

    look_ahead: int = 0
    history: int | None = None

    def __post_init__(self) -> None:
        if self.look_ahead < 0:
            raise ConfigError(f"--look-ahead must be 0 or more epochs, got {self.look_ahead}")
        if self.history is not None and self.history < 1:
            raise ConfigError(f"--history must be at least 1 epoch, got {self.history}")


@dataclass(frozen=True)
class StagedEpoch:
    """One epoch staged: its onset (s from the stream's first sample), probabilities ``(K,)`` after the causal
    smoothing, flags, the segment it belongs to (a gap starts a new one), and the stream time (LSL clock) of its
    last sample where known."""

    onset_s: float
    proba: np.ndarray
    flagged: bool
    flags: np.ndarray
    notes: tuple[str, ...]
    segment: int
    ended_at: float | None = None


class CausalStager:
    """Stages a stream of samples epoch by epoch (module docstring): ``push`` samples, ``gap`` at a break, ``finish``
    at the end; each returns the epochs staged by it, in order."""

    def __init__(self, scorer: EpochScorer, ch_names: Sequence[str], sfreq: float, *, name: str,
                 settings: CausalSettings = CausalSettings()) -> None:
        per_epoch = EPOCH_SECONDS * float(sfreq)
        if abs(per_epoch - round(per_epoch)) > 1e-6 or per_epoch < 1:
            raise ConfigError(f"stream '{name}' is sampled at {sfreq:g} Hz, which does not give a whole number of "
                              "samples per 30-s epoch; resample it at the source (e.g. 100, 128, 200, 250, 256 Hz)")
        self.scorer, self.names, self.sfreq, self.name, self.settings = scorer, list(ch_names), float(sfreq), name, settings
        self.n = int(round(per_epoch))
        self.history = settings.history or scorer.history
        self._buffer = np.empty((self.history * self.n, len(self.names)), dtype=np.float64)
        self._filled = 0
        self._epochs = 0          # epochs completed in this segment
        self._segment = 0
        self._onset = 0.0         # the segment's first sample, s from the stream's first
        self._filtered: np.ndarray | None = None
        self._waiting: list[tuple[EpochScore, float, float | None]] = []
        self._first = True

    @property
    def buffered_seconds(self) -> float:
        """Return the seconds of samples held (the history and the epoch in progress)."""
        return self._filled / self.sfreq

    def push(self, samples: np.ndarray, times: np.ndarray | None = None) -> list[StagedEpoch]:
        """Return the epochs staged once ``samples`` ``(T, C)`` (volts, the stream's channel order) are added.

        ``times`` ``(T,)``: their stream times (s), kept for each epoch's last sample.
        """
        samples = np.asarray(samples, dtype=np.float64)
        staged: list[StagedEpoch] = []
        i = 0
        while i < len(samples):
            take = min(len(samples) - i, self.n - self._filled % self.n)
            self._buffer[self._filled:self._filled + take] = samples[i:i + take]
            self._filled += take
            i += take
            if self._filled % self.n == 0:
                staged += self._epoch_completed(None if times is None else float(times[i - 1]))
        return staged

    def gap(self, onset_s: float) -> list[StagedEpoch]:
        """Return the epochs still waiting, staged with the look-ahead there is, and start a new segment whose first
        sample lies ``onset_s`` seconds after the stream's first (the epoch in progress is dropped, never bridged)."""
        staged = self.finish()
        self._filled, self._epochs, self._filtered = 0, 0, None
        self._segment += 1
        self._onset = float(onset_s)
        return staged

    def finish(self) -> list[StagedEpoch]:
        """Return the epochs still waiting for their look-ahead, staged with the later epochs there are."""
        staged = []
        while self._waiting:
            staged.append(self._release())
        return staged

    def _epoch_completed(self, ended_at: float | None) -> list[StagedEpoch]:
        raw = self._recent_raw()
        score = self.scorer.score(raw, name=self.name, first=self._first)
        self._first = False
        onset = self._onset + self._epochs * EPOCH_SECONDS
        self._epochs += 1
        if self._filled == len(self._buffer):  # the oldest epoch leaves the history: room for the next one
            self._buffer[:-self.n] = self._buffer[self.n:]
            self._filled -= self.n
        self._waiting.append((score, onset, ended_at))
        lag = self.settings.look_ahead if self.scorer.smoothing is not None else 0
        staged = []
        while len(self._waiting) > lag:
            staged.append(self._release())
        return staged

    def _recent_raw(self) -> Any:
        """Return the history held (whole epochs, the last just completed) as an MNE Raw in volts."""
        from passport_kit.signals.readers import raw_from_memory

        return raw_from_memory((self._buffer[:self._filled].T, self.sfreq, self.names), units="V")

    def _release(self) -> StagedEpoch:
        """Return the oldest waiting epoch staged: filtered (and smoothed over the waiting ones), then tempered."""
        from passport_kit.model.night import emission, lagged_posterior, predicted_state, temper

        score, onset, ended_at = self._waiting[0]
        proba = score.proba
        if self.scorer.smoothing is not None:
            transitions, prior = self.scorer.smoothing
            emitted = emission(np.stack([s.proba for s, _, _ in self._waiting]), prior)
            predicted = predicted_state(self._filtered, transitions)
            proba = lagged_posterior(predicted, emitted, transitions)
            self._filtered = lagged_posterior(predicted, emitted[:1], transitions)
        proba = temper(proba[None, :], self.scorer.temperature)[0]
        self._waiting.pop(0)
        return StagedEpoch(onset_s=onset, proba=proba, flagged=score.flagged, flags=score.flags, notes=score.notes,
                           segment=self._segment, ended_at=ended_at)


def stage_recording_causally(recording: str | Path, scorer: EpochScorer, *, reading: Any = None,
                             settings: CausalSettings = CausalSettings()) -> list[StagedEpoch]:
    """Return every whole 30-s epoch of ``recording`` staged causally, as a live stream of its samples is staged.

    The file is read as predict reads it (``reading``: its header corrections) and its samples
    pushed through a :class:`CausalStager` from the first; a trailing part-epoch is not staged.
    """
    from passport_kit.signals import read_recording

    path = Path(recording)
    sfreq = getattr(reading, "sfreq", None)
    raw = read_recording(path, sfreq=sfreq, units=getattr(reading, "units", None), scale=getattr(reading, "scale", None))
    stager = CausalStager(scorer, raw.ch_names, float(raw.info["sfreq"]), name=str(path), settings=settings)
    return stager.push(raw.get_data().T) + stager.finish()
