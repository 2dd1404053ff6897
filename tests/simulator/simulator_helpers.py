"""Shared positions and a montage factory for the simulator tests (imported by conftest and tests)."""

from __future__ import annotations

from passport_kit.montage import Montage

#: colin27 head-frame positions (mm) and in-ear contacts by rule inear-v1 (montages.md §3.3).
POS = {
    "Fz": [0.3, 81.9, 77.6], "Cz": [0.4, 9.2, 103.6], "C4": [65.3, 23.6, 103.7],
    "O2": [27.7, -80.5, 54.7], "M1": [-88.0, -17.4, -25.7], "M2": [83.9, -18.0, -25.8],
    "ELA": [-85.5, -8.0, 12.0], "ELB": [-85.5, -10.0, -2.0], "ELE": [-76.5, 3.5, 0.0],
    "ELI": [-76.5, -3.5, 0.0], "ERA": [85.5, -8.0, 12.0], "ERB": [85.5, -10.0, -2.0],
}


def make_montage(name: str, channels: list[dict], reference: str = "Cz") -> Montage:
    """Return a montage from channel entries in millimetres."""
    return Montage.from_dict({"name": name, "units": "mm", "reference": reference, "channels": channels})
