"""Edited adapter.json files get one line (issue 28, item 5)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
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


def _edited(bundle: Path, tmp_path: Path, edit) -> Path:  # noqa: ANN001 - a function of the parsed adapter.json
    folder = shutil.copytree(bundle, tmp_path / "edited")
    meta = json.loads((folder / "adapter.json").read_text())
    edit(meta)
    (folder / "adapter.json").write_text(json.dumps(meta))
    return folder


@pytest.mark.parametrize(("edit", "message"), [
    (lambda m: m["metrics"].__setitem__("distribution", "garbage"), "metrics.distribution must be the guard's profile"),
    (lambda m: m["metrics"]["distribution"].__setitem__(
        "quantiles", [[[float("nan")] * 5] * len(m["metrics"]["distribution"]["bands"])] * 3),
     "quantiles holds no finite channel"),
    (lambda m: m["metrics"]["distribution"].__setitem__("amplitude_uv", [-1.0, 2.0, 3.0]), "must be positive"),
    (lambda m: m["head"].__setitem__("temperature", 1e-300), "head.temperature is 1e-300, outside"),
])
def test_edited_head_numbers_and_guard_profile_are_one_line(bundle: Path, dataset: Path, tmp_path: Path, edit,  # noqa: ANN001
                                                           message: str) -> None:
    # Issue 46: an all-NaN guard profile switched the guard off silently; "garbage" was an AttributeError traceback.
    result = _predict(_edited(bundle, tmp_path, edit), dataset, tmp_path)
    assert result.exit_code == 2, result.output
    assert message in result.output and "adapter.json was edited or damaged" in result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1, result.output
