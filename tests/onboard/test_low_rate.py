"""Recordings sampled below 150 Hz: the band-pass top drops below their Nyquist frequency, end to end.

The data are simulated at 200 Hz by ``passport-kit simulate`` and resampled with MNE, as a
user's 100 Hz (Sleep-EDF) or 50 Hz (DREAMS) recordings would arrive.
"""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import mne
import pytest
from typer.testing import CliRunner

from passport_kit.cli.app import app
from passport_kit.errors import PassportWarning

RUN = CliRunner()


def _resampled(source: Path, out: Path, sfreq: float) -> Path:
    """Return a copy of the dataset folder ``source`` with every EDF resampled to ``sfreq`` Hz by MNE."""
    shutil.copytree(source, out, ignore=shutil.ignore_patterns("*.edf"))
    for edf in source.glob("*.edf"):
        raw = mne.io.read_raw_edf(edf, preload=True, verbose="error").resample(sfreq, verbose="error")
        mne.export.export_raw(out / edf.name, raw, fmt="edf", verbose="error")
    return out


@pytest.fixture(scope="module")
def simulated(tmp_path_factory: pytest.TempPathFactory, montage_yaml: Path) -> Path:
    out = tmp_path_factory.mktemp("lowrate") / "sim200"
    result = RUN.invoke(app, ["simulate", "--montage", str(montage_yaml), "--subjects", "2", "--hours", "0.05",
                              "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out


@pytest.mark.parametrize(("sfreq", "h_freq"), [(100.0, 45.0), (50.0, 22.0)])
def test_low_rate_recordings_adapt_and_predict_end_to_end(simulated: Path, montage_yaml: Path, checkpoint: str,
                                                          tmp_path: Path, sfreq: float, h_freq: float) -> None:
    data = _resampled(simulated, tmp_path / f"sim{sfreq:g}", sfreq)
    result = RUN.invoke(app, ["adapt", "--montage", str(montage_yaml), "--data", str(data), "--checkpoint",
                              checkpoint, "--max-steps", "2", "--batch-size", "4", "--out", str(tmp_path / "run"),
                              "--no-progress"])
    assert result.exit_code == 0, result.output
    # both recordings named (issue 58: only the first was)
    assert f"warning: each of 2 recordings ('s01.edf', 's02.edf') is sampled at {sfreq:g} Hz" in result.output
    assert f"lowered to {h_freq:g} Hz" in result.output
    stored = json.loads((tmp_path / "run" / "adapter.json").read_text())["preprocessing"]
    assert stored["sfreq"] == 200.0 and stored["h_freq"] == h_freq and "lowered" in stored["h_freq_note"]

    result = RUN.invoke(app, ["predict", "--adapter", str(tmp_path / "run"), str(data / "s02.edf"),
                              "--out", str(tmp_path / "pred")])
    assert result.exit_code == 0, result.output
    assert "warning" not in result.output  # the bundle's band fits the recording: applied as trained
    summary = json.loads((tmp_path / "pred" / "s02" / "s02_summary.json").read_text())
    assert summary["preprocessing"]["h_freq"] == h_freq and summary["n_windows"] == 6


def test_predict_lowers_a_bundle_band_the_recording_cannot_carry(bundle: Path, simulated: Path,
                                                                  tmp_path: Path) -> None:
    data = _resampled(simulated, tmp_path / "sim100", 100.0)
    result = RUN.invoke(app, ["predict", "--adapter", str(bundle), str(data / "s01.edf"), "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "lowered to 45 Hz" in result.output and "the adapter was trained with the band up to 75 Hz" in result.output
    summary = json.loads((tmp_path / "s01" / "s01_summary.json").read_text())
    assert summary["preprocessing"]["h_freq"] == 45.0


def test_predict_h_freq_option_replaces_the_bundle_band(bundle: Path, simulated: Path, tmp_path: Path) -> None:
    result = RUN.invoke(app, ["predict", "--adapter", str(bundle), str(simulated / "s01.edf"), "--out",
                              str(tmp_path), "--h-freq", "30"])
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "s01" / "s01_summary.json").read_text())["preprocessing"]["h_freq"] == 30.0


def test_h_freq_too_high_for_the_rate_exits_2_with_one_line(simulated: Path, montage_yaml: Path, checkpoint: str,
                                                            tmp_path: Path) -> None:
    data = _resampled(simulated, tmp_path / "sim100", 100.0)
    result = RUN.invoke(app, ["check", "--montage", str(montage_yaml), "--data", str(data), "--checkpoint",
                              checkpoint, "--h-freq", "60"])
    assert result.exit_code == 2
    assert "sampling rate 100 Hz cannot carry the band-pass up to 60 Hz" in result.output
    assert "lower h_freq to 45 Hz or less (--h-freq" in result.output


def test_check_reports_the_lowered_band(simulated: Path, montage_yaml: Path, checkpoint: str, tmp_path: Path) -> None:
    data = _resampled(simulated, tmp_path / "sim50", 50.0)
    result = RUN.invoke(app, ["check", "--montage", str(montage_yaml), "--data", str(data), "--checkpoint",
                              checkpoint])
    assert result.exit_code == 0, result.output
    assert "[WARN] sampling & shapes" in result.output and "band-pass 0.3-22 Hz" in result.output
    assert "warning:" not in result.output  # said once, in the report


@pytest.mark.parametrize(("yaml_h_freq", "option", "expected"), [(None, None, 45.0), (30.0, None, 30.0),
                                                                  (30.0, 20.0, 20.0)])
def test_h_freq_comes_from_the_option_then_dataset_yaml_then_the_rate(
        simulated: Path, checkpoint: str, tmp_path: Path, yaml_h_freq: float | None, option: float | None,
        expected: float) -> None:
    from passport_kit.checkpoint import load_base_checkpoint
    from passport_kit.onboard.adapt import dataset_preprocess

    data = _resampled(simulated, tmp_path / "sim100", 100.0)
    if yaml_h_freq is not None:
        (data / "dataset.yaml").write_text((data / "dataset.yaml").read_text() + f"h_freq: {yaml_h_freq}\n")
    _, info = load_base_checkpoint(checkpoint)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        config = dataset_preprocess(info, data, h_freq=option)
    assert config.h_freq == expected and config.sfreq == 200.0
    lowered = [w for w in caught if issubclass(w.category, PassportWarning)]
    assert len(lowered) == (1 if yaml_h_freq is None else 0)  # a chosen top is never second-guessed
