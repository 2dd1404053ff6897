"""Build a montage from what MNE and BIDS users already have.

Three sources, each moved to the MNE head frame in metres:

* an MNE standard template (``colin27_1005``, ``biosemi64``, ...) plus a channel list;
* any file ``mne.channels.read_custom_montage`` reads (``.loc .locs .eloc .sfp .csd .elc .txt
  .elp .bvef .csv .tsv .xyz``);
* a BIDS ``*_electrodes.tsv`` with its ``*_coordsystem.json``.
"""

from __future__ import annotations

import csv
import json
import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from passport_kit.errors import MontageError
from passport_kit.montage.mne_bridge import builtin_template_names, dig_to_montage, make_template
from passport_kit.montage.schema import UNITS_PER_METRE, Montage

#: Extensions ``mne.channels.read_custom_montage`` understands.
CUSTOM_EXTENSIONS = (".loc", ".locs", ".eloc", ".sfp", ".csd", ".elc", ".txt", ".elp", ".bvef",
                     ".csv", ".tsv", ".xyz")
# Formats whose numbers MNE takes as they are (no unit header, no sphere scaling).
_RAW_NUMBER_EXTENSIONS = (".csv", ".tsv", ".xyz", ".sfp")
# Cartesian formats that may hold measured positions: MNE would rescale them to a 95 mm
# sphere by default, which throws the measurement away, so we keep them unless asked.
_CARTESIAN_EXTENSIONS = (".elc", ".sfp")
#: MNE's default head radius (m) for formats that only give directions (polar/spherical).
DEFAULT_HEAD_SIZE_M = 0.095

# BIDS EEGCoordinateSystem keywords, grouped by how they reach the MNE head frame.
_BIDS_HEADLIKE = {"captrak"}                        # RAS, origin between LPA and RPA
_BIDS_ALS = {"eeglab", "eeglab-hj"}                 # ALS, origin between the ears
_BIDS_MNI_PREFIXES = ("mni", "fsaverage", "icbm", "ixi549space", "talairach", "fsl", "spm",
                      "uncinfant", "fsaveragesym", "fslr")


@dataclass(frozen=True)
class ImportResult:
    """What an import built, and what it had to leave out or assume (shown to the user)."""

    montage: Montage
    dropped: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _split_channels(channels: list[str] | None) -> list[str] | None:
    """Return a flat channel list from repeated and/or comma-separated values (None = all)."""
    if not channels:
        return None
    out = [c.strip() for item in channels for c in item.split(",") if c.strip()]
    return out or None


def import_montage(
    source: str | Path,
    *,
    name: str,
    channels: list[str] | None = None,
    units: str | None = None,
    coordsystem: str | Path | None = None,
    description: str | None = None,
    reference: str = "unspecified",
    head_size: float | None = None,
) -> ImportResult:
    """Return a montage built from an MNE template name, a custom montage file, or BIDS electrodes.tsv.

    ``head_size`` (metres) rescales a custom file to that median radius, as
    ``read_custom_montage`` does; default: 0.095 for direction-only formats (.loc, .txt, .elp,
    .csd, .bvef), none for Cartesian ones (.elc, .sfp, .csv, .tsv, .xyz) so measured positions stay.
    """
    text = str(source)
    path = Path(text).expanduser()
    ch = _split_channels(channels)
    if units is not None and units not in UNITS_PER_METRE:
        raise MontageError(f"unknown units '{units}'; use one of: {', '.join(UNITS_PER_METRE)}")
    if path.is_file():
        if path.name.endswith("electrodes.tsv") or coordsystem is not None:
            return from_bids_electrodes(path, coordsystem, name=name, channels=ch, units=units,
                                        description=description, reference=reference)
        return from_custom_file(path, name=name, channels=ch, units=units, head_size=head_size,
                                description=description, reference=reference)
    templates = builtin_template_names()
    if text in templates or text in ("standard_1005", "standard_1020", "colin27_1005", "colin27_1020"):
        if units is not None:
            raise MontageError("--units does not apply to an MNE template (its positions are in "
                               "metres already); drop --units")
        return from_template(text, ch, name=name, description=description, reference=reference)
    raise MontageError(
        f"'{text}' is neither an existing file nor an MNE template; give a montage file "
        f"({' '.join(CUSTOM_EXTENSIONS)}), a BIDS *_electrodes.tsv, or one of: {', '.join(templates)}"
    )


def from_template(
    template: str,
    channels: list[str] | None,
    *,
    name: str,
    description: str | None = None,
    reference: str = "unspecified",
) -> ImportResult:
    """Return a montage of ``channels`` (all if None) from MNE standard template ``template``."""
    with warnings.catch_warnings():
        # standard_* names are deprecated in MNE 1.13; make_template picks the right name.
        warnings.simplefilter("ignore", FutureWarning)
        dig = make_template(template)
    desc = description or (f"Imported from the MNE standard template '{template}', moved to the "
                           "MNE head frame (template positions, not measured on a subject).")
    montage = dig_to_montage(dig, name=name, description=desc, reference=reference, ch_names=channels,
                             metadata={"source": f"mne template {template}", "confidence": "template"})
    return ImportResult(montage)


def from_custom_file(
    path: Path,
    *,
    name: str,
    channels: list[str] | None = None,
    units: str | None = None,
    head_size: float | None = None,
    description: str | None = None,
    reference: str = "unspecified",
) -> ImportResult:
    """Return a montage from a file ``mne.channels.read_custom_montage`` reads, in the head frame.

    ``head_size`` as in :func:`import_montage`.
    """
    import mne

    ext = "".join(path.suffixes[-1:]).lower()
    if ext not in CUSTOM_EXTENSIONS:
        raise MontageError(f"'{path.name}' has extension '{ext}', which MNE cannot read as a montage; "
                           f"use one of: {' '.join(CUSTOM_EXTENSIONS)}")
    if units is not None and ext not in _RAW_NUMBER_EXTENSIONS:
        raise MontageError(f"--units applies to {' '.join(_RAW_NUMBER_EXTENSIONS)} files only; MNE "
                           f"reads '{ext}' files in their own units - drop --units")
    if units is not None and head_size is not None:
        raise MontageError("give either --units (numbers kept, read in those units) or --head-size "
                           "(numbers rescaled to that radius), not both")
    notes: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            dig = mne.channels.read_custom_montage(path, head_size=_head_size(ext, head_size))
        except Exception as exc:  # noqa: BLE001 - MNE raises many types for a malformed file
            raise MontageError(f"MNE could not read '{path}' as a '{ext}' montage "
                               f"({type(exc).__name__}: {exc}); check the file format") from None
    notes += [str(w.message) for w in caught]
    montage = dig_to_montage(dig, name=name, reference=reference, ch_names=channels,
                             units=units or "m", metadata={"source": f"file {path.name}"})
    desc = description or (f"Imported from '{path.name}' with mne.channels.read_custom_montage, "
                           f"moved to the MNE head frame ({montage.metadata['frame_conversion']}).")
    return ImportResult(montage.model_copy(update={"description": desc}), notes=notes)


def _head_size(ext: str, head_size: float | None) -> float | None:
    """Return the head_size to pass to read_custom_montage for extension ``ext``."""
    if head_size is not None:
        if ext in (".csv", ".tsv", ".xyz"):
            raise MontageError(f"--head-size does not apply to '{ext}' files (MNE reads their numbers "
                               "as they are); drop it, and use --units if they are not metres")
        if not 0.02 <= head_size <= 0.3:
            raise MontageError(f"--head-size {head_size} is not a head radius in metres; use about 0.095")
        return head_size
    if ext in _CARTESIAN_EXTENSIONS or ext in _RAW_NUMBER_EXTENSIONS:
        return None
    return DEFAULT_HEAD_SIZE_M


def _find_coordsystem(tsv: Path) -> Path:
    """Return the ``*_coordsystem.json`` that belongs to a BIDS ``*_electrodes.tsv``."""
    stem = tsv.name[: -len("electrodes.tsv")]
    exact = tsv.with_name(f"{stem}coordsystem.json")
    if exact.is_file():
        return exact
    # BIDS inheritance: an entity set may differ (e.g. no acq- on the json); take the only one.
    others = sorted(tsv.parent.glob("*coordsystem.json"))
    if len(others) == 1:
        return others[0]
    raise MontageError(f"no coordsystem.json found next to '{tsv.name}' (BIDS requires one); pass "
                       "--coordsystem PATH")


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise MontageError(f"coordsystem file '{path}' does not exist; check the path") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise MontageError(f"'{path}' is not valid JSON ({exc}); fix the file") from None
    if not isinstance(data, dict):
        raise MontageError(f"'{path}' must hold a JSON object with EEGCoordinateSystem and "
                           "EEGCoordinateUnits")
    return data


def _number(text: str) -> float:
    text = text.strip()
    if text.lower() in ("n/a", "", "nan"):
        return math.nan
    return float(text)


def from_bids_electrodes(
    tsv: Path,
    coordsystem: str | Path | None = None,
    *,
    name: str,
    channels: list[str] | None = None,
    units: str | None = None,
    description: str | None = None,
    reference: str = "unspecified",
) -> ImportResult:
    """Return a montage from a BIDS ``*_electrodes.tsv`` and its ``*_coordsystem.json``.

    Rows with ``n/a`` coordinates (often GND/REF) are dropped and listed in the result.
    The frame reaches the MNE head frame through the anatomical landmarks (NAS/LPA/RPA) when
    the json has them; otherwise CapTrak is taken as head frame, EEGLAB's ALS axes are turned
    to RAS, and MNI-family templates go through MNE's MNI fiducials.
    """
    import mne

    tsv = Path(tsv)
    cs_path = Path(coordsystem) if coordsystem is not None else _find_coordsystem(tsv)
    cs = _read_json(cs_path)
    system = str(cs.get("EEGCoordinateSystem", "")).strip()
    if not system:
        raise MontageError(f"'{cs_path.name}' has no EEGCoordinateSystem (REQUIRED by BIDS); add it, "
                           "e.g. \"CapTrak\"")
    file_units = units or str(cs.get("EEGCoordinateUnits", "")).strip()
    if file_units not in UNITS_PER_METRE:
        raise MontageError(f"'{cs_path.name}' gives EEGCoordinateUnits '{file_units or 'missing'}'; "
                           "set it to m, cm or mm (or pass --units)")
    per_m = UNITS_PER_METRE[file_units]

    try:
        with tsv.open(encoding="utf-8", newline="") as fh:
            rows = list(csv.DictReader(fh, delimiter="\t"))
    except UnicodeDecodeError:
        raise MontageError(f"'{tsv}' is not UTF-8 text; save it as a tab-separated UTF-8 file") from None
    if not rows or not {"name", "x", "y", "z"} <= set(rows[0]):
        raise MontageError(f"'{tsv.name}' needs tab-separated columns name, x, y, z (BIDS "
                           "electrodes.tsv); fix the header")
    ch_pos: dict[str, np.ndarray] = {}
    dropped: list[str] = []
    for row in rows:
        label = (row["name"] or "").strip()
        try:
            xyz = np.array([_number(row[k] or "") for k in ("x", "y", "z")]) / per_m
        except ValueError:
            raise MontageError(f"'{tsv.name}': electrode '{label}' has a non-numeric coordinate "
                               f"({row['x']}, {row['y']}, {row['z']}); use numbers or n/a") from None
        if np.isnan(xyz).any():
            dropped.append(label)
            continue
        if label in ch_pos:
            raise MontageError(f"'{tsv.name}' lists electrode '{label}' twice; keep one row per electrode")
        ch_pos[label] = xyz

    fids, note = _bids_landmarks(cs, file_units)
    key = system.lower()
    if fids is not None:
        dig = mne.channels.make_dig_montage(ch_pos=ch_pos, coord_frame="unknown", **fids)
    elif key in _BIDS_HEADLIKE:
        dig = mne.channels.make_dig_montage(ch_pos=ch_pos, coord_frame="head")
        note = "CapTrak taken as MNE head frame (both RAS with the origin between the ears)"
    elif key in _BIDS_ALS:
        # ALS (x anterior, y left) -> RAS (x right, y anterior): x' = -y, y' = x.
        ras = {n: np.array([-p[1], p[0], p[2]]) for n, p in ch_pos.items()}
        dig = mne.channels.make_dig_montage(ch_pos=ras, coord_frame="head")
        note = f"{system} ALS axes turned to RAS and taken as MNE head frame"
    elif key.startswith(_BIDS_MNI_PREFIXES):
        dig = mne.channels.make_dig_montage(ch_pos=ch_pos, coord_frame="mni_tal")
        dig.add_mni_fiducials()
        note = f"{system} taken as MNI space; MNE's MNI fiducials give the head frame"
    else:
        raise MontageError(
            f"cannot place coordinate system '{system}' in the MNE head frame without landmarks; add "
            "AnatomicalLandmarkCoordinates with NAS, LPA and RPA to the coordsystem.json"
        )
    if dropped and channels is not None:
        wanted_missing = [c for c in channels if c in dropped]
        if wanted_missing:
            raise MontageError(f"electrode(s) {', '.join(wanted_missing)} have n/a coordinates in "
                               f"'{tsv.name}'; give their positions or leave them out of --channels")
    desc = description or (f"Imported from BIDS '{tsv.name}' ({system}, {file_units}); {note}.")
    montage = dig_to_montage(dig, name=name, description=desc, reference=reference, ch_names=channels,
                             metadata={"source": f"bids {tsv.name}", "bids_coordinate_system": system})
    notes = [note] + ([f"dropped electrodes with n/a coordinates: {', '.join(dropped)}"] if dropped else [])
    return ImportResult(montage, dropped=dropped, notes=notes)


def _bids_landmarks(cs: dict[str, Any], eeg_units: str) -> tuple[dict[str, np.ndarray] | None, str]:
    """Return MNE fiducials (metres, file frame) from AnatomicalLandmarkCoordinates, if all three exist."""
    marks = cs.get("AnatomicalLandmarkCoordinates")
    if not isinstance(marks, dict):
        return None, ""
    folded = {str(k).strip().lower(): v for k, v in marks.items()}
    aliases = {"nasion": ("nas", "nasion", "nz"), "lpa": ("lpa", "lpf"), "rpa": ("rpa", "rpf")}
    found: dict[str, np.ndarray] = {}
    units = str(cs.get("AnatomicalLandmarkCoordinateUnits", eeg_units)).strip()
    if units not in UNITS_PER_METRE:
        units = eeg_units
    for key, names in aliases.items():
        for n in names:
            value = folded.get(n)
            if isinstance(value, list) and len(value) == 3:
                try:
                    found[key] = np.array([float(v) for v in value]) / UNITS_PER_METRE[units]
                except (TypeError, ValueError):
                    continue
                break
    if len(found) != 3:
        return None, ""
    return found, "head frame from the NAS/LPA/RPA landmarks of coordsystem.json"
