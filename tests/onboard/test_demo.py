"""The demo end to end (slow: simulates data, adapts, stages zero-shot and predicts)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from passport_kit.cli.app import app


@pytest.mark.slow
def test_demo_runs_and_lists_its_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PASSPORT_KIT_HOME", str(tmp_path / "home"))
    result = CliRunner().invoke(app, ["demo", "--out", str(tmp_path / "demo"), "--subjects", "3", "--hours", "1"])
    assert result.exit_code == 0, result.output
    assert "on held-out subject s03" in result.output and "default recipe" in result.output
    # Issue 45: the rows tell what the toolkit adds, each naming what it shipped.
    assert "zero-shot stager (yasa on" in result.output and "band power alone (the textbook" in result.output
    assert "adapted (passport-small-mlp): band power" in result.output and "ACPE" not in result.output
    assert "validation: the adapted model's kappa cross-validated" in result.output
    assert (tmp_path / "demo" / "evaluation" / "per_subject.csv").is_file()
    assert (tmp_path / "demo" / "predictions" / "s03" / "s03_hypnogram.png").is_file()


@pytest.mark.slow
def test_demo_runs_twice_and_draws_the_scorer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 34 finding 3: `make demo` a second time failed at its last step (predictions already there)."""
    import json

    monkeypatch.setenv("PASSPORT_KIT_HOME", str(tmp_path / "home"))
    args = ["demo", "--out", str(tmp_path / "demo"), "--subjects", "3", "--hours", "0.5"]
    first = CliRunner().invoke(app, args)
    assert first.exit_code == 0, first.output
    second = CliRunner().invoke(app, args)
    assert second.exit_code == 0, second.output
    assert "reusing the earlier run's simulated data" in second.output
    assert "agreement with the simulator's stages: kappa" in second.output
    summary = json.loads((tmp_path / "demo" / "predictions" / "s03" / "s03_summary.json").read_text())
    assert summary["scorer_agreement"]["kappa"] is not None
