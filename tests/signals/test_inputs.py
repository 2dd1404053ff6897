"""Ways in that users have (issue 27 item 2): CSV recordings, unit overrides, recordings held in memory."""

from __future__ import annotations

import warnings
from pathlib import Path

import edfio
import mne
import numpy as np
import pytest

from passport_kit.errors import DataError, PassportWarning
from passport_kit.signals import load_dataset
from passport_kit.signals.dataset import load_recording
from passport_kit.signals.dataset_spec import discover_folder, load_dataset_spec
from passport_kit.signals.readers import is_recording_file, raw_from_memory, read_recording

MONTAGE = """\
name: muse-like
coordinate_frame: head
units: m
reference: Fpz
channels:
  - {name: TP9, position: [-0.0876, -0.0176, -0.0034]}
  - {name: AF7, position: [-0.0564, 0.0992, 0.0251]}
  - {name: AF8, position: [0.0542, 0.0998, 0.0249]}
  - {name: TP10, position: [0.0842, -0.0188, -0.0035]}
"""
NAMES = ["TP9", "AF7", "AF8", "TP10"]


def _signal(n: int, sfreq: float, seed: int = 0) -> np.ndarray:
    """Return ``(4, n)`` µV of a 10 Hz rhythm plus noise (about 20 µV)."""
    rng = np.random.default_rng(seed)
    t = np.arange(n) / sfreq
    return 20 * np.sin(2 * np.pi * 10 * t) + 5 * rng.standard_normal((4, n))


def write_muse_csv(path: Path, *, seconds: float = 70.0, sfreq: float = 256.0, jitter: float = 2e-5,
                   start: float = 1_505_000_000.0, seed: int = 0) -> np.ndarray:
    """Write a Muse/eeg-notebooks CSV (timestamps, TP9..TP10, Right AUX, Marker0); return its µV ``(4, T)``."""
    n = int(seconds * sfreq)
    rng = np.random.default_rng(seed)
    stamps = start + np.arange(n) / sfreq + rng.uniform(-jitter, jitter, n)
    data = _signal(n, sfreq, seed)
    rows = ["timestamps,TP9,AF7,AF8,TP10,Right AUX,Marker0"]
    rows += [f"{t:.6f}," + ",".join(f"{v:.4f}" for v in data[:, i]) + ",0.0,0" for i, t in enumerate(stamps)]
    path.write_text("\n".join(rows) + "\n")
    return data


def test_muse_csv_reads_in_volts_at_the_timestamps_rate(tmp_path: Path) -> None:
    data = write_muse_csv(tmp_path / "muse.csv")
    raw = read_recording(tmp_path / "muse.csv")
    assert raw.info["sfreq"] == 256.0  # LSL jitter averaged away, the nominal rate kept
    assert raw.ch_names[:4] == NAMES and "Right AUX" in raw.ch_names
    np.testing.assert_allclose(raw.get_data(picks=NAMES), data * 1e-6, atol=1e-10)
    assert raw.info["meas_date"].year == 2017


def test_openbci_csv_skips_comments_and_text_columns(tmp_path: Path) -> None:
    lines = ["%OpenBCI Raw EXG Data", "%Number of channels = 2", "%Sample Rate = 250 Hz",
             "Sample Index, EXG Channel 0, EXG Channel 1, Timestamp, Timestamp (Formatted)"]
    lines += [f"{i}, {np.sin(i):.3f}, {np.cos(i):.3f}, {1.6e9 + i / 250:.4f}, 2020-09-13 12:26:40.{i:03d}"
              for i in range(1000)]
    (tmp_path / "obci.csv").write_text("\n".join(lines) + "\n")
    raw = read_recording(tmp_path / "obci.csv")
    assert raw.info["sfreq"] == 250.0
    assert raw.ch_names == ["Sample Index", "EXG Channel 0", "EXG Channel 1"]


def test_csv_rate_given_must_match_the_timestamps(tmp_path: Path) -> None:
    write_muse_csv(tmp_path / "muse.csv", seconds=5)
    assert read_recording(tmp_path / "muse.csv", sfreq=256).info["sfreq"] == 256
    with pytest.raises(DataError, match="timestamps average 256 Hz but 200 Hz was given"):
        read_recording(tmp_path / "muse.csv", sfreq=200)


def test_csv_without_timestamps_needs_a_rate(tmp_path: Path) -> None:
    (tmp_path / "plain.csv").write_text("TP9,AF7\n" + "\n".join(f"{i % 7},{i % 5}" for i in range(500)) + "\n")
    with pytest.raises(DataError, match=r"no timestamp column .* or --sfreq \(predict, data inspect\)"):
        read_recording(tmp_path / "plain.csv")
    assert read_recording(tmp_path / "plain.csv", sfreq=100).info["sfreq"] == 100


def test_csv_with_a_gap_in_its_timestamps_is_refused_naming_the_line(tmp_path: Path) -> None:
    # Issue 35: read as evenly spaced, every time after the gap was wrong (a warning only, before).
    stamps = np.r_[np.arange(500), np.arange(500) + 1500] / 250
    (tmp_path / "gap.csv").write_text("timestamp,TP9\n" + "\n".join(f"{t},{t % 1}" for t in stamps) + "\n")
    with pytest.raises(DataError, match="timestamps jump by 4.00 s at line 502"):
        read_recording(tmp_path / "gap.csv", sfreq=250)


def test_csv_files_in_a_folder_are_labels_not_recordings(tmp_path: Path) -> None:
    write_muse_csv(tmp_path / "muse.csv", seconds=2)
    assert not is_recording_file(tmp_path / "muse.csv") and is_recording_file(tmp_path / "muse.csv", text=True)
    with pytest.raises(DataError, match="no recordings found"):
        discover_folder(tmp_path)


def test_csv_dataset_windows_through_the_montage(tmp_path: Path) -> None:
    (tmp_path / "muse.yaml").write_text(MONTAGE)
    write_muse_csv(tmp_path / "a.csv", seconds=70)
    (tmp_path / "dataset.yaml").write_text("task: classification\nwindow_seconds: 10\nrecordings:\n"
                                           "  - {subject: s1, file: a.csv, label: rest}\n")
    ws = load_dataset(tmp_path, str(tmp_path / "muse.yaml"), cache=False)
    assert ws.x.shape == (7, 4, 10, 200) and ws.classes == ["rest"]


def _uv_edf(path: Path, unit: str, data_uv: np.ndarray, sfreq: float = 100.0) -> Path:
    signals = [edfio.EdfSignal(row, sampling_frequency=sfreq, label=name, physical_dimension=unit,
                               physical_range=(-500, 500)) for name, row in zip(NAMES, data_uv)]
    edfio.Edf(signals).write(path)
    return path


def test_units_override_a_header_unit_mne_does_not_know(tmp_path: Path) -> None:
    data = _signal(3000, 100.0)
    path = _uv_edf(tmp_path / "x.edf", "UV", data)
    as_header = read_recording(path).get_data()
    assert np.abs(as_header).max() > 1  # 'UV' read as volts: 10^6 too large
    fixed = read_recording(path, units="uV").get_data()
    np.testing.assert_allclose(fixed, data * 1e-6, atol=1e-7)
    # Where MNE knew the unit, naming it again changes nothing.
    good = _uv_edf(tmp_path / "good.edf", "uV", data)
    np.testing.assert_allclose(read_recording(good, units="uV").get_data(), read_recording(good).get_data())
    np.testing.assert_allclose(read_recording(good, scale=2.0).get_data(), 2 * read_recording(good).get_data())


@pytest.mark.parametrize(("units", "message"), [("MV", "unknown units 'MV'"), ("uV", "give 'scale'")])
def test_units_refused_where_they_cannot_apply(tmp_path: Path, units: str, message: str) -> None:
    raw = mne.io.RawArray(_signal(1000, 100.0) * 1e-6, mne.create_info(NAMES, 100.0, "eeg"), verbose="error")
    suffix = ".edf" if units == "MV" else "_raw.fif"
    path = _uv_edf(tmp_path / f"x{suffix}", "uV", _signal(1000, 100.0)) if units == "MV" else tmp_path / "x_raw.fif"
    if units != "MV":
        raw.save(path, verbose="error")
    with pytest.raises(DataError, match=message):
        read_recording(path, units=units)


def test_dataset_yaml_units_and_scale_per_recording(tmp_path: Path) -> None:
    (tmp_path / "muse.yaml").write_text(MONTAGE)
    data = _signal(6000, 200.0)
    _uv_edf(tmp_path / "bad.edf", "UV", data, 200.0)
    _uv_edf(tmp_path / "good.edf", "uV", data, 200.0)
    _uv_edf(tmp_path / "same.edf", "uV", data, 200.0)
    (tmp_path / "dataset.yaml").write_text(
        "task: classification\nwindow_seconds: 10\nrecordings:\n"
        "  - {subject: s1, file: good.edf, label: a}\n"
        "  - {subject: s2, file: bad.edf, label: b, units: uV}\n"
        "  - {subject: s3, file: same.edf, label: c, scale: 2}\n")
    assert load_dataset_spec(tmp_path).recordings[1].units == "uV"
    ws = load_dataset(tmp_path, str(tmp_path / "muse.yaml"))
    good, bad, doubled = (ws.x[ws.subject == s] for s in ("s1", "s2", "s3"))
    np.testing.assert_allclose(bad, good, atol=1e-4)
    np.testing.assert_allclose(doubled, 2 * good, rtol=1e-4, atol=1e-4)


def test_dataset_yaml_refuses_an_unknown_unit(tmp_path: Path) -> None:
    _uv_edf(tmp_path / "a.edf", "uV", _signal(1000, 100.0))
    (tmp_path / "dataset.yaml").write_text("recordings:\n  - {subject: s1, file: a.edf, units: microvolts}\n")
    with pytest.raises(DataError, match=r"recordings\[0\] \(s1\)\.units"):
        load_dataset_spec(tmp_path)


@pytest.mark.parametrize("transpose", [False, True])
def test_a_recording_in_memory_as_array_sfreq_names(tmp_path: Path, transpose: bool) -> None:
    (tmp_path / "muse.yaml").write_text(MONTAGE)
    data = _signal(256 * 30, 256.0)
    array = data.T if transpose else data
    raw = raw_from_memory((array, 256, NAMES), units="uV")
    np.testing.assert_allclose(raw.get_data(), data * 1e-6)
    ws = load_recording((array, 256.0, NAMES), str(tmp_path / "muse.yaml"), units="uV")
    from_raw = load_recording(raw, str(tmp_path / "muse.yaml"))
    assert ws.x.shape == (1, 4, 30, 200)
    np.testing.assert_array_equal(ws.x, from_raw.x)


@pytest.mark.parametrize(("recording", "message"), [
    ("not a recording", "must be an mne.io.Raw or a tuple"),
    ((np.zeros((3, 100)), 256, NAMES), "expected \\(channels, samples\\) with 4 channels"),
    ((np.zeros((4, 100)), -1, NAMES), "sfreq must be a positive number"),
])
def test_a_bad_recording_in_memory_is_a_data_error(recording: object, message: str) -> None:
    with pytest.raises(DataError, match=message):
        raw_from_memory(recording)


@pytest.mark.realdata
def test_dreams_excerpt3_edf_reads_in_microvolts_with_units(shared_data: Path) -> None:
    path = shared_data / "dreams-spindles" / "excerpt3.edf"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        raw = read_recording(path, units="uV")
    sd = float(np.std(raw.get_data(picks=["C3-A1"])))
    assert 5e-6 < sd < 100e-6  # tens of µV, as EEG is (the header's 'UV' alone gives ~20 V)


def test_data_inspect_takes_the_rate_and_unit_of_one_recording(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from passport_kit.cli.app import app

    (tmp_path / "plain.csv").write_text("TP9,AF7\n" + "\n".join(f"{i % 7},{i % 5}" for i in range(500)) + "\n")
    run = CliRunner()
    refused = run.invoke(app, ["data", "inspect", str(tmp_path / "plain.csv")])
    assert refused.exit_code == 2 and "--sfreq (predict, data inspect)" in refused.output
    result = run.invoke(app, ["data", "inspect", str(tmp_path / "plain.csv"), "--sfreq", "100", "--units", "mV"])
    assert result.exit_code == 0, result.output
    assert "recording: " in result.output and "sampling rate: 100 Hz" in result.output


@pytest.mark.parametrize("dtype", [np.complex128, object])
def test_an_array_of_complex_or_objects_is_one_line_without_a_numpy_warning(dtype: type) -> None:
    # Issue 35: a numpy ComplexWarning leaked for complex input.
    array = np.ones((2, 1000), dtype=dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(DataError, match=f"holds {np.dtype(dtype)} values; give real numbers"):
            raw_from_memory((array, 200.0, ["A", "B"]))
