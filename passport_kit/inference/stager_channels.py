"""Which montage channels a stager alone (zero-shot) reads on one night: none that is dead (issue 57, item 1).

A stager reads one EEG channel (or derivation) and stages the night from it alone: fed a zeroed
channel, YASA staged a night TST 4.0 min against 1.5 on the clean copy, no window flagged,
while the same summary named the channel bad (issue 57). An adapter has its guard and its
dead-channel imputation; a stager alone has neither, so before it reads a night the channels are
judged with the dead-channel rule of predict (:func:`~passport_kit.signals.dead_channels.dead_channel_windows`:
flat, NaN, or 20 dB below the window's other channels), and

- a channel dead in more than half the windows (:data:`DEAD_FOR_NIGHT`) is left out of the
  montage and the channels are chosen again by the rule ``adapt`` uses
  (:func:`~passport_kit.sleep.prior_channel_options`, its first choice: the live EEG channel nearest a
  central site, the first live EOG and EMG);
- with no live EEG channel left, every window is flagged and the statistics withheld, naming the channel;
- windows in which a channel the stager reads is dead (a contact lost for part of the night) are flagged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from passport_kit.signals.dead_channels import dead_channel_windows
from passport_kit.wording import counted

#: A channel dead in more than this share of a night's windows is not read by the stager that night.
DEAD_FOR_NIGHT = 0.5


@dataclass(frozen=True)
class StagerChannels:
    """The channels a stager reads on one night and what the report says of them.

    ``spec``: the :class:`~passport_kit.sleep.StagerChoice` it reads; ``note``: why it reads other channels than the
    montage's first choice (a warning), or None; ``unfit``: why no channel can be staged (every window flagged, the
    statistics withheld), or None; ``dead`` ``(N,)``: the windows in which a channel it reads is dead.
    """

    spec: Any
    note: str | None
    unfit: str | None
    dead: np.ndarray


def stager_channels(night: Any, montage: Any, spec: Any, stager: str) -> StagerChannels:
    """Return the channels stager ``stager`` reads on ``night`` (a RecordingWindows read through ``montage``), its
    first choice being ``spec`` (module docstring says the rule)."""
    from passport_kit.sleep import prior_channel_options

    names = list(montage.ch_names)
    dead = dead_channel_windows(night.flags, night.quality, night.onset_s, night.config.window_seconds).windows
    dead = np.asarray(dead, dtype=bool).reshape(len(night.onset_s), len(names))
    share = dead.mean(axis=0) if len(dead) else np.zeros(len(names))
    gone = [n for n, s in zip(names, share) if s > DEAD_FOR_NIGHT]
    if not set(gone) & set(_read(spec)):
        return StagerChannels(spec, None, None, _dead_windows(dead, names, spec))
    said = ", ".join(f"{n} (dead in {int(round(s * len(dead)))} of {counted(len(dead), 'window')})"
                     for n, s in zip(names, share) if n in gone)
    keep = [i for i, n in enumerate(names) if n not in gone]
    options = prior_channel_options([names[i] for i in keep], np.asarray(montage.positions)[keep],
                                    [list(montage.kinds)[i] for i in keep])
    if not options:
        return StagerChannels(spec, None, (
            f"the channel the stager {stager} reads is dead: {said}, and the montage has no other live EEG channel "
            "with a position for it to read; its stages would come from no EEG - check the contacts, or give "
            "recordings whose channel is alive"), np.ones(len(dead), dtype=bool))
    chosen = options[0].with_name(spec.name)
    note = (f"zero-shot {stager}: {said}; the stager reads {chosen.channels()} instead of {spec.channels()} "
            "(the first live choice by adapt's rule)")
    return StagerChannels(chosen, note, None, _dead_windows(dead, names, chosen))


def _read(spec: Any) -> list[str]:
    """Return the montage channels ``spec`` reads (EEG, EOG, EMG and their references)."""
    return [c for c in (spec.eeg, spec.eeg_ref, spec.eog, spec.eog_ref, spec.emg) if c is not None]


def _dead_windows(dead: np.ndarray, names: list[str], spec: Any) -> np.ndarray:
    """Return ``(N,)`` bool: the windows in which an EEG channel (or reference) that ``spec`` reads is dead."""
    eeg = [names.index(c) for c in (spec.eeg, spec.eeg_ref) if c is not None and c in names]
    return dead[:, eeg].any(axis=1) if eeg and len(dead) else np.zeros(len(dead), dtype=bool)


__all__ = ["DEAD_FOR_NIGHT", "StagerChannels", "stager_channels"]
