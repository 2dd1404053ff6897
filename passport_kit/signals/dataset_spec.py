"""What a dataset folder holds: ``dataset.yaml``, a BIDS dataset, or a plain folder of recordings.

``dataset.yaml`` (DESIGN.md §6; paths relative to the file's folder)::

    task: sleep-staging          # or: classification
    window_seconds: 30
    classes: [W, N1, N2, N3, REM]
    label_map: eesm              # a built-in (aasm, eesm, rk) or {raw value: class | null}
    recordings:
      - subject: s01
        file: s01.edf
        labels: s01_hypnogram.csv    # one value per window (first column) ...
        channels: {ELA: "EEG ELA-REF"}
      - subject: s02
        file: s02.edf
        label: rest                  # ... or one label for the whole recording
      - subject: dreams1
        file: excerpt1.txt
        sfreq: 100                   # text files do not store their sampling rate
      - subject: dreams3
        file: excerpt3.edf
        units: uV                    # the header says 'UV', which MNE reads as volts
      - subject: muse1
        file: muse1.csv              # timestamps + named columns; rate from the timestamps

Optional keys: ``label_seconds`` (duration of one value in label files when it is not one
window, e.g. 5 for R&K hypnograms; the ``rk`` map sets it), ``label_column`` (the column of
``*_events.tsv`` or of a label table with a header), ``on_unknown_label`` (``raise`` | ``drop``),
``h_freq`` (the band-pass top in Hz, instead of the checkpoint's; without it, a dataset sampled
too slowly for the checkpoint's top gets one below its Nyquist frequency automatically), ``l_freq``
(the band-pass bottom in Hz, instead of the checkpoint's 0.3; e.g. 1 where the recordings' own
high-pass filters differ between classes, as ``check`` reports)

Without ``dataset.yaml``: a folder with ``dataset_description.json`` is read as BIDS (through
MNE-BIDS; labels from ``*_events.tsv``), and any other folder is discovered: every recording
file, its labels from a same-stem hypnogram file or from its own EDF+ annotations (Sleep-EDF
style, ``Sleep stage W`` ...), read with the ``aasm`` map.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from passport_kit.bounded_yaml import load_yaml, read_yaml_text
from passport_kit.errors import DataError, validation_problem, warn, yaml_problem
from passport_kit.signals.labels import (
    AASM_CLASSES,
    LabelMap,
    OnUnknown,
    get_label_map,
    identity_map,
)
from passport_kit.signals.readers import (FORMATS, TEXT_FORMATS, canonical_units, is_recording_file,
                                         recording_suffix, unit_advice)

DATASET_FILE = "dataset.yaml"
Task = Literal["sleep-staging", "classification"]
LabelSource = Literal["file", "label", "annotations", "events", "none"]


class RecordingSpec(BaseModel):
    """One recording of a dataset: its file, subject, labels and channel renames."""

    model_config = ConfigDict(extra="forbid", frozen=True, coerce_numbers_to_str=True)

    subject: str = Field(min_length=1)
    file: str = Field(min_length=1)
    labels: str | None = None
    label: str | None = None
    channels: dict[str, str] = Field(default_factory=dict)
    sfreq: float | None = Field(None, gt=0)
    #: The unit of the file's numbers where its header is wrong or unknown to MNE (EDF/BDF, text, CSV).
    units: Literal["V", "mV", "uV", "µV", "μV", "nV"] | None = None
    #: A factor for the samples after reading (any format), e.g. for a device that stores raw counts.
    scale: float | None = Field(None, gt=0)
    #: Labels from the recording's own annotations (auto-discovered EDF+ files).
    annotation_labels: bool = False
    #: The recording's subgroups by column (``{sex: F, age_group: 40-60, site: A}``): the validation report gives its
    #: agreement per group (issue 56).
    groups: dict[str, str] = Field(default_factory=dict)

    @field_validator("units", mode="before")
    @classmethod
    def _units_in_any_case(cls, value: object) -> object:
        """'uv' and 'UV' read as 'uV' (issue 58); an unknown unit is refused naming the nearest."""
        if not isinstance(value, str):
            return value
        known = canonical_units(value)
        if known is None:
            raise ValueError(f"unknown units {value!r}; {unit_advice(value)}")
        return known

    @model_validator(mode="after")
    def _one_label_source(self) -> RecordingSpec:
        if self.labels is not None and self.label is not None:
            raise ValueError("give either 'labels' (a file) or 'label' (one value), not both")
        return self


class DatasetSpec(BaseModel):
    """A dataset description: task, windows, classes, label map and recordings (paths resolved)."""

    model_config = ConfigDict(extra="forbid", frozen=True, coerce_numbers_to_str=True)

    task: Task = "sleep-staging"
    window_seconds: float | None = Field(None, gt=0)
    classes: list[str] | None = None
    label_map: str | dict[str, str | None] | None = None
    label_seconds: float | None = Field(None, gt=0)
    label_column: str | None = None
    on_unknown_label: OnUnknown | None = None
    h_freq: float | None = Field(None, gt=0)
    l_freq: float | None = Field(None, gt=0)
    #: Read files named outside the dataset folder (by '..', an absolute path or a symlink); off: refused.
    allow_outside_paths: bool = False
    recordings: list[RecordingSpec] = Field(default_factory=list)
    #: How the description was found: 'yaml', 'bids' or 'discovered' (not a YAML key).
    origin: Literal["yaml", "bids", "discovered"] = "yaml"
    root: Path | None = None

    @model_validator(mode="after")
    def _check(self) -> DatasetSpec:
        if self.classes is not None and len(set(self.classes)) != len(self.classes):
            raise ValueError("'classes' lists a class twice")
        if isinstance(self.label_map, dict) and self.classes is not None:
            extra = sorted({v for v in self.label_map.values() if v is not None} - set(self.classes))
            if extra:
                raise ValueError(f"label_map maps to {', '.join(extra)}, which are not in 'classes'")
        return self

    def resolved_label_map(self) -> LabelMap | None:
        """Return the label map (None: values are class names themselves)."""
        if self.label_map is None:
            return None
        if isinstance(self.label_map, str):
            base = get_label_map(self.label_map)
        else:
            base = LabelMap(name="dataset.yaml", mapping={str(k): v for k, v in self.label_map.items()})
        updates = {}
        if self.label_seconds is not None:
            updates["label_seconds"] = self.label_seconds
        if self.on_unknown_label is not None:
            updates["on_unknown"] = self.on_unknown_label
        return base.model_copy(update=updates) if updates else base

    def default_classes(self) -> list[str] | None:
        """Return the classes given or implied by the task and map (None: found from the labels)."""
        if self.classes is not None:
            return list(self.classes)
        label_map = self.resolved_label_map()
        if self.task == "sleep-staging":
            return list(AASM_CLASSES)
        if label_map is not None:
            return label_map.targets
        return None

    def label_map_for(self, classes: list[str]) -> LabelMap:
        """Return the label map, or the identity over ``classes`` when none is given."""
        label_map = self.resolved_label_map()
        if label_map is not None:
            return label_map
        base = identity_map(classes)
        updates = {k: v for k, v in (("label_seconds", self.label_seconds), ("on_unknown", self.on_unknown_label)) if v}
        return base.model_copy(update=updates) if updates else base

    def path_of(self, name: str) -> Path:
        """Return ``name`` resolved against the dataset folder."""
        path = Path(name).expanduser()
        return path if path.is_absolute() or self.root is None else self.root / path


def load_dataset_spec(path: str | Path) -> DatasetSpec:
    """Return the description of the dataset at ``path`` (a folder or a ``dataset.yaml``).

    Checks that every file it names exists; problems raise one-line :class:`DataError`.
    """
    path = Path(path).expanduser()
    if path.is_file() and path.suffix.lower() in (".yaml", ".yml"):
        return _from_yaml(path)
    if not path.exists():
        raise DataError(f"dataset '{path}' does not exist; give a folder of recordings or a dataset.yaml")
    if path.is_file():
        raise DataError(f"dataset '{path}' is a file; give its folder, or a dataset.yaml (one recording: use load_recording)")
    if not path.is_dir():
        raise DataError(f"dataset '{path}' is not a regular file or folder (a device or a pipe); give a folder of "
                        "recordings or a dataset.yaml")
    named = path / DATASET_FILE
    if os.path.lexists(named) and not named.is_file():
        # Said, never passed over (issue 46): a FIFO, folder, device link or loop there had the folder discovered.
        read_yaml_text(named, "dataset description", DataError)
    if named.is_file() and not (path / "dataset_description.json").is_file():
        return _from_yaml(named)
    if (path / "dataset_description.json").is_file():
        from passport_kit.signals.bids import discover_bids

        options = _read_yaml(path / DATASET_FILE) if (path / DATASET_FILE).is_file() else {}
        return discover_bids(path, options)
    return discover_folder(path)


def _read_yaml(path: Path) -> dict:
    """Return the mapping in a YAML file; syntax problems raise :class:`DataError` with the line."""
    try:
        data = load_yaml(read_yaml_text(path, "dataset description", DataError))
    except yaml.YAMLError as exc:
        where, problem = yaml_problem(exc)
        raise DataError(f"malformed {path}{where}: {problem}; fix the YAML syntax (indentation, colons, quotes)") from None
    except OSError as exc:
        raise DataError(f"cannot read {path} ({exc.strerror})") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise DataError(f"malformed {path}: expected a mapping of keys (task, classes, recordings, ...), got {type(data).__name__}")
    return data


def _from_yaml(path: Path) -> DatasetSpec:
    """Return the spec in a ``dataset.yaml``, validated, with every named file checked."""
    data = _read_yaml(path)
    for reserved in ("origin", "root"):
        if reserved in data:
            raise DataError(f"malformed {path}: '{reserved}' is not a dataset.yaml key; remove it")
    spec = spec_from_dict(data, root=path.parent, origin="yaml", source=str(path))
    if not spec.recordings:
        raise DataError(f"malformed {path}: 'recordings' is empty; list at least one recording (subject, file)")
    if not spec.allow_outside_paths:
        check_inside(spec, path)
    missing = []
    for rec in spec.recordings:
        for name in (rec.file, rec.labels):
            if name is not None and not spec.path_of(name).exists():
                missing.append(name)
    if missing:
        shown = ", ".join(missing[:8]) + (f" and {len(missing) - 8} more" if len(missing) > 8 else "")
        raise DataError(f"{path} names files that do not exist: {shown}; fix the paths (relative to {path.parent})")
    _warn_shared_files(spec, path)
    return spec


def _warn_shared_files(spec: DatasetSpec, path: Path) -> None:
    """Warn when one recording file is listed for two subjects: its windows could land in training and test at once."""
    owner: dict[Path, str] = {}
    for rec in spec.recordings:
        where = spec.path_of(rec.file).resolve()
        if owner.setdefault(where, rec.subject) != rec.subject:
            warn(f"{path} lists '{rec.file}' for subjects {owner[where]} and {rec.subject}: its windows can be "
                 "in training and evaluation at once, which inflates every score; list each recording under "
                 "its one subject")
            return


def check_inside(spec: DatasetSpec, path: Path) -> None:
    """Refuse (DataError) files of ``spec`` that resolve outside its folder, by any name.

    A relative name that leaves the folder (``../../etc/passwd``), a symlink out of it and an
    absolute path elsewhere (``/etc/passwd``: issue 35 found it read after a mere warning) are
    refused, so that a dataset.yaml from elsewhere reads nothing but its own folder;
    ``allow_outside_paths: true`` in the dataset.yaml says reading them is intended. A symlink
    loop is refused by name.
    """
    root = path.parent.resolve()
    for rec in spec.recordings:
        for key, name in (("file", rec.file), ("labels", rec.labels)):
            if name is None:
                continue
            try:
                where = spec.path_of(name).resolve(strict=False)
            except (RuntimeError, OSError):  # a symlink loop (RuntimeError before Python 3.13)
                raise DataError(f"{path}: '{key}: {name}' ({rec.subject}) is a symlink loop (a link that points back "
                                "at itself); replace it with the file") from None
            if where.is_relative_to(root):
                continue
            how = "is an absolute path" if Path(name).expanduser().is_absolute() else "resolves"
            raise DataError(f"{path}: '{key}: {name}' ({rec.subject}) {how} outside the dataset folder {root}; "
                            "keep the dataset's files inside it, or set 'allow_outside_paths: true' in the "
                            "dataset.yaml to read them where they are")


def spec_from_dict(data: dict, *, root: Path | None, origin: str, source: str) -> DatasetSpec:
    """Return a validated :class:`DatasetSpec`; a pydantic error becomes one-line :class:`DataError`."""
    try:
        spec = DatasetSpec.model_validate({**data, "root": root, "origin": origin})
    except ValidationError as exc:
        err = exc.errors()[0]
        if err.get("type") == "extra_forbidden":  # name the unknown key, not just "extra inputs"
            where = _location(err["loc"][:-1], data)
            raise DataError(f"malformed {source}: {where}'{err['loc'][-1]}' is not a dataset.yaml key; check its "
                            "spelling (docs/data.md lists the keys)") from None
        loc = _location(err.get("loc", ()), data)
        msg = validation_problem(exc)[1]
        raise DataError(f"malformed {source}: {loc}{msg}; see docs/data.md for the dataset.yaml format") from None
    if spec.label_map is not None:
        try:
            spec.resolved_label_map()
        except DataError as exc:
            raise DataError(f"malformed {source}: {exc}") from None
    return spec


def _location(loc: tuple, data: dict) -> str:
    """Return a readable place for a pydantic error location, e.g. ``recordings[2] (s03).file: ``."""
    fields = set(DatasetSpec.model_fields) | set(RecordingSpec.model_fields)
    parts: list[str] = []
    for i, item in enumerate(loc):
        if isinstance(item, int) and i > 0 and loc[i - 1] == "recordings":
            label = ""
            try:
                label = f" ({data['recordings'][item]['subject']})"
            except (KeyError, IndexError, TypeError):
                pass
            parts[-1] = f"{parts[-1]}[{item}]{label}"
        elif isinstance(item, str) and (item in fields or (i > 0 and loc[i - 1] in ("channels", "label_map"))):
            parts.append(item)
    return ".".join(parts) + ": " if parts else ""


# ---------------------------------------------------------------------------- discovery

#: Suffixes of a recording found by folder discovery (text and CSV files are labels there: yaml only).
_DISCOVER_SUFFIXES = tuple(s for s in FORMATS if s not in TEXT_FORMATS)
_LABEL_SUFFIXES = (".csv", ".tsv", ".txt", ".edf")
_STEM_TAILS = re.compile(r"[-_.](psg|eeg|raw)$", flags=re.IGNORECASE)
_HYPNO_WORDS = ("hypnogram", "hypno", "labels", "stages", "scoring")


def _is_label_file(path: Path) -> bool:
    """Return True for files that name themselves as hypnograms or labels."""
    return any(word in path.name.lower() for word in _HYPNO_WORDS)


def _label_file_for(recording: Path, candidates: list[Path]) -> Path | None:
    """Return the label file sharing ``recording``'s stem (``s01.edf`` → ``s01_hypnogram.csv``, ...)."""
    stem = recording.name[: -len(recording_suffix(recording))]
    stems = {stem.lower(), _STEM_TAILS.sub("", stem).lower()}
    names = set()
    for s in stems:
        for word in _HYPNO_WORDS:
            for sep in ("_", "-", "."):
                names.add(f"{s}{sep}{word}")
                names.add(f"{word}{sep}{s}")
        names.add(s)
    labelish = [c for c in candidates if c != recording and c.suffix.lower() in _LABEL_SUFFIXES]
    for cand in labelish:
        if cand.name[: -len(cand.suffix)].lower() in names:
            return cand
    # Sleep-EDF pairs SC4001E0-PSG.edf with SC4001EC-Hypnogram.edf: the stems differ in their
    # last character (the scorer), so accept a single hypnogram that matches all but that one.
    base = _STEM_TAILS.sub("", stem).lower()[:-1]
    near = [c for c in labelish if _is_label_file(c) and len(base) >= 4
            and re.sub(r"[-_.]?(hypnogram|hypno|labels|stages|scoring)$", "", c.stem.lower())[:-1] == base]
    return near[0] if len(near) == 1 else None


def discover_folder(folder: Path) -> DatasetSpec:
    """Return the spec of a plain folder of recordings (Sleep-EDF style), found by file names.

    Each recording (not a hypnogram) becomes one entry; subject = its stem without a ``-PSG``
    style tail. Labels: a same-stem label file if there is one, else the recording's own
    EDF+ annotations (those the ``aasm`` map knows; recordings without any are unlabeled).
    """
    files = sorted(p for p in folder.iterdir() if p.is_file())
    recordings = []
    for path in files:
        suffix = recording_suffix(path)
        if not is_recording_file(path) or (suffix == ".edf" and _is_label_file(path)):
            continue
        stem = path.name[: -len(suffix)]
        labels = _label_file_for(path, files)
        recordings.append(RecordingSpec(
            subject=_STEM_TAILS.sub("", stem) or stem,
            file=path.name,
            labels=labels.name if labels is not None else None,
            annotation_labels=labels is None,
        ))
    if not recordings:
        known = ", ".join(_DISCOVER_SUFFIXES)
        raise DataError(
            f"no recordings found in '{folder}' (looked for {known}); add them, or describe the dataset in {folder / DATASET_FILE}"
        )
    return DatasetSpec(task="sleep-staging", label_map="aasm", recordings=recordings, origin="discovered", root=folder)
