"""The ``Hypnogram`` value object: a sequence of sleep stages with AASM sleep statistics.

A hypnogram is one stage per fixed-length epoch (30 s by AASM rules), starting at a known
offset into a recording whose absolute start time may be known. Stage names follow AASM:
``W``, ``N1``, ``N2``, ``N3``, ``REM``, plus ``UNS`` (unscored, e.g. a window flagged as
artefact by the preprocessing) and ``ART`` (artefact). Common spellings (``Wake``, ``R``,
``S1``, R&K ``S3``/``S4`` → ``N3``) are normalised on construction.

Sleep statistics (all durations in minutes; definitions follow the AASM scoring manual as
YASA implements them, with one documented difference for REM latency):

- ``TIB`` time in bed: the whole hypnogram, every epoch counted (UNS and ART included).
- ``SOL`` sleep onset latency: start of the hypnogram to the first epoch of any sleep stage
  (N1, N2, N3, REM).
- ``LPS`` latency to persistent sleep: start of the hypnogram to the first epoch of the first
  run of at least 10 minutes of uninterrupted sleep (20 epochs of 30 s; the definition of
  insomnia trials), so that one stray N1 epoch in a wake period is not sleep onset.
  ``SOL_5min``: the same with 5 minutes, YASA's ``SOL_5min``.
- ``SPT`` sleep period time: first to last sleep epoch, both included.
- ``TST`` total sleep time: minutes of N1 + N2 + N3 + REM.
- ``WASO`` wake after sleep onset: minutes of W inside the sleep period.
- ``SE`` sleep efficiency: 100 · TST / TIB (percent).
- ``REM_latency`` REM latency **from sleep onset** (AASM): first REM epoch minus sleep onset.
  YASA's ``Lat_REM`` counts from the start of the record instead (= our value + SOL).
- ``<stage>_min`` minutes per stage; ``<stage>_pct`` percent of TST per sleep stage.

Without any sleep epoch, SOL, SPT, WASO and REM latency are ``None`` (undefined), never 0; so
are LPS and SOL_5min without a run of sleep that long.

:data:`YASA_STATISTICS` names YASA's key for each of ours (``W_min`` is YASA's ``WAKE``,
``N1_pct`` its ``%N1``, ...); :meth:`Hypnogram.to_yasa` gives the hypnogram to YASA itself.

Example::

    >>> h = Hypnogram(["W", "W", "N1", "N2", "W", "N2", "REM", "W"])
    >>> s = h.sleep_statistics()
    >>> s["TIB"], s["TST"], s["SOL"], s["WASO"], s["REM_latency"]
    (4.0, 2.0, 1.0, 0.5, 2.0)

Caveat (domain): automatic staging, from any model, is a draft for a trained scorer to check,
not a diagnosis. N1 is the least reliable stage for humans and models alike; naps, children,
and sleep disorders may need a scorer's care; statistics inherit every staging error.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from passport_kit.errors import LabelError, OptionalDependencyError
from passport_kit.stage_names import AASM_STAGES

if TYPE_CHECKING:  # pragma: no cover - yasa is optional: imported where a hypnogram is converted
    import yasa

#: Epochs that carry no stage: excluded from TST and from sleep/wake decisions.
UNSCORED: tuple[str, ...] = ("UNS", "ART")
SLEEP_STAGES: tuple[str, ...] = ("N1", "N2", "N3", "REM")

# Integer codes written to events files (BIDS `value`): the NeuroAtlas/braindecode convention.
STAGE_CODES: dict[str, int] = {"W": 0, "N1": 1, "N2": 2, "N3": 3, "REM": 4, "UNS": -1, "ART": -2}

#: YASA's key (``yasa.Hypnogram.sleep_statistics()``) for each of :meth:`Hypnogram.sleep_statistics`'s that
#: means the same; equal on the same hypnogram where both are defined (ours are None where YASA's are NaN,
#: and YASA omits UNS/ART minutes when there are none). Not here: ``REM_latency``, counted from sleep onset
#: (AASM), where YASA's ``Lat_REM`` counts from the start of the record: ``Lat_REM = REM_latency + SOL``;
#: ``LPS`` (10 min of persistent sleep), which YASA does not compute; and YASA's SME and SFI, which passport-kit
#: does not compute.
YASA_STATISTICS: dict[str, str] = {
    "TIB": "TIB", "SPT": "SPT", "WASO": "WASO", "TST": "TST", "SE": "SE", "SOL": "SOL", "SOL_5min": "SOL_5min",
    "W_min": "WAKE", "N1_min": "N1", "N2_min": "N2", "N3_min": "N3", "REM_min": "REM", "UNS_min": "UNS",
    "ART_min": "ART", "N1_pct": "%N1", "N2_pct": "%N2", "N3_pct": "%N3", "REM_pct": "%REM",
}

_ALIASES: dict[str, str] = {
    "W": "W", "WAKE": "W", "0": "W",
    "N1": "N1", "S1": "N1",
    "N2": "N2", "S2": "N2",
    "N3": "N3", "S3": "N3", "S4": "N3", "N4": "N3", "SWS": "N3",
    "REM": "REM", "R": "REM",
    "UNS": "UNS", "UNSCORED": "UNS", "?": "UNS", "U": "UNS",
    "ART": "ART", "ARTEFACT": "ART", "ARTIFACT": "ART", "MOVEMENT": "ART", "MT": "ART",
}


#: How far from chance toward certainty a window's top probability must reach not to be low confidence, by task.
#: Sleep staging: a third (0.47 for five stages): each epoch is an answer a scorer reviews. Classification: a tenth
#: (0.55 for two classes): the answer is the recording's (its mean probability), its windows are the evidence, and
#: temperature scaling draws a weak-per-window but sound classifier's windows toward chance (an eegmat adapter at
#: temperature 1.88 marked 236 of 287 windows under the third and withheld 21 of 24 recordings' class; issue 45).
LOW_CONFIDENCE_SHARE: dict[str, float] = {"sleep-staging": 1.0 / 3.0, "classification": 0.1}


def low_confidence_threshold(n_classes: int, share: float = LOW_CONFIDENCE_SHARE["sleep-staging"]) -> float:
    """Return the top probability under which a prediction counts as low confidence.

    ``share`` of the way from chance (``1 / n_classes``) to certainty (:data:`LOW_CONFIDENCE_SHARE`):
    0.47 for the five sleep stages, 0.55 for a two-class task at a tenth. Under it the model
    barely prefers one class; such windows are marked in every report for a scorer to look at first.
    """
    return 1.0 / n_classes + (1.0 - 1.0 / n_classes) * share


def low_confidence(proba: np.ndarray, share: float = LOW_CONFIDENCE_SHARE["sleep-staging"]) -> np.ndarray:
    """Return ``(N,)`` bool: the rows of ``proba`` ``(N, K)`` whose top probability is below :func:`low_confidence_threshold`.

    All-zero rows (no prediction there, e.g. an unscored gap) are not flagged.
    """
    proba = np.asarray(proba, dtype=np.float64)
    if proba.ndim != 2 or not proba.shape[1]:
        return np.zeros(len(proba), dtype=bool)
    top = proba.max(axis=1)
    return (top > 0) & (top < low_confidence_threshold(proba.shape[1], share))


def normalize_stage(name: str) -> str:
    """Return the AASM spelling of a stage name (``'Wake'`` → ``'W'``, ``'S4'`` → ``'N3'``)."""
    key = str(name).strip().upper()
    if key not in _ALIASES:
        raise LabelError(
            f"unknown sleep stage {name!r}; use one of {', '.join(AASM_STAGES + UNSCORED)} "
            "(or map your labels to them in dataset.yaml `label_map`)"
        )
    return _ALIASES[key]


def is_sleep_staging(classes: Sequence[str]) -> bool:
    """Return True when every class name is a (spelling of a) sleep stage."""
    try:
        return all(normalize_stage(c) in AASM_STAGES for c in classes)
    except LabelError:
        return False


#: The persistent-sleep latencies: key -> minutes of uninterrupted sleep that make sleep onset.
PERSISTENT_SLEEP_MINUTES: dict[str, float] = {"LPS": 10.0, "SOL_5min": 5.0}


def _first_run(flags: np.ndarray, length: int) -> int | None:
    """Return the index where the first run of at least ``length`` consecutive True ``flags`` starts, or None."""
    run = 0
    for i, flag in enumerate(np.asarray(flags, dtype=bool)):
        run = run + 1 if flag else 0
        if run >= max(length, 1):
            return i - run + 1
    return None


class Hypnogram:
    """A sequence of sleep stages, one per ``epoch_seconds`` epoch (value object).

    Parameters
    ----------
    stages : sequence of str
        One stage per epoch; spellings are normalised (see module docstring).
    epoch_seconds : float
        Epoch length in seconds (AASM: 30).
    offset_s : float
        Onset of the first epoch, in seconds from the start of the recording.
    start : datetime, optional
        Absolute start of the recording (``meas_date``); only carried through to JSON.
    proba : np.ndarray, shape (n_epochs, n_classes), optional
        Per-epoch class probabilities (the hypnodensity), columns in ``classes`` order.
    classes : sequence of str, optional
        Column names of ``proba``; default the AASM stages.
    """

    def __init__(
        self,
        stages: Sequence[str],
        *,
        epoch_seconds: float = 30.0,
        offset_s: float = 0.0,
        start: datetime | None = None,
        proba: np.ndarray | None = None,
        classes: Sequence[str] | None = None,
    ) -> None:
        if epoch_seconds <= 0:
            raise LabelError(f"epoch length must be positive, got {epoch_seconds} s")
        self.stages: tuple[str, ...] = tuple(normalize_stage(s) for s in stages)
        self.epoch_seconds = float(epoch_seconds)
        self.offset_s = float(offset_s)
        self.start = start
        self.classes: tuple[str, ...] = tuple(classes) if classes is not None else AASM_STAGES
        if proba is not None:
            proba = np.asarray(proba, dtype=np.float64)
            if proba.shape != (len(self.stages), len(self.classes)):
                raise ValueError(
                    f"proba has shape {proba.shape}, expected {(len(self.stages), len(self.classes))}"
                )
        self.proba = proba

    def __len__(self) -> int:
        return len(self.stages)

    def __repr__(self) -> str:
        return f"Hypnogram({len(self)} epochs of {self.epoch_seconds:g} s, offset {self.offset_s:g} s)"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Hypnogram):
            return NotImplemented
        return (self.stages, self.epoch_seconds, self.offset_s, self.start) == (
            other.stages, other.epoch_seconds, other.offset_s, other.start
        )

    def low_confidence(self) -> np.ndarray:
        """Return ``(n_epochs,)`` bool: epochs whose hypnodensity barely prefers a stage (:func:`low_confidence`)."""
        if self.proba is None:
            return np.zeros(len(self), dtype=bool)
        return low_confidence(self.proba)

    @property
    def onsets_s(self) -> np.ndarray:
        """Return epoch onsets in seconds from the recording start, shape (n_epochs,)."""
        return self.offset_s + self.epoch_seconds * np.arange(len(self.stages))

    def sleep_statistics(self) -> dict[str, float | None]:
        """Return the AASM sleep statistics (minutes, percent; definitions in the module doc)."""
        stages = np.asarray(self.stages, dtype=object)
        per_epoch_min = self.epoch_seconds / 60.0
        sleep = np.isin(stages, SLEEP_STAGES)
        stats: dict[str, float | None] = {"TIB": len(stages) * per_epoch_min}
        tst = float(sleep.sum()) * per_epoch_min
        if sleep.any():
            first, last = int(np.argmax(sleep)), len(stages) - 1 - int(np.argmax(sleep[::-1]))
            period = stages[first : last + 1]
            stats["SOL"] = first * per_epoch_min
            stats["SPT"] = (last - first + 1) * per_epoch_min
            stats["WASO"] = float((period == "W").sum()) * per_epoch_min
            rem = np.flatnonzero(stages == "REM")
            stats["REM_latency"] = (int(rem[0]) - first) * per_epoch_min if rem.size else None
        else:
            stats.update(SOL=None, SPT=None, WASO=None, REM_latency=None)
        for key, minutes in PERSISTENT_SLEEP_MINUTES.items():
            onset = _first_run(sleep, int(np.ceil(minutes / per_epoch_min - 1e-9)))
            stats[key] = None if onset is None else onset * per_epoch_min
        stats["TST"] = tst
        stats["SE"] = 100.0 * tst / stats["TIB"] if stats["TIB"] else None
        for stage in AASM_STAGES + UNSCORED:
            stats[f"{stage}_min"] = float((stages == stage).sum()) * per_epoch_min
        for stage in SLEEP_STAGES:
            stats[f"{stage}_pct"] = 100.0 * stats[f"{stage}_min"] / tst if tst else None
        return stats

    def as_events(self) -> list[dict[str, Any]]:
        """Return one BIDS events row per epoch: onset, duration, value (int code), trial_type.

        The rows drop straight into ``mne.Annotations(onset, duration, trial_type)`` or a
        ``*_events.tsv`` file; ``value`` uses 0=W, 1=N1, 2=N2, 3=N3, 4=REM, -1=UNS, -2=ART.
        """
        return [
            {
                "onset": float(onset),
                "duration": self.epoch_seconds,
                "value": STAGE_CODES[stage],
                "trial_type": f"Sleep stage {stage}",
            }
            for onset, stage in zip(self.onsets_s, self.stages, strict=True)
        ]

    def to_yasa(self, *, scorer: str | None = None) -> yasa.Hypnogram:
        """Return this hypnogram as a five-stage ``yasa.Hypnogram`` (needs the optional package ``yasa``).

        The epoch length becomes YASA's ``freq``; ``start`` moved by ``offset_s`` (the first
        epoch's onset) its ``start``, when known; the hypnodensity its ``proba``, when every epoch
        has one: YASA requires each row to sum to 1, and an unscored gap's row is all zeros, so a
        hypnogram with gaps goes without it. Statistics are compared key by key with
        :data:`YASA_STATISTICS`.

        Example::

            >>> h = Hypnogram(["W", "N1", "N2", "N2", "REM", "W"])
            >>> h.to_yasa().sleep_statistics()["WAKE"] == h.sleep_statistics()["W_min"]  # doctest: +SKIP
            True
        """
        try:
            import yasa
        except ImportError:
            raise OptionalDependencyError("Hypnogram.to_yasa() needs the Python package 'yasa', which passport-kit "
                                          "does not install; install it (pip install yasa) and retry") from None
        import pandas as pd

        seconds = self.epoch_seconds
        freq = f"{seconds:g}s" if seconds == int(seconds) else f"{round(seconds * 1000)}ms"
        start = None if self.start is None else pd.Timestamp(self.start) + pd.Timedelta(seconds=self.offset_s)
        proba = None
        if self.proba is not None and is_sleep_staging(self.classes) and np.allclose(self.proba.sum(axis=1), 1):
            proba = pd.DataFrame(self.proba, columns=[normalize_stage(c) for c in self.classes])
        return yasa.Hypnogram(list(self.stages), n_stages=5, freq=freq, start=start, scorer=scorer, proba=proba)

    def to_json(self) -> str:
        """Return the hypnogram and its sleep statistics as a JSON string."""
        payload = {
            "stages": list(self.stages),
            "epoch_seconds": self.epoch_seconds,
            "offset_s": self.offset_s,
            "start": self.start.isoformat() if self.start else None,
            "classes": list(self.classes),
            "proba": None if self.proba is None else np.round(self.proba, 6).tolist(),
            "sleep_statistics": self.sleep_statistics(),
        }
        return json.dumps(payload, indent=2)

    @classmethod
    def from_json(cls, text: str) -> Hypnogram:
        """Return the hypnogram written by :meth:`to_json` (statistics are recomputed)."""
        try:
            d = json.loads(text)
            return cls(
                d["stages"],
                epoch_seconds=d["epoch_seconds"],
                offset_s=d.get("offset_s", 0.0),
                start=datetime.fromisoformat(d["start"]) if d.get("start") else None,
                proba=None if d.get("proba") is None else np.asarray(d["proba"]),
                classes=d.get("classes"),
            )
        except (KeyError, TypeError, ValueError, json.JSONDecodeError) as exc:
            raise LabelError(f"not a hypnogram JSON ({exc}); write it with Hypnogram.to_json()") from None
