"""Tests of benchmarks/robustness_real.py: fault specs, the faulted EDF copy, detection counts (no shared data)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import robustness_real as rr

from passport_kit.montage import resolve_montage
from passport_kit.signals import read_recording
from passport_kit.signals.simulator.writer import write_edf

LABELS = ["EEG T3", "EEG T4", "EEG T5", "EEG T6", "EEG A2-A1", "ECG ECG"]
SFREQ = 200.0


@pytest.fixture
def montage():
    return resolve_montage(rr.MONTAGE)


def _write_source(folder: Path, subjects: tuple[str, ...], seconds: float = 20.0) -> Path:
    """Write a tiny eegmat look-alike: rest (_1) and arithmetic (_2) EDFs per subject, µV noise."""
    folder.mkdir()
    rng = np.random.default_rng(0)
    for subject in subjects:
        for part in ("1", "2"):
            data = rng.normal(0.0, 10.0, (len(LABELS), int(seconds * SFREQ)))
            write_edf(folder / f"{subject}_{part}.edf", data, LABELS, SFREQ, subject=subject,
                      kinds=["eeg"] * 5 + ["ecg"])
    return folder


@pytest.fixture
def source(tmp_path: Path) -> Path:
    """Two subjects, 20 s per recording."""
    return _write_source(tmp_path / "eegmat", ("Subject01", "Subject02"))


def _uv(path: Path) -> np.ndarray:
    return read_recording(path).get_data() * 1e6


def test_parse_faults_reads_the_default_spec(montage) -> None:
    faults = rr.parse_faults(rr.DEFAULT_FAULTS, montage.ch_names)
    assert {f.subject for f in faults} == {"Subject01", "Subject04", "Subject07", "Subject09"}
    assert not {f.subject for f in faults} & set(rr.MIXED_PREFILTER)
    assert rr.Fault("Subject07", "T5", "drift") in faults


@pytest.mark.parametrize(("spec", "hint"), [
    ("Subject01:T3", "SUBJECT:CHANNEL:KIND"),
    ("Subject01:Cz:noise", "not in the montage"),
    ("Subject01:T3:pop", "not one of"),
    ("Subject01:T3:noise,Subject01:T3:drift", "twice"),
])
def test_parse_faults_rejects_bad_items_with_a_hint(montage, spec: str, hint: str) -> None:
    with pytest.raises(ValueError, match=hint):
        rr.parse_faults(spec, montage.ch_names)


def test_inject_faults_corrupts_only_the_named_channel(tmp_path: Path, source: Path, montage) -> None:
    faults = rr.parse_faults("Subject01:T3:noise", montage.ch_names)
    out = rr.inject_faults(source, tmp_path / "out", faults, montage, seed=0)
    for name in ("Subject01_1.edf", "Subject01_2.edf"):
        diff = np.abs(_uv(out / name) - _uv(source / name)).max(axis=1)
        assert diff[0] > 20.0  # T3: 40 µV RMS noise on top
        assert np.all(diff[1:] < 0.05)  # the rest: EDF quantisation only
    for name in ("Subject02_1.edf", "Subject02_2.edf"):
        assert np.abs(_uv(out / name) - _uv(source / name)).max() < 0.05


def test_inject_faults_keeps_names_and_writes_a_dataset_of_the_copies(tmp_path: Path, source: Path, montage) -> None:
    before = {p.name: p.read_bytes() for p in source.iterdir()}
    out = rr.inject_faults(source, tmp_path / "out", rr.parse_faults("Subject02:T6:drift", montage.ch_names),
                           montage, seed=0)
    assert read_recording(out / "Subject02_1.edf").ch_names == LABELS
    text = (out / "dataset.yaml").read_text()
    assert text.count("file: ") == 4 and str(out.resolve()) in text and str(source) not in text
    assert {p.name: p.read_bytes() for p in source.iterdir()} == before  # the originals are only read


def test_inject_faults_flat_channel_is_constant(tmp_path: Path, source: Path, montage) -> None:
    out = rr.inject_faults(source, tmp_path / "out", rr.parse_faults("Subject01:T4:flat", montage.ch_names),
                           montage, seed=0)
    assert np.ptp(_uv(out / "Subject01_1.edf")[1]) < 0.05


@pytest.mark.parametrize(("seed", "same"), [(0, True), (1, False)])
def test_inject_faults_is_seeded(tmp_path: Path, source: Path, montage, seed: int, same: bool) -> None:
    faults = rr.parse_faults("Subject01:T3:noise", montage.ch_names)
    a = rr.inject_faults(source, tmp_path / "a", faults, montage, seed=0)
    b = rr.inject_faults(source, tmp_path / "b", faults, montage, seed=seed)
    assert np.array_equal(_uv(a / "Subject01_1.edf"), _uv(b / "Subject01_1.edf")) is same


def test_inject_faults_refuses_a_folder_made_with_other_faults(tmp_path: Path, source: Path, montage) -> None:
    rr.inject_faults(source, tmp_path / "out", rr.parse_faults("Subject01:T3:noise", montage.ch_names), montage, seed=0)
    with pytest.raises(SystemExit, match="other faults"):
        rr.inject_faults(source, tmp_path / "out", rr.parse_faults("Subject01:T4:noise", montage.ch_names),
                         montage, seed=0)


def test_inject_faults_rejects_subjects_the_data_lacks(tmp_path: Path, source: Path, montage) -> None:
    with pytest.raises(SystemExit, match="Subject05"):
        rr.inject_faults(source, tmp_path / "out", rr.parse_faults("Subject05:T3:noise", montage.ch_names),
                         montage, seed=0)


def test_detection_rows_flag_an_injected_noise_channel(tmp_path: Path, source: Path, montage) -> None:
    faults = rr.parse_faults("Subject01:T3:noise", montage.ch_names)
    out = rr.inject_faults(source, tmp_path / "out", faults, montage, seed=0)
    rows = rr.detection_rows(out, montage, faults, threshold=0.5, label="faulted")
    assert len(rows) == 4 * len(montage.ch_names)
    injected = [r for r in rows if r["fault"]]
    assert [(r["recording"], r["channel"]) for r in injected] == [("Subject01_1", "T3"), ("Subject01_2", "T3")]
    assert all(r["windows"] == 2 and r["below_threshold"] == 2 for r in injected)


def test_detection_summary_gives_shares_per_group() -> None:
    rows = [{"data": "faulted", "fault": "noise", "windows": 4, "below_threshold": 3},
            {"data": "faulted", "fault": "", "windows": 10, "below_threshold": 1},
            {"data": "clean", "fault": "", "windows": 5, "below_threshold": 0}]
    summary = rr.detection_summary(rows)
    assert [(s["data"], s["channels"], s["share_below"]) for s in summary] == [
        ("faulted", "injected", 0.75), ("faulted", "not injected", 0.1), ("clean", "not injected", 0.0)]


def test_detection_summary_by_channel_splits_each_group() -> None:
    rows = [{"data": "clean", "fault": "", "channel": "T3", "windows": 4, "below_threshold": 0},
            {"data": "clean", "fault": "", "channel": "A2-A1", "windows": 4, "below_threshold": 3}]
    summary = rr.detection_summary(rows, by_channel=True)
    assert [(s["channel"], s["share_below"]) for s in summary] == [("T3", 0.0), ("A2-A1", 0.75)]


@pytest.mark.parametrize(("arithmetic", "rest", "auroc"), [((3, 6), (0, 18), 0.75), ((2, 4), (9, 18), 0.5),
                                                          ((0, 6), (18, 18), 0.0)])
def test_mask_cue_scores_the_mask_as_an_arithmetic_detector(arithmetic: tuple[int, int], rest: tuple[int, int],
                                                            auroc: float) -> None:
    rows = [{"data": "clean", "subject": "Subject00", "channel": "A2-A1", "recording": f"Subject00_{part}",
             "below_threshold": below, "windows": windows} for part, (below, windows) in (("1", rest), ("2", arithmetic))]
    (cue,) = rr.mask_cue(rows)
    assert cue["mask_auroc"] == pytest.approx(auroc)


def test_main_without_eegmat_says_so_and_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert rr.main(["--data", str(tmp_path / "missing"), "--out", str(tmp_path / "out")]) == 0
    assert "eegmat not found" in capsys.readouterr().out
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_main_runs_end_to_end_on_tiny_data(tmp_path: Path) -> None:
    data = _write_source(tmp_path / "eegmat", ("Subject01", "Subject02", "Subject03", "Subject04"), seconds=30.0)
    out = tmp_path / "out"
    code = rr.main(["--quick", "--data", str(data), "--out", str(out), "--threads", "1", "--seeds", "1",
                    "--ft-steps", "2", "--faults", "Subject02:T3:noise", "--variants",
                    "acpe,mlp+masked,mlp+distrust,mlp+distrust+uncorr,clean:acpe"])
    assert code == 0
    summary = {r["variant"]: r for r in json.loads((out / "summary.json").read_text())}
    assert set(summary) == {"acpe", "mlp+masked", "mlp+distrust", "mlp+distrust+uncorr", "clean:acpe"}
    config = json.loads((out / "finetune" / "faulted_mlp+distrust+uncorr" / "summary.json").read_text())["config"]
    assert config["mask_uncorrelated_channels"] == 0.2 and config["distrust_bad_channels"] == 0.5
    assert all(p.is_file() for p in (out / "rows.csv", out / "summary.md", out / "run.json",
                                     out / "robustness_real_diff.png", out / "detection_summary.csv"))
