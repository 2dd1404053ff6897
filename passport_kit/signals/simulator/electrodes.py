"""From a montage to electrodes: which contacts exist, their keys, and the reference policy.

A channel is the potential difference between two contacts. For a bipolar channel those are
``position`` and ``reference_position``. For a monopolar channel the second contact is the
montage's ``reference``, resolved once per montage by :func:`resolve_reference`:

1. the name of one of the montage's channels (or an alias) -> that channel's position;
2. the name of an electrode of MNE's colin27 10-05 template (``Cz``, ``Fpz``, ``M1``, ...),
   also as the first word of a longer description (``"Fpz (CMS/DRL)"``) -> its position;
3. ``linked-ears`` / ``linked-mastoids`` -> the mean of the potentials at A1 and A2
   (M1 and M2 for mastoids);
4. ``average`` -> the mean of the montage's monopolar EEG contacts;
5. anything else (``"common recording reference"``, undocumented) -> the average reference
   as in 4, recorded as such in ``simulation.json``.

Contacts are identified by their position rounded to 0.1 mm (the montage hash resolution), so
the same contact in two montages is the same contact: it gets the same noise, gain and mains
pick-up (see :func:`contact_key`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from passport_kit.montage.schema import HASH_RESOLUTION_M, Montage

_LINKED = {"linked-ears": ("A1", "A2"), "linked-ear": ("A1", "A2"), "linked ears": ("A1", "A2"),
           "linked-mastoids": ("M1", "M2"), "linked mastoids": ("M1", "M2")}


@dataclass(frozen=True)
class ReferencePlan:
    """Return-value object of :func:`resolve_reference`: how monopolar channels are referenced.

    ``positions`` (R, 3) metres are averaged (R=1 for one electrode, 2 for linked ears);
    ``average`` means the mean over the montage's monopolar EEG contacts instead.
    """

    description: str
    positions: np.ndarray
    average: bool


@lru_cache(maxsize=1)
def _template_positions() -> dict[str, np.ndarray]:
    """Return colin27 10-05 head-frame positions keyed by lower-case name (metres)."""
    from passport_kit.montage.mne_bridge import template_head_positions

    ch_pos, _ = template_head_positions()
    return {name.lower(): np.asarray(p, dtype=np.float64) for name, p in ch_pos.items()}


def resolve_reference(montage: Montage) -> ReferencePlan:
    """Return how the monopolar channels of ``montage`` are referenced (see module docstring)."""
    text = montage.reference.strip()
    key = text.lower()
    if key in _LINKED:
        a, b = _LINKED[key]
        pos = np.stack([_template_positions()[a.lower()], _template_positions()[b.lower()]])
        return ReferencePlan(f"linked {a}/{b}", pos, average=False)
    if key in ("average", "avg", "car", "common average"):
        return ReferencePlan("average of the montage's monopolar EEG channels", np.empty((0, 3)), True)
    words = [w for w in re.split(r"[^A-Za-z0-9]+", text) if w]
    for word in words[:1]:
        for ch in montage.channels:
            if word.lower() in {n.lower() for n in (ch.name, *ch.aliases)}:
                return ReferencePlan(f"montage channel {ch.name}", np.asarray([ch.position]), False)
        template = _template_positions()
        if word.lower() in template:
            return ReferencePlan(f"template electrode {word}", template[word.lower()][None, :], False)
    return ReferencePlan(f"average of the montage's monopolar EEG channels "
                         f"(reference '{text}' has no position)", np.empty((0, 3)), True)


def contact_key(position: np.ndarray) -> tuple[int, int, int]:
    """Return the integer identity of a contact: its position in 0.1-mm steps, offset to >= 0."""
    q = np.round(np.asarray(position, dtype=np.float64) / HASH_RESOLUTION_M).astype(np.int64)
    # SeedSequence takes non-negative integers; heads are far smaller than 1 m = 10000 steps.
    return tuple(int(v) + 10_000 for v in q)  # type: ignore[return-value]


@dataclass(frozen=True)
class ContactPlan:
    """Return-value object of :func:`plan_contacts`: unique contacts and how channels use them.

    ``positions`` (K, 3) metres, one row per unique contact (reference contacts included);
    ``active`` (C,) indexes the active contact of each channel; ``reference`` (C, K) holds the
    weights of the contacts subtracted from it (one 1.0 for an electrode, 0.5/0.5 for linked
    ears, 1/M over M contacts for an average reference).
    """

    positions: np.ndarray
    keys: tuple[tuple[int, int, int], ...]
    active: np.ndarray
    reference: np.ndarray
    reference_description: str


def plan_contacts(montage: Montage) -> ContactPlan:
    """Return the unique contacts of ``montage`` and each channel's reference weights."""
    keys: list[tuple[int, int, int]] = []
    rows: list[np.ndarray] = []

    def index(position: np.ndarray) -> int:
        key = contact_key(position)
        if key not in keys:
            keys.append(key)
            rows.append(np.asarray(position, dtype=np.float64))
        return keys.index(key)

    plan = resolve_reference(montage)
    active = np.array([index(np.asarray(ch.position)) for ch in montage.channels])
    ref_cols: list[dict[int, float]] = []
    monopolar_eeg = [i for i, ch in enumerate(montage.channels)
                     if ch.reference_position is None and ch.kind in ("eeg", "eog")]
    shared = [index(p) for p in plan.positions]
    for ch in montage.channels:
        if ch.reference_position is not None:
            ref_cols.append({index(np.asarray(ch.reference_position)): 1.0})
        elif plan.average and monopolar_eeg:
            ref_cols.append({int(active[i]): 1.0 / len(monopolar_eeg) for i in monopolar_eeg})
        elif shared:
            ref_cols.append({k: 1.0 / len(shared) for k in shared})
        else:
            ref_cols.append({})
    reference = np.zeros((len(montage.channels), len(keys)))
    for c, cols in enumerate(ref_cols):
        for k, w in cols.items():
            reference[c, k] += w
    return ContactPlan(np.array(rows).reshape(-1, 3), tuple(keys), active, reference,
                       plan.description)
