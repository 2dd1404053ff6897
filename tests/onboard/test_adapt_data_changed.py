"""A finished bundle is reused only for the same data (issue 28, item 4)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from passport_kit.cli.app import app

RUN = CliRunner()


def _adapt(montage_yaml: Path, data: Path, out: Path, checkpoint: str, *extra: str):
    return RUN.invoke(app, ["adapt", "--montage", str(montage_yaml), "--data", str(data), "--checkpoint", checkpoint,
                            "--batch-size", "8", "--max-steps", "2", "--out", str(out), "--no-progress", *extra])


def test_a_rerun_on_changed_data_exits_2_naming_the_files(tmp_path: Path, montage_yaml: Path, dataset: Path,
                                                          checkpoint: str) -> None:
    data = shutil.copytree(dataset, tmp_path / "data")
    out = tmp_path / "run"
    assert _adapt(montage_yaml, data, out, checkpoint).exit_code == 0
    recorded = json.loads((out / "adapter.json").read_text())["training_data"]
    assert sorted(recorded) == sorted(f"s{i:02d}.{ext}" for i in range(1, 5) for ext in ("csv", "edf"))
    assert "already holds an adapter bundle finished" in _adapt(montage_yaml, data, out, checkpoint).output

    labels = (data / "s02.csv").read_text().splitlines()
    (data / "s02.csv").write_text("\n".join(reversed(labels)) + "\n")  # same values, other order
    result = _adapt(montage_yaml, data, out, checkpoint)
    assert result.exit_code == 2, result.output
    assert "on other data (s02.csv changed since)" in result.output and "--overwrite" in result.output

    again = _adapt(montage_yaml, data, out, checkpoint, "--overwrite")
    assert again.exit_code == 0, again.output
    assert "written to" in again.output
    assert json.loads((out / "adapter.json").read_text())["training_data"]["s02.csv"] != recorded["s02.csv"]


def test_changed_files_lists_changed_added_and_removed() -> None:
    from passport_kit.signals.data_hashes import changed_files

    assert changed_files({"a": "1", "b": "2", "c": "3"}, {"a": "1", "b": "9", "d": "4"}) == ["b", "c", "d"]
