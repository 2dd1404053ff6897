"""Conversions between :class:`~passport_kit.montage.Montage` and ``mne.channels.DigMontage``.

MNE keeps a DigMontage in its native frame (``mri`` for the colin27 template, ``unknown`` for a
digitiser file) and moves it to the head frame when it is applied to a recording. passport-kit
stores head-frame metres only, so everything that enters from MNE goes through
:func:`dig_head_positions` once.
"""

from __future__ import annotations

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
