"""A recording played as an LSL stream (tests, the benchmark, or trying a set-up without the device).

``mne-lsl``'s ``PlayerLSL`` plays a file in real time and loops it; the tests and the
benchmark need more control: every sample exactly once, from the first, once a consumer is
connected, faster than real time, and a stream that stops and comes back. :func:`replay` pushes
a Raw's samples (volts, declared as such) through an ``mne_lsl.lsl.StreamOutlet``.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np


@dataclass(frozen=True)
class ReplayPlan:
    """How :func:`replay` plays: ``speed`` x real time (None: as fast as it can push), ``chunk_s`` seconds of samples
    per push, ``first``/``stop`` the sample range, ``start_time`` the LSL time stamped on the first sample (None:
    each push is stamped when it is sent), ``wait_s`` how long to wait for a consumer, ``buffer_s`` the seconds
    of samples the outlet keeps for a consumer slower than the pushes, ``linger_s`` how long the outlet stays open
    after the last push (a device's stays open: its consumers have its description and last samples by then)."""

    speed: float | None = None
    chunk_s: float = 1.0
    first: int = 0
    stop: int | None = None
    start_time: float | None = None
    wait_s: float = 30.0
    buffer_s: int = 360
    linger_s: float = 2.0


def stream_info(raw: Any, name: str, source_id: str) -> Any:
    """Return the ``mne_lsl`` StreamInfo of ``raw`` as a stream: its channel names, EEG, volts, float64."""
    from mne_lsl.lsl import StreamInfo

    info = StreamInfo(name, "EEG", len(raw.ch_names), float(raw.info["sfreq"]), "float64", source_id)
    info.set_channel_names(list(raw.ch_names))
    info.set_channel_types("eeg")
    info.set_channel_units("volts")
    return info


def replay(raw: Any, name: str, *, source_id: str = "passport-kit-replay", plan: ReplayPlan = ReplayPlan()) -> int:
    """Return the number of samples pushed after playing ``raw`` (an MNE Raw) as the LSL stream ``name`` by ``plan``.

    Pushing starts once a consumer is connected (or after ``plan.wait_s``); the outlet closes
    on return, which a consumer sees as the stream stopping.
    """
    from mne_lsl.lsl import StreamOutlet, local_clock

    sfreq = float(raw.info["sfreq"])
    data = raw.get_data(start=plan.first, stop=plan.stop).T
    outlet = StreamOutlet(stream_info(raw, name, source_id), chunk_size=max(1, int(plan.chunk_s * sfreq)),
                          max_buffered=int(plan.buffer_s))
    try:
        outlet.wait_for_consumers(plan.wait_s)
        step = max(1, int(round(plan.chunk_s * sfreq)))
        began = time.perf_counter()
        for start in range(0, len(data), step):
            chunk = np.ascontiguousarray(data[start:start + step])
            if plan.start_time is None:  # stamped as sent: the chunk's samples spaced at the rate they are played
                spacing = 0.0 if plan.speed is None else 1.0 / (sfreq * plan.speed)
                outlet.push_chunk(chunk, timestamp=local_clock() - spacing * np.arange(len(chunk))[::-1])
            else:
                outlet.push_chunk(chunk, timestamp=plan.start_time + (start + np.arange(len(chunk))) / sfreq)
            if plan.speed is not None:
                ahead = (start + len(chunk)) / sfreq / plan.speed - (time.perf_counter() - began)
                if ahead > 0:
                    time.sleep(ahead)
        time.sleep(plan.linger_s)
        return len(data)
    finally:
        del outlet


def play_file(path: str | Path, name: str, *, speed: float | None, reading: Any = None
              ) -> tuple[threading.Thread, float]:
    """Return the started thread that plays the recording ``path`` (read as predict reads it: ``reading``'s header
    corrections) as the LSL stream ``name`` at ``speed`` x real time once a consumer connects, and its length (s)."""
    from passport_kit.signals import read_recording

    raw = read_recording(Path(path), sfreq=getattr(reading, "sfreq", None), units=getattr(reading, "units", None),
                         scale=getattr(reading, "scale", None))
    plan = ReplayPlan(speed=speed, chunk_s=0.25, buffer_s=int(raw.n_times / raw.info["sfreq"]) + 60)
    thread = threading.Thread(target=replay, args=(raw, name), kwargs={"source_id": f"passport-kit-replay-{name}",
                                                                        "plan": plan},
                              name="passport-kit-replay", daemon=True)
    thread.start()
    return thread, raw.n_times / float(raw.info["sfreq"])
