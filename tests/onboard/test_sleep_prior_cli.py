"""The sleep prior through the CLI (issue 33): adapt records its rungs, predict stages zero-shot without an adapter."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from passport_kit.cli.app import app

RUN = CliRunner()


def test_adapt_on_sleep_data_starts_from_the_stager_records_every_rung_and_predict_applies_the_bundle(
        tmp_path: Path, montage_yaml: Path, dataset: Path, checkpoint: str) -> None:
    """Issue 43: the zero-shot stager is the base; the shipped model's inner score is never below it."""
    out = tmp_path / "adapter"
    result = RUN.invoke(app, ["adapt", "--montage", str(montage_yaml), "--data", str(dataset), "--checkpoint",
                              checkpoint, "--out", str(out), "--no-progress", "--recipe", "probe"])
    assert result.exit_code == 0, result.output
    sel = json.loads((out / "adapter.json").read_text())["metrics"]["selection"]
    rungs = {r["rung"]: r for r in sel["ladder"]}
    assert sel["base"] == "stager" and sel["ladder"][0]["rung"] == "stager" and rungs["stager"]["taken"]
    assert [r["rung"] for r in sel["ladder"]] == sel["order"]
    assert all(rungs[name]["tried"] for name in ("recalibrated", "bandpower", "stacked"))
    assert sel["stager"]["prior"] == "yasa" and sel["stager"]["channels"].startswith("EEG ")
    assert sel["expected"]["score"] is not None and sel["score"] >= sel["stager_score"] - 1e-9
    assert "sleep stager YASA on EEG" in result.output and "your nights" in result.output
    pred = RUN.invoke(app, ["predict", "--adapter", str(out), str(dataset / "s01.edf"), "--out", str(tmp_path / "p")])
    assert pred.exit_code == 0, pred.output


def test_adapt_with_prior_none_skips_the_prior_rungs(tmp_path: Path, montage_yaml: Path, dataset: Path,
                                                     checkpoint: str) -> None:
    out = tmp_path / "adapter"
    result = RUN.invoke(app, ["adapt", "--montage", str(montage_yaml), "--data", str(dataset), "--checkpoint",
                              checkpoint, "--out", str(out), "--no-progress", "--recipe", "probe", "--prior", "none"])
    assert result.exit_code == 0, result.output
    sel = json.loads((out / "adapter.json").read_text())["metrics"]["selection"]
    rungs = {r["rung"]: r for r in sel["ladder"]}
    assert sel["base"] == "bandpower"  # no stager: the textbook is the base
    assert not rungs["prior"]["tried"] and "--prior none" in rungs["prior"]["reason"]


def test_predict_zero_shot_stages_a_night_without_an_adapter(tmp_path: Path, montage_yaml: Path,
                                                           dataset: Path) -> None:
    out = tmp_path / "zs"
    result = RUN.invoke(app, ["predict", "--zero-shot", "yasa", "--montage", str(montage_yaml),
                              str(dataset / "s01.edf"), "--out", str(out)])
    assert result.exit_code == 0, result.output
    rows = (out / "s01" / "s01_predictions.csv").read_text().splitlines()
    assert len(rows) > 1 and "W" in rows[0] and "REM" in rows[0]


def test_predict_needs_an_adapter_or_zero_shot_with_a_montage(tmp_path: Path, dataset: Path) -> None:
    neither = RUN.invoke(app, ["predict", str(dataset / "s01.edf")])
    assert neither.exit_code == 2 and "--adapter DIR" in neither.output
    no_montage = RUN.invoke(app, ["predict", "--zero-shot", "yasa", str(dataset / "s01.edf")])
    assert no_montage.exit_code == 2 and "needs --montage" in no_montage.output
    unknown = RUN.invoke(app, ["predict", "--zero-shot", "nope", "--montage", "tuh-standard",
                               str(dataset / "s01.edf"), "--out", str(tmp_path / "o")])
    assert unknown.exit_code == 2 and "unknown sleep prior" in unknown.output
