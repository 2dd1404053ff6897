"""The demo end to end (slow: simulates data and trains two adapters)."""

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
    assert "kappa on held-out subject s03" in result.output
    assert "band power alone (reference)" in result.output and "default recipe" in result.output
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
