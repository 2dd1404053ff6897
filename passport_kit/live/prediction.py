"""Live staging's side of prediction: what stages one epoch (predict's own pipeline, by an adapter bundle or a sleep
stager alone, run on the stream's recent samples, the epoch's row of its answer taken), and the night report at the end.

This is the one module of :mod:`passport_kit.live` that calls prediction's functions
(:mod:`passport_kit.inference.recording`, :mod:`~passport_kit.inference.zero_shot`,
:mod:`~passport_kit.inference.night_report`): the channel mapping and its one-line refusals,
the preprocessing fitted to the stream's rate, the read-out, and the checks (signal flags,
dead channels, channels that score bad, the amplitude against the training data or typical
EEG, how far the samples lie from the training data) are predict's, applied to a recording
that ends with the epoch just completed (:meth:`EpochScorer.score`). What is not causal in
predict is taken out here and done causally by :mod:`passport_kit.live.causal`: an adapter's
night smoothing (forward-backward over the whole night) and its temperature are removed from
the read-out and applied as a forward filter.

The night report of a live run (:func:`write_live_report`) is
:func:`passport_kit.inference.night_report.write_prediction`'s, written whole into
``<out>/<stream>/`` (temp folder + rename) when the run ends. Its windows are the epochs staged
(a gap's epochs are absent: the hypnogram does not bridge them); its probabilities are the
causal ones; the samples themselves are not kept (memory stays bounded over a night), so the
channel-quality table of the whole recording is not written: each epoch's checks are in its
``flagged`` column. The summary's ``staged_live`` says how it was staged: the stream, the
look-ahead, the history, the gaps and the delays.
"""

from __future__ import annotations

#: Epochs of samples a read-out that reads other windows (temporal context, per-night scaling, a sleep stager's
#: night-level features) is staged from: 20 min, enough for YASA's 7.5-min rolling features and the read-outs'
#: context, while each epoch costs the same all night.
NIGHT_HISTORY = 40
#: Epochs of samples a read-out of each window alone is staged from: 2 min, room for the band-pass filter's edge
#: (its 0.3-Hz high-pass spans about 11 s) before the epoch.
WINDOW_HISTORY = 4

from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from passport_kit.errors import DataError
from passport_kit.sleep.hypnogram import low_confidence
from passport_kit.inference.night_report import AdapterFacts

#: What the rest of :mod:`passport_kit.live` takes from prediction, through this module.
__all__ = ["EpochScore", "EpochScorer", "adapter_scorer", "low_confidence", "write_live_report", "zero_shot_scorer"]


@dataclass(frozen=True)
class EpochScore:
    """One epoch's answer before the night smoothing: its class probabilities ``(K,)``, whether it is flagged (and
    why), and its ``(C,)`` signal flags (:mod:`passport_kit.signals.windows`)."""

    proba: np.ndarray
    flagged: bool
    flags: np.ndarray
    notes: tuple[str, ...] = ()


@dataclass
class EpochScorer:
    """Stages the last 30-s epoch of a recording held in memory (:meth:`score`), as ``predict`` stages a file.

    ``facts``: what the night report says of the model; ``smoothing``: the adapter's night
    smoothing ``(transitions (K, K), emission_prior (K,))`` taken out of its read-out (None: it
    has none, or a stager alone); ``temperature``: its temperature, likewise taken out;
    ``history``: how many epochs of samples it reads by default (the epoch's own included);
    ``config``: the preprocessing of the last recording scored (the night report's).
    """

    facts: AdapterFacts
    smoothing: tuple[np.ndarray, np.ndarray] | None
    temperature: float
    history: int
    _score: Any = field(repr=False)
    config: Any = None

    @property
    def classes(self) -> list[str]:
        """Return the class names, in the order of the probabilities."""
        return list(self.facts.classes)

    def score(self, raw: Any, *, name: str, first: bool) -> EpochScore:
        """Return the answer for the last epoch of ``raw`` (an MNE Raw in volts, whole 30-s epochs from its start).

        ``name`` names the stream in messages; ``first``: the stream's first epoch, where a
        refusal of the recording (all channels flat, a unit error) is raised as predict raises
        it; later, a flagged epoch.
        """
        proba, flagged, flags, notes, config = self._score(raw, name, first)
        self.config = config
        return EpochScore(np.asarray(proba, dtype=np.float64), bool(flagged), np.asarray(flags), tuple(notes))


def adapter_scorer(adapter: str | Path, reading: Any = None, contacts: Any = None, run: Any = None) -> EpochScorer:
    """Return a scorer of epochs by the adapter bundle ``adapter``, with predict's options (None: predict's defaults).

    The bundle is loaded once (:func:`~passport_kit.inference.recording.load_for_prediction`);
    its head's night smoothing and temperature move to the causal filter.
    """
    from passport_kit.inference.options import ContactOptions, ReadOptions, RunOptions
    from passport_kit.inference.recording import load_for_prediction

    reading = reading or ReadOptions()
    loaded = load_for_prediction(adapter, contacts or ContactOptions(), run or RunOptions())
    head = loaded.model.head
    smoothing = getattr(head, "smoothing", None)
    taken = (None if smoothing is None else (np.asarray(smoothing["transitions"], dtype=np.float64),
                                             np.asarray(smoothing["emission_prior"], dtype=np.float64)))
    temperature = float(getattr(head, "temperature", 1.0))
    if hasattr(head, "smoothing"):  # this copy of the bundle is ours: its read-out now gives the epochs' own answers
        head.smoothing, head.temperature = None, 1.0
    facts = loaded.facts
    checked = reading.model_copy(update={"amplitude_check": False})  # checked per epoch below

    def score(raw: Any, name: str, first: bool) -> tuple[Any, ...]:
        from passport_kit.inference.recording import head_stager_rates, read_for_prediction, training_checks
        from passport_kit.inference.recording import window_probabilities

        night = read_for_prediction(Path(name), loaded.montage, loaded.config, checked, raw=raw,
                                    stager_rates=head_stager_rates(head))
        notes = _amplitude_notes(night, loaded.meta.metrics.amplitude, name=name, first=first,
                                 units=reading.units, on=reading.amplitude_check)
        proba, masks = window_probabilities(loaded, night, batch_size=(run.batch_size if run else 64))
        checks = training_checks(Path(name), night, proba, loaded, guard=reading.amplitude_check, in_memory=True)
        if checks.band_short:
            notes.append(checks.band_short)
        if checks.distribution is not None and checks.distribution.outside:
            notes.append(f"unlike the adapter's training data: {checks.distribution.reason}")
        flagged = _last_flagged(night, masks.dead) or bool(notes)
        return proba[-1], flagged, night.flags[-1], notes, night.config

    reads_night = (getattr(head, "context", 0) > 0 or getattr(head, "scaling", "none") != "none"
                   or getattr(head, "n_prior", 0) > 0)
    return EpochScorer(facts=facts, smoothing=taken, temperature=temperature,
                       history=NIGHT_HISTORY if reads_night else WINDOW_HISTORY, _score=score)


def zero_shot_scorer(montage: str | Any, stager: str = "yasa", reading: Any = None) -> EpochScorer:
    """Return a scorer of epochs by the sleep stager ``stager`` alone on ``montage`` (``predict --zero-shot``'s rules:
    the channel nearest a central site, a dead one giving way to the next live one)."""
    from passport_kit.checkpoint import InputContract
    from passport_kit.inference.options import ReadOptions
    from passport_kit.inference.zero_shot import zero_shot_setup
    from passport_kit.signals.recording import fit_preprocessing

    reading = reading or ReadOptions()
    setup = zero_shot_setup(montage, stager)
    montage, spec, facts = setup.montage, setup.spec, setup.facts
    sleep_stager = setup.stager
    contract = InputContract()
    config = fit_preprocessing(contract, rate=lambda: (float(contract.sfreq), "the contract"), window_seconds=30.0)

    def score(raw: Any, name: str, first: bool) -> tuple[Any, ...]:
        from passport_kit.inference.recording import read_for_prediction
        from passport_kit.inference.stager_channels import stager_channels
        from passport_kit.inference.zero_shot import zero_shot_unfit
        from passport_kit.signals.preprocess import fit_band_to_rate
        from passport_kit.sleep import native_rates, prior_log_proba

        band = reading.h_freq or fit_band_to_rate(config, float(raw.info["sfreq"]), source=f"stream '{name}'").h_freq
        read = reading.model_copy(update={"h_freq": band, "amplitude_check": False})
        night = read_for_prediction(Path(name), montage, config, read, raw=raw, stager_rates=native_rates(sleep_stager))
        notes = _amplitude_notes(night, None, name=name, first=first, units=reading.units, on=reading.amplitude_check)
        chosen = stager_channels(night, montage, spec, sleep_stager.name)
        logp = prior_log_proba(sleep_stager, night.x, night.onset_s, list(montage.ch_names), chosen.spec,
                               window_seconds=30.0, raw=night.stager_signal)
        unfit = zero_shot_unfit(night, sleep_stager.min_rate / 2, check=reading.amplitude_check) or chosen.unfit
        notes += [n for n in (unfit, chosen.note) if n]
        flagged = _last_flagged(night, None) or bool(chosen.dead[-1]) or unfit is not None or bool(notes)
        return np.exp(logp[-1]), flagged, night.flags[-1], notes, night.config

    return EpochScorer(facts=facts, smoothing=None, temperature=1.0, history=NIGHT_HISTORY, _score=score)


def _amplitude_notes(night: Any, profile: dict[str, Any] | None, *, name: str, first: bool, units: str | None,
                     on: bool) -> list[str]:
    """Return why the epochs' amplitude is implausible (predict's check against ``profile``, None: typical EEG), or
    nothing; on the ``first`` epoch, raise the refusal predict raises for a file."""
    from passport_kit.signals.amplitude import check_amplitude

    if not on or night.quality is None:
        return []
    try:
        check_amplitude(night.quality, profile, source=f"stream '{name}'", units=units)
    except DataError as exc:
        if first:
            raise
        return [str(exc)]
    return []


def _last_flagged(night: Any, dead: Any) -> bool:
    """Return whether predict's night report would flag the last window of ``night`` (signal flags, half the
    channels scoring bad or dead)."""
    from passport_kit.inference.night_report import BAD_SHARE, mostly_bad_windows, signal_flagged_windows

    flagged = bool(signal_flagged_windows(night.flags)[-1])
    bad = mostly_bad_windows(night.quality, night.onset_s, night.config.window_seconds)
    flagged |= bad is not None and bool(np.asarray(bad)[-1])
    if dead is not None:
        flagged |= bool(np.asarray(dead.windows, dtype=bool)[-1].mean() >= BAD_SHARE)
    return flagged


def write_live_report(folder: Path, stream: str, result: Any, scorer: EpochScorer, *, settings: Any,
                      channels: list[str]) -> Any:
    """Return the PredictionResult of the live run ``result`` (a LiveResult) after writing its night report in
    ``folder``, marked as staged live."""
    from passport_kit.inference.files import write_folder_whole
    from passport_kit.inference.night_report import TrainingChecks, write_prediction
    from passport_kit.inference.reports import write_json
    from passport_kit.signals.recording import RecordingWindows

    epochs = result.epochs
    proba = np.stack([e.proba for e in epochs]).astype(np.float32)
    night = RecordingWindows(x=np.zeros((len(epochs), 0, 0, 0), dtype=np.float32),
                             flags=np.stack([np.asarray(e.flags, dtype=np.uint8) for e in epochs]),
                             onset_s=np.array([e.onset_s for e in epochs], dtype=np.float64), quality=None,
                             config=scorer.config, start=None)
    flagged = np.array([e.flagged for e in epochs], dtype=bool)
    delays = np.asarray(result.delays_s, dtype=np.float64)
    live = {"stream": stream, "channels": channels, "look_ahead_epochs": settings.look_ahead,
            "history_epochs": settings.history or scorer.history,
            "night_smoothing": "forward filter" if scorer.smoothing is not None else "none",
            "gaps": [{"onset_s": o, "duration_s": d} for o, d in result.gaps],
            "delay_s": None if not delays.size else {"median": float(np.median(delays)),
                                                     "p95": float(np.percentile(delays, 95)),
                                                     "max": float(delays.max())},
            "ended": datetime.now(timezone.utc).isoformat(timespec="seconds")}

    def write(tmp: Path) -> Any:
        report = write_prediction(tmp, Path(stream), proba, night, adapter=scorer.facts,
                                  checks=TrainingChecks(flagged=flagged))
        summary = report.summary.model_copy(update={"staged_live": live})
        write_json(report.files["summary"], summary.to_json())
        return report.model_copy(update={"summary": summary})

    return write_folder_whole(folder, write)
