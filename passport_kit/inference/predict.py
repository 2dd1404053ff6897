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
    results[0].summary["sleep_statistics"]["TST"]

Prediction's modules, each importing only those below it: :mod:`~passport_kit.inference.options`
(what a user says), :mod:`~passport_kit.inference.night_report` (what is written for one
recording, and when its statistics are withheld), :mod:`~passport_kit.inference.files` (the
recordings found, their output folders, the run log), :mod:`~passport_kit.inference.recording`
(one recording through the adapter) and :mod:`~passport_kit.inference.zero_shot` (a stager
alone); this module composes them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from pathlib import Path

from passport_kit.errors import ConfigError, PassportError, file_system_message
from passport_kit.inference import reports
from passport_kit.inference.files import (
    RUN_LOG,
    PredictionFailures,
    check_outputs_free,
    default_output_folder,
    finished_prediction,
    finished_result,
    log_row,
    output_names,
    split_recordings,
)
from passport_kit.inference.night_report import PredictionResult
from passport_kit.inference.options import ContactOptions, OutputOptions, ReadOptions, RunOptions, ScorerFiles
from passport_kit.inference.recording import load_for_prediction, predict_recording, prefetched, read_night
from passport_kit.output_lock import output_lock

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
    out_dir = Path(out) if out is not None else default_output_folder()
    out_dir.mkdir(parents=True, exist_ok=True)  # an unwritable --out fails now, not after the first recording
    folder_of = dict(zip(files, output_names(files)))
    # One writer per output folder (issue 28): a second predict into it exits at once, naming this one.
    with output_lock(out_dir, "predict"):
        from passport_kit.atomic_io import remove_stale_folders

        # What a killed run left half-written (issue 35); under the lock, no other run is writing them.
        remove_stale_folders(out_dir, folder_of.values())
        # The recordings a finished (or killed) run of this command already wrote are kept (resume).
        results = [finished_result(out_dir / folder_of[p], p, adapter=adapter) for p in files
                   if output.resume and finished_prediction(out_dir / folder_of[p])]
        log = [log_row(r.recording, r) for r in results]
        done = {r.recording for r in results}
        todo = [p for p in files if p not in done]
        check_outputs_free(out_dir, [folder_of[p] for p in todo], overwrite=output.overwrite)
        # While the model works on one recording, the next one is read and preprocessed in a thread
        # (file reading, FFT filtering and quality statistics release the GIL).
        read = functools.partial(read_night, loaded=loaded, reading=reading, memory=memory)
        for path, night in prefetched(todo, read, ahead=run.prefetch):
            if progress is not None:
                progress(str(path))
            try:
                result = predict_recording(path, night(), loaded, folder=out_dir / folder_of[path],
                                           label_file=label_files.get(path), scorer=scorer, run=run, output=output,
                                           guard=reading.amplitude_check, in_memory=path in memory)
            except (PassportError, OSError) as exc:
                # One bad recording in a folder must not cost the others (issue 19): note it, go on.
                reason = str(exc) if isinstance(exc, PassportError) else file_system_message(exc)
                if reason is None or len(files) == 1:
                    raise
                log.append(log_row(path, error=reason))
            else:
                results.append(result)
                log.append(log_row(path, result))
        if len(files) > 1:
            log_file = reports.write_table(out_dir / RUN_LOG, log, delimiter="\t")
            failures = [row for row in log if row["status"] == "failed"]
            if failures:
                raise PredictionFailures(results, failures, log_file)
    return results

