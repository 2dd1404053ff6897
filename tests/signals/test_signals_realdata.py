"""The real recordings in ../shared/data through dataset.yaml and discovery (skip where absent)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from passport_kit.montage import Montage, get_montage
from passport_kit.signals import PreprocessConfig, load_dataset

pytestmark = pytest.mark.realdata


def test_eegmat_through_dataset_yaml(shared_data: Path, tmp_path: Path, write_dataset) -> None:
    eegmat = shared_data / "eegmat"
    recordings = [{"subject": f"s{i:02d}", "file": str(eegmat / f"Subject{i:02d}_{k}.edf"), "label": label}
                  for i in (0, 1) for k, label in ((1, "rest"), (2, "arithmetic"))]
    write_dataset({"allow_outside_paths": True, "task": "classification", "window_seconds": 10,
                   "classes": ["rest", "arithmetic"], "recordings": recordings})
    ws = load_dataset(tmp_path, "tuh-19", PreprocessConfig(window_seconds=10, h_freq=45.0))
    assert ws.x.shape[1:] == (19, 10, 200)
    counts = ws.class_counts()
    # rest ≈ 180 s → 18 windows, arithmetic 62 s → 6 windows, per subject
    assert counts == {"rest": 36, "arithmetic": 12}
    assert np.isfinite(ws.x).all() and not (ws.flags & 3).any()


def test_eegmat_ear_derivation_and_temporal_chain(shared_data: Path) -> None:
    # A real "new layout": the temporal chain (old names T3..T6 in the files) plus A2-A1.
    temporal = get_montage("tuh-temporal")
    channels = [ch.model_dump() for ch in temporal.channels] + [
        {"name": "A2-A1", "position": (0.0880, 0.0026, -0.0269), "reference_position": (-0.0879, 0.0026, -0.0269)}]
    m = Montage.from_dict({"name": "temporal-ears", "units": "m", "channels": channels})
    ws = load_dataset(shared_data / "eegmat", m, PreprocessConfig(h_freq=45.0))
    assert ws.x.shape[1] == 7 and len(set(ws.recording.tolist())) == 24


def test_eegmat_by_auto_discovery(shared_data: Path) -> None:
    ws = load_dataset(shared_data / "eegmat", "tuh-19")
    assert len(set(ws.recording.tolist())) == 24
    assert ws.classes == [] and (ws.y == -1).all()  # eegmat ships no hypnograms
    assert ws.x.shape[1:] == (19, 30, 200)


def test_dreams_excerpts_with_rk_hypnograms(shared_data: Path, tmp_path: Path, write_dataset) -> None:
    dreams = shared_data / "dreams-spindles"
    write_dataset({"allow_outside_paths": True, "task": "sleep-staging", "window_seconds": 30, "label_map": "rk", "recordings": [
        {"subject": "excerpt1", "file": str(dreams / "excerpt1.txt"), "sfreq": 100,
         "labels": str(dreams / "Hypnogram_excerpt1.txt")},
        {"subject": "excerpt3", "file": str(dreams / "excerpt3.txt"), "sfreq": 50,
         "labels": str(dreams / "Hypnogram_excerpt3.txt")},
    ]})
    m = Montage.from_dict({"name": "dreams-c3", "units": "mm", "channels": [
        {"name": "C3-A1", "position": [-67.1, 23.4, 104.5], "reference_position": [-87.9, 2.6, -26.9]}]})
    ws = load_dataset(tmp_path, m, PreprocessConfig(h_freq=20.0))  # excerpt 3 is sampled at 50 Hz
    assert ws.x.shape == (120, 1, 30, 200)  # 2 × 30 min
    assert (ws.y >= 0).sum() > 100
    assert ws.class_counts()["N2"] > 0


def test_dreams_psg_edf_maps_c3_a1(shared_data: Path) -> None:
    from passport_kit.signals import load_recording

    m = Montage.from_dict({"name": "dreams-c3", "units": "mm", "channels": [
        {"name": "C3-A1", "position": [-67.1, 23.4, 104.5], "reference_position": [-87.9, 2.6, -26.9]}]})
    ws = load_recording(shared_data / "dreams-spindles" / "excerpt3.edf", m, PreprocessConfig(h_freq=20.0))
    assert ws.x.shape == (60, 1, 30, 200)
