"""``check`` warns when recording metadata differs between classes (issue 27 item 4)."""

from __future__ import annotations

from pathlib import Path

import edfio
import numpy as np
import pytest
from typer.testing import CliRunner

from passport_kit.cli.app import app
from passport_kit.onboard.confounds import metadata_confounds
from tests.onboard.edf_helpers import prefilter_dataset

RUN = CliRunner()

SUBJECTS = {"s08_1": "s08", "s08_2": "s08", "s00_1": "s00", "s00_2": "s00"}
CLASSES = {"s08_1": "rest", "s08_2": "task", "s00_1": "rest", "s00_2": "task"}


def _headers(lowpass: dict[str, float], sfreq: float = 500.0) -> dict[str, dict]:
    return {rec: {"sfreq": sfreq, "highpass": 0.5, "lowpass": lp, "units": "µV"} for rec, lp in lowpass.items()}


def test_a_prefilter_differing_within_a_subject_is_named() -> None:
    headers = _headers({"s08_1": 250.0, "s08_2": 45.0, "s00_1": 45.0, "s00_2": 45.0})
    lines = metadata_confounds(headers, CLASSES, SUBJECTS)
    assert lines == ["low-pass differs between classes within 1 subject(s): s08 (rest 250 Hz, task 45 Hz)"]


def test_a_band_pass_below_both_prefilters_removes_the_confound() -> None:
    headers = _headers({"s08_1": 250.0, "s08_2": 45.0, "s00_1": 45.0, "s00_2": 45.0})
    assert metadata_confounds(headers, CLASSES, SUBJECTS, band=(0.3, 45.0)) == []


def test_a_prefilter_is_named_as_the_header_has_it_and_after_the_band_pass() -> None:
    """Issue 58: 'rest 0.3 Hz' was the band-pass bottom, reported as if the header (0 Hz) said it."""
    headers = {rec: {"sfreq": 500.0, "highpass": 0.5 if rec == "s08_2" else 0.0, "lowpass": 250.0, "units": "µV"}
               for rec in CLASSES}
    lines = metadata_confounds(headers, CLASSES, SUBJECTS, band=(0.3, 75.0))
    assert lines == ["high-pass differs between classes within 1 subject(s): s08 (rest header 0 Hz (0.3 Hz after "
                     "the band-pass), task header 0.5 Hz)"]


def test_a_value_that_tells_the_classes_apart_everywhere_is_named() -> None:
    headers = {rec: {"sfreq": 256.0 if CLASSES[rec] == "rest" else 500.0, "highpass": 0.0, "lowpass": 100.0,
                     "units": "µV"} for rec in CLASSES}
    lines = metadata_confounds(headers, CLASSES, SUBJECTS)
    assert lines == ["sampling rate tells the classes apart in every recording (256 Hz: rest, 500 Hz: task)"]


def test_equal_headers_give_nothing() -> None:
    assert metadata_confounds(_headers(dict.fromkeys(CLASSES, 45.0)), CLASSES, SUBJECTS) == []


def test_check_warns_about_prefilters_differing_between_classes(tmp_path: Path, montage_yaml: Path,
                                                                checkpoint: str) -> None:
    # Subject s01's task recording was made with another low-pass, as in eegmat.
    prefilter_dataset(tmp_path, odd="HP:0.5Hz LP:45Hz", usual="HP:0.5Hz LP:90Hz")
    result = RUN.invoke(app, ["check", "--montage", str(montage_yaml), "--data", str(tmp_path), "--checkpoint",
                              checkpoint])
    assert result.exit_code == 0, result.output
    assert ("[WARN] recording metadata: low-pass differs between classes within 1 subject(s): "
            "s01 (rest header 90 Hz (75 Hz after the band-pass), task header 45 Hz)") in result.output
    # With the band-pass top at 45 Hz the difference is filtered away.
    result = RUN.invoke(app, ["check", "--montage", str(montage_yaml), "--data", str(tmp_path), "--checkpoint",
                              checkpoint, "--h-freq", "45"])
    assert "[ok  ] recording metadata: sampling rate, prefilters and units agree" in result.output


@pytest.mark.realdata
def test_eegmat_subject_08_rest_and_arithmetic_carry_different_low_passes(shared_data: Path) -> None:
    from passport_kit.montage import resolve_montage
    from passport_kit.signals.dataset import RecordingReader
    from passport_kit.signals.dataset_spec import spec_from_dict

    folder = shared_data / "eegmat"
    recordings = [{"subject": f"S{n}", "file": f"Subject{n}_{k}.edf", "label": label}
                  for n in ("00", "08") for k, label in ((1, "rest"), (2, "arithmetic"))]
    spec = spec_from_dict({"task": "classification", "recordings": recordings}, root=folder, origin="yaml",
                          source="test")
    reader = RecordingReader(spec)
    montage = resolve_montage("tuh-19")
    headers = {rec.file: reader.header(rec, montage) for rec in spec.recordings}
    classes = {rec.file: rec.label for rec in spec.recordings}
    subjects = {rec.file: rec.subject for rec in spec.recordings}
    lines = metadata_confounds(headers, classes, subjects, band=(0.3, 75.0))
    assert any(line.startswith("low-pass differs between classes within 1 subject(s): S08") for line in lines)


def test_adapt_warns_about_the_prefilters_check_finds(tmp_path: Path, montage_yaml: Path, checkpoint: str) -> None:
    """Issue 45: adapt said nothing of the confound check found."""
    prefilter_dataset(tmp_path / "data", odd="HP:0.5Hz LP:45Hz", usual="HP:0.5Hz LP:90Hz")
    result = RUN.invoke(app, ["adapt", "--montage", str(montage_yaml), "--data", str(tmp_path / "data"),
                              "--checkpoint", checkpoint, "--out", str(tmp_path / "out"), "--no-progress",
                              "--recipe", "probe"])
    assert result.exit_code == 0, result.output
    assert ("warning: the recordings' headers differ between classes: low-pass differs between classes within 1 "
            "subject(s)") in result.output
