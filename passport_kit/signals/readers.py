"""Reading one recording into an :class:`mne.io.BaseRaw`, whatever its format.

Formats, by file suffix (through MNE): EDF/EDF+ (``.edf``), BDF (``.bdf``), FIF (``.fif``,
``.fif.gz``), EEGLAB (``.set`` with or without ``.fdt``), BrainVision (``.vhdr``, ``.ahdr``),
GDF (``.gdf``), Nihon Kohden (``.eeg`` with its ``.21e``/``.pnt``/``.log``; a ``.eeg`` next to a
BrainVision header is that header's data), Persyst (``.lay`` + ``.dat``), eXimia (``.nxe``),
Neuroscan (``.cnt``), Curry (``.cdt``), Neuroelectrics (``.nedf``), the DREAMS text format (``.txt``: a ``[C3-A1]`` header line, then one µV sample per line; the file
does not hold its sampling rate, so ``sfreq`` must be given, e.g. as ``sfreq:`` of the recording
in ``dataset.yaml``), and CSV (``.csv``: a header row, a timestamp column in seconds and named
channel columns, as Muse/eeg-notebooks, OpenBCI and LSL recorders write them; the rate is the
timestamps' average, or ``sfreq``; see :func:`read_csv_recording`). Recordings in memory (an
``mne.io.Raw``, or ``(array, sfreq, ch_names)``) come in through :func:`raw_from_memory`.

Units: MNE converts to volts by the header's unit. Where a header names a unit MNE does not
know (DREAMS ``excerpt3.edf``: ``UV``, read as volts, 10⁶ too large), ``units="uV"`` says what
the file's numbers are (EDF/BDF: the header is read again to undo MNE's scaling; text and CSV
files: µV unless told); ``scale`` multiplies the samples afterwards (any format).

Every problem with a file raises :class:`~passport_kit.errors.DataError` with one line that
names the file and says how to fix it; MNE's own exceptions never reach the user.
"""

from __future__ import annotations

import csv
import logging
import re
import warnings
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import mne
import numpy as np

from passport_kit.errors import DataError, PassportWarning

log = logging.getLogger(__name__)

#: Suffix → human name of every format :func:`read_recording` reads.
FORMATS: dict[str, str] = {
    ".edf": "EDF",
    ".bdf": "BDF",
    ".fif": "FIF",
    ".fif.gz": "FIF",
    ".set": "EEGLAB",
    ".vhdr": "BrainVision",
    ".ahdr": "BrainVision",
    ".gdf": "GDF",
    ".eeg": "Nihon Kohden",
    ".lay": "Persyst",
    ".nxe": "eXimia",
    ".cnt": "Neuroscan CNT",
    ".cdt": "Curry",
    ".nedf": "NEDF",
    ".txt": "DREAMS text",
    ".csv": "CSV",
}
#: Plain-text formats: read only when named (a recording in dataset.yaml, a file given to predict), never
#: picked up from a folder, where text and CSV files are label tables and notes.
TEXT_FORMATS = (".txt", ".csv")
#: Units a ``units`` override may name → volts per unit (case matters: 'MV' would be megavolts).
UNITS: dict[str, float] = {"V": 1.0, "mV": 1e-3, "uV": 1e-6, "µV": 1e-6, "μV": 1e-6, "nV": 1e-9}
#: Header units MNE's EDF/BDF reader scales (the rest it reads as volts): mne/io/edf/edf.py.
_MNE_EDF_UNITS: dict[str, float] = {"\u03bcV": 1e-6, "\u00b5V": 1e-6, "\x83\xcaV": 1e-6, "uV": 1e-6, "mV": 1e-3}
#: Column names (compared lower case, spaces as '_') that hold a CSV's time stamps, in seconds.
#: A CSV recording larger than this (bytes) is refused before reading (a night of 8 channels at
#: 256 Hz is about 0.5 GB of text); the machine's memory lowers it (:func:`_csv_size_limit`).
MAX_CSV_BYTES = 4 * 1024**3
#: Columns a CSV recording may have (headset tools write tens).
MAX_CSV_COLUMNS = 1024
#: Characters a CSV line may have.
MAX_CSV_LINE = 1024**2
#: A CSV's timestamps may deviate this much (share) from evenly spaced over any second of samples
#: (LSL stamps whole chunks of samples at once: under 5 % at 256 Hz).
CSV_TIMING_TOLERANCE = 0.1
_TIME_COLUMNS = ("timestamps", "timestamp", "time", "time_s", "lsl_timestamp", "unix_timestamp", "t")
#: Files that belong to a recording of the key's format (their bytes are part of its content hash).
_COMPANIONS: dict[str, tuple[str, ...]] = {
    ".eeg": (".21e", ".pnt", ".log"),
    ".lay": (".dat",),
    ".cdt": (".cdt.dpa", ".cdt.cef", ".dpa", ".cef"),
}
_BRAINVISION_HEADERS = (".vhdr", ".ahdr")
#: Formats an EDF viewer opens; for the others the read error suggests MNE itself.
_EDF_FAMILY = (".edf", ".bdf", ".gdf")

_DREAMS_HEADER = re.compile(r"^\s*\[([^\]]+)\]\s*$")


def recording_suffix(path: Path) -> str:
    """Return the format suffix of ``path`` (lower case; ``.fif.gz`` counts as one suffix)."""
    name = path.name.lower()
    if name.endswith(".fif.gz"):
        return ".fif.gz"
    return path.suffix.lower()


def content_files(path: Path) -> list[Path]:
    """Return every file whose bytes make up the recording (header, data and marker files).

    A content hash over these names the recording's data, whatever its file name.
    """
    path = Path(path)
    suffix = recording_suffix(path)
    files = [path]
    if suffix == ".set":
        files += [p for p in (path.with_suffix(".fdt"),) if p.is_file()]
    elif suffix in _BRAINVISION_HEADERS:
        files += _brainvision_companions(path)
    elif suffix in _COMPANIONS:
        stem = path.name[: -len(suffix)].casefold()
        files += sorted(p for p in path.parent.iterdir() if p != path and p.is_file()
                        and any(p.name.casefold() == stem + tail for tail in _COMPANIONS[suffix]))
    return files


def brainvision_header_of(path: Path) -> Path | None:
    """Return the BrainVision header next to ``path`` when ``path`` is that header's ``.eeg`` data file."""
    if recording_suffix(path) != ".eeg":
        return None
    for tail in _BRAINVISION_HEADERS:
        for header in (path.with_suffix(tail), path.with_suffix(tail.upper())):
            if header.is_file():
                return header
    return None


def is_recording_file(path: Path, *, text: bool = False) -> bool:
    """Return True when ``path`` is a recording :func:`read_recording` reads (``text``: DREAMS text and CSV too).

    A BrainVision ``.eeg`` data file is not (its header is), nor is an annotation file that
    ``predict`` wrote next to a recording (``*_annotations.edf``).
    """
    suffix = recording_suffix(path)
    if suffix not in FORMATS or (suffix in TEXT_FORMATS and not text):
        return False
    return brainvision_header_of(path) is None and not path.name.endswith("_annotations.edf")


def _brainvision_companions(vhdr: Path) -> list[Path]:
    """Return the data and marker files a BrainVision header names (that exist)."""
    found: list[Path] = []
    try:
        text = vhdr.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return found
    for key in ("DataFile", "MarkerFile"):
        match = re.search(rf"^{key}=(.+)$", text, flags=re.MULTILINE)
        if match:
            candidate = vhdr.parent / match.group(1).strip()
            if candidate.is_file():
                found.append(candidate)
    return found


def read_recording(path: str | Path, *, sfreq: float | None = None, units: str | None = None,
                   scale: float | None = None) -> mne.io.BaseRaw:
    """Return the recording at ``path`` as an MNE Raw in volts (data not loaded yet where the format allows).

    ``sfreq`` (Hz) is required for DREAMS text files, which do not store it, and for CSV files
    without a timestamp column; for other formats it is optional and, when given, must match
    the file's own rate (a CSV's timestamps within 2 %). ``units`` names the unit of the file's
    numbers where its header is wrong or unknown to MNE (``"uV"``, ``"mV"``, ``"V"``, ``"nV"``;
    EDF/BDF, text and CSV files); ``scale`` multiplies the samples after that (any format).
    Either one loads the samples.

    Example::

        >>> raw = read_recording("s01.edf")          # doctest: +SKIP
        >>> raw = read_recording("excerpt1.txt", sfreq=100)   # doctest: +SKIP
        >>> raw = read_recording("excerpt3.edf", units="uV")  # header says 'UV'   # doctest: +SKIP
    """
    path = Path(path)
    if not path.is_file():
        # A folder, /dev/zero or a FIFO exists but is no recording (issue 28: all were said not to exist).
        state = ("is a folder" if path.is_dir() else "is not a regular file (a device or a pipe)" if path.exists()
                 else "is a symlink that leads nowhere (a loop, or its target is gone)" if path.is_symlink()
                 else "does not exist")
        raise DataError(f"recording '{path}' {state}; check the path (relative paths in dataset.yaml are relative to "
                        "its folder)")
    suffix = recording_suffix(path)
    if suffix not in FORMATS:
        known = ", ".join(sorted(FORMATS))
        raise DataError(f"recording '{path}': unknown format '{suffix}'; supported suffixes are {known}")
    log.info("opening %s (%s)", path, FORMATS[suffix])
    header = brainvision_header_of(path)
    if header is not None:
        raise DataError(f"recording '{path}' is the data file of the BrainVision recording '{header}'; give the "
                        "header file instead")
    if suffix == ".txt":
        if sfreq is None:
            raise DataError(
                f"recording '{path}': a DREAMS text file does not store its sampling rate; give it, "
                f"e.g. 'sfreq: 100' for this recording in dataset.yaml, or --sfreq 100 (predict, data inspect)"
            )
        return _scaled(read_dreams_text(path, sfreq, units=_unit_check(units, path) or "uV"), scale, path)
    if suffix == ".csv":
        return _scaled(read_csv_recording(path, sfreq=sfreq, units=_unit_check(units, path) or "uV"), scale, path)
    if suffix in (".edf", ".bdf"):
        _check_edf_size(path, bytes_per_sample=2 if suffix == ".edf" else 3)
    elif units is not None:
        raise DataError(f"recording '{path}': 'units' applies to EDF, BDF, text and CSV files, whose numbers "
                        f"passport-kit reads itself; MNE reads {FORMATS[suffix]} in volts - give 'scale' (a factor "
                        "for the samples) instead")
    raw = _read_with_mne(path, suffix)
    if sfreq is not None and not np.isclose(raw.info["sfreq"], sfreq):
        raise DataError(
            f"recording '{path}': file says {raw.info['sfreq']:g} Hz but {sfreq:g} Hz was given; "
            f"remove 'sfreq' for this recording (only text and CSV files without timestamps need it)"
        )
    if units is not None:
        raw = _with_units(raw, path, _unit_check(units, path))  # type: ignore[arg-type]
    return _scaled(raw, scale, path)


def canonical_units(units: str) -> str | None:
    """Return the name in :data:`UNITS` that ``units`` spells in any case where that is unambiguous ('uv', 'UV',
    'µv' -> 'uV'; 'nv' -> 'nV'; 'v' -> 'V'); None when it spells none of them, or 'M' (mega, not milli) as in 'MV'."""
    if units in UNITS:
        return units
    if units.strip().startswith("M"):  # megavolts: a typo for mV, which the message suggests, not a guess made here
        return None
    return _FOLDED_UNITS.get(_folded_unit(units))


def unit_advice(units: str) -> str:
    """Return the end of the message for an unknown ``units``: the choices, and the nearest one when one is close."""
    import difflib

    folded = _folded_unit(units)
    near = [_FOLDED_UNITS[folded]] if folded in _FOLDED_UNITS else [
        _FOLDED_UNITS[n] for n in difflib.get_close_matches(folded, list(_FOLDED_UNITS), n=1, cutoff=0.5)]
    did = f"did you mean {near[0]!r}? " if near else ""
    return f"{did}give one of {', '.join(UNITS)} (the unit of the numbers stored in the file)"


#: The units :func:`canonical_units` reads in any case, by their folded spelling.
_FOLDED_UNITS = {"v": "V", "mv": "mV", "uv": "uV", "nv": "nV"}


def _folded_unit(units: str) -> str:
    """Return ``units`` lower case, 'micro' written 'u', 'volt(s)' written 'v'."""
    return units.strip().casefold().replace("µ", "u").replace("μ", "u").replace("volts", "v").replace("volt", "v")


def _unit_check(units: str | None, path: Path | str) -> str | None:
    """Return the :data:`UNITS` name ``units`` spells in any case (None stays None); DataError naming the choices
    (and the nearest) otherwise."""
    if units is None:
        return None
    known = canonical_units(units)
    if known is not None:
        return known
    raise DataError(f"recording '{path}': unknown units {units!r}; {unit_advice(units)}")


def _with_units(raw: mne.io.BaseRaw, path: Path, units: str) -> mne.io.BaseRaw:
    """Return the EDF/BDF ``raw`` rescaled as if its header named ``units`` for every channel.

    MNE scales a channel by its header unit (µV, mV) and reads any other (``UV``, ``n/a``)
    as volts; the header is read again to undo exactly that.
    """
    header = edf_header_units(path)
    factors = np.array([UNITS[units] / _MNE_EDF_UNITS.get(header.get(name, "V"), 1.0) for name in raw.ch_names])
    raw.load_data(verbose="error")
    raw._data *= factors[:, None]  # noqa: SLF001 - in place: a night's samples are not copied
    return raw


def _scaled(raw: mne.io.BaseRaw, scale: float | None, path: Path) -> mne.io.BaseRaw:
    """Return ``raw`` with its samples multiplied by ``scale`` (None: as it is)."""
    if scale is None or scale == 1:
        return raw
    if not np.isfinite(scale) or scale <= 0:
        raise DataError(f"recording '{path}': scale must be a positive number, got {scale!r}")
    raw.load_data(verbose="error")
    raw._data *= float(scale)  # noqa: SLF001 - in place, as above
    return raw


def edf_header_units(path: str | Path) -> dict[str, str]:
    """Return ``{signal label: physical dimension}`` as an EDF/BDF header spells them (``{'C3-A1': 'UV', ...}``)."""
    with Path(path).open("rb") as f:
        head = f.read(256)
        n = int(head[252:256].decode("ascii").strip())
        labels = [f.read(16).decode("latin-1").strip() for _ in range(n)]
        f.read(80 * n)  # transducer types
        units = [f.read(8).decode("latin-1").strip() for _ in range(n)]
    return dict(zip(labels, units))


def raw_from_memory(recording: Any, *, units: str | None = None, scale: float | None = None,
                    sfreq: float | None = None) -> mne.io.BaseRaw:
    """Return a recording held in memory as an MNE Raw in volts.

    ``recording`` is an ``mne.io.BaseRaw`` (used as it is; ``units`` does not apply, MNE
    already holds volts) or a tuple ``(array, sfreq, ch_names)``: ``array`` ``(C, T)`` (or
    ``(T, C)``, recognised by the number of names) in ``units`` (default ``"V"``, MNE's
    unit; ``"uV"`` for most headset software). ``scale`` multiplies the samples afterwards.

    Example::

        >>> raw = raw_from_memory((eeg_uv, 256.0, ["TP9", "AF7", "AF8", "TP10"]), units="uV")  # doctest: +SKIP
    """
    where = "the recording given in memory"
    if isinstance(recording, mne.io.BaseRaw):
        if units is not None:
            raise DataError(f"{where} is an mne.io.Raw, which holds volts; drop 'units' (use 'scale' for a factor)")
        if sfreq is not None and not np.isclose(recording.info["sfreq"], sfreq):
            raise DataError(f"{where} is sampled at {recording.info['sfreq']:g} Hz, not {sfreq:g} Hz; drop 'sfreq'")
        return _scaled(recording.copy() if scale not in (None, 1) else recording, scale, Path("<memory>"))
    if not (isinstance(recording, tuple) and len(recording) == 3):
        raise DataError(f"{where} must be an mne.io.Raw or a tuple (array, sfreq, ch_names), got "
                        f"{type(recording).__name__}")
    array, rate, names = recording
    if isinstance(names, (str, bytes)) or not isinstance(names, (list, tuple, np.ndarray)):  # issue 46: None TypeError
        raise DataError(f"{where}: ch_names must be a list of channel names (one per row of the array), got "
                        f"{type(names).__name__}")
    names = [str(n) for n in names]
    raw_array = np.asarray(array)
    if raw_array.dtype.kind not in "biuf":  # complex, text, objects: numpy would warn, or cast them silently
        raise DataError(f"{where}: the array holds {raw_array.dtype} values; give real numbers (e.g. "
                        "np.real(array) or array.astype(float) where that is what you mean)")
    data = raw_array.astype(np.float64)
    if data.ndim != 2 or len(names) not in data.shape:
        raise DataError(f"{where}: the array has shape {data.shape}, expected (channels, samples) with "
                        f"{len(names)} channels (one per name)")
    if data.shape[0] != len(names):
        data = data.T
    try:
        rate = float(rate)
    except (TypeError, ValueError):
        raise DataError(f"{where}: sfreq must be a number of Hz, got {rate!r}") from None
    if not np.isfinite(rate) or rate <= 0:
        raise DataError(f"{where}: sfreq must be a positive number of Hz, got {rate!r}")
    if len(set(names)) != len(names):
        raise DataError(f"{where}: channel names must be unique, got {names}")
    factor = UNITS[_unit_check(units, "<memory>") or "V"]
    info = mne.create_info(names, rate, "eeg")
    return _scaled(mne.io.RawArray(data * factor, info, verbose="error"), scale, Path("<memory>"))


def read_csv_recording(path: str | Path, *, sfreq: float | None = None, units: str = "uV") -> mne.io.RawArray:
    """Return a CSV recording (a header row, a timestamp column, named channel columns) as a Raw in volts.

    The layout headset tools write: Muse/eeg-notebooks (``timestamps,TP9,AF7,AF8,TP10,Right AUX``),
    OpenBCI GUI (``%`` comment lines, then ``Sample Index, EXG Channel 0, ..., Timestamp``), LSL
    dumps (``timestamp,Fp1,...``). Lines starting with ``%`` or ``#`` before the header are
    skipped; the delimiter is ``,``, ``;`` or a tab. Every numeric column other than the
    timestamps becomes a channel (the montage picks its own by name; text columns such as
    markers or formatted dates are left out). The timestamps are in seconds (Unix or from the
    start; milliseconds are recognised by their step) and give the rate as their average step,
    which ``sfreq`` (Hz), when given, must match within 2 %; without a timestamp column
    ``sfreq`` is required. ``units``: the unit of the channel values (µV, as these tools write).
    """
    path = Path(path)
    _check_csv_size(path)
    try:
        text = path.read_text(encoding="utf-8-sig", errors="replace")
    except OSError as exc:
        raise DataError(f"cannot read '{path}' ({exc.strerror or exc}); check the path and permissions") from None
    lines = text.splitlines()
    longest = max(range(len(lines)), key=lambda i: len(lines[i]), default=None)
    if longest is not None and len(lines[longest]) > MAX_CSV_LINE:
        raise DataError(f"cannot read '{path}' as CSV: line {longest + 1} has {len(lines[longest]):,} characters, more "
                        f"than a recording's row ({MAX_CSV_LINE:,} at most); is it a CSV recording?")
    start = next((i for i, line in enumerate(lines) if line.strip() and line.lstrip()[0] not in "%#"), None)
    if start is None or start + 1 >= len(lines):
        raise DataError(f"cannot read '{path}' as CSV: expected a header row of column names, then one row per sample")
    try:
        delimiter = csv.Sniffer().sniff(lines[start], delimiters=",;\t").delimiter
    except csv.Error:
        delimiter = ","
    header = [h.strip() for h in next(csv.reader([lines[start]], delimiter=delimiter))]
    if len(header) > MAX_CSV_COLUMNS:
        raise DataError(f"cannot read '{path}' as CSV: its header has {len(header):,} columns, more than a recording's "
                        f"({MAX_CSV_COLUMNS:,} at most); give one column per channel and one for the timestamps")
    _check_ragged(path, lines, start, delimiter, len(header))
    first = next(csv.reader([lines[start + 1]], delimiter=delimiter))
    numeric = [i for i, cell in enumerate(first) if i < len(header) and _is_number(cell)]
    if any(_is_number(h) for h in header):
        raise DataError(f"cannot read '{path}' as CSV: its first row holds numbers, not column names; add a header "
                        "row (e.g. 'timestamps,TP9,AF7,AF8,TP10') so that channels can be found by name")
    try:
        values = np.loadtxt(lines[start + 1:], delimiter=delimiter, usecols=numeric, ndmin=2, dtype=np.float64)
    except ValueError as exc:
        reason = " ".join(str(exc).split())[:160]
        raise DataError(f"cannot read '{path}' as CSV ({reason}); every row needs a number in each channel column "
                        "(empty cells are not allowed)") from None
    keys = [header[i].casefold().replace(" ", "_") for i in numeric]
    time_col = next((k for k, key in enumerate(keys) if key in _TIME_COLUMNS), None)
    if time_col is None:
        time_col = next((k for k, key in enumerate(keys) if "timestamp" in key), None)
    channels = [k for k in range(len(numeric)) if k != time_col]
    if not channels:
        raise DataError(f"cannot read '{path}' as CSV: no numeric channel columns besides the timestamps")
    rate, start_time = _csv_rate(path, None if time_col is None else values[:, time_col], sfreq,
                                 first_line=start + 2)
    names = [header[numeric[k]] for k in channels]
    if len(set(names)) != len(names):
        raise DataError(f"cannot read '{path}' as CSV: channel column names repeat ({names}); make them unique")
    info = mne.create_info(names, rate, "eeg")
    raw = mne.io.RawArray(values[:, channels].T * UNITS[units], info, verbose="error")
    if start_time is not None:
        raw.set_meas_date(start_time)
    return raw


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def _csv_size_limit() -> int:
    """Return the largest CSV recording (bytes) read: :data:`MAX_CSV_BYTES`, or an eighth of the memory if less."""
    import os

    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not a POSIX system
        return MAX_CSV_BYTES
    return min(MAX_CSV_BYTES, memory // 8)


def _check_csv_size(path: Path) -> None:
    """Raise DataError before reading a CSV recording too large to read as text (its text, rows and floats)."""
    size = path.stat().st_size
    limit = _csv_size_limit()
    if size > limit:
        raise DataError(f"recording '{path}' has {size / 1024**2:,.0f} MiB, more than a CSV recording is read at "
                        f"({limit / 1024**2:,.0f} MiB at most on this machine); convert it to EDF (e.g. with MNE: "
                        "mne.export.export_raw) or cut it into pieces")


def _check_ragged(path: Path, lines: list[str], start: int, delimiter: str, n_columns: int) -> None:
    """Raise DataError naming the first data row whose number of cells differs from the header's."""
    for i in range(start + 1, len(lines)):
        line = lines[i]
        if not line.strip() or line.lstrip()[0] in "%#":
            continue
        cells = line.count(delimiter) + 1
        if cells != n_columns and not ('"' in line and len(next(csv.reader([line], delimiter=delimiter))) == n_columns):
            raise DataError(f"cannot read '{path}' as CSV: line {i + 1} has {cells} cells but the header has "
                            f"{n_columns}; every row needs one cell per column (a row cut short, or extra cells)")


def _csv_rate(path: Path, stamps: np.ndarray | None, sfreq: float | None, *,
              first_line: int = 2) -> tuple[float, datetime | None]:
    """Return ``(rate in Hz, start time or None)`` of a CSV recording from its timestamps and/or ``sfreq``.

    Refused (DataError naming the line; ``first_line`` is the line of the first sample):
    timestamps that go backwards, that jump (dropped samples: the samples would be read as
    evenly spaced, and every time after the gap would be wrong), or that are irregular beyond
    :data:`CSV_TIMING_TOLERANCE` over any second of samples; any of these made the rate a
    guess (issue 35: 212 and 225 Hz for 200-Hz recordings).
    """
    if stamps is None:
        if sfreq is None:
            raise DataError(f"recording '{path}' has no timestamp column (looked for {', '.join(_TIME_COLUMNS)}); "
                            "give its rate: 'sfreq:' for it in dataset.yaml, or --sfreq (predict, data inspect)")
        return float(sfreq), None
    if len(stamps) < 2 or not np.isfinite(stamps).all() or stamps[-1] <= stamps[0]:
        raise DataError(f"recording '{path}': its timestamps do not increase; give a CSV with a timestamp per row")
    steps = np.diff(stamps)
    if (steps < 0).any():
        i = int(np.flatnonzero(steps < 0)[0]) + 1
        raise DataError(f"recording '{path}': its timestamps go backwards at line {first_line + i} ({stamps[i]:.6f} "
                        f"after {stamps[i - 1]:.6f}); the rate cannot be read from them - sort the rows by time, or "
                        "remove the timestamp column and give the rate with --sfreq ('sfreq:' in dataset.yaml)")
    # The average step over the steps that are not gaps (dropped samples): LSL clocks jitter sample to sample.
    # (The median of the positive steps: LSL stamps a chunk of samples at once, with steps of 0 inside it.)
    regular = steps <= 5 * np.median(steps[steps > 0])
    step = float(steps[regular].mean())
    per_second = 1.0
    if 1 / step < 1 <= 1000 / step:  # a step of seconds would be under 1 Hz: the stamps are milliseconds
        per_second = 1000.0
    estimate = per_second / step
    # Jitter: a rate within 0.5 % of a whole number of Hz is that number.
    nominal = float(round(estimate)) if abs(estimate - round(estimate)) <= 0.005 * estimate else estimate
    if sfreq is not None and abs(estimate - sfreq) > 0.02 * sfreq:
        raise DataError(f"recording '{path}': its timestamps average {estimate:.4g} Hz but {sfreq:g} Hz was given; "
                        "check the rate (or drop 'sfreq' to use the timestamps)")
    jump = float(steps.max()) / per_second
    if not regular.all() and jump > 0.1:
        i = int(steps.argmax()) + 1
        at = float(stamps[i - 1] - stamps[0]) / per_second
        raise DataError(f"recording '{path}': its timestamps jump by {jump:.2f} s at line {first_line + i} ({at:.1f} s "
                        "in: dropped samples); read as evenly spaced, every time after the gap would be wrong - cut "
                        "the file there into two recordings")
    _check_timing(path, stamps / per_second, estimate, first_line)
    start = None
    if stamps[0] / per_second > 1e9:  # Unix time: the recording's start
        start = datetime.fromtimestamp(stamps[0] / per_second, tz=timezone.utc)
    return float(sfreq) if sfreq is not None else nominal, start


def _check_timing(path: Path, seconds: np.ndarray, rate: float, first_line: int) -> None:
    """Raise DataError naming the first second of samples whose timestamps span more or less than a second allows."""
    per_block = max(int(round(rate)), 2)
    if len(seconds) <= per_block:
        return
    starts = np.arange(0, len(seconds) - per_block, per_block)
    spans = seconds[starts + per_block] - seconds[starts]
    expected = per_block / rate
    off = np.flatnonzero(np.abs(spans - expected) > CSV_TIMING_TOLERANCE * expected)
    if off.size:
        k = int(starts[off[0]])
        raise DataError(f"recording '{path}': its timestamps are irregular at line {first_line + k}: {per_block} "
                        f"samples span {spans[off[0]]:.3f} s there, {expected:.3f} s at the file's average rate "
                        f"({rate:.4g} Hz); the rate cannot be trusted - fix the timestamps, or remove the column and "
                        "give the rate with --sfreq ('sfreq:' in dataset.yaml)")


def _read_with_mne(path: Path, suffix: str) -> mne.io.BaseRaw:
    """Return the MNE reader's Raw for ``path``; its exceptions become :class:`DataError`."""
    readers = {
        ".edf": mne.io.read_raw_edf,
        ".bdf": mne.io.read_raw_bdf,
        ".fif": mne.io.read_raw_fif,
        ".fif.gz": mne.io.read_raw_fif,
        ".set": mne.io.read_raw_eeglab,
        ".vhdr": mne.io.read_raw_brainvision,
        ".ahdr": mne.io.read_raw_brainvision,
        ".gdf": mne.io.read_raw_gdf,
        ".eeg": mne.io.read_raw_nihon,
        ".lay": mne.io.read_raw_persyst,
        ".nxe": mne.io.read_raw_eximia,
        ".cnt": mne.io.read_raw_cnt,
        ".cdt": mne.io.read_raw_curry,
        ".nedf": mne.io.read_raw_nedf,
    }
    try:
        with warnings.catch_warnings():
            # MNE warns about cosmetic header issues (dates, filter strings); they are not the user's problem.
            warnings.simplefilter("ignore", RuntimeWarning)
            return readers[suffix](path, preload=False, verbose="error")
    except Exception as exc:  # noqa: BLE001 - any reader failure is a bad file, said in one line
        raise DataError(_read_error(path, suffix, exc)) from None


def _read_error(path: Path, suffix: str, exc: Exception) -> str:
    """Return the one-line message for an MNE reader's failure: its cause where known, else how to check the file."""
    text = " ".join(str(exc).split())
    package = getattr(exc, "name", None) if isinstance(exc, ImportError) else None
    match = re.search(r"pip install ([\w.-]+)", text)
    if package or match:
        package = match.group(1) if match else package
        return (f"cannot read '{path}' as {FORMATS[suffix]}: MNE needs the optional Python package '{package}' for "
                f"this file; install it (pip install {package}) and retry")
    if "Internal Active Shielding" in text:
        return (f"cannot read '{path}': it holds raw MaxShield (Internal Active Shielding) data, which must go "
                "through MaxFilter or mne.preprocessing.maxwell_filter first; give the processed file")
    viewer = "EDFbrowser or MNE" if suffix in _EDF_FAMILY else "MNE (mne.io.read_raw)"
    return (f"cannot read '{path}' as {FORMATS[suffix]} ({text[:200] or type(exc).__name__}); check that the file "
            f"is complete and really is {FORMATS[suffix]}, e.g. by opening it in {viewer}")


def _check_edf_size(path: Path, *, bytes_per_sample: int) -> None:
    """Raise :class:`DataError` when an EDF/BDF file is shorter than its header promises, or its header is not one.

    MNE silently shortens such files ("inferring from the file size"); a truncated night
    would then pass with fewer windows than its hypnogram, so it is caught here, by name.
    The version field and the record duration are checked as the format (and edfio) says
    (issue 57: a PNG signature in the version field and a record duration of 0 were read).
    """
    size = path.stat().st_size
    try:
        with path.open("rb") as f:
            head = f.read(256)
            if len(head) == 256:  # shorter: damaged or incomplete, said below
                _check_edf_version(path, head[:8], bytes_per_sample)
            duration = float(head[244:252].decode("ascii").strip())
            if not (duration > 0 and np.isfinite(duration)):
                raise DataError(f"recording '{path}': its header gives a data record duration of {duration:g} s (it "
                                "must be positive); re-export the file")
            n_records = int(head[236:244].decode("ascii").strip())
            n_signals = int(head[252:256].decode("ascii").strip())
            f.seek(256 + n_signals * 216)
            samples = [int(f.read(8).decode("ascii").strip()) for _ in range(n_signals)]
    except (ValueError, UnicodeDecodeError, OSError):
        raise DataError(
            f"cannot read '{path}': the EDF/BDF header is damaged or incomplete ({size} bytes); "
            f"re-export or re-copy the file"
        ) from None
    if n_records < 0:  # -1: the recorder was not stopped; the size is the only truth
        return
    expected = 256 * (n_signals + 1) + n_records * sum(samples) * bytes_per_sample
    if size < expected:
        missing = (expected - size) / max(1, sum(samples) * bytes_per_sample)
        raise DataError(
            f"recording '{path}' is truncated: the header promises {n_records} data records "
            f"({expected} bytes) but the file has {size} bytes (about {missing:.0f} records missing); "
            f"re-copy or re-export the complete file"
        )


def _check_edf_version(path: Path, version: bytes, bytes_per_sample: int) -> None:
    """Raise :class:`DataError` unless ``version`` (a header's first 8 bytes) is EDF's ``0`` or BDF's ``\\xffBIOSEMI``."""
    kind, expected = ("EDF", b"0       ") if bytes_per_sample == 2 else ("BDF", b"\xffBIOSEMI")
    if version == expected or (kind == "EDF" and version.rstrip(b" \x00") == b"0"):
        return
    raise DataError(f"recording '{path}' is not {kind}: its header starts with {version!r}, not {expected!r}; check "
                    f"that it is the recording, exported as {kind}")


def read_dreams_text(path: str | Path, sfreq: float, *, units: str = "uV") -> mne.io.RawArray:
    """Return a DREAMS text recording (``[NAME]`` header, then µV samples) as a one-channel Raw.

    Values are converted from ``units`` (µV) to volts (MNE's unit).
    """
    path = Path(path)
    try:
        with path.open("r", encoding="ascii", errors="replace") as f:
            header = f.readline()
            values = np.loadtxt(f, dtype=np.float64, ndmin=1)
    except (OSError, ValueError) as exc:
        reason = " ".join(str(exc).split())[:160]
        raise DataError(
            f"cannot read '{path}' as DREAMS text ({reason}); expected a '[NAME]' line, then one number per line"
        ) from None
    match = _DREAMS_HEADER.match(header)
    if match is None:
        raise DataError(
            f"cannot read '{path}' as DREAMS text: first line is {header.strip()[:40]!r}, expected the "
            f"channel name in brackets, e.g. '[C3-A1]'"
        )
    if values.ndim != 1 or values.size == 0:
        raise DataError(f"cannot read '{path}' as DREAMS text: expected one sample per line after the header")
    info = mne.create_info([match.group(1).strip()], float(sfreq), "eeg")
    return mne.io.RawArray(values[None, :] * UNITS[units], info, verbose="error")
