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
  :func:`~passport_kit.inference.hypnogram.low_confidence`).
- ``<stem>_events.tsv``: BIDS events (onset, duration, value, trial_type, low_confidence).
- ``<stem>_summary.json``: adapter, recording, class counts, and for sleep staging the AASM
  statistics (:class:`~passport_kit.inference.hypnogram.Hypnogram`); for one-label tasks the
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
"""

from __future__ import annotations

import functools
import re
import sys
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, field_validator, model_validator

from passport_kit.contacts import THRESHOLDS, ContactPolicy, check_threshold
from passport_kit.errors import (
    ChannelMappingError,
    ConfigError,
    DataError,
    PassportError,
    PassportWarning,
    file_system_message,
)
from passport_kit.inference import reports
from passport_kit.signals.dead_channels import DeadChannels, dead_channel_windows
from passport_kit.signals.distribution import DistributionVerdict
from passport_kit.signals.recording import RecordingWindows, fit_preprocessing, read_windows
from passport_kit.output_lock import output_lock
from passport_kit.wording import counted
from passport_kit.engine.forward import predict_proba
from passport_kit.inference.hypnogram import (
    Hypnogram,
    is_sleep_staging,
    LOW_CONFIDENCE_SHARE,
    low_confidence,
    low_confidence_threshold,
    normalize_stage,
)


class PredictionResult(BaseModel):
    """What ``predict`` wrote for one recording, and its summary; the probabilities too, for a notebook."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    recording: Path
    files: dict[str, Path]
    classes: list[str]
    n_windows: int
    summary: dict[str, Any]
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
    not_learned: tuple[str, ...] = ()   # classes without a training window: the adapter cannot output them
    #: Zero-shot: the stager and the montage channels it read ({stager, eeg, eog, emg}); None for an adapter.
    zero_shot: dict[str, str | None] | None = None


class ReadOptions(BaseModel):
    """How predict reads each recording: channel names, header corrections, band and the amplitude check."""

    model_config = ConfigDict(frozen=True)

    renames: dict[str, str] | None = None   # montage channel -> name in the file (--rename)
    sfreq: float | None = None              # Hz, for formats without a rate (DREAMS text, CSV)
    units: str | None = None                # the unit of the numbers where a header is wrong
    scale: float | None = None              # a factor for every sample after reading
    h_freq: float | None = None             # band-pass top (Hz) instead of the bundle's
    amplitude_check: bool = True            # refuse a unit error against the training amplitude


class OutputOptions(BaseModel):
    """What predict writes besides the reports every recording gets, and what it does with folders ``out`` holds."""

    model_config = ConfigDict(frozen=True)

    edf_annotations: bool = False                    # <stem>_annotations.edf
    plot_format: Literal["png", "svg", "pdf"] = "png"   # <stem>_hypnogram.<plot_format>
    overwrite: bool = False   # replace the folders of recordings out already holds predictions for (default: refuse)
    resume: bool = False      # keep the recordings out holds finished predictions for; predict only the others

    @field_validator("plot_format", mode="before")
    @classmethod
    def _known_format(cls, value: Any) -> Any:
        # A ConfigError is not a ValueError, so pydantic passes it on as is: the option's one line.
        if value not in reports.PLOT_FORMATS:
            raise ConfigError(f"plot_format (--plot-format) must be one of {', '.join(reports.PLOT_FORMATS)}, "
                              f"got {value!r}")
        return value


class ContactOptions(BaseModel):
    """Predict's contact thresholds (:class:`~passport_kit.contacts.ContactPolicy`'s), each a value in (0, 1), None
    (off), or ``"bundle"``: the one the adapter was trained with (``training`` in its adapter.json)."""

    model_config = ConfigDict(frozen=True)

    mask_bad_channels: float | None | Literal["bundle"] = "bundle"
    distrust_bad_channels: float | None | Literal["bundle"] = "bundle"
    mask_uncorrelated_channels: float | None | Literal["bundle"] = "bundle"

    @model_validator(mode="after")
    def _in_range(self) -> ContactOptions:
        # A bad option fails when it is given, not after the bundle is loaded (ConfigError passes pydantic as is).
        for key in THRESHOLDS:
            if getattr(self, key) != "bundle":
                check_threshold(key, getattr(self, key))
        return self

    def policy(self, training: dict[str, Any], *, adapter: str | Path, reads_activity: bool) -> ContactPolicy:
        """Return the policy predict applies: the adapter's ``training`` thresholds, these replacing those not
        ``"bundle"``, for a model whose channel codes do or do not read channel activity."""
        return ContactPolicy.of_bundle(training, adapter=adapter).given(**self.model_dump()).for_model(reads_activity)


class RunOptions(BaseModel):
    """How predict runs the adapter: its base checkpoint, the forward passes, and reading the next recording ahead."""

    model_config = ConfigDict(frozen=True)

    base: str | Path | None = None   # a base checkpoint instead of the bundle's (its SHA-256 must still match)
    batch_size: int = 32             # windows per forward pass (the probabilities do not depend on it)
    device: str = "auto"             # auto, cpu or cuda
    precision: str = "auto"          # auto, fp32 or bf16
    prefetch: bool = True            # read the next recording in a thread while the model works on this one

    @field_validator("batch_size")
    @classmethod
    def _at_least_one(cls, value: int) -> int:
        if value < 1:  # a ConfigError, not a ValueError: pydantic passes it on as the option's one line
            raise ConfigError(f"batch_size (--batch-size) must be at least 1, got {value}")
        return value


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


@dataclass(frozen=True)
class ScorerLabels:
    """A scorer's labels of a recording, one class index per predicted window (-1: none), and their file."""

    labels: np.ndarray
    file: Path


class ScorerFiles(BaseModel):
    """A scorer's label files, one per recording in the order of the recordings, and how to read them."""

    model_config = ConfigDict(frozen=True)

    labels: list[Path] | None = None   # --labels
    label_map: str | None = None       # --label-map: aasm, rk or eesm (default: stage or class names)

    def of(self, files: Sequence[Path]) -> dict[Path, Path]:
        """Return each recording's label file (none without labels); a count other than ``files``' is a ConfigError."""
        if self.labels is None:
            return {}
        if len(self.labels) != len(files):
            raise ConfigError(f"give one --labels file per recording, in the same order: {len(files)} recording(s), "
                              f"{len(self.labels)} label file(s)")
        return dict(zip(files, self.labels))

    def read(self, file: Path | None, classes: list[str], *, n_windows: int,
             window_seconds: float) -> ScorerLabels | None:
        """Return the labels of ``file`` on the grid of ``n_windows`` predicted windows (None without a file)."""
        if file is None:
            return None
        from passport_kit.inference.agreement import scorer_labels

        return ScorerLabels(scorer_labels(file, classes, n_windows=n_windows, window_seconds=window_seconds,
                                          label_map=self.label_map), file)


@dataclass(frozen=True)
class LoadedAdapter:
    """An adapter bundle loaded for prediction: its model on the device, and what reading and the reports need."""

    model: Any                    # the Classifier, on ``device``
    meta: Any                     # its AdapterMeta (adapter.json)
    montage: Any                  # the bundle's own copy of the montage
    config: Any                   # the PreprocessConfig it was trained with
    channel_meta: Any             # ChannelMeta of the montage
    policy: ContactPolicy         # the contact policy applied
    facts: AdapterFacts           # what the reports say about it
    device: Any
    precision: Any


def find_recordings(inputs: Sequence[str | Path]) -> list[Path]:
    """Return the recording files named by ``inputs`` (files, or folders searched recursively), each once."""
    from passport_kit.signals.readers import FORMATS, is_recording_file

    found: list[Path] = []
    for item in inputs:
        path = Path(item)
        if path.is_dir():
            named = [p for p in path.rglob("*") if is_recording_file(p) and not p.is_dir()]
            hits = sorted(p for p in named if p.is_file())
            odd = sorted(p.name for p in named if not p.is_file())
            if odd:  # issue 46: a FIFO named like a recording was skipped without a word
                warnings.warn(PassportWarning(
                    f"skipped {len(odd)} entr{'y' if len(odd) == 1 else 'ies'} in folder '{path}' named like a "
                    f"recording but not a regular file (a pipe, a device or a broken link): {', '.join(odd[:3])}"
                    f"{' ...' if len(odd) > 3 else ''}"), stacklevel=2)
            if not hits:
                kinds = ", ".join(dict.fromkeys(name for suffix, name in FORMATS.items() if suffix != ".txt"))
                raise DataError(f"no recordings ({kinds}) found in folder '{path}'")
            found.extend(hits)
        elif path.is_file():
            found.append(path)
        else:
            state = ("is not a regular file (a device or a pipe)" if path.exists() else
                     "is a symlink that leads nowhere (a loop, or its target is gone)" if path.is_symlink() else
                     "does not exist")
            raise DataError(f"recording '{path}' {state}; give a recording file or a folder of them")
    if not found:
        raise DataError("no recordings given; pass one or more recording files or folders")
    # A file named alone and again through its folder is one recording, predicted once.
    unique: dict[Path, Path] = {}
    for p in found:
        unique.setdefault(p.resolve(), p)
    return list(unique.values())


def output_names(files: Sequence[Path]) -> list[str]:
    """Return each recording's output folder name: its stem, or ``<parent>_<stem>`` where stems collide.

    ``night1/s01.edf`` and ``night2/s01.edf`` must not overwrite each other's reports.
    """
    stems = [_stem(p) for p in files]
    names = [s if stems.count(s) == 1 else f"{p.parent.name}_{s}" for p, s in zip(files, stems)]
    return [n if names.count(n) == 1 else f"{n}-{names[:i].count(n) + 1}" for i, n in enumerate(names)]


def _stem(path: Path) -> str:
    """Return the output stem of a recording: BIDS '_eeg' suffix and extension dropped."""
    name = path.name
    for suffix in (".fif.gz", path.suffix):
        if suffix and name.lower().endswith(suffix.lower()):  # '' ends every name: a name without suffix stays
            name = name[: -len(suffix)]
            break
    return re.sub(r"_(eeg|ieeg)$", "", name)


def read_for_prediction(path: Path, montage: Any, config: Any, reading: ReadOptions = ReadOptions(), *,
                        amplitude: dict[str, Any] | None = None, raw: Any = None) -> RecordingWindows:
    """Return one recording read, mapped and preprocessed once, with its quality scored from the same samples.

    Open the file (header), fit the bundle's preprocessing ``config`` to its rate
    (:func:`~passport_kit.signals.recording.fit_preprocessing`, the rule of adapt), read its
    windows and raw quality side by side (:func:`~passport_kit.signals.recording.read_windows`,
    the path of ``load_dataset``); last, refuse an implausible amplitude against the bundle's
    profile ``amplitude`` (:func:`~passport_kit.signals.amplitude.check_amplitude`;
    ``reading.amplitude_check=False`` skips it). Nothing is cached: the file is opened once per
    call. ``reading``: renames, the header's corrections (``sfreq``, ``units``, ``scale``: as
    :func:`~passport_kit.signals.readers.read_recording`) and the band top ``h_freq``; ``raw``:
    the recording already in memory (an MNE Raw in volts; ``path`` then only names it).
    """
    from passport_kit.signals import read_recording
    from passport_kit.signals.amplitude import check_amplitude

    source = f"recording '{path}'"
    if raw is None:
        raw = read_recording(path, sfreq=reading.sfreq, units=reading.units, scale=reading.scale)
    rec_config = fit_preprocessing(config, rate=lambda: (float(raw.info["sfreq"]), str(path)), h_freq=reading.h_freq,
                                   advice=f"; the adapter was trained with the band up to {config.h_freq:g} Hz, so "
                                          "expect less reliable predictions (adapt on recordings at this rate for "
                                          "the best)")
    try:
        night = read_windows(raw, montage, rec_config, renames=reading.renames, quality=True, source=source,
                             name=str(path))
    except ChannelMappingError as exc:
        if not exc.missing:
            raise
        # predict reads no dataset.yaml and uses the bundle's montage: advise what works here.
        n_montage = len(montage.ch_names)
        if len(exc.missing) >= 3 and len(exc.missing) > n_montage / 2:
            # Most of the montage absent is another device, not names to map one by one (issue 45: 19 --renames
            # suggested for a one-channel recording).
            raise ChannelMappingError(
                f"recording '{path}' lacks {len(exc.missing)} of the {n_montage} channels of the adapter's montage "
                f"'{montage.name}' ({', '.join(exc.missing[:4])}{', ...' if len(exc.missing) > 4 else ''}): it is "
                f"probably from another device or montage; use an adapter trained on this device (adapt --montage "
                f"<its montage>), or map names that differ with --rename CHANNEL='<name in file>'",
                missing=exc.missing, detail=exc.detail) from None
        raise ChannelMappingError(f"{exc.detail}; map them with --rename {exc.missing[0]}='<name in file>' "
                                  f"(renames={{'{exc.missing[0]}': ...}} in Python), once per channel",
                                  missing=exc.missing, detail=exc.detail) from None
    if reading.amplitude_check:
        check_amplitude(night.quality, amplitude, source=source)
    return night


def _prefetched(files: Sequence[Path], prepare: Callable[[Path], RecordingWindows], *,
                ahead: bool) -> Iterator[tuple[Path, Callable[[], RecordingWindows]]]:
    """Yield ``(path, get)`` per file in order; ``get()`` returns ``prepare(path)`` or raises its error.

    With ``ahead``, once file k is prepared the preparation of file k+1 starts in a worker
    thread, so it overlaps the caller's work on file k (the model, the reports); at most two
    recordings are in memory. The first file is prepared in the calling thread.
    """
    if not ahead or len(files) < 2:
        for path in files:
            yield path, functools.partial(prepare, path)
        return
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="passport-kit-read") as pool:
        started: dict[int, Future[RecordingWindows]] = {}

        def get(i: int) -> RecordingWindows:
            try:
                return started.pop(i).result() if i in started else prepare(files[i])
            finally:
                if i + 1 < len(files):
                    started[i + 1] = pool.submit(prepare, files[i + 1])

        for i, path in enumerate(files):
            yield path, functools.partial(get, i)


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
    files, memory = _split_recordings(recordings)
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
        log = [_log_row(r.recording, r) for r in results]
        done = {r.recording for r in results}
        todo = [p for p in files if p not in done]
        check_outputs_free(out_dir, [folder_of[p] for p in todo], overwrite=output.overwrite)
        # While the model works on one recording, the next one is read and preprocessed in a thread
        # (file reading, FFT filtering and quality statistics release the GIL).
        read = functools.partial(_read_night, loaded=loaded, reading=reading, memory=memory)
        for path, night in _prefetched(todo, read, ahead=run.prefetch):
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
                log.append(_log_row(path, error=reason))
            else:
                results.append(result)
                log.append(_log_row(path, result))
        if len(files) > 1:
            log_file = reports.write_table(out_dir / RUN_LOG, log, delimiter="\t")
            failures = [row for row in log if row["status"] == "failed"]
            if failures:
                raise PredictionFailures(results, failures, log_file)
    return results


def load_for_prediction(adapter: str | Path, contacts: ContactOptions, run: RunOptions) -> LoadedAdapter:
    """Return the bundle ``adapter`` loaded (on ``run.base`` where given), its model on ``run``'s device, with the
    contact policy of ``contacts`` and what the reports say about it."""
    from passport_kit.checkpoint import load_adapter_bundle
    from passport_kit.model import ChannelMeta
    from passport_kit.montage import Montage
    from passport_kit.runtime import resolve_device, resolve_precision, set_threads
    from passport_kit.signals import PreprocessConfig

    model, meta = load_adapter_bundle(adapter, base=run.base)
    policy = contacts.policy(meta.training, adapter=adapter,
                             reads_activity=model.backbone.channel_embedding.reads_activity)
    montage = Montage.from_dict(meta.montage)
    config = PreprocessConfig.from_dict(meta.preprocessing)
    device = resolve_device(run.device)
    precision = resolve_precision(run.precision, device)
    set_threads(None)  # torch's own choice, logged (--verbose) as adapt and evaluate log theirs
    model.to(device)
    # Classes without a training window: the adapter has never learned them, so it (nearly) never outputs them.
    not_learned = [c for c, n in (meta.metrics.get("train_class_counts") or {}).items() if n == 0]
    facts = AdapterFacts(classes=list(meta.classes), window_seconds=config.window_seconds,
                         task=str(meta.window.get("task", "")), adapter=Path(adapter), base_name=meta.base_name,
                         not_learned=tuple(not_learned))
    return LoadedAdapter(model=model, meta=meta, montage=montage, config=config,
                         channel_meta=ChannelMeta.from_montage(montage), policy=policy, facts=facts, device=device,
                         precision=precision)


def _read_night(path: Path, loaded: LoadedAdapter, reading: ReadOptions, memory: dict[Path, Any]) -> RecordingWindows:
    """Return recording ``path`` read for ``loaded`` (:func:`read_for_prediction`), from ``memory`` where it is there."""
    return read_for_prediction(path, loaded.montage, loaded.config, reading,
                               amplitude=loaded.meta.metrics.get("amplitude"), raw=_in_memory(path, memory, reading))


def _in_memory(path: Path, memory: dict[Path, Any], reading: ReadOptions) -> Any:
    """Return recording ``path`` as an MNE Raw when it was given in memory (``reading``'s corrections), else None."""
    if path not in memory:
        return None
    from passport_kit.signals.readers import raw_from_memory

    return raw_from_memory(memory[path], units=reading.units, scale=reading.scale, sfreq=reading.sfreq)


def predict_recording(path: Path, night: RecordingWindows, loaded: LoadedAdapter, *, folder: Path,
                      label_file: Path | None, scorer: ScorerFiles, run: RunOptions, output: OutputOptions,
                      guard: bool, in_memory: bool) -> PredictionResult:
    """Return the result of recording ``path`` (read as ``night``) after predicting it and writing ``folder`` whole.

    ``label_file``: the scorer's labels of it (read with ``scorer``'s label map); ``guard``:
    withhold the statistics of a recording unlike the adapter's training data; ``in_memory``: it
    was given as an array or a Raw, so no training file's hash can match it. It is in-sample when
    its files' hashes or its signal (the bundle's ``metrics.fingerprints``: the same night read
    from another file) are among the adapter's training data.
    """
    from passport_kit.signals.fingerprint import same_signal

    # Read first: a label file that does not fit the recording fails before the model runs.
    labels = scorer.read(label_file, loaded.facts.classes, n_windows=len(night.x),
                         window_seconds=loaded.config.window_seconds)
    proba, contacts = window_probabilities(loaded, night, batch_size=run.batch_size)
    # The recording's folder is written as a whole (temp folder + rename): a full disk or Ctrl-C
    # leaves the earlier one or none, never a part (issue 28).
    return write_folder_whole(folder, functools.partial(
        write_prediction, recording=path, proba=proba, night=night, adapter=loaded.facts, contacts=contacts,
        band_short=band_too_narrow(night.config.h_freq, loaded.config.h_freq), scorer=labels, output=output,
        distribution=distribution_verdict(loaded.meta.metrics.get("distribution"), night,
                                          predicted=proba.argmax(1) if _stages_night(loaded.facts) else None)
        if guard else None,
        in_sample=(not in_memory and in_training_data(path, loaded.meta.training_data))
        or same_signal(night.x, loaded.meta.metrics.get("fingerprints")) is not None))


def window_probabilities(loaded: LoadedAdapter, night: RecordingWindows, *,
                         batch_size: int) -> tuple[np.ndarray, ChannelMasks]:
    """Return the ``(N, n_classes)`` class probabilities of ``night``'s windows and the channels masked in them."""
    from passport_kit.model.heads import ProbeHead

    masked, distrusted = loaded.policy.masks(night.quality, night.onset_s, loaded.config.window_seconds)
    dead = night_dead_channels(loaded, night)
    imputed = isinstance(loaded.model.head, ProbeHead)
    if is_sleep_staging(loaded.facts.classes):
        import_plotting_soon()  # while the model runs: the hypnogram's PNG needs matplotlib next
    # Nothing to mask: the model's plain path (under bf16 the mask path differs in the last digits).
    proba = predict_proba(loaded.model, night.x, loaded.channel_meta, batch_size=batch_size, device=loaded.device,
                          precision=loaded.precision, channel_mask=masked if masked is not None and masked.any() else None,
                          distrust=distrusted, prior=night_prior(loaded.model.head, night, loaded.montage),
                          dead=dead if imputed else None)
    return proba, ChannelMasks(loaded.policy, masked, distrusted, dead, imputed)


def night_dead_channels(loaded: LoadedAdapter, night: RecordingWindows) -> DeadChannels:
    """Return the dead (flat, NaN, near-dead) channel-windows of ``night``, judged against each channel's training
    amplitude where the bundle's distribution profile has one for this montage."""
    profile = loaded.meta.metrics.get("distribution") or {}
    same_channels = profile.get("channels") == list(loaded.montage.ch_names)
    return dead_channel_windows(night.flags, night.quality, night.onset_s, loaded.config.window_seconds,
                                expected_uv=profile.get("amplitude_uv") if same_channels else None)


def _log_row(path: Path, result: PredictionResult | None = None, *, error: str | None = None) -> dict[str, Any]:
    """Return the run log's row of one recording: predicted (``result``) or failed (``error``)."""
    if result is None:
        return {"recording": str(path), "status": "failed", "windows": None, "output": None, "error": error}
    return {"recording": str(path), "status": "ok", "windows": result.n_windows,
            "output": str(result.files["summary"].parent), "error": None}


def night_prior(head: Any, night: RecordingWindows, montage: Any) -> np.ndarray | None:
    """Return the sleep prior's log-probabilities ``(N, 5)`` for a night's windows when ``head`` stacks a prior
    (:mod:`passport_kit.sleep`), else None."""
    if not getattr(head, "n_prior", 0):
        return None
    from passport_kit.sleep import PriorSpec, get_prior, prior_log_proba

    spec = PriorSpec.from_dict(head.prior)
    return prior_log_proba(get_prior(spec.name), night.x, night.onset_s, list(montage.ch_names), spec,
                           window_seconds=night.config.window_seconds)


def predict_zero_shot(
    montage: str | Any, recordings: Sequence[str | Path] | str | Path, out: str | Path | None = None, *,
    prior: str = "yasa", checkpoint: str | Path | None = None, reading: ReadOptions = ReadOptions(),
    output: OutputOptions = OutputOptions(), scorer: ScorerFiles = ScorerFiles(),
    progress: Callable[[str], None] | None = None,
) -> list[PredictionResult]:
    """Return one result per recording, staged by a pretrained sleep stager alone: no adapter, no labels (issue 33).

    Each recording is read through ``montage`` with the preprocessing contract of ``checkpoint``
    (the default base's without it: 200 Hz, its band-pass and notch), 30-s windows; the prior
    (:func:`passport_kit.sleep.get_prior`) reads the montage channel nearest a central site
    (:func:`~passport_kit.sleep.pick_channels`) and, where the montage has them, its first EOG and
    EMG channel. The same files as :func:`predict` are written. There is no training data to refer
    to, so the adapter's checks are judged against what the stager expects (issue 46,
    :func:`zero_shot_unfit`): a unit error (×30 off typical EEG) is refused unless
    ``reading.amplitude_check`` is off; ×4 off, or a band narrower than half the stager's,
    flags every window and withholds the statistics; a channel other than C3/C4/Cz is named in a
    warning. ``output.resume`` is not taken: every recording is staged.
    """
    from passport_kit.checkpoint import InputContract, find_checkpoint
    from passport_kit.montage import resolve_montage
    from passport_kit.sleep import STAGES, get_prior, pick_channels, prior_log_proba

    montage = resolve_montage(montage) if isinstance(montage, (str, Path)) else montage
    stager = get_prior(prior)
    spec = pick_channels(list(montage.ch_names), montage.positions, list(montage.kinds))
    if spec is None:
        raise ConfigError(f"montage {montage.name!r} has no EEG channel with a position for the sleep prior to read")
    spec = type(spec)(stager.name, spec.eeg, spec.eog, spec.emg)
    note = stager_channel_note(stager.name, spec.eeg)
    if note is not None:
        warnings.warn(PassportWarning(note), stacklevel=2)
    contract = find_checkpoint(checkpoint).preprocessing if checkpoint is not None else InputContract()
    # The contract's 200-Hz settings with 30-s windows; each recording's rate then fits the band (as predict does).
    config = fit_preprocessing(contract, rate=lambda: (float(contract.sfreq), "the contract"), window_seconds=30.0)
    files, memory = _split_recordings(recordings)
    label_files = scorer.of(files)
    classes = list(STAGES)
    facts = AdapterFacts(classes=classes, window_seconds=30.0, task="sleep-staging",
                         adapter=Path(f"zero-shot:{stager.name}"), base_name=f"{stager.name} ({stager.licence})",
                         zero_shot={"stager": stager.name, "eeg": spec.eeg, "eog": spec.eog, "emg": spec.emg})
    out_dir = Path(out) if out is not None else default_output_folder()
    out_dir.mkdir(parents=True, exist_ok=True)
    folder_of = dict(zip(files, output_names(files)))
    results: list[PredictionResult] = []
    with output_lock(out_dir, "predict"):
        check_outputs_free(out_dir, list(folder_of.values()), overwrite=output.overwrite)
        for path in files:
            if progress is not None:
                progress(str(path))
            raw = _in_memory(path, memory, reading)
            if raw is None:
                from passport_kit.signals import read_recording

                raw = read_recording(path, sfreq=reading.sfreq, units=reading.units, scale=reading.scale)
            band = _zero_shot_band(path, float(raw.info["sfreq"]), config, reading, facts.zero_shot)
            # The unit check against typical EEG (GENERIC_PROFILE: no training amplitude here), as predict's without one.
            night = read_for_prediction(path, montage, config, band, raw=raw)
            labels = scorer.read(label_files.get(path), classes, n_windows=len(night.x), window_seconds=30.0)
            logp = prior_log_proba(stager, night.x, night.onset_s, list(montage.ch_names), spec, window_seconds=30.0)
            proba = np.exp(logp).astype(np.float32)
            results.append(write_folder_whole(out_dir / folder_of[path], functools.partial(
                write_prediction, recording=path, proba=proba, night=night, adapter=facts, scorer=labels,
                output=output, band_short=zero_shot_unfit(night, stager.min_rate / 2, check=reading.amplitude_check))))
    return results


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


#: The sites the pretrained stagers were trained on (central scalp EEG against a mastoid).
STAGER_SITES = ("C3", "C4", "CZ")


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
    stager alone has neither (issue 45), so it says which channel the stager staged in which band.
    """
    import warnings

    from passport_kit.errors import PassportWarning
    from passport_kit.signals.preprocess import fit_band_to_rate

    if reading.h_freq is not None:
        return reading
    fitted = fit_band_to_rate(config, sfreq, source=f"recording '{path}'")
    if fitted.h_freq != config.h_freq:
        warnings.warn(f"recording '{path}' is sampled at {sfreq:g} Hz: its band-pass top is lowered from "
                      f"{config.h_freq:g} to {fitted.h_freq:g} Hz, below its Nyquist frequency; the stager "
                      f"{stager['stager']} staged channel {stager['eeg']} in that band (--h-freq sets another top)",
                      PassportWarning, stacklevel=3)
    return reading.model_copy(update={"h_freq": fitted.h_freq})


def _split_recordings(recordings: Any) -> tuple[list[Path], dict[Path, Any]]:
    """Return ``(files, {name: recording in memory})`` of predict's ``recordings``; ``files`` ends with the names.

    One recording in memory may be given alone (a Raw, or an ``(array, sfreq, ch_names)`` tuple).
    """
    import mne

    if recordings is None or (isinstance(recordings, (list, tuple)) and not len(recordings)):
        raise ConfigError("no recordings given; pass a recording file or folder, an mne.io.Raw or an (array, sfreq, "
                          "ch_names) tuple, or a list of them")
    single = isinstance(recordings, (str, Path, mne.io.BaseRaw)) or (
        isinstance(recordings, tuple) and len(recordings) == 3 and isinstance(recordings[0], np.ndarray))
    items = [recordings] if single else list(recordings)
    paths = [item for item in items if isinstance(item, (str, Path))]
    memory: dict[Path, Any] = {}
    for k, item in enumerate(i for i in items if not isinstance(i, (str, Path))):
        named = isinstance(item, mne.io.BaseRaw) and item.filenames and item.filenames[0]
        name = Path(Path(item.filenames[0]).name if named else f"recording-{k + 1}")
        while name in memory:
            name = name.with_name(f"{name.stem}-{k + 1}{name.suffix}")
        memory[name] = item
    files = find_recordings(paths) if paths or not memory else []
    return files + list(memory), memory


def default_output_folder() -> Path:
    """Return a new temporary folder for predictions when the caller named none (issue 35: not ./predictions)."""
    import tempfile

    return Path(tempfile.mkdtemp(prefix="passport-kit-predictions-"))


def finished_prediction(folder: Path) -> bool:
    """Return whether ``folder`` holds a recording's finished predictions (written whole: a summary means done)."""
    return folder.is_dir() and any(folder.glob("*_summary.json"))


def finished_result(folder: Path, recording: Path, *, adapter: str | Path | None = None) -> PredictionResult:
    """Return the :class:`PredictionResult` of predictions already in ``folder`` (``resume``), from its summary.

    ``adapter``: the bundle of this run; predictions made with another one are refused
    (ConfigError), not reported as this run's (issue 46).
    """
    import json

    summary_file = next(folder.glob("*_summary.json"))
    summary = json.loads(summary_file.read_text(encoding="utf-8"))
    made_with = summary.get("adapter")
    if adapter is not None and made_with is not None and Path(made_with).resolve() != Path(adapter).resolve():
        raise ConfigError(f"--resume: '{folder}' holds predictions made with adapter '{made_with}', not '{adapter}'; "
                          "resume with that adapter, choose another --out, or pass --overwrite (without --resume) to "
                          "predict anew")
    kinds = {"_predictions.csv": "predictions", "_events.tsv": "events", "_summary.json": "summary",
             "_hypnogram.json": "hypnogram", "_channel_quality.tsv": "channel_quality",
             "_annotations.edf": "edf_annotations"}
    files = {kind: p for p in folder.iterdir() for end, kind in kinds.items() if p.name.endswith(end)}
    files.update({"hypnogram_plot": p for p in folder.glob("*_hypnogram.*") if p.suffix != ".json"})
    return PredictionResult(recording=recording, files=files, classes=list(summary.get("classes", [])),
                            n_windows=int(summary.get("n_windows", 0)), summary=summary)


def check_outputs_free(out_dir: Path, folders: list[str], *, overwrite: bool) -> None:
    """Raise ConfigError when ``out_dir`` already holds one of the recording ``folders`` and ``overwrite`` is off."""
    taken = [name for name in folders if (out_dir / name).exists()]
    if taken and not overwrite:
        more = f" and {len(taken) - 1} more" if len(taken) > 1 else ""
        raise ConfigError(f"--out '{out_dir}' already holds predictions for '{taken[0]}'{more}; choose another --out, "
                          "or pass --overwrite (overwrite=True) to replace them")


def write_folder_whole(folder: Path, write: Callable[[Path], PredictionResult]) -> PredictionResult:
    """Return ``write(tmp)``'s result after the temporary folder it filled replaced ``folder`` as a whole."""
    from passport_kit.atomic_io import write_folder_atomically

    written: list[PredictionResult] = []
    write_folder_atomically(folder, lambda tmp: written.append(write(tmp)))
    result = written[0]
    return result.model_copy(update={"files": {k: folder / p.name for k, p in result.files.items()}})


#: Written by predict over several recordings: one row per recording, its status and output or error.
RUN_LOG = "recordings.tsv"


class PredictionFailures(DataError):
    """Some recordings of a predict run failed; the others were predicted and written.

    ``results`` are the :class:`PredictionResult` of the recordings that worked, ``failures``
    one ``{recording, error}`` row per recording that did not, ``log`` the TSV listing every
    recording (``<out>/recordings.tsv``).
    """

    def __init__(self, results: list[PredictionResult], failures: list[dict[str, Any]], log: Path) -> None:
        first = failures[0]
        more = f" (and {len(failures) - 1} more)" if len(failures) > 1 else ""
        super().__init__(f"{len(failures)} of {len(results) + len(failures)} recordings could not be predicted: "
                         f"{first['error']}{more}; the other {len(results)} were written, and {log} lists every "
                         "recording with its error")
        self.results, self.failures, self.log = results, failures, log


def write_prediction(folder: Path, recording: Path, proba: np.ndarray, night: RecordingWindows, *,
                     adapter: AdapterFacts, contacts: ChannelMasks | None = None, band_short: str | None = None,
                     scorer: ScorerLabels | None = None, output: OutputOptions = OutputOptions(),
                     distribution: DistributionVerdict | None = None, in_sample: bool = False) -> PredictionResult:
    """Return the result after writing every report of one recording into ``folder``.

    ``proba`` (N, n_classes) are class probabilities of the windows of ``night`` (the recording
    as read: ``onset_s`` (N,) in seconds, ``flags`` (N, C), ``quality`` its ChannelQuality,
    written as ``<stem>_channel_quality.tsv``, ``config`` the preprocessing it got, ``start``);
    ``adapter`` what the reports say about the adapter (classes, window, task, base, classes it
    never learned, named in the summary's ``classes_not_learned``: it cannot output them, so
    e.g. a REM latency is n/a for that reason); ``contacts`` the contact policy applied and the
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
    stem = _stem(recording)
    mostly_bad = mostly_bad_windows(night.quality, night.onset_s, window_seconds)
    flagged = signal_flagged_windows(night.flags) | mostly_bad | (band_short is not None)
    if contacts is not None and contacts.dead is not None:  # half or more channels dead: a neighbour cannot stand in
        flagged |= np.asarray(contacts.dead.windows, dtype=bool).mean(axis=1) >= BAD_SHARE
    staged = _stages_night(adapter)
    unsure = low_confidence(proba, _confidence_share(staged))
    files: dict[str, Path] = {"predictions": reports.write_window_csv(
        folder / f"{stem}_predictions.csv",
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
    if adapter.zero_shot is not None:
        summary["zero_shot"] = dict(adapter.zero_shot)
    summary["in_sample"] = in_sample
    if scorer is not None:
        from passport_kit.inference.agreement import agreement

        summary["scorer_agreement"] = {"labels": str(scorer.file), **agreement(scorer.labels, proba.argmax(1), classes),
                                       "in_sample": in_sample}
        if _stages_night(adapter):  # the validation report's numbers of this night (issue 44)
            from passport_kit.validation import scored_night

            summary["validation"] = scored_night(recording.name, night.onset_s, scorer.labels, proba.argmax(1),
                                                 classes, window_seconds)
    summary["preprocessing"] = night.config.model_dump(mode="json")
    if night.quality is not None:
        masked = None if contacts is None or contacts.masked is None else np.asarray(contacts.masked).sum(axis=0)
        files["channel_quality"] = reports.write_channel_quality(folder / f"{stem}_channel_quality.tsv",
                                                                 night.quality, masked_windows=masked)
        summary["channel_quality"] = channel_quality_summary(night.quality, contacts)
    # Before the plot: its note marks statistics of a short recording as the terminal does.
    summary |= _night_length_note(len(night.onset_s) * window_seconds / 3600.0, withheld, staged)
    if staged:
        events = _sleep_reports(folder, stem, recording, proba, night, adapter, summary, files, scorer=scorer,
                                withheld=withheld, plot_format=output.plot_format)
    else:
        events = _class_reports(proba, night, adapter, summary, unsure=unsure, withheld=withheld)
    summary["statistics_withheld"] = withheld
    files["events"] = reports.write_events_tsv(folder / f"{stem}_events.tsv", events)
    if output.edf_annotations:
        files["edf_annotations"] = reports.write_edf_annotations(folder / f"{stem}_annotations.edf", events,
                                                                 start=night.start)
    files["summary"] = reports.write_json(folder / f"{stem}_summary.json", summary)
    return PredictionResult(recording=recording, files=files, classes=classes, n_windows=int(len(proba)),
                            summary=summary, proba=np.asarray(proba), onset_s=np.asarray(night.onset_s))


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


def _stages_night(adapter: AdapterFacts) -> bool:
    """Return whether the adapter stages sleep (a hypnogram and sleep statistics), not classifies recordings."""
    classes = adapter.classes
    sleep = adapter.task == "sleep-staging" or (adapter.task != "classification" and is_sleep_staging(classes))
    return sleep and is_sleep_staging(classes)


def _sleep_reports(folder: Path, stem: str, recording: Path, proba: np.ndarray, night: RecordingWindows,
                   adapter: AdapterFacts, summary: dict[str, Any], files: dict[str, Path], *,
                   scorer: ScorerLabels | None, withheld: str | None, plot_format: str) -> list[dict[str, Any]]:
    """Write the hypnogram (JSON and plot) of a staged night into ``folder`` as ``<stem>_hypnogram.*``; add its sleep
    statistics and caveat to ``summary`` and its files to ``files``; return the night's events."""
    classes, window_seconds, onsets_s, start = adapter.classes, adapter.window_seconds, night.onset_s, night.start
    hyp = _hypnogram(proba.argmax(1), proba, onsets_s, classes, window_seconds, start)
    events = [e | {"low_confidence": int(u)} for e, u in zip(hyp.as_events(), hyp.low_confidence())]
    summary["sleep_statistics"] = None if withheld else hyp.sleep_statistics()
    summary["caveat"] = ("Automatic staging is a draft for a trained scorer to review; N1 is the least "
                         "reliable stage, and statistics inherit every staging error.")
    files["hypnogram"] = reports.write_text(folder / f"{stem}_hypnogram.json", hyp.to_json())
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


def in_training_data(path: Path, training_data: dict[str, str]) -> bool:
    """Return whether recording ``path`` is one the adapter was trained on: every file it is read from has a content
    hash among ``training_data`` (the bundle's ``{file: SHA-256}``), wherever it lies now."""
    from passport_kit.signals.cache import file_sha256
    from passport_kit.signals.readers import content_files

    trained = set(training_data.values())
    return bool(trained) and all(file_sha256(f) in trained for f in content_files(path))


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


#: Summary statistics are withheld when more than this share of the windows is flagged or low confidence.
WITHHOLD_ABOVE = 0.5


#: A window is flagged when at least this share of its channels score bad (or carry a NaN, flat or
#: clipping flag): pure noise scored every channel 0 and was staged W with confidence 0.9997
#: (issue 28); half the channels noise was staged Wake at 0.991 while one flat channel of 12
#: flagged every window (issue 35).
BAD_SHARE = 0.5
#: Sleep statistics of a recording shorter than this (hours) are marked not meaningful.
MIN_NIGHT_HOURS = 2.0


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
#: A recording is not staged when the band its rate carries is below this share of the adapter's
#: (a 10 Hz copy of a night was staged TST 30 min, SE 100 %; issue 28). 100 Hz recordings, whose
#: band is lowered from 75 to about 45 Hz, are staged.
MIN_BAND_SHARE = 0.5


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
        "windows": contacts.dead.counts(list(quality.ch_names)), "band_power_from_neighbour": contacts.imputed}
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
