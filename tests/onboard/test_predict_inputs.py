"""predict takes the inputs users have (issue 27 item 2): CSV, --sfreq, --units, recordings in memory."""

from __future__ import annotations

import json
from pathlib import Path

import edfio
import mne
import numpy as np
import pytest
from typer.testing import CliRunner

import passport_kit as pk
from passport_kit.cli.app import app
from passport_kit.inference.predict import predict

RUN = CliRunner()


@pytest.fixture(scope="module")
def night(dataset: Path) -> mne.io.BaseRaw:
    """The tiny dataset's first recording, loaded (volts)."""
    return mne.io.read_raw_edf(dataset / "s01.edf", preload=True, verbose="error")


def _csv(path: Path, raw: mne.io.BaseRaw, *, timestamps: bool = True) -> Path:
    data = raw.get_data() * 1e6
    t = np.arange(data.shape[1]) / raw.info["sfreq"]
    head = (["timestamps"] if timestamps else []) + list(raw.ch_names)
    rows = [",".join(head)] + [",".join(([f"{t[i]:.5f}"] if timestamps else []) + [f"{v:.3f}" for v in data[:, i]])
                               for i in range(data.shape[1])]
    path.write_text("\n".join(rows) + "\n")
    return path


def _summary(out: Path, stem: str) -> dict:
    return json.loads((out / stem / f"{stem}_summary.json").read_text())


def test_predict_a_csv_recording(bundle: Path, night: mne.io.BaseRaw, tmp_path: Path) -> None:
    csv = _csv(tmp_path / "night.csv", night)
    result = RUN.invoke(app, ["predict", "--adapter", str(bundle), str(csv), "--out", str(tmp_path / "p")])
    assert result.exit_code == 0, result.output
    assert _summary(tmp_path / "p", "night")["n_windows"] == 10


def test_predict_sfreq_for_a_csv_without_timestamps(bundle: Path, night: mne.io.BaseRaw, tmp_path: Path) -> None:
    csv = _csv(tmp_path / "plain.csv", night, timestamps=False)
    result = RUN.invoke(app, ["predict", "--adapter", str(bundle), str(csv), "--out", str(tmp_path / "p")])
    assert result.exit_code == 2 and "--sfreq (predict, data inspect)" in result.output
    result = RUN.invoke(app, ["predict", "--adapter", str(bundle), str(csv), "--out", str(tmp_path / "p1"),
                              "--sfreq", "200"])
    assert result.exit_code == 0, result.output


def test_predict_units_for_a_header_unit_mne_does_not_know(bundle: Path, night: mne.io.BaseRaw,
                                                           tmp_path: Path) -> None:
    signals = [edfio.EdfSignal(row * 1e6, sampling_frequency=200.0, label=name, physical_dimension="UV",
                               physical_range=(-500, 500)) for name, row in zip(night.ch_names, night.get_data())]
    edf = tmp_path / "uv.edf"
    edfio.Edf(signals).write(edf)
    refused = RUN.invoke(app, ["predict", "--adapter", str(bundle), str(edf), "--out", str(tmp_path / "p")])
    assert refused.exit_code == 2 and "--units" in refused.output
    result = RUN.invoke(app, ["predict", "--adapter", str(bundle), str(edf), "--out", str(tmp_path / "p1"),
                              "--units", "uV"])
    assert result.exit_code == 0, result.output
    bad = RUN.invoke(app, ["predict", "--adapter", str(bundle), str(edf), "--out", str(tmp_path / "p2"),
                           "--units", "microvolt"])
    assert bad.exit_code == 2 and "unknown units 'microvolt'" in bad.output


def test_predict_recordings_in_memory_match_the_file(bundle: Path, night: mne.io.BaseRaw, dataset: Path,
                                                     tmp_path: Path) -> None:
    from_file = predict(bundle, dataset / "s01.edf", tmp_path / "file")[0]
    results = predict(bundle, [night, (night.get_data(), 200.0, night.ch_names)], tmp_path / "memory")
    assert [r.files["summary"].parent.name for r in results] == ["s01", "recording-2"]
    assert results[0].summary["class_counts"] == results[1].summary["class_counts"] == from_file.summary["class_counts"]
    # The tuple was given in µV without units: read as volts it is 10^6 too large and refused ...
    with pytest.raises(Exception, match="--units"):
        predict(bundle, (night.get_data() * 1e6, 200.0, night.ch_names), tmp_path / "m2")
    # ... and with units="uV" (docs/data.md's keyword form) it predicts what the file does.
    alone = pk.predict(bundle, (night.get_data() * 1e6, 200.0, night.ch_names), tmp_path / "m3", units="uV")[0]
    assert alone.summary["class_counts"] == from_file.summary["class_counts"]
