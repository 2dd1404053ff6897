"""The night report: every file written for one predicted recording, its summary, and when its statistics are withheld.

:func:`write_prediction` turns a recording's window probabilities into the files that
:mod:`passport_kit.inference.predict` lists (the per-window CSV, BIDS events, the summary JSON,
channel quality, for sleep staging the hypnogram and its plot) and returns the
:class:`PredictionResult`. The rules that judge the windows live here with it: a window is
flagged when half its channels score bad or carry a signal flag (:data:`BAD_SHARE`); the
summary's statistics (or a classification's recording class) are withheld when most windows
are unreliable (:data:`WITHHOLD_ABOVE`), when the recording's band is too narrow for the model
(:func:`band_too_narrow`), or when it lies outside the adapter's training data
(:func:`distribution_verdict`); a recording shorter than :data:`MIN_NIGHT_HOURS` keeps its
statistics, marked not meaningful. Nothing here runs a model: the probabilities arrive as an
array, so a stager alone (zero-shot) is reported by the same code as an adapter.
"""

from __future__ import annotations

import re
import sys
import threading
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from passport_kit.contacts import ContactPolicy
from passport_kit.errors import warn
from passport_kit.inference import reports
from passport_kit.inference.options import OutputOptions, ScorerLabels
from passport_kit.signals.dead_channels import DeadChannels
from passport_kit.signals.distribution import DistributionVerdict
from passport_kit.signals.recording import RecordingWindows
from passport_kit.sleep.hypnogram import (
    Hypnogram,
    is_sleep_staging,
    LOW_CONFIDENCE_SHARE,
    low_confidence,
    low_confidence_threshold,
    normalize_stage,
)
from passport_kit.inference.night_summary import NightSummary
from passport_kit.wording import counted

#: Each file a recording's folder gets, by its key in ``PredictionResult.files``: ``<stem>`` and this ending. A new
#: output is its option's field, its writer and its line here (a resumed run lists the folder's files from it).
REPORT_FILES: dict[str, str] = {
    "predictions": "_predictions.csv",
    "events": "_events.tsv",
    "summary": "_summary.json",
    "hypnogram": "_hypnogram.json",
    "channel_quality": "_channel_quality.tsv",
    "edf_annotations": "_annotations.edf",
}


def report_file(folder: Path, stem: str, key: str) -> Path:
    """Return the path of report ``key`` (:data:`REPORT_FILES`) of recording ``stem`` in ``folder``."""
    return folder / f"{stem}{REPORT_FILES[key]}"


#: Summary statistics are withheld when more than this share of the windows is flagged or low confidence.
WITHHOLD_ABOVE = 0.5
#: A window is flagged when at least this share of its channels score bad (or carry a NaN, flat or
#: clipping flag): pure noise scored every channel 0 and was staged W with confidence 0.9997
#: (issue 28); half the channels noise was staged Wake at 0.991 while one flat channel of 12
#: flagged every window (issue 35).
BAD_SHARE = 0.5
#: Sleep statistics of a recording shorter than this (hours) are marked not meaningful.
MIN_NIGHT_HOURS = 2.0
#: A recording is not staged when the band its rate carries is below this share of the adapter's
#: (a 10 Hz copy of a night was staged TST 30 min, SE 100 %; issue 28). 100 Hz recordings, whose
#: band is lowered from 75 to about 45 Hz, are staged.
MIN_BAND_SHARE = 0.5


class PredictionResult(BaseModel):
    """What ``predict`` wrote for one recording, and its summary; the probabilities too, for a notebook."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    recording: Path
    files: dict[str, Path]
    classes: list[str]
    n_windows: int
    #: ``<stem>_summary.json`` as written (``summary.sleep_statistics``; ``summary["sleep_statistics"]`` reads it too).
    summary: NightSummary
    #: ``(N, len(classes))`` class probabilities of the windows (the CSV's columns), None when not kept.
    proba: np.ndarray | None = None
    #: ``(N,)`` each window's onset in seconds from the recording's first sample.
    onset_s: np.ndarray | None = None


class AdapterFacts(BaseModel):
    """What a prediction's reports say about the adapter that made it (from its ``adapter.json``)."""

    model_config = ConfigDict(frozen=True)

    classes: list[str]
    window_seconds: float            # seconds per predicted window
    task: str                        # 'sleep-staging' | 'classification' | '' (older bundles)
    adapter: Path                    # the bundle folder
    base_name: str                   # its base checkpoint
    not_learned: tuple[str, ...] = ()   # classes the shipped model cannot output (no training window, no stager)
    untrained: tuple[str, ...] = ()     # classes without a training window (it may output them: from a stager)
    #: Zero-shot: the stager and the montage channels it read ({stager, eeg, eog, emg}); None for an adapter.
    zero_shot: dict[str, str | None] | None = None


@dataclass(frozen=True)
class TrainingChecks:
    """How one recording compares with the adapter's training data, which the summary reports and the withholding
    rules read (:func:`~passport_kit.inference.recording.training_checks` makes it; zero-shot: ``band_short`` only).

    ``band_short``: why the recording cannot be staged by this model at all (its band too narrow for the adapter's,
    :func:`band_too_narrow`; zero-shot: :func:`zero_shot_unfit`), or None; ``distribution``: how far it lies from the
    training data (:func:`~passport_kit.signals.distribution.score_recording`), None when not guarded;
    ``in_sample``: the recording is among the adapter's training data; ``flagged`` ``(N,)``: windows a check
    flags besides the signal checks (zero-shot: those whose stager channel is dead, issue 57), or None.
    """

    band_short: str | None = None
    distribution: DistributionVerdict | None = None
    in_sample: bool = False
    flagged: np.ndarray | None = None


@dataclass(frozen=True)
class ChannelMasks:
    """The contact policy applied to one recording, the ``(N, C)`` channel-windows it masked and distrusted, and the
    dead ones (:mod:`passport_kit.signals.dead_channels`); ``imputed``: the read-out took their band powers from a
    neighbour (a probe head; other heads read no band powers)."""

    policy: ContactPolicy
    masked: np.ndarray | None = None
    distrusted: np.ndarray | None = None
    dead: DeadChannels | None = None
    imputed: bool = False


def recording_stem(path: Path) -> str:
    """Return the output stem of a recording: BIDS '_eeg' suffix and extension dropped."""
    name = path.name
    for suffix in (".fif.gz", path.suffix):
        if suffix and name.lower().endswith(suffix.lower()):  # '' ends every name: a name without suffix stays
            name = name[: -len(suffix)]
            break
    return re.sub(r"_(eeg|ieeg)$", "", name)


def import_plotting_soon() -> threading.Thread | None:
    """Return the thread started to import matplotlib's figure and Agg modules (None: imported already).

    A fresh process spends most of a second on that import, the largest part of the first
    hypnogram plot; started before the model's forward passes, which release the GIL in their
    kernels, it is done by the time the reports are written. The plotting code imports the same
    modules itself, waiting for this import if it is still running.
    """
    if "matplotlib.backends.backend_agg" in sys.modules:
        return None
    thread = threading.Thread(target=_import_plotting, name="passport-kit-import-matplotlib")
    thread.start()
    return thread


def _import_plotting() -> None:
    import matplotlib.backends.backend_agg  # noqa: F401
    import matplotlib.figure  # noqa: F401


def write_prediction(folder: Path, recording: Path, proba: np.ndarray, night: RecordingWindows, *,
                     adapter: AdapterFacts, contacts: ChannelMasks | None = None, scorer: ScorerLabels | None = None,
                     output: OutputOptions = OutputOptions(), checks: TrainingChecks = TrainingChecks()
                     ) -> PredictionResult:
    """Return the result after writing every report of one recording into ``folder``.

    ``proba`` (N, n_classes) are class probabilities of the windows of ``night`` (the recording
    as read: ``onset_s`` (N,) in seconds, ``flags`` (N, C), ``quality`` its ChannelQuality,
    written as ``<stem>_channel_quality.tsv``, ``config`` the preprocessing it got, ``start``);
    ``adapter`` what the reports say about the adapter (classes, window, task, base, the classes
    the shipped model cannot output, named in the summary's ``classes_not_learned``, so e.g. a
    REM latency is n/a for that reason; those it had no training window of but outputs all the
    same, from its sleep stager, in ``classes_from_stager_alone``); ``contacts`` the contact policy applied and the
    channel-windows it masked and distrusted; ``band_short`` why the recording cannot be staged
    by this model at all (its band too narrow for the adapter's, :func:`band_too_narrow`; zero-shot:
    :func:`zero_shot_unfit`): then every window is flagged and the statistics withheld. Windows in which half or more channels score bad
    (:func:`mostly_bad_windows`) or carry a signal flag (:func:`signal_flagged_windows`) are
    flagged; one flat or noisy channel of many is not. ``scorer``: a scorer's labels, compared
    in ``scorer_agreement`` and drawn under the hypnogram (``in_sample``: the recording is one the adapter was trained on, so the
    summary's ``in_sample`` and its scorer agreement say so: not a held-out score); ``output``:
    EDF+ annotations and the plot's format; ``distribution``: how far the recording lies from
    the adapter's training data (:func:`~passport_kit.signals.distribution.score_recording`),
    in the summary's ``distribution``; outside it, the statistics are withheld with its reason.
    A recording shorter than :data:`MIN_NIGHT_HOURS` keeps its statistics, marked not
    meaningful (``statistics_meaningful`` false, ``statistics_note``).
    """
    classes, window_seconds = adapter.classes, adapter.window_seconds
    band_short, distribution, in_sample = checks.band_short, checks.distribution, checks.in_sample
    stem = recording_stem(recording)
    mostly_bad = mostly_bad_windows(night.quality, night.onset_s, window_seconds)
    flagged = signal_flagged_windows(night.flags) | mostly_bad | (band_short is not None)
    if contacts is not None and contacts.dead is not None:  # half or more channels dead: a neighbour cannot stand in
        flagged |= np.asarray(contacts.dead.windows, dtype=bool).mean(axis=1) >= BAD_SHARE
    if checks.flagged is not None:
        flagged |= np.asarray(checks.flagged, dtype=bool)
    staged = stages_night(adapter)
    unsure = low_confidence(proba, _confidence_share(staged))
    files: dict[str, Path] = {"predictions": reports.write_window_csv(
        report_file(folder, stem, "predictions"),
        reports.window_rows(night.onset_s, window_seconds, proba, classes, flagged=flagged, low_confidence=unsure))}
    summary = _summary_head(recording, proba, night, adapter, flagged=flagged, unsure=unsure, staged=staged)
    # The most specific reason first: a band too narrow, channels that score bad, then the distribution. A
    # classification's answer is the mean over its windows: doubtful windows weaken it (its probability says how
    # much), they do not void it; only windows the signal checks flag do.
    withheld = _withheld(band_short, distribution, flagged, unsure if staged else np.zeros_like(unsure), mostly_bad,
                         what="statistics" if staged else "the recording's class")
    if distribution is not None:
        summary["distribution"] = distribution.to_json()
    summary["classes_not_learned"] = list(adapter.not_learned)
    # Output, yet never in the training windows: the stager's own stages, unchecked against the user's labels.
    summary["classes_without_training_windows"] = list(adapter.untrained)
    summary["classes_from_stager_alone"] = [c for c in adapter.untrained if c not in adapter.not_learned]
    if adapter.zero_shot is not None:
        summary["zero_shot"] = dict(adapter.zero_shot)
    summary["in_sample"] = in_sample
    if scorer is not None:
        from passport_kit.inference.agreement import agreement

        summary["scorer_agreement"] = {"labels": str(scorer.file), **agreement(scorer.labels, proba.argmax(1), classes),
                                       "in_sample": in_sample}
        if stages_night(adapter):  # the validation report's numbers of this night (issue 44)
            from passport_kit.validation import scored_night

            summary["validation"] = scored_night(recording.name, night.onset_s, scorer.labels, proba.argmax(1),
                                                 classes, window_seconds)
    summary["preprocessing"] = night.config.model_dump(mode="json")
    if night.quality is not None:
        masked = None if contacts is None or contacts.masked is None else np.asarray(contacts.masked).sum(axis=0)
        files["channel_quality"] = reports.write_channel_quality(report_file(folder, stem, "channel_quality"),
                                                                 night.quality, masked_windows=masked)
        summary["channel_quality"] = channel_quality_summary(night.quality, contacts)
        unvouched = (summary["channel_quality"].get("dead_channels") or {}).get("imputation_unvouched")
        if unvouched:
            warn(f"recording '{recording}': {unvouched}")
    # Before the plot: its note marks statistics of a short recording as the terminal does.
    summary |= _night_length_note(len(night.onset_s) * window_seconds / 3600.0, withheld, staged)
    if staged:
        events = _sleep_reports(folder, recording, proba, night, adapter, summary, files, scorer=scorer,
                                withheld=withheld, plot_format=output.plot_format)
    else:
        events = _class_reports(proba, night, adapter, summary, unsure=unsure, withheld=withheld)
    summary["statistics_withheld"] = withheld
    files["events"] = reports.write_events_tsv(report_file(folder, stem, "events"), events)
    if output.edf_annotations:
        files["edf_annotations"] = reports.write_edf_annotations(report_file(folder, stem, "edf_annotations"), events,
                                                                 start=night.start)
    typed = NightSummary(**summary)
    files["summary"] = reports.write_json(report_file(folder, stem, "summary"), typed.to_json())
    return PredictionResult(recording=recording, files=files, classes=classes, n_windows=int(len(proba)),
                            summary=typed, proba=np.asarray(proba), onset_s=np.asarray(night.onset_s))


def _summary_head(recording: Path, proba: np.ndarray, night: RecordingWindows, adapter: AdapterFacts, *,
                  flagged: np.ndarray, unsure: np.ndarray, staged: bool) -> dict[str, Any]:
    """Return the summary's first keys: the recording, the adapter, the windows, their classes and confidence."""
    classes = adapter.classes
    counts = np.bincount(proba.argmax(1), minlength=len(classes))
    return {
        "recording": str(recording),
        "start": night.start.isoformat() if night.start else None,
        "adapter": str(adapter.adapter),
        "base_checkpoint": adapter.base_name,
        "task": adapter.task,
        "classes": classes,
        "n_windows": int(len(proba)),
        "window_seconds": adapter.window_seconds,
        "flagged_windows": int(flagged.sum()),
        "class_counts": {c: int(n) for c, n in zip(classes, counts)},
        "mean_confidence": float(proba.max(1).mean()) if len(proba) else None,
        "low_confidence_windows": int(unsure.sum()),
        "low_confidence_below": round(low_confidence_threshold(len(classes), _confidence_share(staged)), 4),
    }


def _confidence_share(staged: bool) -> float:
    """Return the share of the way from chance to certainty under which a window is low confidence (sleep or not)."""
    return LOW_CONFIDENCE_SHARE["sleep-staging" if staged else "classification"]


def _withheld(band_short: str | None, distribution: DistributionVerdict | None, flagged: np.ndarray,
              unsure: np.ndarray, mostly_bad: np.ndarray, *, what: str = "statistics") -> str | None:
    """Return why the recording's ``what`` (its statistics, or its class) is withheld (None: it is not), the most
    specific reason first."""
    outside = None if distribution is None or distribution.reason is None else (
        f"the recording is unlike the adapter's training data: {distribution.reason}")
    unreliable = _withheld_because(flagged, unsure, mostly_bad, what=what)
    channels_bad = unreliable if mostly_bad.size and mostly_bad.mean() > WITHHOLD_ABOVE else None
    return band_short or channels_bad or outside or unreliable


def stages_night(adapter: AdapterFacts) -> bool:
    """Return whether the adapter stages sleep (a hypnogram and sleep statistics), not classifies recordings."""
    classes = adapter.classes
    sleep = adapter.task == "sleep-staging" or (adapter.task != "classification" and is_sleep_staging(classes))
    return sleep and is_sleep_staging(classes)


def _sleep_reports(folder: Path, recording: Path, proba: np.ndarray, night: RecordingWindows,
                   adapter: AdapterFacts, summary: dict[str, Any], files: dict[str, Path], *,
                   scorer: ScorerLabels | None, withheld: str | None, plot_format: str) -> list[dict[str, Any]]:
    """Write the hypnogram (JSON and plot) of a staged night into ``folder`` as ``<stem>_hypnogram.*``; add its sleep
    statistics and caveat to ``summary`` and its files to ``files``; return the night's events."""
    classes, window_seconds, onsets_s, start = adapter.classes, adapter.window_seconds, night.onset_s, night.start
    stem = recording_stem(recording)
    hyp = _hypnogram(proba.argmax(1), proba, onsets_s, classes, window_seconds, start)
    events = [e | {"low_confidence": int(u)} for e, u in zip(hyp.as_events(), hyp.low_confidence())]
    summary["sleep_statistics"] = None if withheld else hyp.sleep_statistics()
    summary["caveat"] = ("Automatic staging is a draft for a trained scorer to review; N1 is the least "
                         "reliable stage, and statistics inherit every staging error.")
    files["hypnogram"] = reports.write_text(report_file(folder, stem, "hypnogram"), hyp.to_json())
    reference = None if scorer is None else _scorer_hypnogram(scorer.labels, onsets_s, classes, window_seconds,
                                                              start)
    files["hypnogram_plot"] = reports.plot_hypnogram(
        folder / f"{stem}_hypnogram.{plot_format}", hyp,
        title=f"{recording.name} (adapter {adapter.adapter.name})", note=_plot_note(summary, withheld),
        reference=reference, stage_table=not withheld)
    return events


def _class_reports(proba: np.ndarray, night: RecordingWindows, adapter: AdapterFacts, summary: dict[str, Any], *,
                   unsure: np.ndarray, withheld: str | None) -> list[dict[str, Any]]:
    """Add the recording's class and mean probabilities to ``summary``; return one event per window."""
    classes, window_seconds = adapter.classes, adapter.window_seconds
    events = [{"onset": float(o), "duration": window_seconds, "value": int(k), "trial_type": classes[k],
               "low_confidence": int(u)} for o, k, u in zip(night.onset_s, proba.argmax(1), unsure)]
    mean = proba.mean(axis=0) if len(proba) else np.zeros(len(classes))
    summary["recording_class"] = classes[int(mean.argmax())] if len(proba) and not withheld else None
    summary["recording_probabilities"] = {c: float(p) for c, p in zip(classes, mean)}
    return events


def _night_length_note(hours: float, withheld: str | None, staged: bool) -> dict[str, Any]:
    """Return ``statistics_meaningful`` and ``statistics_note``: a recording under MIN_NIGHT_HOURS keeps its
    statistics, marked not meaningful."""
    note = None if withheld or hours >= MIN_NIGHT_HOURS else (
        f"not meaningful: the recording is {60 * hours:.0f} min long, and sleep statistics (TST, SE, latencies) "
        f"describe a night of at least {MIN_NIGHT_HOURS:g} h" if staged else
        f"the recording is {60 * hours:.1f} min long")
    return {"statistics_meaningful": not withheld and hours >= MIN_NIGHT_HOURS, "statistics_note": note}


def _plot_note(summary: dict[str, Any], withheld: str | None) -> str:
    """Return the line of numbers printed on the hypnogram: sleep statistics (or that they are withheld), confidence."""
    stats = summary.get("sleep_statistics")
    if withheld or not stats:
        # The terminal's reason, shortened to its first clause (issue 45: the title gave another one).
        reason = re.split(r"[:;(]", withheld or "no epochs to count", maxsplit=1)[0].strip()
        head = f"sleep statistics withheld: {reason}"
    else:
        parts = [f"TST {stats['TST']:.0f} min", f"SE {stats['SE']:.0f} %"]
        parts += [f"{k} {stats[k]:.0f} min" for k in ("SOL", "WASO") if stats.get(k) is not None]
        head = " · ".join(parts)
        note = summary.get("statistics_note")
        if summary.get("statistics_meaningful") is False and note:  # the terminal's mark, in short
            head += f" (not meaningful: {note.split(': ', 1)[-1].split(',')[0]})"
    confidence = summary.get("mean_confidence")
    tail = "" if confidence is None else f" · mean confidence {confidence:.2f}"
    unsure = summary.get("low_confidence_windows")
    scored = summary.get("scorer_agreement") or {}
    scorer = "" if scored.get("kappa") is None else (f" · kappa vs scorer {scored['kappa']:.2f}"
                                                      + (" (in-sample)" if scored.get("in_sample") else ""))
    return head + tail + scorer + (f" · {counted(unsure, 'low-confidence epoch')} (shaded)" if unsure else "")


def signal_flagged_windows(flags: np.ndarray) -> np.ndarray:
    """Return ``(N,)`` bool: windows in which at least :data:`BAD_SHARE` of the channels carry a signal flag.

    ``flags`` ``(N, C)`` are the window flags (NaN, flat, clipped, over the amplitude limit;
    :mod:`passport_kit.signals.windows`). One flagged channel of many is the contact policy's
    to handle (it is masked or distrusted there, and named in the channel quality report); it
    does not make the window unreliable.
    """
    flags = np.asarray(flags)
    if not flags.size:
        return np.zeros(len(flags), dtype=bool)
    return (flags != 0).mean(axis=1) >= BAD_SHARE


def distribution_verdict(profile: dict[str, Any] | None, night: RecordingWindows,
                         predicted: np.ndarray | None = None) -> DistributionVerdict | None:
    """Return how far ``night`` lies from the bundle's training ``profile`` (None: no profile or nothing to compare);
    ``predicted`` ``(N,)``: a sleep adapter's stages of its windows, for the sequence and sleep-at-all checks."""
    from passport_kit.signals.distribution import score_recording

    if not profile:
        return None
    return score_recording(profile, night.x, night.quality, top_hz=night.config.h_freq, sfreq=night.config.sfreq,
                           predicted=predicted, onset_s=night.onset_s, window_seconds=night.config.window_seconds)


def mostly_bad_windows(quality: Any, onsets_s: np.ndarray, window_seconds: float) -> np.ndarray:
    """Return ``(N,)`` bool: the windows at ``onsets_s`` in which half or more channels of ``quality`` score bad."""
    onsets_s = np.asarray(onsets_s, dtype=np.float64)
    if quality is None or not quality.window_score.size:
        return np.zeros(len(onsets_s), dtype=bool)
    bad_share = quality.window_bad.mean(axis=1)
    # The quality windows start at the recording's first sample, as the predicted ones do (contacts.quality_mask).
    slots = np.round(onsets_s / window_seconds).astype(np.int64)
    inside = (slots >= 0) & (slots < len(bad_share))
    mostly = np.zeros(len(slots), dtype=bool)
    mostly[inside] = bad_share[slots[inside]] >= BAD_SHARE
    return mostly


def band_too_narrow(h_freq: float, trained_h_freq: float) -> str | None:
    """Return why a recording filtered up to ``h_freq`` Hz cannot be staged by an adapter trained up to ``trained_h_freq``, or None."""
    if h_freq >= MIN_BAND_SHARE * trained_h_freq:
        return None
    return (f"the recording's band reaches only {h_freq:g} Hz (its sampling rate, or --h-freq), less than half of the "
            f"{trained_h_freq:g} Hz the adapter was trained with: every window is flagged; record at a higher rate "
            "or adapt on recordings at this rate")


def _withheld_because(flagged: np.ndarray, unsure: np.ndarray, mostly_bad: np.ndarray | None = None, *,
                      what: str = "statistics") -> str | None:
    """Return why the summary's ``what`` (statistics, or the recording's class) is withheld (most windows
    unreliable), or None to report it."""
    unreliable = np.asarray(flagged, dtype=bool) | np.asarray(unsure, dtype=bool)
    if not len(unreliable) or unreliable.mean() <= WITHHOLD_ABOVE:
        return None
    if mostly_bad is not None and mostly_bad.mean() > WITHHOLD_ABOVE:
        return (f"half or more channels score bad in {int(mostly_bad.sum())} of {counted(len(mostly_bad), 'window')} "
                f"(noise, no contact or no EEG); {what} over them would mislead - look at the recording and its "
                "channel quality")
    if not np.asarray(unsure).any():  # a classification: only the signal checks count
        return (f"{int(unreliable.sum())} of {counted(len(unreliable), 'window')} {_are(unreliable)} flagged by the "
                f"signal checks; {what} over them would mislead - look at the recording and the per-window predictions")
    return (f"{int(unreliable.sum())} of {counted(len(unreliable), 'window')} {_are(unreliable)} low confidence "
            f"({int(unsure.sum())}) or "
            f"flagged by the signal checks ({int(np.asarray(flagged).sum())}); {what} over them would mislead - "
            "look at the recording and the per-window predictions")


def _are(windows: np.ndarray) -> str:
    """Return the verb of 'k of n windows are ...': 'is' for one window."""
    return "is" if len(windows) == 1 else "are"


def channel_quality_summary(quality: Any, contacts: ChannelMasks | None = None) -> dict[str, Any]:
    """Return the ``channel_quality`` block of a prediction summary: bad channels, scores, masking, distrust."""
    from passport_kit.signals.quality import quality_summary

    contacts = contacts or ChannelMasks(ContactPolicy(distrust_bad_channels=None, mask_uncorrelated_channels=None))
    policy = contacts.policy
    block = quality_summary({"recording": quality})["recording"]
    block["masking"] = _window_counts(quality.ch_names, contacts.masked, policy.mask_bad_channels, "masked")
    if block["masking"] is not None:
        block["masking"]["uncorrelated_below"] = policy.mask_uncorrelated_channels
    block["distrust"] = _window_counts(quality.ch_names, contacts.distrusted, policy.distrust_bad_channels,
                                       "distrusted")
    # Issue 46: named, so a dead contact is not read as a clean night (and whether the read-out took a neighbour's).
    block["dead_channels"] = None if contacts.dead is None else {
        "windows": contacts.dead.counts(list(quality.ch_names)), "band_power_from_neighbour": contacts.imputed,
        # Issue 57: beyond what the imputation's agreement with a clean night was measured for, said so.
        "most_in_one_window": contacts.dead.most_in_one_window(),
        "imputation_unvouched": contacts.dead.unvouched(list(quality.ch_names)) if contacts.imputed else None}
    if contacts.dead is not None:  # issue 57: a channel at 1 % gain passed every quality statistic
        for name, reason in contacts.dead.mostly_dead(list(quality.ch_names)).items():
            if name not in block["bad_channels"]:
                block["bad_channels"].append(name)
                block["reasons"][name] = [reason]
    return block


def _window_counts(names: list[str], which: np.ndarray | None, threshold: float | None,
                   word: str) -> dict[str, Any] | None:
    """Return ``{threshold, <word>_windows per channel, windows_with_<word>_channels}`` for ``which`` (N, C), or None."""
    if which is None:
        return None
    which = np.asarray(which, dtype=bool)
    return {
        "threshold": threshold,
        f"{word}_windows": {n: int(k) for n, k in zip(names, which.sum(axis=0))},
        f"windows_with_{word}_channels": int(which.any(axis=1).sum()),
    }


def _scorer_hypnogram(reference: np.ndarray, onsets_s: np.ndarray, classes: list[str], window_seconds: float,
                      start: datetime | None = None) -> Hypnogram:
    """Return the scorer's hypnogram on the predictions' epoch grid (class indices ``(N,)``; -1: UNS)."""
    stage_names = [normalize_stage(c) for c in classes]
    stages = [stage_names[k] if k >= 0 else "UNS" for k in np.asarray(reference)]
    first = float(onsets_s[0]) if len(onsets_s) else 0.0
    return Hypnogram(stages, epoch_seconds=window_seconds, offset_s=first, classes=stage_names, start=start)


def _hypnogram(pred: np.ndarray, proba: np.ndarray, onsets_s: np.ndarray, classes: list[str],
               window_seconds: float, start: datetime | None = None) -> Hypnogram:
    """Return the hypnogram of the predictions on a full epoch grid (gaps become UNS)."""
    stage_names = [normalize_stage(c) for c in classes]
    if len(onsets_s) == 0:
        return Hypnogram([], epoch_seconds=window_seconds, classes=stage_names, start=start,
                         proba=np.zeros((0, len(classes))))
    first = float(onsets_s[0])
    slots = np.round((np.asarray(onsets_s) - first) / window_seconds).astype(int)
    n = int(slots.max()) + 1
    stages = ["UNS"] * n
    grid = np.zeros((n, len(classes)))
    for slot, k, p in zip(slots, pred, proba):
        stages[slot] = stage_names[k]
        grid[slot] = p
    return Hypnogram(stages, epoch_seconds=window_seconds, offset_s=first, proba=grid, classes=stage_names,
                     start=start)
