"""predict reads each recording once (issue 20): windows, quality, band and start from one opening."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pytest


@pytest.fixture
def nights(dataset: Path, tmp_path: Path) -> Path:
    out = tmp_path / "nights"
    out.mkdir()
    for name in ("s01.edf", "s02.edf", "s03.edf"):
        shutil.copy(dataset / name, out / name)
    return out


@pytest.mark.parametrize("prefetch", [True, False], ids=["prefetch", "in-turn"])
def test_predict_opens_each_recording_once(bundle: Path, nights: Path, tmp_path: Path, reads: Counter,
                                           prefetch: bool) -> None:
    from passport_kit.inference.predict import OutputOptions, RunOptions, predict

    results = predict(bundle, nights, tmp_path / "pred", run=RunOptions(prefetch=prefetch),
                      output=OutputOptions(edf_annotations=True))
    assert [r.recording.name for r in results] == ["s01.edf", "s02.edf", "s03.edf"]
    # The written annotation files are EDFs too, but predict never opens them.
    assert reads == Counter({"s01.edf": 1, "s02.edf": 1, "s03.edf": 1})


def test_prefetch_gives_the_same_predictions(bundle: Path, nights: Path, tmp_path: Path) -> None:
    from passport_kit.inference.predict import RunOptions, predict

    ahead = predict(bundle, nights, tmp_path / "ahead", run=RunOptions(prefetch=True))
    in_turn = predict(bundle, nights, tmp_path / "in-turn", run=RunOptions(prefetch=False))
    for a, b in zip(ahead, in_turn):
        assert a.summary["class_counts"] == b.summary["class_counts"]
        assert a.files["predictions"].read_text() == b.files["predictions"].read_text()


def test_read_for_prediction_matches_load_recording(bundle: Path, dataset: Path) -> None:
    from passport_kit.checkpoint import load_adapter_bundle
    from passport_kit.inference.recording import read_for_prediction
    from passport_kit.montage import Montage
    from passport_kit.signals import PreprocessConfig, load_recording, recording_quality

    _, meta = load_adapter_bundle(bundle)
    montage, config = Montage.from_dict(meta.montage), PreprocessConfig.from_dict(meta.preprocessing)
    night = read_for_prediction(dataset / "s01.edf", montage, config, amplitude=meta.metrics.amplitude)
    windows = load_recording(dataset / "s01.edf", montage, config, cache=False)
    quality = recording_quality(dataset / "s01.edf", montage, window_seconds=config.window_seconds,
                                notch_freq=config.notch_freq)
    np.testing.assert_array_equal(night.x, windows.x)
    np.testing.assert_array_equal(night.flags, windows.flags)
    np.testing.assert_array_equal(night.onset_s, windows.onset_s)
    np.testing.assert_array_equal(night.quality.window_score, quality.window_score)
    assert night.config == config and night.start is not None


def test_prefetched_keeps_order_and_each_files_error(tmp_path: Path) -> None:
    from passport_kit.errors import DataError
    from passport_kit.inference.recording import prefetched

    files = [tmp_path / f"r{i}.edf" for i in range(4)]
    prepared: list[str] = []

    def prepare(path: Path) -> str:
        prepared.append(path.name)
        if path.name == "r1.edf":
            raise DataError("r1 is broken")
        return path.name.upper()

    seen = []
    for path, get in prefetched(files, prepare, ahead=True):
        try:
            seen.append((path.name, get()))
        except DataError as exc:
            seen.append((path.name, str(exc)))
    assert seen == [("r0.edf", "R0.EDF"), ("r1.edf", "r1 is broken"), ("r2.edf", "R2.EDF"), ("r3.edf", "R3.EDF")]
    assert sorted(prepared) == [f.name for f in files]  # each file prepared once
