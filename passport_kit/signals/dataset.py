"""From recordings to model-ready windows: :class:`WindowSet`, :func:`load_recording`, :func:`load_dataset`.

The pipeline per recording (DESIGN.md §1): read (MNE) → map channels onto the montage →
preprocess (200 Hz, band-pass, notch, µV/100) → windows ``(N, C, P, 200)`` + flags → cache.
Labels are read separately (they are small) and turned into class indices per window.

Example::

    >>> from passport_kit.signals import load_dataset
    >>> ws = load_dataset("my_dataset/", "eesm19-ear")        # doctest: +SKIP
    >>> ws.x.shape, ws.class_counts()                          # doctest: +SKIP
    ((1920, 12, 30, 200), {'W': 310, 'N1': 120, 'N2': 900, 'N3': 300, 'REM': 290})
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import mne
import numpy as np

from passport_kit.errors import ConfigError, DataError, LabelError
from passport_kit.signals.cache import entry_key, file_sha256, read_entry, write_entry, write_entry_chunks
from passport_kit.signals.dataset_spec import DATASET_FILE, DatasetSpec, RecordingSpec, load_dataset_spec
from passport_kit.signals.labels import (LabelMap, encode_labels, label_lines_bound, labels_from_intervals, read_events_tsv,
                                        read_label_file)
from passport_kit.signals.preprocess import PreprocessConfig
from passport_kit.signals.quality import ChannelQuality
from passport_kit.signals.readers import content_files, read_recording, recording_suffix
from passport_kit.signals.recording import RecordingWindows, read_quality, read_windows
from passport_kit.signals.stager_input import StagerSignal, read_stager_signal
from passport_kit.signals.windows import describe_flags

if TYPE_CHECKING:  # pragma: no cover
    from passport_kit.montage import Montage

log = logging.getLogger(__name__)

#: Version of the read → map → preprocess → window pipeline; part of every cache key.
PIPELINE_VERSION = 2


@dataclass
class WindowSet:
    """Return-value object: windows, labels and where each window came from.

    Shapes: ``x`` ``(N, C, P, 200)`` float32 (often a read-only memmap), ``y`` ``(N,)`` int64
    (``-1`` = unlabeled), ``subject``/``recording`` ``(N,)`` str, ``onset_s`` ``(N,)`` float64
    (window start, seconds from the start of its recording), ``flags`` ``(N, C)`` uint8
    (bits: 1 NaN, 2 flat, 4 clipped, 8 over the amplitude limit; see
    :mod:`passport_kit.signals.windows`). ``raw_quality``: ``{recording: ChannelQuality}`` of
    the mapped raw recordings, scored in the same read as the windows (``raw_quality=True`` of
    :func:`load_dataset` / :func:`load_recording`; None when not asked for). ``stager_sources``:
    ``{recording: source}``, ``source(rate)`` returning what a sleep stager reads of that
    recording at ``rate`` Hz (:class:`~passport_kit.signals.stager_input.StagerSignal`: its file
    read again through the same reader and mapping, µV, no filter of ours); None for windows
    made elsewhere (the stagers then read the windows).
    """

    x: np.ndarray
    y: np.ndarray
    subject: np.ndarray
    recording: np.ndarray
    onset_s: np.ndarray
    flags: np.ndarray
    classes: list[str]
    montage: Montage
    config: PreprocessConfig
    info: dict[str, Any] = field(default_factory=dict)
    raw_quality: dict[str, ChannelQuality] | None = None
    stager_sources: dict[str, Callable[[float], StagerSignal]] | None = None

    def __len__(self) -> int:
        """Return N, the number of windows."""
        return int(self.x.shape[0])

    def __repr__(self) -> str:
        counts = ", ".join(f"{k} {v}" for k, v in self.class_counts().items())
        return (
            f"<WindowSet | {len(self)} windows × {self.x.shape[1]} ch × {self.x.shape[2]} s, "
            f"{len(set(self.subject.tolist()))} subjects, {len(set(self.recording.tolist()))} recordings"
            f"{', ' + counts if counts else ''}>"
        )

    def class_counts(self) -> dict[str, int]:
        """Return the number of windows per class (unlabeled windows are not counted)."""
        counts = np.bincount(self.y[self.y >= 0], minlength=len(self.classes))
        return {c: int(n) for c, n in zip(self.classes, counts)}

    def flag_summary(self) -> dict[str, int]:
        """Return how many window × channel cells carry each quality flag."""
        return describe_flags(self.flags)


# --------------------------------------------------------------------------- one recording

@dataclass
class _Windows:
    """Preprocessed windows of one recording, as cached: arrays and what labels may need."""

    key: str
    x: np.ndarray
    flags: np.ndarray
    annotations: list[tuple[float, float, str]]
    quality: ChannelQuality | None = None
    #: The recording as this read opened it, where its samples stay on disk (a sleep stager reads them from it
    #: later without opening the file again); None when it was not opened, or is held in memory.
    opened: Any = None


def _montage_identity(montage: Montage) -> dict[str, Any]:
    """Return what of a montage decides the mapping: hash plus names, aliases and bipolarity."""
    return {
        "hash": montage.content_hash,
        "channels": [[ch.name, list(ch.aliases), ch.reference_position is not None, ch.kind] for ch in montage.channels],
    }


@dataclass(frozen=True)
class _FileReading:
    """How one recording file is read: its rate where the format has none (``sfreq``, DREAMS text and CSV files
    without timestamps), through MNE-BIDS (``bids``), and a correction of its header's unit (``units``, ``scale``:
    dataset.yaml's, :func:`~passport_kit.signals.readers.read_recording`)."""

    sfreq: float | None = None
    bids: bool = False
    units: str | None = None
    scale: float | None = None

    @classmethod
    def of(cls, rec: RecordingSpec, spec: DatasetSpec) -> _FileReading:
        """Return how dataset ``spec`` reads its recording ``rec``."""
        return cls(sfreq=rec.sfreq, bids=spec.origin == "bids", units=rec.units, scale=rec.scale)

    def read(self, path: Path) -> mne.io.BaseRaw:
        """Return the recording at ``path`` (data not loaded where the format allows)."""
        if self.bids:
            from passport_kit.signals.bids import read_bids_recording

            return read_bids_recording(path)
        return read_recording(path, sfreq=self.sfreq, units=self.units, scale=self.scale)


@dataclass(frozen=True)
class _StagerRead:
    """A recording read again for a sleep stager (a WindowSet's ``stager_sources``): its samples through the reader
    and renames its windows were read with, from the recording as that read opened it (``raw``: a lazy reader's
    header, so the file is opened once; or the recording held in memory), else from the file opened anew."""

    montage: Montage
    renames: dict[str, str] | None
    source: str
    path: Path | None = None
    reading: _FileReading = _FileReading()
    raw: Any = None

    def __call__(self, rate: float) -> StagerSignal:
        """Return what a stager reads of the recording at ``rate`` Hz."""
        raw = self.raw if self.raw is not None else self.reading.read(self.path)
        return read_stager_signal(raw, self.montage, rate, renames=self.renames, source=self.source)


def _recording_key(
    path: Path, montage: Montage, config: PreprocessConfig, renames: dict[str, str] | None, reading: _FileReading,
) -> str:
    """Return the cache key of one recording's windows (content hash, config, montage, options)."""
    sfreq, bids, units, scale = reading.sfreq, reading.bids, reading.units, reading.scale
    files = content_files(path)
    if bids:  # read_raw_bids applies the channels sidecar (names, types), so it shapes the data too
        sidecar = path.with_name(path.name[: path.name.rfind("_")] + "_channels.tsv")
        files += [sidecar] if sidecar.is_file() else []
    return entry_key({
        "pipeline": PIPELINE_VERSION,
        "files": [file_sha256(p) for p in files],
        "config": config.model_dump(mode="json", exclude={"h_freq_note"}),  # the note changes no sample
        "montage": _montage_identity(montage),
        "renames": sorted((renames or {}).items()),
        "sfreq": sfreq,
        "reader": "mne-bids" if bids else "mne",
        # Only when set, so that the keys of recordings read as their headers say stay as they were.
        **({"units": units, "scale": scale} if units is not None or scale is not None else {}),
    })


def _compute_windows(
    path: Path, montage: Montage, config: PreprocessConfig, *, renames: dict[str, str] | None, reading: _FileReading,
    raw: mne.io.BaseRaw | None = None, raw_quality: bool = False,
) -> RecordingWindows:
    """Return the windows of the file at ``path`` (:func:`~passport_kit.signals.recording.read_windows`).

    ``raw``: the recording already opened (its header read for the dataset's rates), so the
    file is opened once; ``raw_quality``: also score the mapped raw samples, as ``predict`` does.
    """
    log.info("reading %s (not in the window cache)", path)
    raw = raw if raw is not None else reading.read(path)
    return read_windows(raw, montage, config, renames=renames, quality=raw_quality, source=f"recording '{path}'",
                        name=str(path))


class RecordingReader:
    """Opens each recording of a dataset once: the header read for its rate and the data pass share one Raw.

    :meth:`rate` opens a recording (its header, no samples), remembers its rate and keeps it
    open; :func:`load_dataset` takes it from here (:meth:`take`) instead of opening the file
    again. Give one reader to :func:`lowest_sampling_rate` (the band of
    :func:`~passport_kit.signals.recording.fit_preprocessing`) and :func:`load_dataset` to open
    every recording once.
    """

    def __init__(self, spec: DatasetSpec) -> None:
        self.spec = spec
        self._opened: dict[str, mne.io.BaseRaw] = {}
        self._rates: dict[str, float] = {}

    def rate(self, rec: RecordingSpec) -> float:
        """Return the sampling rate (Hz) of ``rec``: dataset.yaml's ``sfreq:``, else its header's (kept open)."""
        if rec.sfreq is not None:
            return float(rec.sfreq)
        if rec.file not in self._rates:  # a recording already taken for its samples is not opened again
            self._open(rec)
        return self._rates[rec.file]

    def _open(self, rec: RecordingSpec) -> mne.io.BaseRaw:
        """Return ``rec`` opened (its header and annotations, no samples), kept open for :meth:`take`."""
        if rec.file not in self._opened:
            raw = _FileReading.of(rec, self.spec).read(self.spec.path_of(rec.file))
            self._opened[rec.file] = raw
            self._rates[rec.file] = float(raw.info["sfreq"])
        return self._opened[rec.file]

    def annotations(self, rec: RecordingSpec) -> list[str]:
        """Return the descriptions of ``rec``'s own annotations (EDF+ stage names, events), read with its header
        (kept open)."""
        return [str(d) for d in self._open(rec).annotations.description]

    def header(self, rec: RecordingSpec, montage: Montage) -> dict[str, Any]:
        """Return what ``rec``'s header says of how it was recorded: rate, prefilters and units (kept open).

        ``{"sfreq": Hz, "highpass": Hz, "lowpass": Hz, "units": "µV"}``: MNE's reading of the
        header (a format without filter settings reports 0 Hz and the Nyquist frequency); units
        are the header's own spelling for the channels the montage reads (``"µV, mV"`` when
        they differ; empty for formats MNE does not report them for).
        """
        from passport_kit.signals.channels import channel_sources

        raw = self._open(rec)
        orig = getattr(raw, "_orig_units", None) or {}
        try:
            used = {n for pair in channel_sources(list(raw.ch_names), montage, rec.channels or None,
                                                  source=f"recording '{rec.file}'") for n in pair if n is not None}
        except DataError:  # the mapping is checked, and reported, elsewhere
            used = set(raw.ch_names)
        units = sorted({str(orig[n]) for n in used if n in orig})
        return {"sfreq": float(raw.info["sfreq"]), "highpass": float(raw.info["highpass"]),
                "lowpass": float(raw.info["lowpass"]), "units": ", ".join(units) if rec.units is None else rec.units}

    def take(self, rec: RecordingSpec) -> mne.io.BaseRaw | None:
        """Return the opened recording ``rec`` and forget it (None: not open)."""
        return self._opened.pop(rec.file, None)


def lowest_sampling_rate(spec: DatasetSpec, reader: RecordingReader | None = None) -> tuple[float, list[str]]:
    """Return ``(sfreq in Hz, files)``: the dataset's lowest sampling rate and every recording sampled at it.

    Reads headers only (a text recording's rate is its ``sfreq:`` in dataset.yaml); the
    dataset's band-pass must fit under this rate's Nyquist frequency
    (:func:`~passport_kit.signals.preprocess.fit_band_to_rate`). ``reader`` keeps the opened
    recordings for :func:`load_dataset`.
    """
    reader = reader or RecordingReader(spec)
    rates = [(reader.rate(rec), rec.file) for rec in spec.recordings]
    lowest = min(rate for rate, _ in rates)
    return lowest, [file for rate, file in rates if rate == lowest]


def _recording_windows(
    path: Path, montage: Montage, config: PreprocessConfig, *, renames: dict[str, str] | None = None,
    reading: _FileReading = _FileReading(), cache: bool = True, raw: mne.io.BaseRaw | None = None,
    raw_quality: bool = False,
) -> _Windows:
    """Return one recording's windows, from the cache when an entry exists.

    From the cache the file is not read, unless ``raw_quality`` asks for the raw recording's
    quality, which is then its one read. ``raw``: the recording already opened.
    """
    path = Path(path)
    if not path.is_file():
        raise DataError(f"recording '{path}' does not exist; check the path")
    key = _recording_key(path, montage, config, renames, reading)
    if cache:
        entry = read_entry(key)
        if entry is not None:
            log.info("windows of %s from the cache (%s)", path, key[:12])
            quality = None
            if raw_quality:
                raw = raw if raw is not None else reading.read(path)
                quality = read_quality(raw, montage, config, renames=renames, source=f"recording '{path}'",
                                       name=str(path))
            return _Windows(key, entry.arrays["x"], entry.arrays["flags"],
                            [tuple(a) for a in entry.meta["annotations"]], quality, _on_disk(raw))
    raw = raw if raw is not None else reading.read(path)
    read = _compute_windows(path, montage, config, renames=renames, reading=reading, raw=raw, raw_quality=raw_quality)
    x, flags, annotations, quality = read.x, read.flags, read.annotations, read.quality
    if not cache:
        return _Windows(key, x, flags, annotations, quality, _on_disk(raw))
    entry = write_entry(key, {"x": x, "flags": flags}, {
        "file": str(path), "annotations": [list(a) for a in annotations],
        "config": config.model_dump(mode="json"), "montage": montage.name,
    })
    return _Windows(key, entry.arrays["x"], entry.arrays["flags"], annotations, quality, _on_disk(raw))


def _on_disk(raw: mne.io.BaseRaw | None) -> mne.io.BaseRaw | None:
    """Return ``raw`` where its samples stay on disk (MNE's lazy readers: a header in memory), else None."""
    return raw if raw is not None and not getattr(raw, "preload", True) else None


def _resolve(montage: Montage | str | Path) -> Montage:
    """Return a Montage for a Montage, a registry name or a YAML path."""
    if isinstance(montage, (str, Path)):
        from passport_kit.montage import resolve_montage

        return resolve_montage(montage)
    return montage


def load_recording(
    path: str | Path | mne.io.BaseRaw | tuple, montage: Montage | str, config: PreprocessConfig | None = None, *,
    renames: dict[str, str] | None = None, sfreq: float | None = None, cache: bool = True,
    raw_quality: bool = False, units: str | None = None, scale: float | None = None,
) -> WindowSet:
    """Return the windows of one recording, unlabeled (``y`` all -1), e.g. for predict.

    ``path`` is a recording file, or a recording in memory: an ``mne.io.Raw`` or a tuple
    ``(array (C, T), sfreq, ch_names)`` (:func:`~passport_kit.signals.readers.raw_from_memory`;
    ``units`` defaults to volts there; never cached). ``sfreq`` is needed only for DREAMS text
    files and CSV files without timestamps; ``units``/``scale`` correct a header's unit
    (:func:`~passport_kit.signals.readers.read_recording`); ``renames`` maps montage names to
    the file's names where aliases do not cover them; ``raw_quality``: also score the raw
    recording in the same read (``WindowSet.raw_quality``).
    """
    montage = _resolve(montage)
    config = config or PreprocessConfig()
    if not isinstance(path, (str, Path)):
        return _memory_windows(path, montage, config, renames=renames, sfreq=sfreq, raw_quality=raw_quality,
                               units=units, scale=scale)
    path = Path(path)
    reading = _FileReading(sfreq=sfreq, units=units, scale=scale)
    w = _recording_windows(path, montage, config, renames=renames, reading=reading, cache=cache, raw_quality=raw_quality)
    n = w.x.shape[0]
    return WindowSet(
        x=w.x, y=np.full(n, -1, dtype=np.int64), subject=np.full(n, path.stem), recording=np.full(n, str(path)),
        onset_s=np.arange(n, dtype=np.float64) * config.window_seconds, flags=w.flags, classes=[],
        montage=montage, config=config, info={"annotations": w.annotations, "cache_key": w.key},
        raw_quality={str(path): w.quality} if w.quality is not None else None,
        stager_sources={str(path): _StagerRead(montage, renames, f"recording '{path}'", path, reading, w.opened)},
    )


def _memory_windows(recording: Any, montage: Montage, config: PreprocessConfig, *, renames: dict[str, str] | None,
                    sfreq: float | None, raw_quality: bool, units: str | None, scale: float | None) -> WindowSet:
    """Return the unlabeled windows of a recording held in memory (no file: nothing to hash, nothing cached)."""
    from passport_kit.signals.readers import raw_from_memory

    raw = raw_from_memory(recording, units=units, scale=scale, sfreq=sfreq)
    name = Path(raw.filenames[0]).name if raw.filenames and raw.filenames[0] else "memory"
    read = read_windows(raw, montage, config, renames=renames, quality=raw_quality, source=f"recording '{name}'",
                        name=name)
    x, flags, quality = read.x, read.flags, read.quality
    n = x.shape[0]
    return WindowSet(
        x=x, y=np.full(n, -1, dtype=np.int64), subject=np.full(n, Path(name).stem), recording=np.full(n, name),
        onset_s=np.arange(n, dtype=np.float64) * config.window_seconds, flags=flags, classes=[], montage=montage,
        config=config, info={"annotations": read.annotations, "cache_key": None},
        raw_quality={name: quality} if quality is not None else None,
        stager_sources={name: _StagerRead(montage, renames, f"recording '{name}'", raw=raw)},
    )


# ------------------------------------------------------------------------------ datasets

@dataclass
class _RawLabels:
    """Labels of one recording before encoding: one value, values per line, or per-window values."""

    kind: str                       # 'label' | 'values' | 'windows' | 'none'
    values: list[str | None]
    source: str


def _read_raw_labels(
    rec: RecordingSpec, spec: DatasetSpec, windows: _Windows, window_seconds: float, label_map: LabelMap | None
) -> _RawLabels:
    """Return the raw labels of ``rec`` (no class mapping yet)."""
    n = windows.x.shape[0]
    if rec.label is not None:
        return _RawLabels("label", [rec.label], f"recording '{rec.file}'")
    if rec.labels is not None:
        path = spec.path_of(rec.labels)
        source = f"labels '{path}'"
        intervals = _label_intervals(path, spec)
        if intervals is None:  # a file far longer than the recording is refused before it is parsed (issue 57)
            bound = label_lines_bound(n, window_seconds, label_map.label_seconds if label_map is not None else None)
            return _RawLabels("values", list(read_label_file(path, column=spec.label_column, max_lines=bound)), source)
        return _RawLabels("windows", _intervals_to_windows(intervals, n, window_seconds, label_map, source), source)
    if rec.annotation_labels:
        onsets = np.asarray([a[0] for a in windows.annotations], dtype=np.float64)
        durations = np.asarray([a[1] for a in windows.annotations], dtype=np.float64)
        values = [a[2] for a in windows.annotations]
        known = _stage_annotations(values, label_map)
        keep = np.asarray(known, dtype=bool)
        per_window = labels_from_intervals(onsets[keep], durations[keep], [v for v, k in zip(values, known) if k], n, window_seconds)
        return _RawLabels("windows", per_window, f"annotations of '{rec.file}'")
    return _RawLabels("none", [], f"recording '{rec.file}'")


def _stage_annotations(values: list[str], label_map: LabelMap | None) -> list[bool]:
    """Return, per annotation description, whether it is a label: one the label map knows (any, without a map)."""
    # Annotations also hold events (lights off, arousals): only stage names are labels.
    return [label_map is None or label_map.lookup(v)[0] for v in values]


#: How a dataset.yaml gives a recording its labels (the words of every "no labels" error).
_LABEL_KEYS = ("'label: <class>' (one class for the whole recording, e.g. rest or task) or 'labels: <file>' (one "
               "value per window, e.g. a hypnogram)")


def missing_labels(spec: DatasetSpec, reader: RecordingReader) -> str | None:
    """Return the line that says no recording of ``spec`` has labels and how to give them; None when one has.

    Cheap: it reads the spec and, for recordings labelled by their own annotations (a discovered
    EDF+ file), the annotations ``reader`` reads with the header (kept open for
    :func:`load_dataset`); no sample is decoded. So ``adapt`` and ``evaluate`` refuse a folder
    without labels before they read and check every recording (issue 49).
    """
    label_map = spec.resolved_label_map()
    for rec in spec.recordings:
        if rec.label is not None or rec.labels is not None:
            return None
        if rec.annotation_labels and any(_stage_annotations(reader.annotations(rec), label_map)):
            return None
    n = len(spec.recordings)
    whose = "its one recording" if n == 1 else f"any of its {n} recordings"
    if spec.origin == "yaml":
        return (f"no labels: the dataset.yaml in '{spec.root}' gives none for {whose}; add {_LABEL_KEYS} under each "
                "recording (docs/data.md § Describing a dataset)")
    if spec.origin == "bids":
        return (f"no labels: the BIDS dataset '{spec.root}' has no *_events.tsv for {whose}; add them (column "
                "trial_type, or label_column in a dataset.yaml in its root; docs/data.md § Without dataset.yaml)")
    first = spec.recordings[0].file
    example = first[: -len(recording_suffix(Path(first)))] + "_hypnogram.csv"
    return (f"no labels: '{spec.root}' has no dataset.yaml and no labels for {whose} (no labels file named after "
            f"one, e.g. {example}, and no sleep-stage annotations in them); write {spec.root / DATASET_FILE} listing "
            f"each recording (subject, file) with {_LABEL_KEYS}, or put a labels file (one stage per 30-s epoch) "
            "next to each night (docs/data.md § Describing a dataset)")


def _label_intervals(path: Path, spec: DatasetSpec) -> tuple[np.ndarray, np.ndarray, list[str]] | None:
    """Return annotated intervals for EDF+ hypnograms and events tables, None for plain label lists."""
    suffix = path.suffix.lower()
    if suffix == ".edf":
        try:
            ann = mne.read_annotations(path)
        except Exception as exc:  # noqa: BLE001 - any reader failure is a bad file
            raise LabelError(f"cannot read annotations from '{path}' ({' '.join(str(exc).split())[:120]}); is it an EDF+ hypnogram?") from None
        return np.asarray(ann.onset, dtype=np.float64), np.asarray(ann.duration, dtype=np.float64), [str(d) for d in ann.description]
    if suffix == ".tsv":
        with path.open(encoding="utf-8-sig") as f:
            header = f.readline().rstrip("\n").split("\t")
        if "onset" in header:
            return read_events_tsv(path, column=spec.label_column or "trial_type")
    return None


def _intervals_to_windows(
    intervals: tuple[np.ndarray, np.ndarray, list[str]], n: int, window_seconds: float,
    label_map: LabelMap | None, source: str,
) -> list[str | None]:
    """Return per-window raw values from intervals, ignoring events the label map does not know."""
    onsets, durations, values = intervals
    if label_map is not None:
        known = np.asarray([label_map.lookup(v)[0] for v in values], dtype=bool)
        if values and not known.any():
            shown = ", ".join(repr(v) for v in sorted(set(values))[:12])
            raise LabelError(
                f"{source}: none of the event values {shown} is known to label map '{label_map.name}'; "
                f"set label_map (or label_column) in dataset.yaml"
            )
        onsets, durations = onsets[known], durations[known]
        values = [v for v, k in zip(values, known) if k]
    return labels_from_intervals(onsets, durations, values, n, window_seconds)


def _encode(raw: _RawLabels, n: int, label_map: LabelMap, classes: list[str], window_seconds: float, on_unknown: str | None) -> np.ndarray:
    """Return ``(N,)`` int64 class indices for one recording."""
    if raw.kind == "none":
        return np.full(n, -1, dtype=np.int64)
    if raw.kind == "label":
        if raw.values[0] in classes:  # a class name given directly needs no map entry
            return np.full(n, classes.index(raw.values[0]), dtype=np.int64)
        return np.repeat(encode_labels(raw.values, label_map.model_copy(update={"label_seconds": None}), classes,
                                       n_windows=1, window_seconds=window_seconds, on_unknown="raise",
                                       source=raw.source), n)
    if raw.kind == "windows":
        per_window = label_map.model_copy(update={"label_seconds": None})
        return encode_labels(raw.values, per_window, classes, n_windows=n, window_seconds=window_seconds,
                             on_unknown="drop", source=raw.source)
    return encode_labels(raw.values, label_map, classes, n_windows=n, window_seconds=window_seconds,
                         on_unknown=on_unknown, source=raw.source)  # type: ignore[arg-type]


def _config_for(spec: DatasetSpec, config: PreprocessConfig | None) -> PreprocessConfig:
    """Return the preprocessing config, checking it agrees with the dataset's window length."""
    if config is None:
        return PreprocessConfig(window_seconds=spec.window_seconds) if spec.window_seconds else PreprocessConfig()
    if spec.window_seconds is not None and spec.window_seconds != config.window_seconds:
        raise ConfigError(
            f"dataset.yaml says window_seconds {spec.window_seconds:g} but the preprocessing config uses "
            f"{config.window_seconds:g}; make them agree (labels are per window)"
        )
    return config


def load_dataset(
    path: str | Path | DatasetSpec, montage: Montage | str, config: PreprocessConfig | None = None, *,
    cache: bool = True, label_column: str | None = None,
    progress: Callable[[int, int, str], None] | None = None,
    raw_quality: bool = False, reader: RecordingReader | None = None,
) -> WindowSet:
    """Return every window of a dataset (``dataset.yaml``, BIDS, or a plain folder), labeled.

    ``path`` is the dataset folder or its parsed :class:`DatasetSpec`. ``config`` defaults to
    the CBraMod contract with the dataset's ``window_seconds``; ``label_column`` overrides the
    column read from ``*_events.tsv`` / label tables. With ``cache`` a second call over
    unchanged files reads only the cache (memory-mapped). ``progress(done, total, file)`` is
    called after each recording. ``raw_quality``: also score every raw recording in the same
    read (``WindowSet.raw_quality``); ``reader``: the :class:`RecordingReader` that already
    opened recordings for their rates (they are not opened again).
    """
    montage = _resolve(montage)
    spec = path if isinstance(path, DatasetSpec) else load_dataset_spec(path)
    reader = reader or RecordingReader(spec)
    if label_column is not None:
        spec = spec.model_copy(update={"label_column": label_column})
    config = _config_for(spec, config)
    window_seconds = config.window_seconds
    label_map = spec.resolved_label_map()

    parts: list[tuple[RecordingSpec, _Windows, _RawLabels]] = []
    for rec in spec.recordings:
        windows = _recording_windows(spec.path_of(rec.file), montage, config, renames=rec.channels or None,
                                     reading=_FileReading.of(rec, spec), cache=cache, raw=reader.take(rec),
                                     raw_quality=raw_quality)
        parts.append((rec, windows, _read_raw_labels(rec, spec, windows, window_seconds, label_map)))
        if progress is not None:
            progress(len(parts), len(spec.recordings), rec.file)

    classes = spec.default_classes()
    if classes is None:  # classification without classes or map: the values found are the classes
        classes = sorted({v for _, _, raw in parts for v in raw.values if v is not None})
    full_map = spec.label_map_for(classes)
    ys = [_encode(raw, w.x.shape[0], full_map, classes, window_seconds, spec.on_unknown_label) for _, w, raw in parts]
    if spec.origin == "discovered" and all((y < 0).all() for y in ys):
        classes = []  # nothing was scored: say so rather than pretend to five sleep stages

    x = _concatenate([w for _, w, _ in parts], cache=cache)
    return WindowSet(
        x=x,
        y=np.concatenate(ys),
        subject=np.concatenate([np.full(w.x.shape[0], rec.subject) for rec, w, _ in parts]),
        recording=np.concatenate([np.full(w.x.shape[0], rec.file) for rec, w, _ in parts]),
        onset_s=np.concatenate([np.arange(w.x.shape[0], dtype=np.float64) * window_seconds for _, w, _ in parts]),
        flags=np.concatenate([np.asarray(w.flags) for _, w, _ in parts]),
        classes=list(classes),
        montage=montage,
        config=config,
        info={"task": spec.task, "origin": spec.origin, "root": str(spec.root) if spec.root else None,
              "cache_keys": [w.key for _, w, _ in parts]},
        raw_quality={rec.file: w.quality for rec, w, _ in parts if w.quality is not None} if raw_quality else None,
        stager_sources={rec.file: _StagerRead(montage, rec.channels or None, f"recording '{rec.file}'",
                                              spec.path_of(rec.file), _FileReading.of(rec, spec), w.opened)
                        for rec, w, _ in parts},
    )


def _concatenate(windows: list[_Windows], *, cache: bool) -> np.ndarray:
    """Return all windows as one ``(N, C, P, 200)`` array; a memmap entry of its own when cached.

    The combined entry is streamed from the per-recording memmaps, so a dataset larger than
    memory never has to be held in RAM at once.
    """
    if len(windows) == 1:
        return windows[0].x
    if not cache:
        return np.concatenate([w.x for w in windows])
    key = entry_key({"combined": [w.key for w in windows]})
    entry = read_entry(key, kind="combined")
    if entry is None:
        first = windows[0].x
        shape = (sum(w.x.shape[0] for w in windows), *first.shape[1:])
        entry = write_entry_chunks(key, {"x": ((w.x for w in windows), shape, first.dtype)},
                                   {"parts": [w.key for w in windows]}, kind="combined")
    return entry.arrays["x"]
