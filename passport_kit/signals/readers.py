"""Reading one recording into an :class:`mne.io.BaseRaw`, whatever its format.

Formats, by file suffix (through MNE): EDF/EDF+ (``.edf``), BDF (``.bdf``), FIF (``.fif``,
``.fif.gz``), EEGLAB (``.set`` with or without ``.fdt``), BrainVision (``.vhdr``, ``.ahdr``),
GDF (``.gdf``), Nihon Kohden (``.eeg`` with its ``.21e``/``.pnt``/``.log``; a ``.eeg`` next to a
BrainVision header is that header's data), Persyst (``.lay`` + ``.dat``), eXimia (``.nxe``),
Neuroscan (``.cnt``), Curry (``.cdt``), Neuroelectrics (``.nedf``), and the DREAMS text format (``.txt``: a ``[C3-A1]`` header line, then one µV sample per line; the file
does not hold its sampling rate, so ``sfreq`` must be given, e.g. as ``sfreq:`` of the recording
in ``dataset.yaml``).

Every problem with a file raises :class:`~passport_kit.errors.DataError` with one line that
names the file and says how to fix it; MNE's own exceptions never reach the user.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import mne
import numpy as np

from passport_kit.errors import DataError

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
}
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
    """Return True when ``path`` is a recording :func:`read_recording` reads (``text``: DREAMS text files too).

    A BrainVision ``.eeg`` data file is not (its header is), nor is an annotation file that
    ``predict`` wrote next to a recording (``*_annotations.edf``).
    """
    suffix = recording_suffix(path)
    if suffix not in FORMATS or (suffix == ".txt" and not text):
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


def read_recording(path: str | Path, *, sfreq: float | None = None) -> mne.io.BaseRaw:
    """Return the recording at ``path`` as an MNE Raw (data not loaded yet where the format allows).

    ``sfreq`` (Hz) is required for DREAMS text files, which do not store it; for other formats
    it is optional and, when given, must match the file's own rate.

    Example::

        >>> raw = read_recording("s01.edf")          # doctest: +SKIP
        >>> raw = read_recording("excerpt1.txt", sfreq=100)   # doctest: +SKIP
    """
    path = Path(path)
    if not path.is_file():
        raise DataError(f"recording '{path}' does not exist; check the path (relative paths in dataset.yaml are relative to its folder)")
    suffix = recording_suffix(path)
    if suffix not in FORMATS:
        known = ", ".join(sorted(FORMATS))
        raise DataError(f"recording '{path}': unknown format '{suffix}'; supported suffixes are {known}")
    header = brainvision_header_of(path)
    if header is not None:
        raise DataError(f"recording '{path}' is the data file of the BrainVision recording '{header}'; give the "
                        "header file instead")
    if suffix == ".txt":
        if sfreq is None:
            raise DataError(
                f"recording '{path}': a DREAMS text file does not store its sampling rate; give it, "
                f"e.g. 'sfreq: 100' for this recording in dataset.yaml"
            )
        return read_dreams_text(path, sfreq)
    if suffix in (".edf", ".bdf"):
        _check_edf_size(path, bytes_per_sample=2 if suffix == ".edf" else 3)
    raw = _read_with_mne(path, suffix)
    if sfreq is not None and not np.isclose(raw.info["sfreq"], sfreq):
        raise DataError(
            f"recording '{path}': file says {raw.info['sfreq']:g} Hz but {sfreq:g} Hz was given; "
            f"remove 'sfreq' for this recording (only text files need it)"
        )
    return raw


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
    """Raise :class:`DataError` when an EDF/BDF file is shorter than its header promises.

    MNE silently shortens such files ("inferring from the file size"); a truncated night
    would then pass with fewer windows than its hypnogram, so it is caught here, by name.
    """
    size = path.stat().st_size
    try:
        with path.open("rb") as f:
            head = f.read(256)
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


def read_dreams_text(path: str | Path, sfreq: float) -> mne.io.RawArray:
    """Return a DREAMS text recording (``[NAME]`` header, then µV samples) as a one-channel Raw.

    Values are converted from µV to volts (MNE's unit).
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
    return mne.io.RawArray(values[None, :] * 1e-6, info, verbose="error")
