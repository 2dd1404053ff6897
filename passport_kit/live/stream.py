"""``passport-kit stream``: an LSL stream staged epoch by epoch, its outputs growing as it runs, the night report at
the end.

The stream is found by name or source id (``mne_lsl.lsl.resolve_streams``: where liblsl looks
is set by ``LSLAPICFG``, :mod:`passport_kit.live.lsl_scope`) and read through an
``mne_lsl.lsl.StreamInlet``, sample by sample: the low-level inlet, not ``StreamLSL``'s ring
buffer, so that every sample reaches the stager once and in order, as from a file (the parity
with :func:`~passport_kit.live.causal.stage_recording_causally` rests on it). Its channels are
mapped to the adapter's (or the montage's) by predict's rules, its declared units (or
``--units``) turn the numbers into volts, and its rate goes through predict's checks.

Time stamps are the inlet's, corrected to this machine's clock (``clocksync``: the drift
between the two clocks is measured by liblsl). Where consecutive samples lie more than
``gap_s`` apart, the stream broke: the epoch in progress is dropped, a ``GAP`` row is written,
and staging starts afresh after it (never bridged). A stream that stops and comes back with
the same source id is reconnected by the inlet (``recover``); one silent for ``end_after_s``
ends the run, as Ctrl-C does. Then the epochs waiting for their look-ahead are staged and the
night report ``predict`` writes is written, marked as staged live (``staged_live`` in the
summary).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from passport_kit.errors import ConfigError, DataError
from passport_kit.live.causal import EPOCH_SECONDS, CausalSettings, CausalStager, StagedEpoch
from passport_kit.live.prediction import EpochScorer

#: liblsl's spellings of units (``mne_lsl``'s ``set_channel_units``: names, or powers of ten of volts).
_LSL_UNITS = {"volts": "V", "millivolts": "mV", "microvolts": "uV", "nanovolts": "nV",
              "0": "V", "-3": "mV", "-6": "uV", "-9": "nV"}


class LiveOptions(BaseModel):
    """How a live run finds and reads its stream: by ``name`` or ``source_id``; ``units`` of its numbers where it
    declares none or the wrong ones; ``gap_s`` the silence between samples that breaks it; ``end_after_s`` the
    silence that ends the run; ``resolve_s`` how long to look for it; ``buffer_s`` the inlet's buffer."""

    model_config = ConfigDict(frozen=True)

    name: str | None = None
    source_id: str | None = None
    units: str | None = None
    gap_s: float = 2.0
    end_after_s: float = 60.0
    resolve_s: float = 10.0
    buffer_s: int = 360
    outlet: bool = True


@dataclass
class LiveResult:
    """What a live run staged: its epochs (in order), the gaps ``(onset_s, duration_s)``, each epoch's delay (s from
    its last sample to its stage) and the night report (a PredictionResult, None when nothing was staged)."""

    epochs: list[StagedEpoch] = field(default_factory=list)
    gaps: list[tuple[float, float]] = field(default_factory=list)
    delays_s: list[float] = field(default_factory=list)
    report: Any = None
    table: Path | None = None


def find_stream(options: LiveOptions) -> Any:
    """Return the ``mne_lsl`` StreamInfo of the one stream ``options`` names; DataError in one line otherwise."""
    from mne_lsl.lsl import resolve_streams

    if not options.name and not options.source_id:
        raise ConfigError("give the stream to stage: --lsl NAME (or --source-id ID)")
    found = resolve_streams(timeout=options.resolve_s, name=options.name, source_id=options.source_id)
    what = " and ".join(f"{k} {v!r}" for k, v in (("name", options.name), ("source id", options.source_id)) if v)
    if not found:
        raise DataError(f"no LSL stream with {what} was found within {options.resolve_s:g} s; check that the device "
                        "streams, and where liblsl looks for streams (LSLAPICFG, see the README's live step)")
    if len(found) > 1:
        ids = ", ".join(sorted({s.source_id or "(none)" for s in found}))
        raise DataError(f"{len(found)} LSL streams have {what} (source ids {ids}); pick one with --source-id")
    return found[0]


def stream_channels(sinfo: Any, units: str | None) -> tuple[list[str], float]:
    """Return the stream's channel names and the factor that turns its numbers into volts; one-line errors for a
    stream without channel labels, an irregular rate, or units that cannot be read."""
    from passport_kit.signals.readers import UNITS, canonical_units

    names = sinfo.get_channel_names()
    if not names or any(not n for n in names):
        raise DataError(f"LSL stream '{sinfo.name}' declares no channel labels, so its channels cannot be mapped to the "
                        "montage; label them at the source (desc/channels/channel/label)")
    if not sinfo.sfreq or sinfo.sfreq <= 0:
        raise DataError(f"LSL stream '{sinfo.name}' has an irregular rate; stage a stream with a nominal sampling rate")
    if units is None:
        declared = {str(u).strip().lower() for u in (sinfo.get_channel_units() or []) if u and str(u).lower() != "none"}
        if len(declared) > 1:
            raise DataError(f"LSL stream '{sinfo.name}' declares several units ({', '.join(sorted(declared))}); give "
                            "the one of the EEG channels with --units")
        units = _LSL_UNITS.get(next(iter(declared)), next(iter(declared))) if declared else "uV"
    known = canonical_units(units)
    if known is None:
        raise DataError(f"LSL stream '{sinfo.name}': unknown units {units!r}; give one of {', '.join(UNITS)} with --units")
    return list(names), float(UNITS[known])


def stage_stream(scorer: EpochScorer, out: str | Path, *, options: LiveOptions = LiveOptions(),
                 settings: CausalSettings = CausalSettings(), progress: Callable[[str], None] | None = None,
                 stop: Callable[[], bool] | None = None) -> LiveResult:
    """Return what was staged after staging the LSL stream ``options`` names until it ends (module docstring).

    ``out``: the output folder (``<stem>_live.csv`` grows there; the night report is written in
    ``<stem>/`` at the end, ``<stem>`` the stream's name); ``progress(line)`` gets the terminal
    line of each epoch; ``stop()`` True ends the run (as Ctrl-C does).
    """
    from mne_lsl.lsl import StreamInlet

    from passport_kit.live.outputs import LiveTable, StageOutlet
    from passport_kit.output_lock import output_lock

    # Resolving gives a stream's header; its channel labels and units come with the full description, from the inlet.
    inlet = StreamInlet(find_stream(options), max_buffered=int(options.buffer_s), recover=True,
                        processing_flags=["clocksync"])
    inlet.open_stream(timeout=options.resolve_s)  # samples are buffered from now on, none lost while we set up
    try:
        sinfo = inlet.get_sinfo(timeout=options.resolve_s)
    except TimeoutError:
        raise DataError(f"LSL stream {options.name or options.source_id!r} was found but sent no description within "
                        f"{options.resolve_s:g} s (it stopped, or the network drops its packets); start it again") from None
    names, to_volts = stream_channels(sinfo, options.units)
    out_dir = Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = _stem(sinfo.name)
    with output_lock(out_dir, "stream"):
        stager = CausalStager(scorer, names, sinfo.sfreq, name=sinfo.name, settings=settings)
        table = LiveTable(out_dir / f"{stem}_live.csv", scorer.classes)
        outlet = StageOutlet(sinfo.name, sinfo.source_id or stem, scorer.classes) if options.outlet else None
        run = _Run(stager, table, outlet, scorer.classes, progress)
        try:
            _read_until_end(inlet, run, options, to_volts, stop)
        except KeyboardInterrupt:
            pass  # Ctrl-C ends the night: what is staged is reported below
        finally:
            inlet.close_stream()
            run.publish(stager.finish())
            if outlet is not None:
                outlet.close()
        run.result.table = table.path
        if run.result.epochs:
            from passport_kit.live.prediction import write_live_report

            run.result.report = write_live_report(out_dir / stem, sinfo.name, run.result, scorer, settings=settings,
                                                  channels=names)
    return run.result


class _Run:
    """One live run's state: the stager, where its epochs go, and what was staged."""

    def __init__(self, stager: CausalStager, table: Any, outlet: Any, classes: list[str],
                 progress: Callable[[str], None] | None) -> None:
        self.stager, self.table, self.outlet, self.classes, self.progress = stager, table, outlet, classes, progress
        self.result = LiveResult()
        self.began = time.perf_counter()
        self.t0: float | None = None       # stream time of the first sample
        self.last: float | None = None     # stream time of the last sample read
        self.said: tuple[str, ...] = ()    # the reasons the last terminal line gave

    def publish(self, epochs: list[StagedEpoch]) -> None:
        """Write, send and show each staged epoch."""
        from mne_lsl.lsl import local_clock

        from passport_kit.live.outputs import terminal_line
        from passport_kit.live.prediction import low_confidence

        now = local_clock()
        for epoch in epochs:
            delay = None if epoch.ended_at is None else now - epoch.ended_at
            unsure = bool(low_confidence(epoch.proba[None, :])[0])
            self.result.epochs.append(epoch)
            if delay is not None:
                self.result.delays_s.append(delay)
            self.table.add_epoch(epoch, delay_s=delay, unsure=unsure)
            if self.outlet is not None:
                self.outlet.push(epoch)
            if self.progress is not None:
                lag = None if self.last is None else now - self.last
                self.progress(terminal_line(epoch, self.classes, elapsed_s=time.perf_counter() - self.began, lag_s=lag,
                                            said=self.said))
            self.said = epoch.notes if epoch.flagged else ()

    def samples(self, data: np.ndarray, times: np.ndarray, gap_s: float) -> None:
        """Stage a chunk of samples ``(T, C)`` in volts with their stream times, breaking at every gap."""
        if self.t0 is None:
            self.t0 = float(times[0])
        previous = np.concatenate([[self.last if self.last is not None else times[0]], times[:-1]])
        breaks = np.flatnonzero(times - previous > gap_s)
        start = 0
        for b in [*breaks.tolist(), len(times)]:
            if b > start:
                self.publish(self.stager.push(data[start:b], times[start:b]))
            if b < len(times):
                gap_from = float(times[b - 1] if b > 0 else self.last) - self.t0 + 1.0 / self.stager.sfreq
                onset = round((float(times[b]) - self.t0) * self.stager.sfreq) / self.stager.sfreq
                self.publish(self.stager.gap(onset))
                self.result.gaps.append((gap_from, onset - gap_from))
                self.table.add_gap(gap_from, onset - gap_from)
            start = b
        self.last = float(times[-1])


def _read_until_end(inlet: Any, run: _Run, options: LiveOptions, to_volts: float,
                    stop: Callable[[], bool] | None) -> None:
    """Pull the stream's samples into ``run`` until it is silent for ``options.end_after_s`` or ``stop()``."""
    silent_since = time.perf_counter()
    while stop is None or not stop():
        data, times = inlet.pull_chunk(timeout=0.05, max_samples=4096)
        if len(times) == 0:
            if time.perf_counter() - silent_since > options.end_after_s:
                return
            continue
        silent_since = time.perf_counter()
        samples = np.asarray(data, dtype=np.float64)
        run.samples(samples if to_volts == 1.0 else samples * to_volts, np.asarray(times, dtype=np.float64),
                    options.gap_s)


def _stem(name: str) -> str:
    """Return a file-name stem for stream ``name`` (letters, digits, '-', '_', '.'; others '_')."""
    import re

    return re.sub(r"[^A-Za-z0-9._-]", "_", name).strip(".") or "stream"
