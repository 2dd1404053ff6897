"""Fixtures of the signals tests: small montages and synthetic recordings in volts."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import mne
import pytest
import yaml
from signals_helpers import synthetic_raw

from passport_kit.montage import Montage

#: Positions (mm, head frame) for the test montages; only their presence matters here.
_POS = {
    "C3": [-67.1, 23.4, 104.5], "C4": [65.3, 23.6, 103.7], "O1": [-31.6, -80.6, 54.8],
    "T7": [-84.2, -16.0, -9.3], "A1": [-87.9, 2.6, -26.9], "A2": [88.0, 2.6, -26.9],
}


@pytest.fixture
def montage() -> Montage:
    """Return a three-channel scalp montage (C3, C4, O1) with one alias."""
    return Montage.from_dict({
        "name": "test-three", "units": "mm", "reference": "A2",
        "channels": [
            {"name": "C3", "position": _POS["C3"]},
            {"name": "C4", "position": _POS["C4"]},
            {"name": "O1", "position": _POS["O1"], "aliases": ["Occ-L"]},
        ],
    })


@pytest.fixture
def bipolar_montage() -> Montage:
    """Return a montage asking for T7 and the bipolar derivation A2-A1."""
    return Montage.from_dict({
        "name": "test-bipolar", "units": "mm", "reference": "linked-ears",
        "channels": [
            {"name": "T7", "position": _POS["T7"]},
            {"name": "A2-A1", "position": _POS["A2"], "reference_position": _POS["A1"]},
        ],
    })


@pytest.fixture
def make_raw() -> Callable[..., mne.io.RawArray]:
    """Return the :func:`synthetic_raw` factory."""
    return synthetic_raw


@pytest.fixture
def write_dataset(tmp_path: Path) -> Callable[..., Path]:
    """Return a function writing a dataset.yaml (a dict) into tmp_path; returns the folder."""

    def _write(spec: dict, folder: Path | None = None) -> Path:
        folder = folder or tmp_path
        (folder / "dataset.yaml").write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
        return folder

    return _write
