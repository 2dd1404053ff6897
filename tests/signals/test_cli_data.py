"""``passport-kit data inspect`` and ``data clear-cache``: exit codes and messages."""

from __future__ import annotations

from pathlib import Path

from signals_helpers import synthetic_raw, write_edf
from typer.testing import CliRunner

from passport_kit.cli.app import app


def _dataset(folder: Path, write_dataset) -> Path:
    write_edf(synthetic_raw(["EEG C3-REF", "C4", "O1"], seconds=60), folder / "s01.edf")
    (folder / "s01.csv").write_text("W\nN2\n", encoding="utf-8")
    return write_dataset({"task": "sleep-staging", "recordings": [{"subject": "s01", "file": "s01.edf", "labels": "s01.csv"}]})


def _montage_yaml(folder: Path) -> Path:
    path = folder / "three.yaml"
    path.write_text(
        "name: cli-three\nunits: mm\nchannels:\n"
        "  - {name: C3, position: [-67.1, 23.4, 104.5]}\n"
        "  - {name: C4, position: [65.3, 23.6, 103.7]}\n"
        "  - {name: O1, position: [-31.6, -80.6, 54.8]}\n",
        encoding="utf-8",
    )
    return path


def test_inspect_prints_windows_classes_and_mapping(tmp_path: Path, write_dataset) -> None:
    folder = _dataset(tmp_path, write_dataset)
    result = CliRunner().invoke(app, ["data", "inspect", str(folder), "--montage", str(_montage_yaml(tmp_path))])
    assert result.exit_code == 0, result.output
    assert "windows: 2 × 3 ch × 30 s from 1 recording of 1 subject" in result.output
    assert "classes: W 1, N1 0, N2 1, N3 0, REM 0; unlabeled 0" in result.output
    assert "C3           ← EEG C3-REF" in result.output


def test_inspect_missing_channel_exits_2_with_one_line(tmp_path: Path, write_dataset) -> None:
    folder = _dataset(tmp_path, write_dataset)
    result = CliRunner().invoke(app, ["data", "inspect", str(folder), "--montage", "tuh-19"])
    assert result.exit_code == 2
    assert "error: recording '" in result.output and "the recording has: EEG C3-REF, C4, O1" in result.output
    assert "Traceback" not in result.output


def test_inspect_missing_folder_exits_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["data", "inspect", str(tmp_path / "nope"), "--montage", "tuh-19"])
    assert result.exit_code == 2
    assert "does not exist; give a folder of recordings or a dataset.yaml" in result.output


def test_clear_cache_removes_entries(tmp_path: Path, write_dataset, _isolated_home: Path) -> None:
    folder = _dataset(tmp_path, write_dataset)
    CliRunner().invoke(app, ["data", "inspect", str(folder), "--montage", str(_montage_yaml(tmp_path))])
    assert (_isolated_home / "cache").exists()
    result = CliRunner().invoke(app, ["data", "clear-cache"])
    assert result.exit_code == 0 and "cleared" in result.output
    assert not (_isolated_home / "cache").exists()


def test_inspect_a_single_file_needs_no_montage(tmp_path: Path) -> None:
    write_edf(synthetic_raw(["C3..", "C4..", "O1.."], sfreq=100.0, seconds=90), tmp_path / "night.edf")
    result = CliRunner().invoke(app, ["data", "inspect", str(tmp_path / "night.edf")])
    assert result.exit_code == 0, result.output
    assert "sampling rate: 100 Hz; length 0:01:30.0 (9000 samples)" in result.output
    assert "channels (3): C3.. (eeg), C4.. (eeg), O1.. (eeg)" in result.output


def test_inspect_a_single_file_with_a_montage_shows_the_mapping(tmp_path: Path) -> None:
    write_edf(synthetic_raw(["EEG C3-REF", "C4", "O1"], seconds=40), tmp_path / "night.edf")
    result = CliRunner().invoke(app, ["data", "inspect", str(tmp_path / "night.edf"), "-m",
                                      str(_montage_yaml(tmp_path))])
    assert result.exit_code == 0, result.output
    assert "C3           ← EEG C3-REF" in result.output


def test_inspect_a_dataset_without_montage_says_what_to_do(tmp_path: Path, write_dataset) -> None:
    folder = _dataset(tmp_path, write_dataset)
    result = CliRunner().invoke(app, ["data", "inspect", str(folder)])
    assert result.exit_code == 2 and "needs --montage" in result.output


def test_inspect_a_100_hz_dataset_lowers_the_band(tmp_path: Path, write_dataset) -> None:
    write_edf(synthetic_raw(["C3", "C4", "O1"], sfreq=100.0, seconds=60), tmp_path / "s01.edf")
    (tmp_path / "s01.csv").write_text("W\nN2\n", encoding="utf-8")
    folder = write_dataset({"recordings": [{"subject": "s01", "file": "s01.edf", "labels": "s01.csv"}]})
    result = CliRunner().invoke(app, ["data", "inspect", str(folder), "-m", str(_montage_yaml(tmp_path))])
    assert result.exit_code == 0, result.output
    assert "lowered to 45 Hz" in result.output and "windows: 2" in result.output
