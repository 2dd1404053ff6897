"""Labels: reading label files, label maps, and turning raw values into per-window classes.

A *label map* turns the raw values a scorer wrote (``"1"``, ``"Sleep stage 2"``, ``"S4"``)
into class names (``W``, ``N2``, ``N3``) or drops them (``None``: artefact, unscored). Built-in
maps, by name:

``aasm``
    AASM names (``W``/``Wake``, ``N1``, ``N2``, ``N3``, ``REM``/``R``) and the Sleep-EDF
    annotation strings (``Sleep stage W``, ``Sleep stage 1`` ... ``Sleep stage 4``,
    ``Sleep stage R``; R&K stages 3 and 4 → N3; ``Sleep stage ?`` and ``Movement time``
    dropped). Any other value is an error.
``eesm``
    The EESM ear-EEG scoring codes: 1 W, 2 REM, 3 N1, 4 N2, 5 N3; every other code
    (6 arousal, 7 artefact, 8 unscored) dropped.
``rk``
    Rechtschaffen & Kales at **5-s** resolution (DREAMS codes 5 W, 4 REM, 3 S1, 2 S2, 1 S3,
    0 S4, or the names W, S1 ... S4, REM, MT), converted to 30-s AASM epochs: S3 and S4 → N3,
    and each epoch takes the majority of its six 5-s values. Other values (-1, MT) dropped.

A label file whose header names an onset column (``onset``, ``onset_s``, ``start_s``: the simulator writes
``stage,onset_s``) is read by onset, not by row order (:func:`read_label_file`, issue 56): a scorer's export with
its rows sorted some other way gives the same labels, and onsets that are not one per epoch are refused.

Caveat (as for any R&K → AASM conversion): R&K and AASM differ in more than the merge of
S3/S4 (e.g. the arousal and slow-wave amplitude rules), so converted hypnograms are close to,
not identical with, a native AASM scoring.
"""

from __future__ import annotations

import csv
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from passport_kit.errors import LabelError
# AASM stage names in their conventional integer order (0=W ... 4=REM): the simulator's, the label readers' and
# the hypnogram's vocabulary, defined on the ground floor so that the hypnogram imports no reader.
from passport_kit.stage_names import AASM_STAGES

#: The default class list of a sleep-staging dataset (dataset.yaml without ``classes``): the stage names.
AASM_CLASSES: tuple[str, ...] = AASM_STAGES

OnUnknown = Literal["raise", "drop"]


class LabelMap(BaseModel):
    """Return-value object: raw label value → class name (``None`` = drop), matched case-insensitively.

    ``label_seconds`` is the duration of one raw value (None: one value per window);
    ``on_unknown`` says what happens to a value the map does not list.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    mapping: dict[str, str | None]
    label_seconds: float | None = None
    on_unknown: OnUnknown = "drop"

    def lookup(self, value: str) -> tuple[bool, str | None]:
        """Return ``(known, class_or_None)`` for one raw value (whitespace stripped, case folded)."""
        folded = _folded(self.mapping)
        key = value.strip().casefold()
        if key in folded:
            return True, folded[key]
        return False, None

    @property
    def targets(self) -> list[str]:
        """Return the class names this map produces, in first-seen order."""
        return list(dict.fromkeys(v for v in self.mapping.values() if v is not None))


def _folded(mapping: dict[str, str | None]) -> dict[str, str | None]:
    """Return ``mapping`` with case-folded, stripped keys."""
    return {k.strip().casefold(): v for k, v in mapping.items()}


_AASM = {
    "W": "W", "Wake": "W", "N1": "N1", "N2": "N2", "N3": "N3", "REM": "REM", "R": "REM",
    "Sleep stage W": "W", "Sleep stage 1": "N1", "Sleep stage 2": "N2", "Sleep stage 3": "N3",
    "Sleep stage 4": "N3", "Sleep stage R": "REM", "Sleep stage ?": None, "Movement time": None,
}
_EESM = {"1": "W", "2": "REM", "3": "N1", "4": "N2", "5": "N3"}
_RK = {
    "5": "W", "4": "REM", "3": "N1", "2": "N2", "1": "N3", "0": "N3",
    "W": "W", "S1": "N1", "S2": "N2", "S3": "N3", "S4": "N3", "REM": "REM", "MT": None,
}

BUILTIN_LABEL_MAPS: dict[str, LabelMap] = {
    "aasm": LabelMap(name="aasm", mapping=_AASM, on_unknown="raise"),
    "eesm": LabelMap(name="eesm", mapping=_EESM, on_unknown="drop"),
    "rk": LabelMap(name="rk", mapping=_RK, label_seconds=5.0, on_unknown="drop"),
}


def get_label_map(name: str) -> LabelMap:
    """Return the built-in label map called ``name`` (``aasm``, ``eesm``, ``rk``)."""
    try:
        return BUILTIN_LABEL_MAPS[name.strip().lower()]
    except KeyError:
        raise LabelError(
            f"unknown label map '{name}'; use one of {', '.join(BUILTIN_LABEL_MAPS)} or give a mapping "
            f"like {{\"1\": W, \"2\": REM}}"
        ) from None


def identity_map(classes: Sequence[str]) -> LabelMap:
    """Return the map used without ``label_map``: each class name stands for itself, others are errors."""
    return LabelMap(name="classes", mapping={c: c for c in classes}, on_unknown="raise")


# ------------------------------------------------------------------------------- reading

#: First cells that mark a header row in a label file (compared case-insensitively).
_HEADER_WORDS = {"label", "labels", "stage", "stages", "sleep_stage", "sleepstage", "hypnogram",
                 "class", "value", "trial_type", "staging", "annotation", "description"}


#: Header names of an onset column (seconds from the recording's start), compared case-insensitively: a scorer's
#: file with one (the simulator writes ``stage,onset_s``) is placed by onset, not by row order (issue 56).
_ONSET_WORDS = {"onset", "onset_s", "onset_sec", "onset_secs", "onset_seconds", "onset (s)", "start", "start_s",
                "start_sec", "start_seconds", "start (s)"}
#: Onsets closer than this (seconds) to the epoch grid are on it (a spreadsheet writes 30.000000001).
_ONSET_TOLERANCE = 1e-3


def read_label_file(path: str | Path, *, column: str | None = None, max_lines: int | None = None) -> list[str | None]:
    """Return the raw label values of a text label file, one per epoch, in time order (first column).

    Accepts ``.csv``/``.tsv``/``.txt`` (comma, tab or semicolon separated, or one value per
    line, which may contain spaces such as ``Sleep stage W``). Empty
    lines and ``#`` comments are skipped, and so is a header: a ``[Name]`` line (DREAMS) or a
    first row that names a column (``stage``, ``label``, ``onset_s``, ...). With ``column``,
    the header row must name it and that column is read instead of the first (or the first that is not an onset).

    A header that names an onset column (``onset``, ``onset_s``, ``start_s``: seconds from the recording's start)
    places each value by its onset: rows are sorted by it, and epochs before the first onset are unscored (None).
    Onsets must be numbers, 0 or more, one per epoch on one grid (the step between most neighbours): a duplicate,
    a gap or an overlap is refused in one :class:`LabelError` line naming the rows (a wrong alignment would give a
    wrong agreement that looks right). A file without onsets keeps its row order.

    ``max_lines``: refuse a file of more lines before any is parsed (:func:`label_lines_bound` of the
    recording; issue 57: a 56 MB file was parsed for 89 s before its count was refused).
    """
    path = Path(path)
    numbered = _label_rows(path, max_lines)
    delimiter = _delimiter(numbered[0][1])
    table = [(line_no, _split(row, delimiter)) for line_no, row in numbered]
    first = [c.strip() for c in table[0][1]]
    folded = [c.casefold() for c in first]
    onset_at = next((i for i, c in enumerate(folded) if c in _ONSET_WORDS), None)
    index = 0
    if column is not None:
        if column not in first:
            raise LabelError(
                f"label file '{path}' has no column '{column}'; its first row is {', '.join(first)}; "
                f"set label_column to one of them"
            )
        index = first.index(column)
        table = table[1:]
    elif first and (first[0].startswith("[") or onset_at is not None or folded[0] in _HEADER_WORDS):
        table = table[1:]
        # 'onset_s,stage': the labels are the first column that names a label, else the first that is no onset.
        index = next((i for i, c in enumerate(folded) if c in _HEADER_WORDS),
                     next((i for i in range(len(first)) if i != onset_at), 0))
    else:
        onset_at = None  # no header: nothing names an onset column
    values = [_cell(path, line_no, cells, index) for line_no, cells in table]
    if onset_at is None or not table:
        return list(values)
    onsets = [_onset(path, line_no, _cell(path, line_no, cells, onset_at)) for line_no, cells in table]
    return _by_onset(path, values, onsets, [line_no for line_no, _ in table])


#: The bytes a label line may take on average under :func:`label_lines_bound` (an onset, a stage and a comment).
_MAX_LINE_BYTES = 200


def label_lines_bound(n_windows: int, window_seconds: float, label_seconds: float | None = None) -> int:
    """Return the most lines a label file of a recording of ``n_windows`` windows of ``window_seconds`` may hold: one
    label per second (R&K files give one per 5 s) or per ``label_seconds`` where a label map gives shorter ones, twice
    over for comments and blank lines, and at least 1000."""
    per_second = 1.0 / min(1.0, label_seconds) if label_seconds and label_seconds > 0 else 1.0
    return max(1000, 2 * int(np.ceil(n_windows * window_seconds * per_second)))


def _label_rows(path: Path, max_lines: int | None = None) -> list[tuple[int, str]]:
    """Return ``(line number, line)`` of every row of a label file that is not blank or a ``#`` comment (a file of more
    than ``max_lines`` lines refused before any line is decoded or split)."""
    check_label_path(path, "label file", "check 'labels:' in dataset.yaml")
    if max_lines is not None and path.stat().st_size > max_lines * _MAX_LINE_BYTES:  # nothing read yet
        raise LabelError(f"label file '{path}' has {path.stat().st_size:,} bytes, more than labels of this recording "
                         f"take (at most {max_lines * _MAX_LINE_BYTES:,}: one label per second); check the file is "
                         "the right one for this recording")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise LabelError(f"cannot read label file '{path}' ({exc.strerror}); check its permissions") from None
    lines = data.count(b"\n") + 1
    if max_lines is not None and lines > max_lines:  # counted in C: a big file is refused at once
        raise LabelError(f"label file '{path}' has {lines:,} lines, more than labels of this recording take (at most "
                         f"{max_lines:,}: one label per second); check the file is the right one for this recording")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        found = ("UTF-16" if data[:2] in (b"\xff\xfe", b"\xfe\xff")
                 else f"byte {data[exc.start:exc.start + 1].hex()} at offset {exc.start}, Latin-1 or another code page?")
        raise LabelError(f"label file '{path}' is not UTF-8 text ({found}); save it as UTF-8 (a spreadsheet's "
                         "'CSV UTF-8', or iconv -t UTF-8)") from None
    rows = [(k, line) for k, line in enumerate(text.splitlines(), start=1)
            if line.strip() and not line.lstrip().startswith("#")]
    if not rows:
        raise LabelError(f"label file '{path}' is empty; it needs one label per window (first column)")
    return rows


def _cell(path: Path, line_no: int, cells: list[str], index: int) -> str:
    """Return cell ``index`` of row ``line_no``, stripped (a row without it is refused)."""
    if index >= len(cells):
        raise LabelError(f"label file '{path}': row {line_no} has no column {index + 1}; fix or remove the row")
    return cells[index].strip()


def _onset(path: Path, line_no: int, cell: str) -> float:
    """Return the onset (s) of row ``line_no``: a finite number, 0 or more."""
    try:
        onset = float(cell)
    except ValueError:
        onset = float("nan")
    if not np.isfinite(onset):
        raise LabelError(f"label file '{path}': row {line_no} has onset {_excerpt(cell)}, not a number of seconds; "
                         "onsets are seconds from the recording's start")
    if onset < 0:
        raise LabelError(f"label file '{path}': row {line_no} has a negative onset ({onset:g} s); onsets are seconds "
                         "from the recording's start, 0 or more")
    return onset


def _by_onset(path: Path, values: list[str], onsets: list[float], line_nos: list[int]) -> list[str | None]:
    """Return ``values`` sorted by onset, with unscored (None) epochs before the first; refuse what is not one grid.

    The grid's step is the commonest step between neighbouring onsets; a duplicate onset, a step longer (a gap) or
    shorter (an overlap) is refused, every such pair of rows named in one line.
    """
    order = np.argsort(np.asarray(onsets), kind="stable")
    t = np.asarray(onsets)[order]
    rows = [line_nos[k] for k in order]
    steps = np.diff(t)
    positive = steps[steps > _ONSET_TOLERANCE]
    step = _commonest(positive) if positive.size else None
    problems = []
    for k, d in enumerate(steps):
        pair = f"rows {rows[k]} and {rows[k + 1]} (onsets {t[k]:g} and {t[k + 1]:g} s)"
        if d <= _ONSET_TOLERANCE:
            problems.append(f"{pair} share an onset")
        elif step is not None and abs(d - step) > _ONSET_TOLERANCE:
            problems.append(f"{pair} {'leave a gap' if d > step else 'overlap'}")
    lead = 0 if step is None else t[0] / step
    if not problems and abs(lead - round(lead)) * (step or 0) > _ONSET_TOLERANCE:
        problems.append(f"row {rows[0]}'s onset {t[0]:g} s is off the {step:g}-s grid that starts at 0")
    if problems:
        more = f" and {len(problems) - 3} more" if len(problems) > 3 else ""
        grid = f"one label every {step:g} s" if step is not None else "one label per epoch"
        raise LabelError(f"label file '{path}': onsets must give {grid}: {'; '.join(problems[:3])}{more}; fix those "
                         "rows (or drop the onset column to read the labels in row order)")
    return [None] * int(round(lead)) + [values[k] for k in order]


def _commonest(steps: np.ndarray) -> float:
    """Return the commonest of ``steps`` (to the onset tolerance; the shortest among equally common ones)."""
    rounded = np.round(steps / _ONSET_TOLERANCE) * _ONSET_TOLERANCE
    found, counts = np.unique(rounded, return_counts=True)
    return float(found[np.argmax(counts)])


#: Largest label file read (bytes): a week of 1-s labels is under 10 MB; a bigger file is not labels (issue 28:
#: a 3 GB file was read whole and ended in MemoryError).
MAX_LABEL_BYTES = 64 * 1024 * 1024


def check_label_path(path: Path, what: str, fix: str) -> None:
    """Raise LabelError unless ``path`` is a regular file of at most :data:`MAX_LABEL_BYTES` (checked before reading).

    ``what`` names the file in messages ("label file"), ``fix`` says where it was named.
    """
    if not path.exists():
        raise LabelError(f"{what} '{path}' does not exist; {fix}")
    if not path.is_file():  # a folder, /dev/zero, a FIFO: reading would fail, never end or block
        kind = "a folder" if path.is_dir() else "not a regular file (a device or a pipe)"
        raise LabelError(f"{what} '{path}' is {kind}; {fix}")
    size = path.stat().st_size
    if size > MAX_LABEL_BYTES:
        raise LabelError(f"{what} '{path}' has {size / 2**20:,.0f} MiB, more than labels take (at most "
                         f"{MAX_LABEL_BYTES // 2**20} MiB); {fix}")


def _delimiter(line: str) -> str | None:
    """Return the cell separator of a label file (None: one value per line)."""
    for candidate in ("\t", ",", ";"):
        if candidate in line:
            return candidate
    return None


def _split(line: str, delimiter: str | None) -> list[str]:
    """Return the cells of one line (quotes honoured for csv)."""
    if delimiter is None:  # one column: keep inner spaces ("Sleep stage W")
        return [line.strip()]
    return next(csv.reader([line], delimiter=delimiter))


def read_events_tsv(path: str | Path, *, column: str = "trial_type") -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Return ``(onset_s, duration_s, values)`` of a BIDS ``*_events.tsv`` using ``column`` as the label."""
    path = Path(path)
    check_label_path(path, "events file", "BIDS labels come from *_events.tsv next to the recording")
    with path.open(encoding="utf-8-sig", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    if not rows:
        return np.zeros(0), np.zeros(0), []
    for needed in ("onset", column):
        if needed not in rows[0]:
            raise LabelError(
                f"events file '{path}' has no column '{needed}'; it has {', '.join(rows[0])}; "
                f"pass label_column= one of them"
            )
    onsets, durations, values = [], [], []
    for row in rows:
        value = (row.get(column) or "").strip()
        if value in ("", "n/a"):
            continue
        try:
            onsets.append(float(row["onset"]))
            duration = (row.get("duration") or "0").strip()
            durations.append(0.0 if duration in ("", "n/a") else float(duration))
        except ValueError:
            raise LabelError(f"events file '{path}': onset/duration '{row['onset']}' is not a number; fix the row") from None
        values.append(value)
    return np.asarray(onsets, dtype=np.float64), np.asarray(durations, dtype=np.float64), values


# ---------------------------------------------------------------------------- converting

def labels_from_intervals(
    onsets: np.ndarray, durations: np.ndarray, values: Sequence[str], n_windows: int, window_seconds: float
) -> list[str | None]:
    """Return one raw value (or None) per window from annotated intervals (seconds from the start).

    A window takes the value of the interval that covers its midpoint (a later interval wins
    where intervals overlap); a zero-length event labels the window it falls in.
    """
    out: list[str | None] = [None] * n_windows
    mids = (np.arange(n_windows) + 0.5) * window_seconds
    for onset, duration, value in zip(onsets, durations, values):
        if duration > 0:
            hit = np.nonzero((mids >= onset) & (mids < onset + duration))[0]
        else:
            k = int(onset // window_seconds)
            hit = [k] if 0 <= k < n_windows else []
        for k in hit:
            out[int(k)] = value
    return out


def majority_per_window(classes: Sequence[str | None], per_window: int) -> list[str | None]:
    """Return one class per window: the most common of each ``per_window`` consecutive values.

    ``None`` (dropped) counts as a value of its own, so an epoch mostly unscored stays
    unscored. Ties go to the value seen first in the epoch.
    """
    out: list[str | None] = []
    for start in range(0, len(classes) - per_window + 1, per_window):
        group = list(classes[start : start + per_window])
        counts = Counter(group)
        best = max(counts.values())
        out.append(next(v for v in group if counts[v] == best))
    return out


#: Values of R&K hypnograms (DREAMS, Sleep-EDF exports): 5=W 4=REM 3..0=S1..S4, negatives and 6-9 for movement/unscored.
_RK_CODES = frozenset({"0", "1", "2", "3", "4", "5", "6", "7", "9", "-1", "-2", "-3"})


def _excerpt(value: str, limit: int = 24) -> str:
    """Return ``value`` escaped (``repr``) and cut to ``limit`` characters, for an error message."""
    return repr(value[:limit]) + ("..." if len(value) > limit else "")


def shown_values(values: list[str], most: int = 3) -> str:
    """Return at most ``most`` of ``values``, each escaped and cut short, and how many more there are: what an error may
    show of a file that may not be labels at all (a path named by mistake, or on purpose: issues 35 and 46)."""
    shown = ", ".join(_excerpt(v) for v in values[:most])
    return shown + (f" and {len(values) - most} more" if len(values) > most else "")


def _unknown_label_hints(unknown: list[str], label_map: LabelMap, policy: str) -> str:
    """Return the ways out of an unknown-label error other than listing every value (so that fixing it cannot loop)."""
    hints = []
    if policy == "raise":
        hints.append("or set 'on_unknown_label: drop' to leave every value the map does not list unlabeled")
    if label_map.name != "rk" and set(unknown) <= _RK_CODES:
        hints.append("if these are R&K scores (DREAMS: 5=W 4=REM 3..0=S1..S4, one value per 5 s), "
                     "'label_map: rk' maps them and sets label_seconds: 5")
    return "; " + "; ".join(hints) if hints else ""


def _label_seconds_hint(n_values: int, n_windows: int, per_value: float) -> str:
    """Return a hint when ``n_values`` look like several values per window (e.g. R&K's one per 5 s), else ''."""
    if n_windows < 1 or n_values < 2 * n_windows:
        return ""
    per_window = n_values // n_windows
    if n_values - per_window * n_windows >= per_window:  # more left over than one window's worth: not that
        return ""
    seconds = per_value / per_window
    return (f"; {n_values} values for {n_windows} windows look like one value per {seconds:g} s: set "
            f"'label_seconds: {seconds:g}' in dataset.yaml (the 'rk' map sets 5)")


def encode_labels(
    values: Sequence[str | None],
    label_map: LabelMap,
    classes: Sequence[str],
    *,
    n_windows: int,
    window_seconds: float,
    on_unknown: OnUnknown | None = None,
    source: str = "labels",
) -> np.ndarray:
    """Return class indices, shape ``(N,)`` int64 (``-1`` = dropped or unlabeled), for ``n_windows`` windows.

    ``values`` are raw values at the map's ``label_seconds`` resolution (one per window when
    None); ``None`` entries are unlabeled. Raises :class:`LabelError` for unknown values (with
    ``on_unknown='raise'``), a count that does not match the recording, or a file none of
    whose values the map knows.
    """
    policy = on_unknown or label_map.on_unknown
    mapped: list[str | None] = []
    unknown: list[str] = []
    for value in values:
        if value is None:
            mapped.append(None)
            continue
        known, cls = label_map.lookup(value)
        if not known:
            unknown.append(value)
        mapped.append(cls)
    distinct_unknown = sorted(set(unknown))
    if distinct_unknown and (policy == "raise" or len(unknown) == sum(v is not None for v in values)):
        # A short, escaped excerpt: a file that is not labels at all (a path named by mistake, or
        # on purpose) must not be echoed into the error (issue 35).
        shown = shown_values(distinct_unknown)
        known = ", ".join(list(label_map.mapping)[:12])
        knows = f"classes are {known}" if label_map.name == "classes" else f"map '{label_map.name}' knows {known}"
        raise LabelError(
            f"{source}: unknown label values {shown} ({knows}); add them to label_map in dataset.yaml "
            f"(a class name, or null to drop them){_unknown_label_hints(distinct_unknown, label_map, policy)}"
        )
    per_value = label_map.label_seconds or window_seconds
    ratio = window_seconds / per_value
    if abs(ratio - round(ratio)) > 1e-9 or round(ratio) < 1:
        raise LabelError(
            f"{source}: labels of {per_value:g} s cannot be combined into windows of {window_seconds:g} s; "
            f"use a window_seconds that is a whole multiple of {per_value:g}"
        )
    ratio = int(round(ratio))
    label_windows = len(mapped) / ratio
    if abs(label_windows - n_windows) > 1e-9:
        diff = label_windows - n_windows
        unit = f"{window_seconds:g}-s windows"
        detail = f"{len(mapped)} values of {per_value:g} s = {label_windows:g} {unit}" if ratio > 1 else f"{len(mapped)} values"
        raise LabelError(
            f"{source}: labels cover {detail} but the recording holds {n_windows} {unit} "
            f"({abs(diff):g} windows {'more' if diff > 0 else 'fewer'}); give exactly one label per "
            f"window, or check the file is the right one for this recording"
            f"{_label_seconds_hint(len(mapped), n_windows, per_value) if ratio == 1 else ''}"
        )
    if ratio > 1:
        mapped = majority_per_window(mapped, ratio)
    index = {c: i for i, c in enumerate(classes)}
    missing = sorted({m for m in mapped if m is not None and m not in index})
    if missing:
        raise LabelError(
            f"{source}: label map gives classes {', '.join(missing)}, which are not in classes "
            f"[{', '.join(classes)}]; add them to 'classes' in dataset.yaml"
        )
    return np.asarray([index[m] if m is not None else -1 for m in mapped], dtype=np.int64)
