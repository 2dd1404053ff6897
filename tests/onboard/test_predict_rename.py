"""predict's channel-name advice works for predict: --rename, not dataset.yaml (issue 19, item 6)."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from passport_kit.cli.app import app

from conftest import make_dataset

RUN = CliRunner()


def test_missing_channel_advice_names_rename_and_rename_works(bundle: Path, tmp_path: Path) -> None:
    other = make_dataset(tmp_path / "other", n_subjects=1, n_epochs=2, names=["EL1", "ER1", "Ear left 2"])
    recording = str(other / "s01.edf")
    result = RUN.invoke(app, ["predict", "--adapter", str(bundle), recording, "--out", str(tmp_path / "p")])
    assert result.exit_code == 2
    assert "map them with --rename EL2='<name in file>'" in result.output and "dataset.yaml" not in result.output
    result = RUN.invoke(app, ["predict", "--adapter", str(bundle), recording, "--out", str(tmp_path / "p"),
                              "--rename", "EL2=Ear left 2"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "p" / "s01" / "s01_summary.json").is_file()


def test_rename_needs_montage_channel_equals_name(bundle: Path, dataset: Path, tmp_path: Path) -> None:
    result = RUN.invoke(app, ["predict", "--adapter", str(bundle), str(dataset / "s01.edf"), "--out", str(tmp_path),
                              "--rename", "EL2"])
    assert result.exit_code == 2 and "--rename takes MONTAGE_CHANNEL=NAME_IN_FILE" in result.output
