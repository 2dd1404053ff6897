"""The newcomer's path through the CLI: register an ear montage in mm, list, show, plot, import, remove."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from passport_kit.cli.app import app
from passport_kit.montage import get_montage, list_montages, user_montage_dir

runner = CliRunner()


def _ok(args: list[str]) -> str:
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.fixture
def registered(ear_yaml: Path) -> str:
    """Return the output of registering the newcomer's ear montage."""
    return _ok(["register-montage", str(ear_yaml)])


def test_register_prints_a_summary(registered: str) -> None:
    assert "registered montage 'my-ear': 4 channels, hash " in registered
    assert str(user_montage_dir() / "my-ear.yaml") in registered.replace("\n", "")


def test_registered_montage_is_listed_as_user(registered: str) -> None:
    out = _ok(["montages", "list"])
    line = next(ln for ln in out.splitlines() if "my-ear" in ln)
    assert "user" in line and " 4 " in line
    assert "tuh-19" in out and "builtin" in out


def test_list_json_is_machine_readable(registered: str) -> None:
    rows = json.loads(_ok(["montages", "list", "--json"]))
    mine = next(r for r in rows if r["name"] == "my-ear")
    assert mine["source"] == "user" and mine["n_channels"] == 4 and len(mine["content_hash"]) == 64


def test_show_prints_positions_in_mm(registered: str) -> None:
    out = _ok(["montages", "show", "my-ear"])
    row = next(ln for ln in out.splitlines() if "ELA " in ln or "│ ELA" in ln)
    assert "-85.5" in row and "-8.0" in row and "12.0" in row
    assert "positions in mm" in out and "reference ERB" in out


def test_show_includes_reference_columns_for_bipolar_channels(registered: str) -> None:
    out = _ok(["montages", "show", "my-ear"])
    assert "ref x" in out
    assert "85.5" in next(ln for ln in out.splitlines() if "ELA-ERA" in ln)


def test_show_json_gives_metres_and_hash(registered: str) -> None:
    doc = json.loads(_ok(["montages", "show", "my-ear", "--json"]))
    assert doc["units"] == "m" and doc["content_hash"] == get_montage("my-ear").content_hash
    np.testing.assert_allclose(doc["channels"][0]["position"], [-0.0855, -0.008, 0.012])
    assert doc["channels"][3]["reference_position"] == pytest.approx([0.0855, -0.008, 0.012])


def test_show_accepts_a_yaml_path(ear_yaml: Path) -> None:
    assert "my-ear: 4 channels" in _ok(["montages", "show", str(ear_yaml)])


@pytest.mark.parametrize("name", ["my-ear", "ceegrid", "tuh-19"])
def test_plot_writes_a_png(registered: str, tmp_path: Path, name: str) -> None:
    out = tmp_path / "plots" / f"{name}.png"
    assert f"wrote {out}" in _ok(["montages", "plot", name, "--out", str(out)]).replace("\n", "")
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000


def test_plot_without_names_still_writes(tmp_path: Path) -> None:
    out = tmp_path / "m.svg"
    _ok(["montages", "plot", "muse", "--out", str(out), "--no-names"])
    assert out.read_text().lstrip().startswith("<?xml")


def test_remove_takes_it_out_of_the_list(registered: str) -> None:
    assert "removed montage 'my-ear'" in _ok(["montages", "remove", "my-ear"])
    assert "my-ear" not in [r.name for r in list_montages()]


def test_force_replaces(registered: str, ear_yaml: Path) -> None:
    ear_yaml.write_text(ear_yaml.read_text().replace("In-ear electrodes", "Version two"))
    _ok(["register-montage", str(ear_yaml), "--force"])
    assert get_montage("my-ear").description.startswith("Version two")


def test_import_template_registers(tmp_path: Path) -> None:
    out = _ok(["montages", "import", "colin27_1005", "--name", "my-cap", "-c", "Fp1,Fp2", "-c", "Cz",
               "--reference", "Cz"])
    assert "registered montage 'my-cap': 3 channels" in out
    m = get_montage("my-cap")
    assert m.ch_names == ["Fp1", "Fp2", "Cz"] and m.reference == "Cz"


def test_import_to_yaml_then_register(tmp_path: Path) -> None:
    target = tmp_path / "cap.yaml"
    out = _ok(["montages", "import", "colin27_1005", "--name", "my-cap", "-c", "T9,T10", "--out", str(target)])
    assert "register it with `passport-kit register-montage" in out.replace("\n", "")
    assert "units: mm" in target.read_text()
    assert [r.name for r in list_montages("user")] == []
    _ok(["register-montage", str(target)])
    assert get_montage("my-cap").ch_names == ["T9", "T10"]


def test_import_bids_reports_dropped_electrodes(tmp_path: Path) -> None:
    tsv = tmp_path / "sub-01_electrodes.tsv"
    tsv.write_text("name\tx\ty\tz\nELA\t-85.5\t-8\t12\nERA\t85.5\t-8\t12\nGND\tn/a\tn/a\tn/a\n")
    (tmp_path / "sub-01_coordsystem.json").write_text(
        json.dumps({"EEGCoordinateSystem": "CapTrak", "EEGCoordinateUnits": "mm"}))
    result = runner.invoke(app, ["montages", "import", str(tsv), "--name", "bids-ear"])
    assert result.exit_code == 0, result.output
    assert "dropped electrodes with n/a coordinates: GND" in result.output
    assert get_montage("bids-ear").ch_names == ["ELA", "ERA"]


@pytest.mark.parametrize("args,message", [
    (["montages", "import", "colin27_1005", "--name", "Bad Name"], "name 'Bad Name' is invalid"),
    (["montages", "import", "nowhere.elc", "--name", "x"], "neither an existing file nor an MNE template"),
    (["montages", "import", "colin27_1005", "--name", "muse", "-c", "Cz"], "'muse' is a built-in"),
    (["montages", "import", "colin27_1005", "--name", "x", "--units", "mm"], "--units does not apply to an MNE template"),
])
def test_import_errors_exit_2(args: list[str], message: str) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert message in result.output and len(result.output.strip().splitlines()) == 1
