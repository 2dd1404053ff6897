"""Amplitude and channel faults at predict time (issue 35, finding 1-2), and short recordings (issue 34, item 1)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from passport_kit.cli.app import app

RUN = CliRunner()


def _summary(out: Path, stem: str) -> dict:
    return json.loads((out / stem / f"{stem}_summary.json").read_text())


@pytest.fixture
def night(tmp_path: Path) -> Path:
    from tests.onboard.conftest import CLASSES, write_recording

    return write_recording(tmp_path / "night.edf", [CLASSES[i % 5] for i in range(10)], ["EL1", "ER1", "EL2"], seed=9)


def test_the_bundle_describes_its_training_windows(bundle: Path) -> None:
    profile = json.loads((bundle / "adapter.json").read_text())["metrics"]["distribution"]
    assert profile["channels"] == ["EL1", "ER1", "EL2"]
    assert len(profile["amplitude_uv"]) == 3 and profile["correlation"]["scale_from"] == "held-out subjects"


def test_a_held_out_night_passes_the_guard(bundle: Path, night: Path, tmp_path: Path) -> None:
    result = RUN.invoke(app, ["predict", "--adapter", str(bundle), str(night), "--out", str(tmp_path / "pred")])
    assert result.exit_code == 0, result.output
    summary = _summary(tmp_path / "pred", "night")
    assert summary["distribution"]["outside"] is False
    # (The 3-step test adapter is unsure of every window, so its statistics are withheld for that reason.)
    assert "unlike the adapter's training data" not in (summary["statistics_withheld"] or "")


def test_ten_times_the_amplitude_withholds_the_statistics(bundle: Path, night: Path, tmp_path: Path) -> None:
    # Issue 35: a night at x10 was staged "TST 29.5 min, SE 98.3 %" at confidence 0.954.
    result = RUN.invoke(app, ["predict", "--adapter", str(bundle), str(night), "--scale", "10",
                              "--out", str(tmp_path / "pred")])
    assert result.exit_code == 0, result.output
    summary = _summary(tmp_path / "pred", "night")
    assert summary["distribution"]["outside"] is True
    assert summary["distribution"]["amplitude_ratio"] == pytest.approx(10, rel=0.2)
    assert summary["sleep_statistics"] is None
    assert "unlike the adapter's training data: its amplitude is" in summary["statistics_withheld"]
    assert "statistics withheld: the recording is unlike" in result.output


def test_thirty_times_the_amplitude_is_still_refused(bundle: Path, night: Path, tmp_path: Path) -> None:
    result = RUN.invoke(app, ["predict", "--adapter", str(bundle), str(night), "--scale", "100",
                              "--out", str(tmp_path / "pred")])
    assert result.exit_code == 2 and "unit in its header is probably wrong" in result.output


def test_one_flat_channel_does_not_flag_every_window(bundle: Path, tmp_path: Path) -> None:
    # Issue 35: one flat channel of 12 flagged every window and withheld the night's statistics.
    import edfio

    from tests.onboard.conftest import CLASSES, write_recording

    path = write_recording(tmp_path / "flat.edf", [CLASSES[i % 5] for i in range(10)], ["EL1", "ER1", "EL2"], seed=9)
    edf = edfio.read_edf(path)
    edf.signals[2].update_data(np.zeros_like(edf.signals[2].data))
    edf.write(path)
    result = RUN.invoke(app, ["predict", "--adapter", str(bundle), str(path), "--out", str(tmp_path / "pred")])
    assert result.exit_code == 0, result.output
    summary = _summary(tmp_path / "pred", "flat")
    assert summary["flagged_windows"] == 0 and summary["distribution"]["outside"] is False
    assert "EL2" in summary["channel_quality"]["bad_channels"]  # named in the channel report, not the windows
    # Issue 46: ... and named dead (a probe head reads its band powers from a neighbour: tests/engine/test_imputation.py;
    # this adapter's MLP head reads none).
    assert summary["channel_quality"]["dead_channels"] == {"windows": {"EL2": 10}, "band_power_from_neighbour": False,
                                                           "most_in_one_window": 1, "imputation_unvouched": None}
    assert "dead (flat, NaN or near-dead) channels: EL2 in 10 of 10 windows" in result.output


@pytest.mark.parametrize(("flagged_channels", "of", "window_flagged"), [(1, 12, False), (5, 12, False), (6, 12, True),
                                                                        (1, 1, True), (1, 2, True)])
def test_a_window_is_flagged_when_half_its_channels_carry_a_flag(flagged_channels: int, of: int,
                                                                 window_flagged: bool) -> None:
    from passport_kit.inference.night_report import signal_flagged_windows

    flags = np.zeros((3, of), dtype=np.uint8)
    flags[:, :flagged_channels] = 2  # flat
    assert signal_flagged_windows(flags).tolist() == [window_flagged] * 3


def test_half_the_channels_scoring_bad_flags_the_window() -> None:
    # Issue 35: half the channels noise staged 60/60 Wake at 0.991 (more than half was needed to flag).
    from types import SimpleNamespace

    from passport_kit.inference.night_report import mostly_bad_windows

    bad = np.zeros((4, 12), dtype=bool)
    bad[:, :6] = True
    bad[3, :] = False
    quality = SimpleNamespace(window_score=np.ones((4, 12)), window_bad=bad)
    assert mostly_bad_windows(quality, np.arange(4) * 30.0, 30.0).tolist() == [True, True, True, False]


@pytest.mark.parametrize(("epochs", "meaningful"), [(10, False), (240, True)])
def test_a_short_recordings_statistics_are_marked_not_meaningful(tmp_path: Path, night_of, epochs: int,
                                                                 meaningful: bool) -> None:
    from passport_kit.inference.night_report import AdapterFacts, write_prediction

    proba = np.tile(np.eye(5)[[0, 2, 2, 3, 4]], (epochs // 5, 1)) * 0.96 + 0.01   # confident
    onsets = np.arange(epochs) * 30.0
    result = write_prediction(tmp_path / "rec", Path("night.edf"), proba,
                              night_of(list(onsets), np.zeros((epochs, 2), dtype=np.uint8)),
                              adapter=AdapterFacts(classes=["W", "N1", "N2", "N3", "REM"], window_seconds=30.0,
                                                   task="sleep-staging", adapter=Path("a"), base_name="b"))
    summary = result.summary
    assert summary["sleep_statistics"] is not None and summary["statistics_meaningful"] is meaningful
    if not meaningful:
        assert summary["statistics_note"].startswith("not meaningful: the recording is 5 min long")


def test_a_probe_bundle_reads_a_zeroed_channels_band_power_from_a_neighbour(tmp_path: Path, montage_yaml: Path,
                                                                            dataset: Path, checkpoint: str) -> None:
    # Issue 46: one zeroed channel of 12 staged a 2-h night REM from start to end at 0.999 (a band-power read-out).
    import edfio

    out = tmp_path / "probe"
    adapted = RUN.invoke(app, ["adapt", "--montage", str(montage_yaml), "--data", str(dataset), "--checkpoint",
                               checkpoint, "--out", str(out), "--no-progress", "--recipe", "probe", "--prior", "none"])
    assert adapted.exit_code == 0, adapted.output
    path = tmp_path / "s01.edf"
    edf = edfio.read_edf(dataset / "s01.edf")
    edf.signals[0].update_data(np.zeros_like(edf.signals[0].data))
    edf.write(path)
    result = RUN.invoke(app, ["predict", "--adapter", str(out), str(path), "--out", str(tmp_path / "pred")])
    assert result.exit_code == 0, result.output
    dead = _summary(tmp_path / "pred", "s01")["channel_quality"]["dead_channels"]
    assert dead == {"windows": {"EL1": 10}, "band_power_from_neighbour": True, "most_in_one_window": 1,
                    "imputation_unvouched": None}
    assert "EL1 in 10 of 10 windows; the read-out read their band power from the nearest live channel" in result.output
    # Issue 57: two of three channels dead is beyond what the imputation was measured with (at most a third of a
    # montage's channels): said in a warning and in the summary, not staged as if vouched for.
    edf.signals[1].update_data(np.zeros_like(edf.signals[1].data))
    edf.write(path)
    result = RUN.invoke(app, ["predict", "--adapter", str(out), str(path), "--out", str(tmp_path / "pred2")])
    assert result.exit_code == 0, result.output
    dead = _summary(tmp_path / "pred2", "s01")["channel_quality"]["dead_channels"]
    assert dead["most_in_one_window"] == 2
    assert dead["imputation_unvouched"].startswith("2 channels dead in one window (EL1, ER1), more than the 1 of 3 ")
    assert "warning: recording" in result.output and "its agreement with a clean night is not known" in result.output


def test_a_channel_at_one_percent_gain_is_named_bad(bundle: Path, tmp_path: Path) -> None:
    # Issue 57: two channels at 1 % gain passed every quality statistic ("bad channels: none") while the read-out
    # imputed them; the dead-channel rule (20 dB under the others, against training) now names them.
    import edfio

    from tests.onboard.conftest import CLASSES, write_recording

    path = write_recording(tmp_path / "quiet.edf", [CLASSES[i % 5] for i in range(10)], ["EL1", "ER1", "EL2"], seed=9)
    edf = edfio.read_edf(path)
    edf.signals[2].update_data(edf.signals[2].data * 0.01)
    edf.write(path)
    result = RUN.invoke(app, ["predict", "--adapter", str(bundle), str(path), "--out", str(tmp_path / "pred")])
    assert result.exit_code == 0, result.output
    quality = _summary(tmp_path / "pred", "quiet")["channel_quality"]
    assert quality["bad_channels"] == ["EL2"] and quality["reasons"]["EL2"][0].startswith("near-dead or flat in 10 of 10")
    assert "bad channels: EL2" in result.output
