"""Recording metadata that tells the classes apart: the headers' sampling rate, prefilters and units.

Where each recording holds one class (rest vs task), a difference in how the recordings were made, between the
classes within a subject or across the whole dataset, is something a model learns instead of the task (eegmat
subjects 08, 10, 11: LP 45 Hz vs LP 250 Hz between rest and arithmetic). Prefilters outside the band-pass that
preprocessing applies do not count. ``check`` reports it (:mod:`passport_kit.onboard.check`, "recording
metadata") and ``adapt`` warns (:func:`passport_kit.onboard.adapt.recording_setup_warnings`): both read the rule
here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

#: Header fields compared between classes → how a line names them, and their unit.
METADATA_FIELDS: dict[str, tuple[str, str]] = {"sfreq": ("sampling rate", " Hz"), "highpass": ("high-pass", " Hz"),
                                               "lowpass": ("low-pass", " Hz"), "units": ("units", "")}
#: A recording counts as one class when this share of its labeled windows has it.
ONE_CLASS_SHARE = 0.9


def recording_classes(windows: Any) -> dict[str, str]:
    """Return ``{recording: class}`` for the recordings whose labeled windows are (nearly) all one class."""
    out = {}
    for rec in sorted(set(windows.recording.tolist())):
        y = windows.y[(windows.recording == rec) & (windows.y >= 0)]
        if len(y):
            counts = np.bincount(y, minlength=len(windows.classes))
            if counts.max() >= ONE_CLASS_SHARE * len(y):
                out[rec] = windows.classes[int(counts.argmax())]
    return out


def metadata_confounds(headers: dict[str, dict[str, Any]], classes: dict[str, str], subjects: dict[str, str], *,
                       band: tuple[float, float] | None = None) -> list[str]:
    """Return one line per header field whose value differs between classes (empty: none does).

    ``headers`` ``{recording: RecordingReader.header(...)}``, ``classes`` ``{recording: its one
    class}`` (:func:`recording_classes`), ``subjects`` ``{recording: subject}``. A field is a
    confound when, within a subject, the recordings of two classes carry different values, or
    when across the dataset every value belongs to one class only. ``band`` ``(l_freq, h_freq)``
    in Hz: the band-pass preprocessing applies; prefilters outside it are clipped to it (a
    low-pass at 250 Hz and one at 45 Hz are the same under a 45 Hz band-pass top). A prefilter is then named as the
    header has it, with its value after the band-pass where that differs (issue 58: 'rest 0.3 Hz' for a header's
    0 Hz): ``rest header 0 Hz (0.3 Hz after the band-pass)``.
    """
    lines = []
    for field, (word, unit) in METADATA_FIELDS.items():
        values: dict[str, Any] = {}      # the value compared: after the band-pass
        stated: dict[str, Any] = {}      # the header's
        for rec, cls in classes.items():
            if rec not in headers:
                continue
            value = stated[rec] = headers[rec][field]
            if band is not None and field == "lowpass":
                value = min(float(value), band[1])
            elif band is not None and field == "highpass":
                value = max(float(value), band[0])
            values[rec] = value
        if len(set(values.values())) < 2:
            continue
        shown = _formatter(unit, prefilter=band is not None and field in ("highpass", "lowpass"))
        within = []
        for subject in sorted({subjects[r] for r in values}):
            per_class: dict[str, set] = {}
            for rec in (r for r in values if subjects[r] == subject):
                per_class.setdefault(classes[rec], set()).add((values[rec], stated[rec]))
            if len(per_class) > 1 and len({frozenset(v for v, _ in pairs) for pairs in per_class.values()}) > 1:
                within.append(f"{subject} (" + ", ".join(f"{c} {'/'.join(shown(*v) for v in sorted(pairs))}"
                                                         for c, pairs in sorted(per_class.items())) + ")")
        owners: dict[Any, set[str]] = {}
        for rec, value in values.items():
            owners.setdefault(value, set()).add(classes[rec])
        separated = len({c for cs in owners.values() for c in cs}) > 1 and all(len(cs) == 1 for cs in owners.values())
        if separated:
            headed = {v: sorted({stated[r] for r in values if values[r] == v}, key=str) for v in owners}
            lines.append(f"{word} tells the classes apart in every recording (" + ", ".join(
                f"{'/'.join(shown(v, h) for h in headed[v])}: {next(iter(cs))}"
                for v, cs in sorted(owners.items(), key=lambda kv: str(kv[0]))) + ")")
        elif within:
            shown_subjects = ", ".join(within[:4]) + (f" and {len(within) - 4} more" if len(within) > 4 else "")
            lines.append(f"{word} differs between classes within {len(within)} subject(s): {shown_subjects}")
    return lines


def _formatter(unit: str, *, prefilter: bool) -> Callable[[Any, Any], str]:
    """Return how a line shows ``(value after the band-pass, the header's value)``: a prefilter as the header has it,
    with its value after the band-pass where that differs; other fields by their value alone."""
    def shown(value: Any, header: Any) -> str:
        if not unit:
            return str(value)
        if not prefilter:
            return f"{value:g}{unit}"
        after = "" if float(header) == float(value) else f" ({value:g}{unit} after the band-pass)"
        return f"header {float(header):g}{unit}{after}"

    return shown


def header_confound(windows: Any, spec: Any, headers: dict[str, dict[str, Any]], preprocess: Any) -> str | None:
    """Return the line saying which header fields (rate, prefilters, units) tell the classes apart and how to make the
    recordings agree, or None: none does (or classes vary within recordings). ``check`` reports it; ``adapt`` warns."""
    classes = recording_classes(windows)
    if len(set(classes.values())) < 2:
        return None
    subjects = {rec.file: rec.subject for rec in spec.recordings}
    lines = metadata_confounds(headers, classes, subjects, band=(preprocess.l_freq, preprocess.h_freq))
    if not lines:
        return None
    advice = f"a model can learn the recording setup instead of the task; {_confound_fix(headers, classes, lines)}"
    return "; ".join(lines) + f" - {advice}"


def _confound_fix(headers: dict[str, dict[str, Any]], classes: dict[str, str], lines: list[str]) -> str:
    """Return how to make the recordings of ``classes`` agree: the band-pass settings that clip the prefilters that
    ``lines`` (:func:`metadata_confounds`) name."""
    named = {field for field, (word, _) in METADATA_FIELDS.items() if any(line.startswith(word) for line in lines)}

    def extreme(field: str, pick: Callable[..., float]) -> float | None:
        values = [float(headers[r][field]) for r in classes if r in headers and headers[r].get(field) is not None]
        return pick(values) if values else None

    top = extreme("lowpass", min) if "lowpass" in named else None
    bottom = extreme("highpass", max) if "highpass" in named else None
    fixes = []
    if bottom is not None and bottom > 0:
        # The band-pass bottom at or above every recording's own high-pass: below it, none of them has signal.
        fixes.append(f"a high-pass: 'l_freq: {bottom:g}' in dataset.yaml or --l-freq {bottom:g}")
    if top is not None:
        fixes.append(f"a low-pass: 'h_freq: {top:g}' in dataset.yaml or --h-freq {top:g}")
    return ("make the recordings agree (" + "; ".join(fixes) + ") or check that results hold without them" if fixes
            else "make the recordings agree or check that results hold without them")


__all__ = ["METADATA_FIELDS", "ONE_CLASS_SHARE", "header_confound", "metadata_confounds", "recording_classes"]
