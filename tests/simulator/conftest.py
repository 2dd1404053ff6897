"""Fixtures of the simulator tests: small montages in the MNE head frame (mm)."""

from __future__ import annotations

import pytest

from passport_kit.montage import Montage

#: colin27 head-frame positions (mm) and in-ear contacts by rule inear-v1 (montages.md §3.3).
POS = {
    "Fz": [0.3, 81.9, 77.6], "Cz": [0.4, 9.2, 103.6], "C4": [65.3, 23.6, 103.7],
    "O2": [27.7, -80.5, 54.7], "M1": [-88.0, -17.4, -25.7], "M2": [83.9, -18.0, -25.8],
    "ELA": [-85.5, -8.0, 12.0], "ELB": [-85.5, -10.0, -2.0], "ELE": [-76.5, 3.5, 0.0],
    "ELI": [-76.5, -3.5, 0.0], "ERA": [85.5, -8.0, 12.0], "ERB": [85.5, -10.0, -2.0],
}


def _montage(name: str, channels: list[dict], reference: str = "Cz") -> Montage:
    return Montage.from_dict({"name": name, "units": "mm", "reference": reference, "channels": channels})


@pytest.fixture
def ear_montage() -> Montage:
    """Return four in-ear contacts against Cz plus two within-ear and one cross-ear derivation."""
    return _montage("sim-ear", [
        {"name": "ELA", "position": POS["ELA"]},
        {"name": "ELB", "position": POS["ELB"]},
        {"name": "ELE", "position": POS["ELE"]},
        {"name": "ERA", "position": POS["ERA"]},
        {"name": "ELA-ELE", "position": POS["ELA"], "reference_position": POS["ELE"]},
        {"name": "ELB-ELI", "position": POS["ELB"], "reference_position": POS["ELI"]},
        {"name": "ELA-ERA", "position": POS["ELA"], "reference_position": POS["ERA"]},
    ])


@pytest.fixture
def psg_montage() -> Montage:
    """Return a small PSG-like montage: scalp against the contralateral mastoid, EOG, chin EMG."""
    return _montage("sim-psg", [
        {"name": "Fz-M2", "position": POS["Fz"], "reference_position": POS["M2"]},
        {"name": "C4-M1", "position": POS["C4"], "reference_position": POS["M1"]},
        {"name": "O2-M1", "position": POS["O2"], "reference_position": POS["M1"]},
        {"name": "E1-M2", "position": [-45.0, 95.0, -10.0], "reference_position": POS["M2"], "kind": "eog"},
        {"name": "Chin", "position": [0.0, 85.0, -100.0], "reference_position": [10.0, 85.0, -100.0],
         "kind": "emg"},
    ], reference="linked-ears")
