"""Tests of benchmarks/real_data.py: DREAMS conversion, scoring helpers, clean skip; the real run is slow."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import real_data as rd

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"


def test_dreams_epochs_take_the_majority_of_six_rk_scores(tmp_path: Path) -> None:
    hyp = tmp_path / "Hypnogram_excerptX.txt"
    hyp.write_text("[Hypnogram]\n" + "\n".join(["5"] * 6 + ["2", "2", "2", "2", "3", "3"] + ["0", "1", "1", "0", "0", "4"]))
    assert rd.dreams_epochs(hyp) == ["W", "N2", "N3"]  # S3 + S4 = N3


def test_band_power_is_the_textbook_absolute_and_relative_power_clipped_to_the_band() -> None:
    x = np.random.default_rng(0).normal(size=(4, 2, 10, 200)).astype(np.float32)
    assert rd.band_power(x).shape == (4, 2 * 2 * 6)  # 6 bands up to 45 Hz, absolute and relative
    assert rd.band_power(x, top_hz=30.0).shape == (4, 2 * 2 * 5)  # gamma (30-45 Hz) not carried


def test_paired_bootstrap_of_identical_predictions_is_zero() -> None:
    y = np.array([0, 1] * 20)
    p = np.random.default_rng(1).random((40, 2))
    assert rd.paired_bootstrap(y, p, p, ["a", "b"], n=50) == (0.0, 0.0)


def test_t_interval_needs_three_folds() -> None:
    assert rd.t_interval([0.1, 0.2]) is None
    lo, hi = rd.t_interval([0.1, 0.2, 0.3])
    assert lo < 0.2 < hi


def test_summary_gives_the_random_control_an_interval_over_seeds() -> None:
    rng = np.random.default_rng(0)
    y = np.array([0, 1] * 30)
    subjects = np.repeat(["a", "b", "c"], 20)
    good = np.stack([1 - y, y], 1) * 0.6 + rng.random((60, 2)) * 0.4  # ranks every window right
    methods = {"passport-kit": good}
    for k in range(3):
        methods[f"random backbone {k}"] = rng.random((60, 2))
    methods["random backbone (mean of seeds)"] = np.full((60, 2), np.nan)
    out = rd.summarise("t", methods, y, subjects, np.ones(60, bool), ["a", "b", "c"], ["x", "z"], 3)
    row = next(r for r in out["table"] if r["method"] == "random backbone (mean of seeds)")
    lo, hi = (float(v) for v in row["95% t-interval (random seeds)"].strip("[]").split(","))
    assert 0 < lo <= row["passport-kit minus this, per fold"] <= hi


def test_skips_cleanly_without_the_shared_data(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert rd.main(["--data", str(tmp_path / "nothing"), "--out", str(tmp_path / "out")]) == 0
    assert "skipped" in capsys.readouterr().out


@pytest.mark.slow
@pytest.mark.skipif(not (SHARED / "dreams-spindles").is_dir(), reason="../shared/data/dreams-spindles absent")
def test_dreams_run_scores_every_method_on_the_same_epochs(tmp_path: Path) -> None:
    assert rd.main(["--tasks", "dreams", "--random-seeds", "1", "--data", str(SHARED), "--out", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "real_data.json").read_text())
    rows = {r["method"]: r for r in report["results"][0]["table"]}
    assert {"passport-kit", "bandpower-logreg", "random backbone 0", "probe (spectral only)"} <= set(rows)
    assert all(r["windows"] == 120 for m, r in rows.items() if "mean of seeds" not in m)
