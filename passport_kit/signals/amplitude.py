"""Amplitude plausibility: is a recording on the scale an adapter was trained on?

A unit mix-up in a header (µV stored as mV or V, or the reverse) scales a whole recording by
1000 or 1/1000. The model still answers, often confidently: a night scaled ×1/1000 is "flat"
everywhere and came out as an hour of sleep at 100 % efficiency; scaled ×1000 it came out as
REM throughout (issue 19). So:

- ``adapt`` records the 1–40 Hz RMS amplitude of its training windows in the bundle
  (:func:`amplitude_profile`; adapter.json → ``metrics.amplitude``);
- ``predict`` compares a new recording's raw 1–40 Hz amplitude with it
  (:func:`check_amplitude`) and refuses a recording whose channels are all flat, or whose
  median amplitude is more than :data:`RATIO_LIMIT` times off (either way). Amplitudes differ
  between people, devices and sleep stages by a few times, never by a thousand.

Bundles written before this check, and instance-normalised ones (whose windows carry no
absolute scale), have no profile; they are compared with :data:`GENERIC_PROFILE`, the range
of scalp and ear EEG.

Smaller amplitude faults (×4 to ×30, either way) do not refuse a recording: the
training-distribution guard (:mod:`passport_kit.signals.distribution`) withholds its sleep
statistics instead, with the reason.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from passport_kit.errors import DataError

#: A recording whose median 1–40 Hz amplitude is this many times above or below the
#: training data's is refused (a unit error is a factor of 1000; people differ by a few times).
RATIO_LIMIT = 30.0
#: 1–40 Hz RMS amplitude (µV) of sleep EEG on scalp and ear electrodes, for bundles without a profile.
GENERIC_PROFILE: dict[str, Any] = {"median_uv": 15.0, "p05_uv": 3.0, "p95_uv": 60.0, "source": "generic EEG"}


def amplitude_profile(qualities: Iterable[Any]) -> dict[str, Any] | None:
    """Return the 1–40 Hz RMS amplitude (µV) of the non-flat channel-windows of ``qualities``.

    ``qualities`` are :class:`~passport_kit.signals.quality.ChannelQuality` results (of
    preprocessed windows or raw recordings); the profile holds the 5th, 50th and 95th
    percentiles and the count. None when nothing measurable is left (all flat, or instance
    normalised windows, whose amplitude is 1 by construction).
    """
    values = [live_amplitudes(q) for q in qualities]
    found = np.concatenate(values) if values else np.zeros(0)
    if not found.size:
        return None
    p05, median, p95 = (float(v) for v in np.percentile(found, [5, 50, 95]))
    return {"median_uv": median, "p05_uv": p05, "p95_uv": p95, "channel_windows": int(found.size),
            "source": "training windows"}


def live_amplitudes(quality: Any) -> np.ndarray:
    """Return the 1–40 Hz RMS amplitudes (µV) of the non-flat, finite channel-windows of one ChannelQuality."""
    band = np.asarray(quality.window_statistics["band_uv"], dtype=np.float64)
    live = np.asarray(quality.window_statistics["std_uv"]) >= quality.thresholds.flat_std_uv
    return band[live & np.isfinite(band)]


#: One training subject whose median amplitude is beyond this ratio of the other subjects' (either way) is warned
#: about: the guard's limit (signals.distribution.AMPLITUDE_LIMIT), more than people differ.
SUBJECT_RATIO_LIMIT = 4.0


def subject_amplitude_outliers(qualities: dict[str, Any], subject_of: dict[str, str]) -> dict[str, tuple[float, float]]:
    """Return ``{subject: (its median amplitude, the other subjects' median)}`` (µV) for each subject whose median
    1–40 Hz amplitude is beyond :data:`SUBJECT_RATIO_LIMIT` times the median of the others' medians.

    ``qualities``: ``{recording: ChannelQuality}``; ``subject_of``: ``{recording: subject}`` (recordings
    of other subjects are left out). Needs three subjects with a measurable amplitude: with two,
    which of them is off cannot be told.
    """
    per_subject: dict[str, list[np.ndarray]] = {}
    for recording, quality in qualities.items():
        if recording in subject_of:
            per_subject.setdefault(subject_of[recording], []).append(live_amplitudes(quality))
    medians = {s: float(np.median(np.concatenate(v))) for s, v in per_subject.items() if sum(map(len, v))}
    if len(medians) < 3:
        return {}
    out = {}
    for subject, median in medians.items():
        others = float(np.median([m for s, m in medians.items() if s != subject]))
        if others > 0 and not 1.0 / SUBJECT_RATIO_LIMIT <= median / others <= SUBJECT_RATIO_LIMIT:
            out[subject] = (median, others)
    return out


def check_amplitude(quality: Any, profile: dict[str, Any] | None, *, source: str = "recording",
                    units: str | None = None) -> float:
    """Return the recording's median 1–40 Hz amplitude (µV); raise DataError when it is implausible.

    ``quality`` is the raw recording's :class:`~passport_kit.signals.quality.ChannelQuality`;
    ``profile`` the bundle's :func:`amplitude_profile` (None: :data:`GENERIC_PROFILE`).
    Refused: every channel flat in every window, or a median amplitude more than
    :data:`RATIO_LIMIT` times above or below the profile's median. ``units``: the unit the
    user said the file's numbers are in (``--units``), which the message then names as the likely
    cause (issue 58: ``--units nV`` on a µV file was told "µV read as V", the reverse).
    """
    std = np.asarray(quality.window_statistics["std_uv"])
    live = std >= quality.thresholds.flat_std_uv
    if not live.any():
        raise DataError(f"{source}: every channel is flat (SD under {quality.thresholds.flat_std_uv:g} µV in every "
                        f"window), so there is nothing to stage; {_flat_cause(units)}")
    band = np.asarray(quality.window_statistics["band_uv"])[live]
    median = float(np.median(band))
    reference = profile or GENERIC_PROFILE
    ratio = median / float(reference["median_uv"])
    if not 1.0 / RATIO_LIMIT <= ratio <= RATIO_LIMIT:
        trained = ("the recordings the adapter was trained on" if profile else "typical EEG")
        raise DataError(f"{source}: its 1-40 Hz amplitude (median {median:.3g} µV) is {ratio:.3g}x that of {trained} "
                        f"({reference['median_uv']:.3g} µV); {_ratio_cause(ratio, units)}, or pass "
                        "--no-amplitude-check to predict anyway")
    return median


def _flat_cause(units: str | None) -> str:
    """Return why every channel of a recording reads flat, and the fix, with the user's ``--units`` or without."""
    if units is not None:
        return (f"you gave --units {units}: its numbers read as {units} are too small to be EEG - give the unit they "
                "are in (EEG files mostly hold µV: --units uV), or leave --units out to trust the header")
    return ("the unit in its header may be too small for its numbers (volts marked µV, or µV marked nV: a signal "
            "read so looks flat), or the electrodes recorded nothing - check the file in EDFbrowser or MNE, and say "
            "what unit its numbers are in with --units uV|mV|V ('units:' in dataset.yaml)")


def _ratio_cause(ratio: float, units: str | None) -> str:
    """Return the likely cause of an amplitude ``ratio`` off by more than :data:`RATIO_LIMIT`, and the fix."""
    way = ("too large a unit (µV numbers read as mV or V)" if ratio > 1 else
           "too small a unit (mV or V numbers read as µV)")
    if units is not None:
        return (f"you gave --units {units}: its numbers were probably read in {way} - give the unit they are in "
                "(--units uV|mV|V|nV), or leave --units out to trust the header")
    return (f"the unit in its header is probably wrong, its numbers read in {way} - say what unit they are in with "
            "predict --units uV|mV|V ('units:' in dataset.yaml)")
