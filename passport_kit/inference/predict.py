"""``predict``: run an adapter bundle on new recordings and write the reports users expect.

For each recording, the signal is preprocessed exactly as recorded in the bundle's
``adapter.json`` (rate, filters, units, window length, instance normalisation), mapped onto
the bundle's own copy of the montage (a recording lacking a montage channel is refused, with
the list of what is missing), and classified window by window. Each recording is opened and
read once (:func:`read_for_prediction`: windows, flags, quality and start from that read;
nothing is cached), and the next one is read while the model works on the current one.
Written per recording, in ``<out>/<recording stem>/``:

- ``<stem>_predictions.csv``: one row per window: onset, duration, class, p_<class>...,
  confidence, flagged (a quality flag was raised for some channel), low_confidence (the top
  probability is less than a third of the way from chance to certainty:
  :func:`~passport_kit.sleep.hypnogram.low_confidence`).
- ``<stem>_events.tsv``: BIDS events (onset, duration, value, trial_type, low_confidence).
- ``<stem>_summary.json``: adapter, recording, class counts, and for sleep staging the AASM
  statistics (:class:`~passport_kit.sleep.hypnogram.Hypnogram`); for one-label tasks the
  recording-level class (mean probability over windows). When more than half of the windows
  are flagged or low confidence, these are null and ``statistics_withheld`` says why.

Before any of this, a recording whose channels are all flat, or whose amplitude is 30 times
off the adapter's training data (a unit error in its header), is refused with one line
(:mod:`passport_kit.signals.amplitude`; ``amplitude_check=False`` skips the check).
- sleep staging: ``<stem>_hypnogram.png`` (hypnogram + hypnodensity; ``.svg`` or ``.pdf`` with
  ``plot_format``) and ``<stem>_hypnogram.json``.
- with ``edf_annotations``: ``<stem>_annotations.edf`` (annotation-only EDF+, opens next to
  the recording in EDFbrowser).
- ``<stem>_channel_quality.tsv``: each channel's quality score, status and statistics from the
  raw recording (:mod:`passport_kit.signals.quality`), summarised in the JSON under
  ``channel_quality``. With ``mask_bad_channels=THRESHOLD``, channels scoring below it in a
  window are replaced by the model's mask token there (its pretraining mask), and the TSV
  and JSON say how many windows each channel was masked in. With
  ``distrust_bad_channels=THRESHOLD`` (expert kinds), such channels keep their signal but their
  channel code is read from the nearest good channel's activity; the JSON counts those windows
  under ``channel_quality.distrust``. With ``mask_uncorrelated_channels=R``, a channel whose
  1–40 Hz correlation with its neighbours is below R in a window is masked there too: its
  neighbours share nothing of its signal, so it is noise, not a weak contact that still carries
  the EEG (``channel_quality.masking.uncorrelated_below``).

Example::

    import passport_kit as pk
    results = pk.predict("runs/ear", ["night1.edf"], out="predictions")
    results[0].summary.sleep_statistics["TST"]   # a NightSummary (inference/night_summary.py)

Prediction's modules, each importing only those below it: :mod:`~passport_kit.inference.options`
(what a user says), :mod:`~passport_kit.inference.night_report` (what is written for one
recording, and when its statistics are withheld), :mod:`~passport_kit.inference.files` (the
recordings found, their output folders, the run log), :mod:`~passport_kit.inference.recording`
(one recording through the adapter), :mod:`~passport_kit.inference.zero_shot` (a stager
alone) and :mod:`~passport_kit.inference.scoring` (the one loop over the recordings, for both);
this module composes them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from passport_kit.errors import ConfigError
from passport_kit.inference.files import PredictionFailures, split_recordings
from passport_kit.inference.night_report import PredictionResult
from passport_kit.inference.options import ContactOptions, OutputOptions, ReadOptions, RunOptions, ScorerFiles
from passport_kit.inference.recording import AdapterScorer, load_for_prediction
from passport_kit.inference.scoring import score_recordings

#: What a caller of :func:`predict` imports from here: it, its option objects, its result and its error.
__all__ = ["ContactOptions", "OutputOptions", "PredictionFailures", "PredictionResult", "ReadOptions", "RunOptions",
           "ScorerFiles", "predict"]


def predict(
    adapter: str | Path,
    recordings: Sequence[str | Path] | str | Path,
    out: str | Path | None = None,
    *,
    reading: ReadOptions = ReadOptions(),
    output: OutputOptions = OutputOptions(),
    contacts: ContactOptions = ContactOptions(),
    run: RunOptions = RunOptions(),
    scorer: ScorerFiles = ScorerFiles(),
    progress: Callable[[str], None] | None = None,
) -> list[PredictionResult]:
    """Return one result per recording after writing its predictions and reports (the module docstring says which).

    ``adapter``: the bundle folder written by ``adapt``; ``recordings``: files, folders searched
    for them, or recordings in memory (an ``mne.io.Raw`` or ``(array (C, T), sfreq, ch_names)``);
    ``out``: the output folder (None: a new temporary one). How each recording is read
    (``reading``), what is written (``output``), the contact thresholds (``contacts``), how the
    model runs (``run``) and a scorer's labels to compare with (``scorer``) are option objects,
    built once by the CLI and by :func:`passport_kit.predict`, whose flat keywords document
    each. ``progress(recording)`` is called before each recording. Over several recordings a
    failing one does not stop the others: :class:`PredictionFailures` is raised at the end.
    """
    if scorer.label_map is not None and not scorer.labels:  # it reads the scorer's files: without them it does nothing
        raise ConfigError(f"--label-map {scorer.label_map} (label_map) says how to read --labels files, but none were "
                          "given; add --labels FILE per recording, or drop --label-map")
    if not isinstance(adapter, (str, Path)):  # issue 46: pk.predict(None, ...) was a TypeError from pathlib
        raise ConfigError(f"adapter must be the folder of an adapter bundle (written by adapt), got "
                          f"{type(adapter).__name__}; for staging without one use predict_zero_shot")
    files, memory = split_recordings(recordings)
    label_files = scorer.of(files)
    loaded = load_for_prediction(adapter, contacts, run)
    scoring = AdapterScorer(loaded, reading, run, output, scorer, memory)
    return score_recordings(scoring, files, out, output=output, label_files=label_files, prefetch=run.prefetch,
                            progress=progress)

