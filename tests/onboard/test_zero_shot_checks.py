"""Zero-shot staging gets the adapter path's unit and rate checks, judged against what the stager expects (issue 46,
item 5)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from passport_kit.cli.app import app
from passport_kit.inference.zero_shot import stager_channel_note, zero_shot_unfit

RUN = CliRunner()


def _zero_shot(montage_yaml: Path, recording: Path, out: Path, *extra: str):  # noqa: ANN202
    return RUN.invoke(app, ["predict", "--zero-shot", "yasa", "--montage", str(montage_yaml), str(recording),
                            "--out", str(out), *extra])


def test_a_unit_error_is_refused(montage_yaml: Path, dataset: Path, tmp_path: Path) -> None:
    # Issue 46: --scale 1000 (13.5 mV median) was staged with statistics; the adapter path refuses from x30.
    result = _zero_shot(montage_yaml, dataset / "s01.edf", tmp_path / "zs", "--scale", "1000")
    assert result.exit_code == 2, result.output
    assert "x that of typical EEG" in result.output and "the unit in its header is probably wrong" in result.output


def test_ten_times_the_amplitude_withholds_the_statistics(montage_yaml: Path, dataset: Path, tmp_path: Path) -> None:
    result = _zero_shot(montage_yaml, dataset / "s01.edf", tmp_path / "zs", "--scale", "10")
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "zs" / "s01" / "s01_summary.json").read_text())
    assert summary["sleep_statistics"] is None and "x that of typical EEG" in summary["statistics_withheld"]
    assert summary["flagged_windows"] == summary["n_windows"]
    # the ear channel the stager reads is named (it was trained on central scalp EEG)
    assert "the stager reads channel 'EL1', not the central scalp EEG" in result.output


def test_a_band_narrower_than_half_the_stagers_flags_every_window() -> None:
    # Issue 46: a 20-Hz recording (band to about 9 Hz) was staged with statistics.
    night = SimpleNamespace(config=SimpleNamespace(h_freq=9.0), quality=None)
    assert "reaches only 9 Hz" in zero_shot_unfit(night, 50.0)
    assert zero_shot_unfit(SimpleNamespace(config=SimpleNamespace(h_freq=45.0), quality=None), 50.0) is None


@pytest.mark.parametrize(("channel", "said"), [("C4-M1", False), ("EEG C3-A2", False), ("Cz", False),
                                                ("ELA", True), ("Fp1", True)])
def test_a_channel_other_than_a_central_site_is_said(channel: str, said: bool) -> None:
    assert (stager_channel_note("yasa", channel) is not None) is said


def test_a_20_hz_recording_is_flagged_and_withheld(montage_yaml: Path, tmp_path: Path) -> None:
    from tests.onboard.conftest import CLASSES, write_recording

    path = write_recording(tmp_path / "slow.edf", [CLASSES[i % 5] for i in range(10)], ["EL1", "ER1", "EL2"], seed=3,
                           sfreq=20.0)
    result = _zero_shot(montage_yaml, path, tmp_path / "zs")
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "zs" / "slow" / "slow_summary.json").read_text())
    assert summary["sleep_statistics"] is None and "reaches only 9 Hz" in summary["statistics_withheld"]
    assert "Hz the stager reads" in summary["statistics_withheld"]


def test_an_adapter_and_zero_shot_together_are_named_as_both(tmp_path: Path, dataset: Path) -> None:
    # Issue 46: it said "give one of them" to one who had given both.
    result = RUN.invoke(app, ["predict", "--zero-shot", "yasa", "--adapter", str(tmp_path), "--montage", "tuh-standard",
                              str(dataset / "s01.edf")])
    assert result.exit_code == 2 and "were both given" in result.output and "drop one of them" in result.output


def test_the_staged_by_line_names_the_files_channel_where_it_was_renamed(montage_yaml: Path, tmp_path: Path) -> None:
    """Issue 58: 'staged by yasa on channel C3-A1' where the file's channel was CZ-A1, renamed."""
    from tests.onboard.conftest import CLASSES, write_recording

    path = write_recording(tmp_path / "n.edf", [CLASSES[i % 5] for i in range(10)], ["CZ-A1", "ER1", "EL2"], seed=3)
    result = _zero_shot(montage_yaml, path, tmp_path / "zs", "--rename", "EL1=CZ-A1")
    assert result.exit_code == 0, result.output
    assert "staged by yasa on channel EL1 (CZ-A1 in the file) (EOG: none, EMG: none)" in result.output
    summary = json.loads((tmp_path / "zs" / "n" / "n_summary.json").read_text())
    assert summary["zero_shot"]["eeg_in_file"] == "CZ-A1"


def test_zero_shot_verbose_says_how_the_stager_read_the_night(montage_yaml: Path, dataset: Path,
                                                               tmp_path: Path) -> None:
    """Issue 58: --verbose added nothing beyond the file opened and the time."""
    result = _zero_shot(montage_yaml, dataset / "s01.edf", tmp_path / "zs", "--verbose")
    assert result.exit_code == 0, result.output
    assert "info: zero-shot: stager yasa (BSD-3-Clause licence) reads EEG EL1" in result.output
    assert "windows of 30 s" in result.output and "band-pass 0.3-" in result.output and "amplitude median" in result.output
    assert "info: zero-shot: yasa staged 10 epochs of 30 s in" in result.output


def test_a_dead_stager_channel_is_not_staged(montage_yaml: Path, tmp_path: Path) -> None:
    # Issue 57: the stager's channel zeroed, YASA staged the night from it alone (TST 4.0 vs 1.5 clean, no window
    # flagged) while the summary named it bad; now another live channel is read, by adapt's rule, and said.
    import edfio
    import numpy as np

    from tests.onboard.conftest import CLASSES, write_recording

    clean = write_recording(tmp_path / "clean.edf", [CLASSES[i % 5] for i in range(10)], ["EL1", "ER1", "EL2"], seed=3)
    signals = [edfio.EdfSignal(np.zeros_like(s.data) if s.label == "EL1" else s.data, sampling_frequency=200.0,
                               label=s.label, physical_dimension="uV", physical_range=(-500, 500))
               for s in edfio.read_edf(clean).signals]
    edfio.Edf(signals).write(tmp_path / "dead.edf")
    result = _zero_shot(montage_yaml, tmp_path / "dead.edf", tmp_path / "zs")
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "zs" / "dead" / "dead_summary.json").read_text())
    assert summary["zero_shot"]["eeg"] == "ER1"
    assert "EL1 (dead in 10 of 10 windows); the stager reads EEG ER1 instead of EEG EL1" in result.output
