"""Edited adapter.json files get one line (issue 28, item 5)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from passport_kit.cli.app import app

RUN = CliRunner()


def _predict(adapter: Path, dataset: Path, tmp_path: Path):
    return RUN.invoke(app, ["predict", "--adapter", str(adapter), str(dataset / "s01.edf"), "--out",
                            str(tmp_path / "pred")])


def test_deeply_nested_adapter_json_is_one_line(bundle: Path, dataset: Path, tmp_path: Path) -> None:
    edited = shutil.copytree(bundle, tmp_path / "deep")
    (edited / "adapter.json").write_text("[" * 100_000 + "]" * 100_000)
    result = _predict(edited, dataset, tmp_path)
    assert result.exit_code == 2, result.output
    assert "nested too deeply" in result.output


def test_classes_that_do_not_fit_the_head_are_refused(bundle: Path, dataset: Path, tmp_path: Path) -> None:
    edited = shutil.copytree(bundle, tmp_path / "two")
    meta = json.loads((edited / "adapter.json").read_text())
    meta["classes"] = ["W", "S"]
    (edited / "adapter.json").write_text(json.dumps(meta))
    result = _predict(edited, dataset, tmp_path)
    assert result.exit_code == 2, result.output
    assert "names 2 classes (W, S) for a head with 5 outputs" in result.output
