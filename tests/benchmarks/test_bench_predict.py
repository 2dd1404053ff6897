"""Tests of benchmarks/bench_predict.py (predict's time per stage)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import bench_predict as bp


def test_plot_only_times_three_plots(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert bp.main(["--plot-only", "--hours", "0.1", "--out", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.glob("*.png")) == ["plot0.png", "plot1.png", "plot2.png"]
    assert capsys.readouterr().out.startswith("plot_hypnogram, 12 epochs: ")


@pytest.mark.slow
def test_stages_run_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PASSPORT_KIT_HOME", str(tmp_path / "home"))   # main points it at a fresh cache; restored after
    assert bp.main(["--hours", "0.1", "--threads", "1", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for stage in ("load_recording", "recording_quality", "predict_proba", "plot_hypnogram", "predict()"):
        assert f"| {stage}" in out
