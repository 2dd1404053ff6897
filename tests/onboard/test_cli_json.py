"""--json on check and predict prints machine-readable output only (issue 19, item 8)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from passport_kit.cli.app import app


def test_check_json(montage_yaml: Path, dataset: Path) -> None:
    result = CliRunner().invoke(app, ["check", "--montage", str(montage_yaml), "--data", str(dataset), "--checkpoint",
                                      "tiny-mlp", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["passed"] is True and {"montage", "checkpoint", "labels"} <= {i["name"] for i in report["items"]}


def test_predict_json(bundle: Path, dataset: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["predict", "--adapter", str(bundle), str(dataset / "s01.edf"), "--out",
                                      str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["failed"] == [] and out["recordings"][0]["windows"] == 10
    assert out["recordings"][0]["summary"]["n_windows"] == 10


def test_evaluate_json(montage_yaml: Path, dataset: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["evaluate", "--montage", str(montage_yaml), "--data", str(dataset),
                                      "--checkpoint", "tiny-mlp", "--test-subject", "s01", "--out", str(tmp_path),
                                      "--no-progress", "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["metric"] == "kappa" and [r["subject"] for r in out["per_subject"]] == ["s01"]
    assert "tiny-mlp" in out["summary"] and out["files"]["per_subject"].endswith("per_subject.csv")
