"""Garbage in is refused, and doubt is shown: amplitude checks, low confidence, withheld statistics (issue 19, item 3)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import mne
import numpy as np
import pytest
from typer.testing import CliRunner

from passport_kit.cli.app import app

RUN = CliRunner()


def _scaled(source: Path, out: Path, factor: float) -> Path:
    """Return a copy of the EDF ``source`` with every sample multiplied by ``factor`` (a unit error)."""
    raw = mne.io.read_raw_edf(source, preload=True, verbose="error")
    raw.apply_function(lambda x: x * factor)
    mne.export.export_raw(out, raw, fmt="edf", verbose="error")
    return out


def test_adapt_records_the_training_amplitude(bundle: Path) -> None:
    amplitude = json.loads((bundle / "adapter.json").read_text())["metrics"]["amplitude"]
    # The tiny dataset: 20 µV sines (RMS 14 µV) with 3 µV noise, scaled 0.8-1.2 per channel.
    assert 8 < amplitude["median_uv"] < 25 and amplitude["p05_uv"] <= amplitude["median_uv"] <= amplitude["p95_uv"]


@pytest.mark.parametrize(("factor", "message"), [(1e-3, "every channel is flat"), (1e3, "the unit in its header is "
                                                                                        "probably wrong")])
def test_predict_refuses_a_recording_in_the_wrong_unit(bundle: Path, dataset: Path, tmp_path: Path, factor: float,
                                                      message: str) -> None:
    wrong = _scaled(dataset / "s01.edf", tmp_path / "s01.edf", factor)
    result = RUN.invoke(app, ["predict", "--adapter", str(bundle), str(wrong), "--out", str(tmp_path / "pred")])
    assert result.exit_code == 2
    assert "error: " in result.output and message in result.output
    assert not (tmp_path / "pred" / "s01" / "s01_summary.json").exists()


def test_no_amplitude_check_lets_a_scaled_recording_through(bundle: Path, dataset: Path, tmp_path: Path) -> None:
    loud = _scaled(dataset / "s01.edf", tmp_path / "s01.edf", 1e3)
    result = RUN.invoke(app, ["predict", "--adapter", str(bundle), str(loud), "--out", str(tmp_path / "pred"),
                              "--no-amplitude-check"])
    assert result.exit_code == 0, result.output


def test_check_amplitude_accepts_a_few_times_louder_or_quieter_not_40() -> None:
    from passport_kit.errors import DataError
    from passport_kit.montage import resolve_montage
    from passport_kit.signals.amplitude import check_amplitude
    from passport_kit.signals.quality import channel_quality

    rng = np.random.default_rng(0)
    data = rng.standard_normal((6, 200 * 60)) * 20e-6  # volts, as MNE gives them
    quality = channel_quality(data, 200.0, resolve_montage("tuh-standard"))
    median = check_amplitude(quality, None)  # against generic EEG
    for factor in (0.2, 5.0):
        assert check_amplitude(quality, {"median_uv": median * factor}) == median
    with pytest.raises(DataError, match=r"is 40x that of the recordings the adapter was trained on"):
        check_amplitude(quality, {"median_uv": median / 40})


def _write(tmp_path: Path, proba: np.ndarray, *, classes: list[str] | None = None):
    from passport_kit.inference.night_report import AdapterFacts, write_prediction
    from passport_kit.signals import PreprocessConfig
    from passport_kit.signals.recording import RecordingWindows

    classes = classes or ["W", "N1", "N2", "N3", "REM"]
    n = len(proba)
    night = RecordingWindows(x=np.zeros((n, 0, 0, 0), np.float32), flags=np.zeros((n, 2), dtype=np.uint8),
                             onset_s=np.arange(n) * 30.0, quality=None, config=PreprocessConfig())
    task = "sleep-staging" if len(classes) == 5 else "classification"
    return write_prediction(tmp_path, Path("night.edf"), proba, night, adapter=AdapterFacts(
        classes=classes, window_seconds=30.0, task=task, adapter=Path("a"), base_name="b"))


def test_low_confidence_epochs_are_marked_in_csv_tsv_and_summary(tmp_path: Path) -> None:
    sure = np.array([0.9, 0.025, 0.025, 0.025, 0.025])
    unsure = np.array([0.3, 0.2, 0.2, 0.15, 0.15])
    result = _write(tmp_path, np.stack([sure, unsure, sure, sure]))
    rows = list(csv.DictReader(result.files["predictions"].open()))
    assert [r["low_confidence"] for r in rows] == ["0", "1", "0", "0"]
    events = list(csv.DictReader(result.files["events"].open(), delimiter="\t"))
    assert [e["low_confidence"] for e in events] == ["0", "1", "0", "0"]
    assert result.summary["low_confidence_windows"] == 1 and result.summary["statistics_withheld"] is None
    assert result.summary["sleep_statistics"]["TIB"] == pytest.approx(2.0)


def test_statistics_are_withheld_when_most_epochs_are_low_confidence(tmp_path: Path) -> None:
    near_uniform = np.full((6, 5), 0.2) + np.array([0.04, -0.01, -0.01, -0.01, -0.01])
    result = _write(tmp_path, near_uniform)
    assert result.summary["sleep_statistics"] is None
    assert "6 of 6 windows are low confidence" in result.summary["statistics_withheld"]
    saved = json.loads(result.files["summary"].read_text())
    assert saved["sleep_statistics"] is None and saved["statistics_withheld"]
    assert result.files["hypnogram_plot"].stat().st_size > 0


def test_recording_class_is_given_over_doubtful_windows(tmp_path: Path) -> None:
    # A classification's answer is the mean over its windows (issue 45): near-chance windows weaken it, not void it.
    result = _write(tmp_path, np.full((4, 2), 0.5) + np.array([0.05, -0.05]), classes=["rest", "task"])
    assert result.summary["recording_class"] == "rest" and result.summary["statistics_withheld"] is None


def test_predict_cli_says_the_statistics_are_withheld(bundle: Path, dataset: Path, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    import passport_kit.inference.recording as recording

    def undecided(model, x, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003 - predict_proba's signature
        return np.full((len(x), 5), 0.2)

    monkeypatch.setattr(recording, "predict_proba", undecided)
    result = RUN.invoke(app, ["predict", "--adapter", str(bundle), str(dataset / "s01.edf"), "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "statistics withheld: 10 of 10 windows are low confidence" in result.output
    assert "TST" not in result.output


def test_predict_names_the_users_own_units_as_the_cause_of_a_flat_signal(bundle: Path, dataset: Path,
                                                                          tmp_path: Path) -> None:
    """Issue 58: --units nV on a µV file was told 'µV read as V' (the reverse; and the user's own option the cause)."""
    result = RUN.invoke(app, ["predict", "--adapter", str(bundle), str(dataset / "s01.edf"), "--units", "nV",
                              "--out", str(tmp_path / "pred")])
    assert result.exit_code == 2
    assert "every channel is flat" in result.output and "you gave --units nV" in result.output
    assert "µV read as V" not in result.output


def test_predict_reads_units_in_any_case(bundle: Path, dataset: Path, tmp_path: Path) -> None:
    """Issue 58: '--units uv' was an 'unknown units' error."""
    result = RUN.invoke(app, ["predict", "--adapter", str(bundle), str(dataset / "s01.edf"), "--units", "uv",
                              "--out", str(tmp_path / "pred")])
    assert result.exit_code == 0, result.output
    near = RUN.invoke(app, ["predict", "--adapter", str(bundle), str(dataset / "s01.edf"), "--units", "uW",
                            "--out", str(tmp_path / "pred2")])
    assert near.exit_code == 2 and "unknown units 'uW'; did you mean 'uV'?" in near.output
