"""Montage schema: unit conversion, views, canonical JSON and content hash, YAML round trip."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from passport_kit.errors import MontageError
from passport_kit.montage import Channel, Montage

SCALE = {"m": 1.0, "cm": 100.0, "mm": 1000.0}


def _in_units(d: dict[str, Any], units: str) -> dict[str, Any]:
    out = {**d, "units": units, "channels": []}
    for ch in d["channels"]:
        ch = dict(ch)
        for key in ("position", "reference_position"):
            if key in ch:
                ch[key] = [v / 1000.0 * SCALE[units] for v in ch[key]]
        out["channels"].append(ch)
    return out


@pytest.mark.parametrize("units", ["m", "cm", "mm"])
def test_positions_are_stored_in_metres(ear_dict: dict[str, Any], units: str) -> None:
    m = Montage.from_dict(_in_units(ear_dict, units))
    np.testing.assert_allclose(m.positions[0], [-0.0855, -0.008, 0.012], atol=1e-12)


@pytest.mark.parametrize("units", ["m", "cm"])
def test_hash_does_not_depend_on_the_file_units(ear_dict: dict[str, Any], units: str) -> None:
    assert Montage.from_dict(_in_units(ear_dict, units)).content_hash == Montage.from_dict(ear_dict).content_hash


def test_views_have_montage_order_and_shapes(ear_dict: dict[str, Any]) -> None:
    m = Montage.from_dict(ear_dict)
    assert m.ch_names == ["ELA", "ELB", "ERA", "ELA-ERA"]
    assert m.positions.shape == (4, 3) and m.positions.dtype == np.float64
    assert m.reference_positions.shape == (4, 3)


def test_reference_positions_are_nan_for_monopolar_rows(ear_dict: dict[str, Any]) -> None:
    refs = Montage.from_dict(ear_dict).reference_positions
    assert np.isnan(refs[:3]).all()
    np.testing.assert_allclose(refs[3], [0.0855, -0.008, 0.012])


def test_bipolar_position_is_the_active_electrode_not_the_midpoint(ear_dict: dict[str, Any]) -> None:
    ch = Montage.from_dict(ear_dict).channel("ELA-ERA")
    assert ch.is_bipolar
    assert ch.position[0] == pytest.approx(-0.0855)


def test_canonical_json_rounds_to_a_tenth_of_a_millimetre(ear_dict: dict[str, Any]) -> None:
    ear_dict["channels"][0]["position"] = [-85.54321, -8.0, 12.0]
    doc = json.loads(Montage.from_dict(ear_dict).canonical_json())
    assert doc["channels"][0]["position"][0] == -0.0855
    assert doc["channels"][0]["name"] == "ELA"


def test_hash_ignores_sub_resolution_noise(ear_dict: dict[str, Any]) -> None:
    a = Montage.from_dict(ear_dict).content_hash
    ear_dict["channels"][1]["position"] = [-85.50001, -10.0, -2.0]
    assert Montage.from_dict(ear_dict).content_hash == a


@pytest.mark.parametrize("field,value", [("description", "another text"), ("reference", "Cz"),
                                         ("metadata", {"lab": "x"})])
def test_hash_ignores_descriptive_fields(ear_dict: dict[str, Any], field: str, value: Any) -> None:
    a = Montage.from_dict(ear_dict).content_hash
    ear_dict[field] = value
    assert Montage.from_dict(ear_dict).content_hash == a


def test_hash_ignores_aliases(ear_dict: dict[str, Any]) -> None:
    a = Montage.from_dict(ear_dict).content_hash
    ear_dict["channels"][0]["aliases"] = ["other"]
    assert Montage.from_dict(ear_dict).content_hash == a


def test_hash_depends_on_channel_order(ear_dict: dict[str, Any]) -> None:
    a = Montage.from_dict(ear_dict).content_hash
    ear_dict["channels"].reverse()
    assert Montage.from_dict(ear_dict).content_hash != a


def test_hash_depends_on_a_position_change_of_a_millimetre(ear_dict: dict[str, Any]) -> None:
    a = Montage.from_dict(ear_dict).content_hash
    ear_dict["channels"][0]["position"][2] += 1.0
    assert Montage.from_dict(ear_dict).content_hash != a


def test_hash_depends_on_the_reference_position(ear_dict: dict[str, Any]) -> None:
    a = Montage.from_dict(ear_dict).content_hash
    del ear_dict["channels"][3]["reference_position"]
    assert Montage.from_dict(ear_dict).content_hash != a


def test_hash_is_sha256_hex(ear_dict: dict[str, Any]) -> None:
    h = Montage.from_dict(ear_dict).content_hash
    assert len(h) == 64 and int(h, 16) >= 0


@pytest.mark.parametrize("units", ["m", "mm", "cm"])
def test_yaml_round_trip_keeps_everything(ear_dict: dict[str, Any], tmp_path: Path, units: str) -> None:
    ear_dict["metadata"] = {"lab": "aarhus"}
    ear_dict["channels"][1]["kind"] = "eog"
    m = Montage.from_dict(ear_dict)
    back = Montage.from_yaml(m.to_yaml(tmp_path / "out.yaml", units=units))
    assert back.content_hash == m.content_hash
    assert back.channels[0].aliases == ("EL-A", "EEG ELA-REF")
    assert back.kinds == ["eeg", "eog", "eeg", "eeg"]
    assert back.metadata == {"lab": "aarhus"} and back.reference == "ERB"
    np.testing.assert_allclose(back.positions, m.positions, atol=1e-12)


def test_to_yaml_writes_the_declared_units(ear_dict: dict[str, Any], tmp_path: Path) -> None:
    text = (Montage.from_dict(ear_dict).to_yaml(tmp_path / "o.yaml", units="mm")).read_text()
    assert "units: mm" in text and "[-85.5, -8.0, 12.0]" in text


def test_channel_lookup_by_alias_is_case_insensitive(ear_dict: dict[str, Any]) -> None:
    assert Montage.from_dict(ear_dict).channel("eeg ela-ref").name == "ELA"


def test_channel_lookup_of_unknown_name_lists_channels(ear_dict: dict[str, Any]) -> None:
    with pytest.raises(MontageError, match="has no channel 'XYZ'; its channels are: ELA, ELB"):
        Montage.from_dict(ear_dict).channel("XYZ")


def test_subset_keeps_the_requested_order(ear_dict: dict[str, Any]) -> None:
    sub = Montage.from_dict(ear_dict).subset(["ERA", "el-a"], name="ear-pair")
    assert sub.ch_names == ["ERA", "ELA"] and sub.name == "ear-pair"


def test_subset_of_nothing_is_an_error(ear_dict: dict[str, Any]) -> None:
    with pytest.raises(MontageError, match="empty"):
        Montage.from_dict(ear_dict).subset([])


def test_montage_is_frozen(ear_dict: dict[str, Any]) -> None:
    m = Montage.from_dict(ear_dict)
    with pytest.raises(Exception):  # noqa: B017 - pydantic's frozen-instance error
        m.name = "other"  # type: ignore[misc]


def test_direct_construction_runs_the_same_checks() -> None:
    ch = Channel(name="A", position=(math.nan, 0.0, 0.08))
    with pytest.raises(MontageError, match="NaN"):
        Montage(name="x", channels=(ch,))


def test_numeric_channel_names_become_text(ear_dict: dict[str, Any]) -> None:
    ear_dict["channels"][0]["name"] = 1
    assert Montage.from_dict(ear_dict).ch_names[0] == "1"


def test_channels_may_be_a_name_to_position_mapping(ear_dict: dict[str, Any]) -> None:
    ear_dict["channels"] = {"ELA": [-85.5, -8.0, 12.0], "ELB": {"position": [-85.5, -10.0, -2.0], "kind": "eog"}}
    m = Montage.from_dict(ear_dict)
    assert m.ch_names == ["ELA", "ELB"] and m.kinds == ["eeg", "eog"]


def test_montages_are_hashable_and_equal_by_content(ear_dict: dict[str, Any]) -> None:
    a, b = Montage.from_dict(ear_dict), Montage.from_dict(ear_dict)
    assert a == b and len({a, b}) == 1


def test_plot_returns_a_figure_with_two_views(ear_dict: dict[str, Any]) -> None:
    fig = Montage.from_dict(ear_dict).plot()
    assert len(fig.axes) == 2 and fig.axes[1].name == "3d"


def test_canonical_json_uses_shortest_decimals() -> None:
    from passport_kit.montage import get_montage

    text = get_montage("tuh-19").canonical_json()
    assert '"position":[-0.0309,0.1146,0.0279]' in text and "00000000" not in text


def test_docstring_examples_run() -> None:
    import doctest

    import passport_kit.montage as package
    import passport_kit.montage.schema as schema

    for module in (package, schema):
        result = doctest.testmod(module)
        assert result.attempted > 0 and result.failed == 0, module.__name__
