"""What a live run writes while it runs: the growing hypnogram table, an LSL outlet of the stages, the terminal line.

The table (``<stem>_live.csv``) is rewritten whole and atomically after every epoch and every
gap (temp file + rename): a kill leaves a complete file up to the last epoch staged. A gap is
a row of its own (class ``GAP``, no probabilities): the epochs on either side are never
joined. The outlet (``<stream>-stages``, irregular rate, float32) carries one sample per
epoch: the stage's index in the class list, whether it is flagged, then the probabilities of
each class; its time stamp is that of the epoch's last sample, so a stimulation system
subscribing to it can tell how old a stage is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from passport_kit.live.causal import EPOCH_SECONDS, StagedEpoch

#: The class of a gap's row in the live table.
GAP = "GAP"


@dataclass
class LiveTable:
    """The growing hypnogram of a live run, written to ``path`` after every change."""

    path: Path
    classes: list[str]
    rows: list[dict[str, Any]] = field(default_factory=list)

    def add_epoch(self, epoch: StagedEpoch, *, delay_s: float | None, unsure: bool) -> None:
        """Add one staged epoch (``delay_s``: from its last sample to its stage; ``unsure``: low confidence)."""
        k = int(np.argmax(epoch.proba))
        row: dict[str, Any] = {"onset_s": epoch.onset_s, "duration_s": EPOCH_SECONDS, "class": self.classes[k]}
        row |= {f"p_{c}": float(p) for c, p in zip(self.classes, epoch.proba)}
        row |= {"confidence": float(epoch.proba[k]), "flagged": int(epoch.flagged), "low_confidence": int(unsure),
                "segment": epoch.segment, "delay_s": delay_s, "note": "; ".join(epoch.notes)}
        self.rows.append(row)
        self.write()

    def add_gap(self, onset_s: float, duration_s: float) -> None:
        """Add a gap in the stream: ``duration_s`` seconds without samples from ``onset_s``."""
        self.rows.append({"onset_s": onset_s, "duration_s": duration_s, "class": GAP})
        self.write()

    def write(self) -> Path:
        """Return the table's path after rewriting it whole, atomically."""
        from passport_kit.atomic_io import write_table

        columns = ["onset_s", "duration_s", "class", *(f"p_{c}" for c in self.classes), "confidence", "flagged",
                   "low_confidence", "segment", "delay_s", "note"]
        return write_table(self.path, [{c: r.get(c) for c in columns} for r in self.rows])


class StageOutlet:
    """The LSL outlet of the stages: one float32 sample per epoch (module docstring)."""

    def __init__(self, stream: str, source_id: str, classes: list[str]) -> None:
        from mne_lsl.lsl import StreamInfo, StreamOutlet

        self.name = f"{stream}-stages"
        info = StreamInfo(self.name, "SleepStages", 2 + len(classes), 0.0, "float32", f"{source_id}-stages")
        info.set_channel_names(["stage", "flagged", *(f"p_{c}" for c in classes)])
        info.set_channel_types("misc")
        desc = info.desc.append_child("stages")
        for c in classes:
            desc.append_child_value("class", c)
        self._outlet = StreamOutlet(info)

    def push(self, epoch: StagedEpoch) -> None:
        """Send one epoch's stage, flag and probabilities, stamped with the time of its last sample."""
        from mne_lsl.lsl import local_clock

        sample = np.concatenate([[float(np.argmax(epoch.proba)), float(epoch.flagged)], epoch.proba]).astype(np.float32)
        self._outlet.push_sample(sample, timestamp=epoch.ended_at if epoch.ended_at is not None else local_clock())

    def close(self) -> None:
        """Close the outlet (subscribers see the stream end)."""
        del self._outlet


def terminal_line(epoch: StagedEpoch, classes: list[str], *, elapsed_s: float, lag_s: float | None,
                  said: tuple[str, ...] = ()) -> str:
    """Return the live terminal line of one epoch: onset, stage, confidence, elapsed time, stream lag, flag (its reasons
    unless the previous line ``said`` them)."""
    k = int(np.argmax(epoch.proba))
    lag = "n/a" if lag_s is None else f"{lag_s:.2f} s"
    why = "; ".join(epoch.notes) if epoch.notes != said else "as above"
    flag = (f"  FLAGGED: {why}" if epoch.notes else "  FLAGGED") if epoch.flagged else ""
    return (f"{_clock(epoch.onset_s)}  {classes[k]:<4} {100 * float(epoch.proba[k]):5.1f} %  elapsed "
            f"{_clock(elapsed_s)}  lag {lag}{flag}")


def _clock(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600:d}:{s // 60 % 60:02d}:{s % 60:02d}"
