"""Fixtures of the simulator tests: small montages in the MNE head frame (mm)."""

from __future__ import annotations

import pytest
from simulator_helpers import POS, make_montage

from passport_kit.montage import Montage


@pytest.fixture
def ear_montage() -> Montage:
    """Return four in-ear contacts against Cz plus two within-ear and one cross-ear derivation."""
    return make_montage("sim-ear", [
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
    return make_montage("sim-psg", [
        {"name": "Fz-M2", "position": POS["Fz"], "reference_position": POS["M2"]},
        {"name": "C4-M1", "position": POS["C4"], "reference_position": POS["M1"]},
        {"name": "O2-M1", "position": POS["O2"], "reference_position": POS["M1"]},
        {"name": "E1-M2", "position": [-45.0, 95.0, -10.0], "reference_position": POS["M2"], "kind": "eog"},
        {"name": "Chin", "position": [0.0, 85.0, -100.0], "reference_position": [10.0, 85.0, -100.0],
         "kind": "emg"},
    ], reference="linked-ears")
