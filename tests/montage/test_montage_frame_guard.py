"""The frame guard (issue 27 item 3): 10-05 channels far from MNE's template in the head frame are warned about."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Callable

import pytest
from typer.testing import CliRunner

from passport_kit.cli.app import app
from passport_kit.errors import PassportWarning
from passport_kit.montage import Montage, resolve_montage
from passport_kit.montage.mne_bridge import make_template, template_head_positions, template_mismatch
from passport_kit.montage.registry import known_montage_names

NAMES = ["TP9", "AF7", "AF8", "TP10"]


def _montage_dict(positions: dict, name: str = "hand-made") -> dict:
    return {"name": name, "coordinate_frame": "head", "units": "m", "reference": "Fpz",
            "channels": [{"name": n, "position": [float(v) for v in positions[n]]} for n in NAMES]}


def test_mri_frame_positions_from_get_positions_are_warned(write_yaml: Callable[..., Path]) -> None:
    # What a user copies by hand: the template's native (MRI-frame) coordinates, declared as head.
    mri = make_template().get_positions()["ch_pos"]
    path = write_yaml(_montage_dict(mri))
    with pytest.warns(PassportWarning, match=r"4 of 4 channels with 10-05 names .* \(TP9 [45]\.\d cm off\).*MRI "
                                             r"frame.*montages import colin27_1005 "):
        resolve_montage(path)


def test_head_frame_positions_are_silent(write_yaml: Callable[..., Path]) -> None:
    head, _ = template_head_positions()
    path = write_yaml(_montage_dict(head))
    with warnings.catch_warnings():
        warnings.simplefilter("error", PassportWarning)
        resolve_montage(path)


def test_one_electrode_moved_on_purpose_is_not_a_frame_error() -> None:
    head, _ = template_head_positions()
    moved = dict(head)
    moved["TP9"] = head["TP9"] + [0.0, 0.03, 0.0]
    assert template_mismatch(Montage.from_dict(_montage_dict(moved))) is None


@pytest.mark.parametrize("name", known_montage_names())
def test_builtin_montages_pass_the_guard(name: str) -> None:
    assert template_mismatch(resolve_montage(name)) is None


def test_register_montage_prints_the_warning(write_yaml: Callable[..., Path]) -> None:
    mri = make_template().get_positions()["ch_pos"]
    path = write_yaml(_montage_dict(mri, "mri-copy"))
    result = CliRunner().invoke(app, ["register-montage", str(path)])
    assert result.exit_code == 0, result.output
    assert "warning: montage 'mri-copy': 4 of 4 channels with 10-05 names" in result.output
