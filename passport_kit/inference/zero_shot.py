"""Zero-shot staging: a pretrained sleep stager alone reads the recordings, no adapter and no labels (issue 33).

The same files as :func:`passport_kit.inference.predict.predict` are written
(:mod:`passport_kit.inference.night_report`); there being no training data to refer to, the
checks are judged against what the stager expects (:func:`zero_shot_unfit`), and a channel
other than the central scalp EEG it was trained on is named in a warning
(:func:`stager_channel_note`).
"""

from __future__ import annotations

import functools
import logging
import re
import time
from dataclasses import dataclass
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from passport_kit.errors import ConfigError, warn
from passport_kit.inference.files import split_recordings, write_folder_whole
from passport_kit.inference.night_report import (MIN_BAND_SHARE, AdapterFacts, PredictionResult, TrainingChecks,
                                                  write_prediction)
from passport_kit.inference.options import OutputOptions, ReadOptions, ScorerFiles
from passport_kit.inference.recording import raw_in_memory, read_for_prediction
from passport_kit.inference.scoring import score_recordings
from passport_kit.inference.stager_channels import stager_channels
from passport_kit.signals.recording import RecordingWindows, fit_preprocessing

log = logging.getLogger(__name__)

#: The sites the pretrained stagers were trained on (central scalp EEG against a mastoid).
STAGER_SITES = ("C3", "C4", "CZ")


def predict_zero_shot(
    montage: str | Any, recordings: Sequence[str | Path] | str | Path, out: str | Path | None = None, *,
    stager: str = "yasa", checkpoint: str | Path | None = None, reading: ReadOptions = ReadOptions(),
    output: OutputOptions = OutputOptions(), scorer: ScorerFiles = ScorerFiles(), prefetch: bool = True,
    progress: Callable[[str], None] | None = None,
) -> list[PredictionResult]:
    """Return one result per recording, staged by a pretrained sleep stager alone: no adapter, no labels (issue 33).

    Each recording is read through ``montage`` with the preprocessing contract of ``checkpoint``
    (the default base's without it: 200 Hz, its band-pass and notch), 30-s windows; the prior
    (:func:`passport_kit.sleep.get_prior`) reads the montage channel nearest a central site
    (:func:`~passport_kit.sleep.pick_channels`) and, where the montage has them, its first EOG and
    EMG channel, as recorded at the stager's own rate (issue 55; the windows serve the report).
    The same files as :func:`~passport_kit.inference.predict.predict` are written.
    There is no training data to refer to, so the adapter's checks are judged against what the
    stager expects (issue 46, :func:`zero_shot_unfit`): a unit error (×30 off typical EEG) is refused unless
    ``reading.amplitude_check`` is off; ×4 off, or a band narrower than half the stager's,
    flags every window and withholds the statistics; a channel other than C3/C4/Cz is named in a
    warning. A channel the stager reads that is dead that night gives way to the next live one by adapt's
    rule, else every window is flagged (issue 57, :mod:`~passport_kit.inference.stager_channels`).
    The recordings are scored by predict's loop (:func:`~passport_kit.inference.scoring.score_recordings`):
    ``output.resume`` keeps what a killed run wrote, the next recording is read while this one
    is staged (``prefetch``), and over several recordings a bad one is noted in
    ``<out>/recordings.tsv`` while the others are staged (:class:`~passport_kit.inference.files.PredictionFailures`
    at the end).
    """
    from passport_kit.checkpoint import InputContract, find_checkpoint

    setup = zero_shot_setup(montage, stager)
    contract = find_checkpoint(checkpoint).preprocessing if checkpoint is not None else InputContract()
    # The contract's 200-Hz settings with 30-s windows; each recording's rate then fits the band (as predict does).
    config = fit_preprocessing(contract, rate=lambda: (float(contract.sfreq), "the contract"), window_seconds=30.0)
    files, memory = split_recordings(recordings)
    label_files = scorer.of(files)
    scoring = StagerScorer(setup, config, reading, output, scorer, memory)
    return score_recordings(scoring, files, out, output=output, label_files=label_files, prefetch=prefetch,
                            progress=progress)


@dataclass(frozen=True)
class ZeroShotSetup:
    """What staging with a stager alone starts from: the montage, the stager, the channels it reads (its
    :class:`~passport_kit.sleep.StagerChoice`) and the facts a night report names it by."""

    montage: Any
    stager: Any
    spec: Any
    facts: AdapterFacts


def zero_shot_setup(montage: str | Any, stager: str = "yasa") -> ZeroShotSetup:
    """Return the set-up of staging with stager ``stager`` alone on ``montage`` (a registered name, a file or a
    Montage): the montage channel nearest a central site, its first EOG and EMG, a warning where that channel is
    not what the stager was trained on. ``predict --zero-shot`` and ``passport-kit stream --zero-shot`` both start
    here."""
    from passport_kit.montage import resolve_montage
    from passport_kit.sleep import STAGES, get_prior, pick_channels

    montage = resolve_montage(montage) if isinstance(montage, (str, Path)) else montage
    sleep_stager = get_prior(stager)
    spec = pick_channels(list(montage.ch_names), montage.positions, list(montage.kinds))
    if spec is None:
        raise ConfigError(f"montage {montage.name!r} has no EEG channel with a position for the sleep prior to read")
    spec = type(spec)(sleep_stager.name, spec.eeg, spec.eog, spec.emg)
    log.info("zero-shot: stager %s (%s licence) reads EEG %s (the montage channel nearest a central site, %s), "
             "EOG %s, EMG %s", sleep_stager.name, sleep_stager.licence or "its own", spec.eeg, "/".join(STAGER_SITES),
             spec.eog or "none", spec.emg or "none")
    note = stager_channel_note(sleep_stager.name, spec.eeg)
    if note is not None:
        warn(note)
    facts = AdapterFacts(classes=list(STAGES), window_seconds=30.0, task="sleep-staging",
                         adapter=Path(f"zero-shot:{sleep_stager.name}"),
                         base_name=f"{sleep_stager.name} ({sleep_stager.licence})",
                         zero_shot={"stager": sleep_stager.name, "eeg": spec.eeg, "eog": spec.eog, "emg": spec.emg})
    return ZeroShotSetup(montage, sleep_stager, spec, facts)


@dataclass(frozen=True)
class StagerNight:
    """A recording read for a stager: its windows (and the signal the stager reads), the live channels chosen, and
    what the file calls them."""

    night: RecordingWindows
    chosen: Any                   # StagerChannels: the channels staged, and why others were passed over
    in_file: dict[str, str]       # {'eeg_in_file': name, ...}: :func:`channels_in_file`


@dataclass(frozen=True)
class StagerScorer:
    """A pretrained sleep stager scoring recordings alone (:class:`~passport_kit.inference.scoring.Scorer`): each
    read with the contract's preprocessing, the stager reading its chosen channels as recorded."""

    setup: ZeroShotSetup          # the stager, the channels it reads where all are live, the montage, the facts
    config: Any                   # the PreprocessConfig of the report's windows
    reading: ReadOptions
    output: OutputOptions
    scorer: ScorerFiles
    memory: dict[Path, Any]       # the recordings given in memory, by name

    @property
    def source(self) -> Path:
        """Return ``zero-shot:<stager>``: what the predictions' summaries name as their adapter."""
        return self.setup.facts.adapter

    def read(self, path: Path) -> StagerNight:
        """Return recording ``path`` read for the stager, its dead channels passed over (issue 57)."""
        from passport_kit.sleep import native_rates

        setup = self.setup
        raw = raw_in_memory(path, self.memory, self.reading)
        if raw is None:
            from passport_kit.signals import read_recording

            raw = read_recording(path, sfreq=self.reading.sfreq, units=self.reading.units, scale=self.reading.scale)
        band = _zero_shot_band(path, float(raw.info["sfreq"]), self.config, self.reading, setup.facts.zero_shot)
        # The unit check against typical EEG (GENERIC_PROFILE: no training amplitude here), as predict's without one.
        night = read_for_prediction(path, setup.montage, self.config, band, raw=raw,
                                    stager_rates=native_rates(setup.stager))
        chosen = stager_channels(night, setup.montage, setup.spec, setup.stager.name)  # issue 57: never a dead channel
        _log_night(path, raw, night)
        staged = {"eeg": chosen.spec.eeg, "eog": chosen.spec.eog, "emg": chosen.spec.emg}
        return StagerNight(night, chosen, channels_in_file(raw, setup.montage, self.reading, staged))

    def score(self, path: Path, read: StagerNight, *, folder: Path, label_file: Path | None) -> PredictionResult:
        """Return the result of recording ``path`` after staging it and writing ``folder`` whole."""
        from passport_kit.sleep import prior_log_proba

        setup, stager = self.setup, self.setup.stager
        night, chosen = read.night, read.chosen
        labels = self.scorer.read(label_file, setup.facts.classes, n_windows=len(night.x), window_seconds=30.0)
        if chosen.note is not None:
            warn(f"recording '{path}': {chosen.note}")
        started = time.perf_counter()
        logp = prior_log_proba(stager, night.x, night.onset_s, list(setup.montage.ch_names), chosen.spec,
                               window_seconds=30.0, raw=night.stager_signal)
        proba = np.exp(logp).astype(np.float32)
        log.info("zero-shot: %s staged %d epochs of 30 s in %.1f s; mean top probability %.2f", stager.name,
                 len(proba), time.perf_counter() - started, float(proba.max(1).mean()) if len(proba) else 0.0)
        staged = {**setup.facts.zero_shot, "eeg": chosen.spec.eeg, "eog": chosen.spec.eog, "emg": chosen.spec.emg}
        adapter = setup.facts.model_copy(update={"zero_shot": staged | read.in_file})
        unfit = zero_shot_unfit(night, stager.min_rate / 2, check=self.reading.amplitude_check) or chosen.unfit
        return write_folder_whole(folder, functools.partial(
            write_prediction, recording=path, proba=proba, night=night, adapter=adapter, scorer=labels,
            output=self.output, checks=TrainingChecks(band_short=unfit, flagged=chosen.dead)))


def _log_night(path: Path, raw: Any, night: RecordingWindows) -> None:
    """Log (--verbose) how one recording was read for the stager: its rate and length, the preprocessing, its
    windows and amplitude."""
    config = night.config
    notch = ("off" if config.notch_freq is None else f"{config.notch_freq:g} Hz" if config.notch_freq < config.h_freq
             else f"none needed ({config.notch_freq:g} Hz mains lies above the band)")
    amplitude = ""
    if night.quality is not None:
        from passport_kit.signals.amplitude import GENERIC_PROFILE, live_amplitudes

        live = live_amplitudes(night.quality)
        if live.size:
            amplitude = (f"; 1-40 Hz amplitude median {float(np.median(live)):.3g} µV (typical EEG "
                         f"{GENERIC_PROFILE['median_uv']:g} µV)")
    log.info("zero-shot: %s: %g Hz, %.1f min; band-pass %g-%g Hz, notch %s, resampled to %g Hz; %d windows of 30 s "
             "(%d flagged by the signal checks)%s", path, float(raw.info["sfreq"]),
             raw.n_times / raw.info["sfreq"] / 60, config.l_freq, config.h_freq, notch, config.sfreq, len(night.x),
             int(np.asarray(night.flags).any(axis=1).sum()) if len(night.x) else 0, amplitude)


def zero_shot_unfit(night: RecordingWindows, stager_top_hz: float, *, check: bool = True) -> str | None:
    """Return why a stager cannot be trusted on ``night`` (every window flagged, statistics withheld), or None.

    Judged against what the stager expects, there being no training data: the recording's band
    (``night.config.h_freq``) below :data:`MIN_BAND_SHARE` of the ``stager_top_hz`` it reads (a
    20-Hz recording was staged with statistics: issue 46), or its median 1-40 Hz amplitude beyond
    ``AMPLITUDE_LIMIT`` times typical EEG either way (``check``: the amplitude check is on).
    """
    from passport_kit.signals.amplitude import GENERIC_PROFILE, check_amplitude
    from passport_kit.signals.distribution import AMPLITUDE_LIMIT

    if night.config.h_freq < MIN_BAND_SHARE * stager_top_hz:
        return (f"the recording's band reaches only {night.config.h_freq:g} Hz (its sampling rate, or --h-freq), less "
                f"than half of the {stager_top_hz:g} Hz the stager reads: every window is flagged; record at a higher "
                "rate")
    if not check or night.quality is None:
        return None
    ratio = check_amplitude(night.quality, None) / float(GENERIC_PROFILE["median_uv"])
    if 1.0 / AMPLITUDE_LIMIT <= ratio <= AMPLITUDE_LIMIT:
        return None
    return (f"its amplitude is {ratio:.2g}x that of typical EEG ({GENERIC_PROFILE['median_uv']:g} µV, beyond "
            f"x{AMPLITUDE_LIMIT:g} either way): a wrong unit or scale (--units, --scale); the stager's statistics would "
            "mislead")




def channels_in_file(raw: Any, montage: Any, reading: ReadOptions, stager: dict[str, str | None]) -> dict[str, str]:
    """Return ``{'eeg_in_file': name, ...}``: what the file calls each montage channel the stager read, where that is
    not the montage's name (a --rename, an alias, a bipolar pair derived: issue 58, 'C3-A1' was the file's CZ-A1)."""
    from passport_kit.signals.channels import describe_mapping

    source = dict(describe_mapping(list(raw.ch_names), montage, reading.renames))
    return {f"{role}_in_file": source[name] for role in ("eeg", "eog", "emg")
            if (name := stager.get(role)) is not None and source.get(name, name) != name}


def stager_channel_note(stager: str, channel: str) -> str | None:
    """Return the warning that a stager reads ``channel``, not the central scalp EEG it was trained on (None: it does)."""
    site = re.split(r"[-:/ ]", channel.strip().upper().removeprefix("EEG "))[0]
    if site in STAGER_SITES:
        return None
    return (f"zero-shot {stager}: the stager reads channel '{channel}', not the central scalp EEG (C3, C4 or Cz "
            "against a mastoid) it was trained on; expect it to agree less with a scorer than on scalp EEG - check "
            "against one with --labels")


def _zero_shot_band(path: Path, sfreq: float, config: Any, reading: ReadOptions,
                    stager: dict[str, str | None]) -> ReadOptions:
    """Return ``reading`` with the band-pass top a recording at ``sfreq`` Hz carries, warning in a zero-shot's words.

    The warning of predict speaks of the adapter's training band and the model's 200-Hz input; a
    stager alone has neither (issue 45), so it says which channel the stager staged, and that it read
    it as recorded (issue 55): the lowered top is the report's windows'.
    """
    from passport_kit.signals.preprocess import fit_band_to_rate

    if reading.h_freq is not None:
        return reading
    fitted = fit_band_to_rate(config, sfreq, source=f"recording '{path}'")
    if fitted.h_freq != config.h_freq:
        warn(f"recording '{path}' is sampled at {sfreq:g} Hz: its band-pass top is lowered from "
             f"{config.h_freq:g} to {fitted.h_freq:g} Hz, below its Nyquist frequency, in the report's windows; the "
             f"stager {stager['stager']} staged channel {stager['eeg']} as recorded, so with nothing above "
             f"{sfreq / 2:g} Hz (--h-freq sets another top for the windows)")
    return reading.model_copy(update={"h_freq": fitted.h_freq})
