"""Conversions between Montage and mne.channels.DigMontage, in the MNE head frame."""

from __future__ import annotations

from typing import Any

import mne
import numpy as np
import pytest

from passport_kit.errors import MontageError
from passport_kit.montage import Montage, get_montage
from passport_kit.montage.mne_bridge import make_template, template_fiducials


@pytest.mark.parametrize("name", ["tuh-19", "eesm19-ear", "ceegrid"])
def test_set_montage_keeps_positions_exactly(name: str) -> None:
    m = get_montage(name)
    info = mne.create_info(m.ch_names, 200.0, "eeg")
    info.set_montage(m.to_dig_montage())
    locs = np.array([ch["loc"][:3] for ch in info["chs"]])
    np.testing.assert_allclose(locs, m.positions, atol=1e-9)


def test_dig_montage_is_in_the_head_frame_with_template_fiducials() -> None:
    pos = get_montage("muse").to_dig_montage().get_positions()
    assert pos["coord_frame"] == "head"
    np.testing.assert_allclose(pos["lpa"], [-0.08249, 0.0, 0.0], atol=1e-5)
    np.testing.assert_allclose(pos["nasion"], [0.0, 0.11405, 0.0], atol=1e-5)


def test_dig_montage_without_fiducials() -> None:
    assert get_montage("muse").to_dig_montage(fiducials=False).get_positions()["nasion"] is None


def test_round_trip_through_dig_montage_keeps_the_hash(ear_dict: dict[str, Any]) -> None:
    del ear_dict["channels"][3]  # a DigMontage cannot hold a bipolar reference electrode
    m = Montage.from_dict(ear_dict)
    back = Montage.from_dig_montage(m.to_dig_montage(), name="my-ear")
    assert back.content_hash == m.content_hash


def test_from_dig_montage_moves_the_template_to_the_head_frame() -> None:
    m = Montage.from_dig_montage(make_template("colin27_1005"), name="t", ch_names=["Fp1", "cz"])
    assert m.ch_names == ["Fp1", "Cz"]
    assert get_montage("tuh-19").subset(["Fp1", "Cz"]).content_hash == m.content_hash


def test_from_dig_montage_with_a_missing_channel_lists_what_exists() -> None:
    with pytest.raises(MontageError, match="channel\\(s\\) XX not found in the source montage; it has: Fp1"):
        Montage.from_dig_montage(make_template("colin27_1005"), name="t", ch_names=["XX"])


@pytest.mark.parametrize("old_or_new", ["colin27_1005", "standard_1005"])
def test_template_name_works_across_mne_versions(old_or_new: str) -> None:
    assert "T9" in make_template(old_or_new).ch_names


def test_template_fiducials_are_the_head_frame_anchors() -> None:
    np.testing.assert_allclose(template_fiducials()["rpa"], [0.08249, 0.0, 0.0], atol=1e-5)
