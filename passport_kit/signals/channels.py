"""Mapping a recording's channels onto a montage: exactly its channels, in its order.

For each montage channel, in this order of trust:

1. ``renames`` (``channels:`` of a recording in ``dataset.yaml``): montage name → the name in the file;
2. the montage name, then its aliases, compared after normalisation (case-insensitive, a
   ``EEG``/``EOG``/``EMG``/``ECG`` type prefix and a TUH ``-REF``/``-LE`` suffix removed, old 10-20
   names read as new ones: T3=T7, T4=T8, T5=P7, T6=P8), so ``EEG T3-REF`` is found for ``T7``;
3. for a bipolar montage channel (one with a ``reference_position`` and a name ``A-B``) that
   the file does not hold: ``A − B`` computed from the file's two electrodes.

A montage channel that cannot be found raises :class:`~passport_kit.errors.ChannelMappingError`
listing what the recording has.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import mne
import numpy as np

from passport_kit.errors import ChannelMappingError, DataError

if TYPE_CHECKING:  # pragma: no cover
    from passport_kit.montage import Montage

#: Old 10-20 temporal names → the names of the 10-10 system (MNE's standard templates).
OLD_TO_NEW_1020: dict[str, str] = {"t3": "t7", "t4": "t8", "t5": "p7", "t6": "p8"}
_TYPE_PREFIX = re.compile(r"^(eeg|eog|emg|ecg)\s+")
_REFERENCE_SUFFIX = re.compile(r"-(ref|le)$")
_MNE_KINDS = {"eeg", "eog", "emg", "ecg", "misc"}


def channel_key(name: str) -> str:
    """Return the normalised form of a channel name used for matching.

    Example::

        >>> channel_key("EEG T3-REF"), channel_key("eeg fp1-le"), channel_key("EEG A2-A1"), channel_key("Fc1.")
        ('t7', 'fp1', 'a2-a1', 'fc1')

    Trailing dots are padding (PhysioNet's EEG Motor Movement/Imagery files, BCI2000: ``C3..``).
    """
    key = " ".join(name.split()).casefold().rstrip(".")
    key = _TYPE_PREFIX.sub("", key)
    key = _REFERENCE_SUFFIX.sub("", key).replace(" ", "")
    return "-".join(OLD_TO_NEW_1020.get(part, part) for part in key.split("-"))


def _find(raw_names: list[str], wanted: list[str]) -> str | None:
    """Return the first recording channel matching any of ``wanted`` (exact, then by key)."""
    for name in wanted:
        if name in raw_names:
            return name
    keys = {}
    for raw_name in raw_names:
        keys.setdefault(channel_key(raw_name), raw_name)
    for name in wanted:
        hit = keys.get(channel_key(name))
        if hit is not None:
            return hit
    return None


#: A BioSemi ABC cap label: a bank letter and an electrode number (A1..A32, B1..B32, ...).
_ABC_LABEL = re.compile(r"^[A-H]([1-9]|[12][0-9]|3[0-2])$")


def _is_biosemi_abc(raw_names: list[str]) -> bool:
    """Return True when a recording names its channels by BioSemi ABC cap position (at least A1..A32 and B1).

    There ``C3`` or ``A1`` are electrode numbers, not the 10-20 sites of the same name.
    """
    labels = {n.strip() for n in raw_names if _ABC_LABEL.match(n.strip())}
    return {f"A{i}" for i in range(1, 33)} <= labels and "B1" in labels


def _bipolar_parts(name: str) -> tuple[str, str] | None:
    """Return the two electrode names of ``'A-B'``, or None when the name is not a pair."""
    parts = name.split("-")
    if len(parts) != 2 or not all(p.strip() for p in parts):
        return None
    return parts[0].strip(), parts[1].strip()


def channel_sources(
    raw_names: list[str], montage: Montage, renames: dict[str, str] | None = None, *, source: str = "recording"
) -> list[tuple[str, str | None]]:
    """Return, per montage channel, ``(active, reference)`` recording names (reference None: as is).

    Raises :class:`ChannelMappingError` naming every montage channel that cannot be found.
    """
    renames = dict(renames or {})
    unknown = sorted(set(renames) - set(montage.ch_names))
    if unknown:
        raise ChannelMappingError(
            f"{source}: 'channels' renames {', '.join(unknown)}, which montage '{montage.name}' does not have; "
            f"its channels are {', '.join(montage.ch_names)}"
        )
    sources: list[tuple[str, str | None]] = []
    missing: list[str] = []
    biosemi = _is_biosemi_abc(raw_names)
    for ch in montage.channels:
        if ch.name in renames:
            hit = _find(raw_names, [renames[ch.name]])
            if hit is None:
                raise ChannelMappingError(
                    f"{source}: 'channels' maps {ch.name} to '{renames[ch.name]}', which the recording does not have; "
                    f"it has: {', '.join(raw_names)}"
                )
            sources.append((hit, None))
            continue
        hit = _find(raw_names, [ch.name, *ch.aliases])
        if hit is not None and biosemi and _ABC_LABEL.match(hit):
            raise ChannelMappingError(
                f"{source}: the recording names its channels by BioSemi ABC cap position (A1..A32, B1..), so its "
                f"'{hit}' is not the 10-20 site {ch.name} of montage '{montage.name}'; map every montage channel "
                f"to its cap electrode explicitly ('channels:' in dataset.yaml, --rename in predict), after the "
                f"cap's layout (e.g. mne.channels.make_standard_montage('biosemi64'))")
        if hit is not None:
            sources.append((hit, None))
            continue
        pair = _bipolar_parts(ch.name) if ch.reference_position is not None else None
        if pair is not None:
            active, reference = _find(raw_names, [pair[0]]), _find(raw_names, [pair[1]])
            if active is not None and reference is not None:
                sources.append((active, reference))
                continue
        missing.append(ch.name)
    if missing:
        detail = (f"{source}: montage '{montage.name}' needs {', '.join(missing)}, not found in the recording "
                  f"(tried names, aliases, case, TUH '-REF'/'-LE', T3=T7 T4=T8 T5=P7 T6=P8, bipolar pairs); "
                  f"the recording has: {', '.join(raw_names)}")
        raise ChannelMappingError(
            f"{detail}; map them with 'channels: {{{missing[0]}: <name in file>}}' in dataset.yaml or add an alias "
            f"to the montage", missing=missing, detail=detail)
    return sources


def describe_mapping(
    raw_names: list[str], montage: Montage, renames: dict[str, str] | None = None, *, source: str = "recording"
) -> list[tuple[str, str]]:
    """Return ``(montage channel, where it comes from)`` pairs, e.g. ``("A2-A1", "A2 − A1 (derived)")``."""
    pairs = channel_sources(raw_names, montage, renames, source=source)
    return [(ch.name, active if reference is None else f"{active} − {reference} (derived)")
            for ch, (active, reference) in zip(montage.channels, pairs)]


#: Copies of a recording's samples that reading, filtering and windowing hold at once (float64 and float32).
_WORKING_COPIES = 4


def check_fits_memory(n_channels: int, n_times: int, sfreq: float, *, source: str) -> None:
    """Raise DataError when a recording's samples, with the working copies, exceed this machine's memory.

    A header can claim anything (issue 28: a sparse 200-hour EDF ended in ArrayMemoryError), so
    the size is checked before a sample is read.
    """
    import os

    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # not POSIX: no limit known
        return
    needed = n_channels * n_times * 8 * _WORKING_COPIES
    if needed > total:
        hours = n_times / sfreq / 3600 if sfreq > 0 else float("nan")
        raise DataError(f"{source} holds {hours:,.0f} hours of {n_channels} channels ({needed / 2**30:,.1f} GiB to "
                        f"process), more than this machine's memory ({total / 2**30:,.1f} GiB); check its header, or "
                        "split it into shorter recordings")


def mapped_data(
    raw: mne.io.BaseRaw, montage: Montage, renames: dict[str, str] | None = None, *, source: str | None = None
) -> np.ndarray:
    """Return the samples of ``montage.ch_names`` in montage order, ``(C, T)`` float64 in volts.

    The array behind :func:`map_channels`, read from ``raw`` in one pass and without building a
    Raw around it: where the file holds exactly the montage channels in montage order (no
    derived bipolar channel), the samples MNE read are returned as they are, with no copy.
    """
    source = source or _describe(raw)
    sources = channel_sources(list(raw.ch_names), montage, renames, source=source)
    needed = sorted({name for pair in sources for name in pair if name is not None}, key=raw.ch_names.index)
    check_fits_memory(len(needed), raw.n_times, float(raw.info["sfreq"]), source=source)
    try:
        data = raw.get_data(picks=needed)
    except Exception as exc:  # noqa: BLE001 - a lazily read file can fail only now
        reason = " ".join(str(exc).split())[:160] or type(exc).__name__
        raise DataError(f"cannot read the samples of {source} ({reason}); check that the file is complete") from None
    if [active for active, _ in sources] == needed and all(reference is None for _, reference in sources):
        return data
    row = {name: i for i, name in enumerate(needed)}
    out = np.empty((len(sources), data.shape[1]), dtype=np.float64)
    for i, (active, reference) in enumerate(sources):
        out[i] = data[row[active]]
        if reference is not None:
            out[i] -= data[row[reference]]
    return out


def map_channels(
    raw: mne.io.BaseRaw, montage: Montage, renames: dict[str, str] | None = None, *, source: str | None = None
) -> mne.io.BaseRaw:
    """Return a Raw holding exactly ``montage.ch_names``, in montage order (data in volts).

    Bipolar montage channels missing from the file are computed as active − reference.
    Annotations and the measurement date are kept. (:func:`mapped_data` gives the samples
    alone, without the Raw around them.)
    """
    out = mapped_data(raw, montage, renames, source=source)
    kinds = [ch.kind if ch.kind in _MNE_KINDS else "misc" for ch in montage.channels]
    info = mne.create_info(list(montage.ch_names), raw.info["sfreq"], kinds)
    # Same first_samp as the file, so annotation onsets keep meaning the same samples.
    mapped = mne.io.RawArray(out, info, first_samp=raw.first_samp, verbose="error")
    if raw.info["meas_date"] is not None:
        mapped.set_meas_date(raw.info["meas_date"])
    if len(raw.annotations):
        mapped.set_annotations(raw.annotations)
    return mapped


def _describe(raw: mne.io.BaseRaw) -> str:
    """Return a name for ``raw`` in messages: its file, or 'recording'."""
    files = [f for f in (raw.filenames or ()) if f]
    return f"recording '{files[0]}'" if files else "recording"
