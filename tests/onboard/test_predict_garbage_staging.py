"""Garbage is never staged confidently: pure noise and a 10 Hz recording get flagged windows and no statistics (issue 28, item 3)."""

from __future__ import annotations

import json
from pathlib import Path

import edfio
import numpy as np
import pytest
from typer.testing import CliRunner

from passport_kit.cli.app import app

RUN = CliRunner()


def _noise_edf(path: Path, *, seconds: float = 300.0, sfreq: float = 200.0, uv: float = 30.0) -> Path:
    """Write white Gaussian noise of ``uv`` µV SD on the tiny montage's channels (no EEG at all)."""
    rng = np.random.default_rng(3)
    n = int(seconds * sfreq)
    signals = [edfio.EdfSignal(uv * rng.standard_normal(n), sampling_frequency=sfreq, label=name,
                               physical_dimension="uV", physical_range=(-500, 500)) for name in ("EL1", "ER1", "EL2")]
    edfio.Edf(signals).write(path)
    return path


def _summary(out: Path, stem: str) -> dict:
    return json.loads((out / stem / f"{stem}_summary.json").read_text())


def test_pure_noise_is_flagged_and_its_statistics_withheld(bundle: Path, tmp_path: Path) -> None:
    noise = _noise_edf(tmp_path / "noise.edf")
    result = RUN.invoke(app, ["predict", "--adapter", str(bundle), str(noise), "--out", str(tmp_path / "pred")])
    assert result.exit_code == 0, result.output
    summary = _summary(tmp_path / "pred", "noise")
    # Two of the three channels have a near neighbour, whose correlation with noise is ~0: most
    # channels score bad in most windows (ER1, alone on its side, is not scored on correlation).
    assert summary["n_windows"] == 10 and summary["flagged_windows"] >= 6
    assert summary["sleep_statistics"] is None
    assert f"half or more channels score bad in {summary['flagged_windows']} of 10 windows" in summary["statistics_withheld"]
    assert "statistics withheld: half or more channels score bad" in result.output


def test_a_10_hz_recording_is_flagged_and_its_statistics_withheld(bundle: Path, tmp_path: Path) -> None:
    from tests.onboard.conftest import CLASSES, write_recording

    slow = write_recording(tmp_path / "slow.edf", [CLASSES[i % 5] for i in range(10)], ["EL1", "ER1", "EL2"],
                           seed=1, sfreq=10.0)
    result = RUN.invoke(app, ["predict", "--adapter", str(bundle), str(slow), "--out", str(tmp_path / "pred")])
    assert result.exit_code == 0, result.output
    summary = _summary(tmp_path / "pred", "slow")
    assert summary["flagged_windows"] == summary["n_windows"] > 0
    assert summary["sleep_statistics"] is None
    assert "less than half of the" in summary["statistics_withheld"]


@pytest.mark.parametrize(("h_freq", "trained", "refused"), [(4.5, 75.0, True), (45.0, 75.0, False), (75.0, 75.0, False)])
def test_band_too_narrow_spares_100_hz_recordings(h_freq: float, trained: float, refused: bool) -> None:
    from passport_kit.inference.night_report import band_too_narrow

    assert (band_too_narrow(h_freq, trained) is not None) == refused
