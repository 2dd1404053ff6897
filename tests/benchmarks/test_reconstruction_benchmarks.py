"""Tests of benchmarks/heldout_reconstruction.py and benchmarks/temporal_position.py (the runs are benchmarks)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import heldout_reconstruction as hr
import temporal_position as tp


def test_ratio_is_of_sums_and_its_interval_covers_it() -> None:
    errors = np.array([[1.0, 2.0], [3.0, 2.0], [1.0, 4.0]])  # per window: model, zeros
    ratio, lo, hi = hr.ratio_interval(errors, n_boot=500)
    assert ratio == pytest.approx(5.0 / 8.0)  # not the mean of per-window ratios
    assert lo <= ratio <= hi


def test_model_that_predicts_zeros_scores_one(tmp_path: Path) -> None:
    class Zeros:
        def eval(self) -> None:
            pass

        def reconstruct(self, x, meta, mask):  # noqa: ANN001, ANN201
            return x * 0

    import passport_kit.checkpoint as ck

    x = np.random.default_rng(0).normal(size=(5, 2, 3, 200)).astype(np.float32)
    original = ck.load_base_checkpoint
    ck.load_base_checkpoint = lambda name: (Zeros(), None)
    try:
        from passport_kit.montage import resolve_montage

        errors = hr.window_errors("zeros", x, resolve_montage("muse"), seed=0)
    finally:
        ck.load_base_checkpoint = original
    assert np.allclose(errors[:, 0], errors[:, 1])


def test_sine_windows_are_one_channel_patches_in_units_of_100_uv() -> None:
    x = tp.sine_windows(4, np.random.default_rng(0))
    assert tuple(x.shape) == (4, 1, 30, 200) and float(x.abs().max()) <= 0.3 + 1e-6


def test_temporal_position_skips_dreams_cleanly_without_the_data(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert tp.main(["--data", str(tmp_path / "nothing"), "--tasks", "dreams"]) == 0
    assert "skipped" in capsys.readouterr().out
