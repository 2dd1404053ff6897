"""Helpers shared by the signals tests (importable: pytest puts this folder on sys.path)."""

from __future__ import annotations

from pathlib import Path

import mne
import numpy as np


def synthetic_raw(
    ch_names: list[str], *, sfreq: float = 256.0, seconds: float = 60.0, seed: int = 0,
    annotations: mne.Annotations | None = None,
) -> mne.io.RawArray:
    """Return a Raw of 10 Hz rhythms (30 µV) plus noise (5 µV), distinct per channel, in volts."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(round(seconds * sfreq))) / sfreq
    phases = rng.uniform(0, 2 * np.pi, len(ch_names))
    data = 30e-6 * np.sin(2 * np.pi * 10 * t[None, :] + phases[:, None])
    data += 5e-6 * rng.standard_normal(data.shape)
    raw = mne.io.RawArray(data, mne.create_info(ch_names, sfreq, "eeg"), verbose="error")
    if annotations is not None:
        raw.set_annotations(annotations)
    return raw


def write_edf(raw: mne.io.BaseRaw, path: Path) -> Path:
    """Write ``raw`` as EDF (through edfio) and return the path."""
    mne.export.export_raw(path, raw, fmt="edf", overwrite=True, verbose="error")
    return path
