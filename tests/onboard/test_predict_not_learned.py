"""predict names the classes the adapter cannot output (issue 27 item 4): a night without REM in training."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from passport_kit.cli.app import app

from conftest import make_dataset

RUN = CliRunner()


def test_predict_says_which_classes_the_adapter_never_learned(tmp_path: Path, montage_yaml: Path,
                                                             checkpoint: str) -> None:
    data = make_dataset(tmp_path / "no-rem", n_subjects=3, n_epochs=10)
    for labels in data.glob("s*.csv"):
        labels.write_text(labels.read_text().replace("REM", "N2"))
    adapted = RUN.invoke(app, ["adapt", "--montage", str(montage_yaml), "--data", str(data), "--checkpoint",
                               checkpoint, "--out", str(tmp_path / "adapter"), "--no-progress"])
    assert adapted.exit_code == 0, adapted.output
    result = RUN.invoke(app, ["predict", "--adapter", str(tmp_path / "adapter"), str(data / "s01.edf"), "--out",
                              str(tmp_path / "p")])
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "p" / "s01" / "s01_summary.json").read_text())
    assert summary["classes_not_learned"] == ["REM"]
    assert "this adapter cannot output REM: it had no training windows of it" in result.output
