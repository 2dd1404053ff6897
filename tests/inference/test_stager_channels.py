"""A stager alone reads no dead channel: another live one by adapt's rule, else every window flagged (issue 57)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from passport_kit.inference.stager_channels import stager_channels
from passport_kit.montage import Montage
from passport_kit.signals.windows import FLAG_FLAT
from passport_kit.sleep import StagerChoice

NAMES = ["C3", "C4", "O1"]


def _montage(names: list[str] = NAMES) -> Montage:
    sites = {"C3": [-65.3, 0.0, 60.4], "C4": [65.3, 0.0, 60.4], "O1": [-30.0, -95.0, 10.0], "EOG": [0.0, 90.0, 0.0]}
    return Montage.from_dict({"name": "t", "coordinate_frame": "head", "units": "mm", "reference": "average",
                              "channels": [{"name": n, "position": sites[n]} for n in names]})


def _night(flat: dict[int, slice], n: int = 10, c: int = 3) -> SimpleNamespace:
    flags = np.zeros((n, c), dtype=np.uint8)
    for channel, windows in flat.items():
        flags[windows, channel] = FLAG_FLAT
    return SimpleNamespace(flags=flags, quality=None, onset_s=np.arange(n) * 30.0,
                           config=SimpleNamespace(window_seconds=30.0))


def test_a_live_first_choice_is_kept() -> None:
    spec = StagerChoice("yasa", "C4")
    got = stager_channels(_night({}), _montage(), spec, "yasa")
    assert got.spec == spec and got.note is None and got.unfit is None and not got.dead.any()


def test_a_dead_first_choice_gives_way_to_the_next_live_channel() -> None:
    got = stager_channels(_night({1: slice(None)}), _montage(), StagerChoice("yasa", "C4"), "yasa")
    assert got.spec.eeg == "C3" and got.spec.name == "yasa" and got.unfit is None
    assert "C4 (dead in 10 of 10 windows)" in got.note and not got.dead.any()


def test_a_derivation_with_a_dead_reference_is_not_read() -> None:
    got = stager_channels(_night({2: slice(None)}), _montage(), StagerChoice("yasa", "C4", eeg_ref="O1"), "yasa")
    assert "O1" not in (got.spec.eeg, got.spec.eeg_ref) and "O1 (dead" in got.note


def test_no_live_eeg_channel_flags_every_window_and_names_it() -> None:
    got = stager_channels(_night({0: slice(None), 1: slice(None), 2: slice(None)}), _montage(),
                          StagerChoice("yasa", "C4"), "yasa")
    assert got.unfit is not None and "C4 (dead in 10 of 10 windows)" in got.unfit and got.dead.all()


@pytest.mark.parametrize("dead_windows", [slice(0, 3), slice(5, 10)])
def test_windows_of_a_partly_dead_channel_are_flagged(dead_windows: slice) -> None:
    got = stager_channels(_night({1: dead_windows}), _montage(), StagerChoice("yasa", "C4"), "yasa")
    expected = np.zeros(10, dtype=bool)
    expected[dead_windows] = True
    assert got.spec.eeg == "C4" and got.note is None and (got.dead == expected).all()
