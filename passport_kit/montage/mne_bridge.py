"""Conversions between :class:`~passport_kit.montage.Montage` and ``mne.channels.DigMontage``.

MNE keeps a DigMontage in its native frame (``mri`` for the colin27 template, ``unknown`` for a
digitiser file) and moves it to the head frame when it is applied to a recording. passport-kit
stores head-frame metres only, so everything that enters from MNE goes through
:func:`dig_head_positions` once.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, Any

import numpy as np

from passport_kit.errors import MontageError

if TYPE_CHECKING:  # pragma: no cover
    import mne

    from passport_kit.montage.schema import Montage

#: The scalp template of every built-in montage. MNE 1.13 renamed ``standard_1005`` to this.
TEMPLATE = "colin27_1005"
# Names MNE < 1.13 used for the same files (positions are bit-identical across versions).
_OLD_TEMPLATE_NAMES = {"colin27_1005": "standard_1005", "colin27_1020": "standard_1020"}


def builtin_template_names() -> list[str]:
    """Return the names of MNE's standard montages on this MNE version."""
    import mne

    return list(mne.channels.get_builtin_montages())


def make_template(kind: str = TEMPLATE) -> mne.channels.DigMontage:
    """Return MNE's standard montage ``kind``, accepting both the old and new colin27 names."""
    import mne

    known = builtin_template_names()
    candidates = [kind]
    # One name across MNE versions: colin27_* on >= 1.13, standard_* before.
    candidates += [v for k, v in _OLD_TEMPLATE_NAMES.items() if k == kind]
    candidates += [k for k, v in _OLD_TEMPLATE_NAMES.items() if v == kind]
    for name in candidates:
        if name in known:
            return mne.channels.make_standard_montage(name)
    raise MontageError(
        f"unknown MNE template '{kind}'; choose one of: {', '.join(sorted(known, key=str.lower))}"
    )


def dig_head_positions(dig: mne.channels.DigMontage) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], str]:
    """Return channel positions and fiducials of ``dig`` in the MNE head frame (metres).

    The third value is a note on how the frame was reached (for provenance), e.g.
    ``'mri -> head through the nasion/LPA/RPA fiducials'``.
    """
    import mne

    info = dig.get_positions()
    frame = info["coord_frame"]
    fid_names = ("nasion", "lpa", "rpa")
    has_fiducials = all(info.get(f) is not None for f in fid_names)
    if frame == "head":
        trans = np.eye(4)
        note = "head frame as given"
    elif has_fiducials:
        trans = mne.channels.compute_native_head_t(dig)["trans"]
        note = f"{frame} -> head through the nasion/LPA/RPA fiducials"
    else:
        # MNE itself assumes identity here (with a warning); we say so in the provenance instead.
        trans = np.eye(4)
        note = f"{frame} frame without fiducials: positions taken as head-frame coordinates"
    ch_pos = {name: mne.transforms.apply_trans(trans, np.asarray(p, dtype=np.float64))
              for name, p in info["ch_pos"].items()}
    fids = {f: mne.transforms.apply_trans(trans, np.asarray(info[f], dtype=np.float64))
            for f in fid_names if info.get(f) is not None}
    return ch_pos, fids, note


def template_head_positions(kind: str = TEMPLATE) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Return the head-frame channel positions and fiducials (metres) of MNE template ``kind``."""
    ch_pos, fids, _ = dig_head_positions(make_template(kind))
    return ch_pos, fids


@functools.lru_cache(maxsize=1)
def _template_keys() -> dict[str, np.ndarray]:
    """Return ``{casefolded 10-05 name: head-frame position (m)}`` of the colin27 template (computed once)."""
    ch_pos, _ = template_head_positions(TEMPLATE)
    return {name.casefold(): pos for name, pos in ch_pos.items()}


#: Names shaped like the 10-05 system's (a cheap filter before the template is built).
_LOOKS_1005 = re.compile(r"^(nz|iz|a[12]|m[12]|(n|fp|afp|af|aff|f|fft|ffc|ft|ftt|fc|fcc|t|ttp|c|ccp|tp|tpp|cp|cpp|p|"
                         r"ppo|po|poo|o|oi|i)(z|\d{1,2}h?))$", re.IGNORECASE)
#: A channel with a 10-05 name further than this from the template's (head frame) is suspicious.
FRAME_TOLERANCE_M = 0.02


def template_mismatch(montage: Montage) -> str | None:
    """Return a warning when ``montage``'s channels with 10-05 names lie far from MNE's template, else None.

    Compared in the head frame with colin27_1005 (``standard_1005`` before MNE 1.13), by name
    or alias (bipolar channels left out); a head-frame montage of a real cap sits within about
    1 cm of it. Warned when the median distance exceeds :data:`FRAME_TOLERANCE_M`: one
    electrode placed elsewhere on purpose is not a frame error, every electrode shifted is. The
    usual cause is positions copied from ``make_standard_montage(...).get_positions()``, which
    are in the template's MRI frame (3-5 cm off the head frame); ``passport-kit montages
    import`` converts them.
    """
    if not any(_LOOKS_1005.match(label) for ch in montage.channels for label in (ch.name, *ch.aliases)):
        return None  # no 10-05 name: the template (half a second to build) is not needed
    template = _template_keys()
    distances: list[tuple[float, str]] = []
    for ch in montage.channels:
        if ch.reference_position is not None:
            continue
        key = next((label.casefold() for label in (ch.name, *ch.aliases) if label.casefold() in template), None)
        if key is not None:
            distances.append((float(np.linalg.norm(np.asarray(ch.position, dtype=np.float64) - template[key])),
                              ch.name))
    if not distances or float(np.median([d for d, _ in distances])) <= FRAME_TOLERANCE_M:
        return None
    far = [d for d, _ in distances if d > FRAME_TOLERANCE_M]
    worst, name = max(distances)
    compared = len(distances)
    return (f"montage '{montage.name}': {len(far)} of {compared} channels with 10-05 names lie over "
            f"{FRAME_TOLERANCE_M * 100:g} cm from MNE's {TEMPLATE} template in the head frame ({name} "
            f"{worst * 100:.1f} cm off); positions copied from mne.channels.make_standard_montage(...)."
            "get_positions() are in the template's MRI frame, not the head frame - build the montage with "
            f"`passport-kit montages import {TEMPLATE} --name NAME --channels ...` instead (ignore this if "
            "the electrodes really sit there)")


def template_fiducials() -> dict[str, np.ndarray]:
    """Return nasion, LPA and RPA of the colin27 template in the head frame (metres)."""
    return template_head_positions(TEMPLATE)[1]


def montage_to_dig(montage: Montage, *, fiducials: bool = True) -> mne.channels.DigMontage:
    """Return a head-frame DigMontage of ``montage`` (active electrode per channel)."""
    import mne

    ch_pos = {ch.name: np.asarray(ch.position, dtype=np.float64) for ch in montage.channels}
    fids: dict[str, Any] = template_fiducials() if fiducials else {}
    return mne.channels.make_dig_montage(ch_pos=ch_pos, coord_frame="head", **fids)


def dig_to_montage(
    dig: mne.channels.DigMontage,
    *,
    name: str,
    description: str = "",
    reference: str = "unspecified",
    ch_names: list[str] | None = None,
    metadata: dict[str, Any] | None = None,
    units: str = "m",
) -> Montage:
    """Return a Montage of the channels of ``dig`` (all, or ``ch_names`` in that order).

    ``units`` says what the numbers in ``dig`` really are when a file reader took them for
    metres (MNE reads ``.csv``/``.tsv``/``.xyz`` numbers as metres whatever they are).
    """
    from passport_kit.montage.schema import UNITS_PER_METRE, Channel, Montage

    per_m = UNITS_PER_METRE[units]

    ch_pos, _, note = dig_head_positions(dig)
    names = list(ch_pos) if ch_names is None else list(ch_names)
    lookup = {n.casefold(): n for n in ch_pos}
    missing = [n for n in names if n not in ch_pos and n.casefold() not in lookup]
    if missing:
        raise MontageError(
            f"channel(s) {', '.join(missing)} not found in the source montage; it has: "
            f"{_preview(list(ch_pos))}"
        )
    channels = []
    for n in names:
        key = n if n in ch_pos else lookup[n.casefold()]
        pos = tuple(float(v) / per_m for v in ch_pos[key])
        channels.append(Channel(name=key, position=pos))  # type: ignore[arg-type]
    meta = {"frame_conversion": note, **(metadata or {})}
    return Montage(name=name, description=description, reference=reference,
                   channels=tuple(channels), metadata=meta)


def _preview(names: list[str], limit: int = 30) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f", ... ({len(names)} in all)" if len(names) > limit else "")
