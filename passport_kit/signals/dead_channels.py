"""Dead channel-windows: the channels of a window that carry no EEG (flat, NaN, or near-dead), found per window.

A read-out fitted on live channels reads each channel's band powers with its own weights; a
channel that is zeroed, lost (NaN) or at 1 % gain gives band powers far outside anything it was
fitted on, and the read-out answers with confidence (issue 46: one zeroed channel of 12 turned a
2-h night of TST 108 min into REM from start to end, TST 120 min, at confidence 0.999).
The quality guard leaves such channel-windows out of its measures, so the night is not withheld
for one dead contact; :func:`dead_channel_windows` names them, so the read-out can stop reading
them (:mod:`passport_kit.engine.imputation`).

A channel-window is dead when

- its window flags say NaN or flat (:mod:`passport_kit.signals.windows`; under 0.1 µV), or
- its 1-40 Hz amplitude (the raw recording's ``band_uv``) is below :data:`NEAR_DEAD_BELOW` of the
  window's median over channels, each channel first divided by its training amplitude where the
  bundle stores one (so a channel that is quiet by design is compared with what it was at
  training, and a recording that is quiet as a whole is the amplitude check's business, not this).

A channel dead in most windows is named bad (:meth:`DeadChannels.mostly_dead`): a contact at 1 %
gain passes every quality statistic (it is no outlier upwards, and it correlates with its
neighbours as well as before; issue 57). And a night with more channels dead in one window than
the read-out's imputation was measured with (:data:`VOUCHED_CHANNELS`, :data:`VOUCHED_SHARE`;
``benchmarks/dead_channels.py``, docs/reliability.md) is said to lie beyond what its agreement
with a clean night is known for (:meth:`DeadChannels.unvouched`).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from passport_kit.signals.windows import FLAG_FLAT, FLAG_NAN

#: A channel whose 1-40 Hz amplitude in a window is below this share of the window's median channel (each relative to
#: its training amplitude) is near-dead: 20 dB down. Subjects' whole recordings differ by up to ÷3.65 (docs/reliability.md,
#: the guard's false-alarm run) and sleep stages change every channel together; a contact at 1 % gain is 40 dB down.
NEAR_DEAD_BELOW = 0.1
#: The most channels dead in one window that the imputation's agreement with a clean night was measured with
#: (``benchmarks/dead_channels.py``: one or two channels zeroed, at 1 % gain or NaN; docs/reliability.md), and the
#: largest share of a montage's channels that was (two of tuh-standard's six). A window beyond either is unvouched.
VOUCHED_CHANNELS = 2
VOUCHED_SHARE = 1 / 3


@dataclass(frozen=True)
class DeadChannels:
    """The dead channel-windows of one recording and the training amplitude of each channel.

    ``windows`` ``(N, C)`` bool marks dead channel-windows of the predicted windows;
    ``expected_uv`` ``(C,)`` is each channel's median 1-40 Hz amplitude in the training data (µV),
    None where the bundle predates it (then channels are taken as alike).
    """

    windows: np.ndarray
    expected_uv: np.ndarray | None = None

    def counts(self, names: list[str]) -> dict[str, int]:
        """Return how many windows each channel of ``names`` is dead in (only channels dead somewhere)."""
        per_channel = np.asarray(self.windows, dtype=bool).sum(axis=0)
        return {n: int(k) for n, k in zip(names, per_channel) if k}

    def mostly_dead(self, names: list[str]) -> dict[str, str]:
        """Return ``{channel: reason}`` for each channel of ``names`` dead in more than half the windows."""
        windows = np.asarray(self.windows, dtype=bool)
        n = len(windows)
        return {name: f"near-dead or flat in {int(k)} of {n} windows (1-40 Hz amplitude under "
                      f"{NEAR_DEAD_BELOW:g} of the other channels', each against its training amplitude)"
                for name, k in zip(names, windows.sum(axis=0)) if n and k > n / 2}

    def most_in_one_window(self) -> int:
        """Return the most channels dead in one window (0 without a window)."""
        windows = np.asarray(self.windows, dtype=bool)
        return int(windows.sum(axis=1).max()) if windows.size else 0

    def unvouched(self, names: list[str]) -> str | None:
        """Return why the night's staging is beyond the measured agreement of the imputation (windows with more dead
        channels than :data:`VOUCHED_CHANNELS` or :data:`VOUCHED_SHARE` of ``names``), or None when within it."""
        windows = np.asarray(self.windows, dtype=bool)
        if not windows.size:
            return None
        limit = max(1, min(VOUCHED_CHANNELS, int(np.floor(VOUCHED_SHARE * len(names) + 1e-9))))
        per_window = windows.sum(axis=1)
        beyond = per_window > limit
        if not beyond.any():
            return None
        worst = [name for name, dead in zip(names, windows[int(np.argmax(per_window))]) if dead]
        return (f"{int(per_window.max())} channels dead in one window ({', '.join(worst[:6])}"
                f"{', ...' if len(worst) > 6 else ''}), more than the {limit} of {len(names)} the read-out's imputation "
                f"was measured with (in {int(beyond.sum())} of {len(windows)} windows): its agreement with a clean night "
                "is not known there - fix the contacts, or re-run adapt on a montage without the dead channels")


def dead_channel_windows(flags: np.ndarray, quality: Any, onsets_s: np.ndarray, window_seconds: float,
                         expected_uv: Any = None) -> DeadChannels:
    """Return the dead channel-windows of predicted windows at ``onsets_s`` (module docstring says which).

    ``flags`` ``(N, C)``: the window flags; ``quality``: the raw recording's
    :class:`~passport_kit.signals.quality.ChannelQuality` (None: flags only), whose windows
    start at the recording's first sample as the predicted ones do; ``expected_uv`` ``(C,)``:
    the training amplitude per channel (the bundle's ``metrics.distribution.amplitude_uv``).
    """
    flags = np.asarray(flags)
    dead = (flags & (FLAG_NAN | FLAG_FLAT)) != 0
    expected = None if expected_uv is None else np.asarray(expected_uv, dtype=np.float64)
    if expected is not None and (expected.shape != (dead.shape[1],) or not np.all(np.isfinite(expected) & (expected > 0))):
        expected = None  # a profile of another montage or damaged: compare channels as alike
    band = None if quality is None else getattr(quality, "window_statistics", {}).get("band_uv")
    if band is not None and np.size(band) and dead.size:
        band = np.asarray(band, dtype=np.float64)
        slots = np.round(np.asarray(onsets_s, dtype=np.float64) / window_seconds).astype(np.int64)
        inside = (slots >= 0) & (slots < band.shape[0])
        rel = np.full(dead.shape, np.nan)
        rel[inside] = band[slots[inside]] / (1.0 if expected is None else expected)
        with warnings.catch_warnings(), np.errstate(invalid="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)  # a window of all-NaN statistics: no verdict, no warning
            typical = np.nanmedian(rel, axis=1, keepdims=True)
            dead |= rel < NEAR_DEAD_BELOW * typical
    return DeadChannels(windows=dead, expected_uv=expected)


__all__ = ["NEAR_DEAD_BELOW", "VOUCHED_CHANNELS", "VOUCHED_SHARE", "DeadChannels", "dead_channel_windows"]
