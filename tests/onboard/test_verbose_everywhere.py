"""``--verbose`` means the same in every command (issue 34, finding 7): files, device, precision, threads, time."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from passport_kit.cli.app import app

RUN = CliRunner()


def _files_read(output: str) -> bool:
    return bool(re.search(r"info: (opening \S+\.edf \(EDF\)|windows of \S+ from the cache|reading \S+)", output))


@pytest.mark.parametrize("command", ["predict", "adapt", "evaluate"])
def test_computing_commands_name_files_device_precision_threads_and_time(
        command: str, tmp_path: Path, bundle: Path, dataset: Path, montage_yaml: Path) -> None:
    args = {
        "predict": ["predict", "--adapter", str(bundle), str(dataset / "s01.edf"), "--out", str(tmp_path / "p")],
        "adapt": ["adapt", "--montage", str(montage_yaml), "--data", str(dataset), "--checkpoint", "tiny-mlp",
                  "--recipe", "probe", "--out", str(tmp_path / "a")],
        "evaluate": ["evaluate", "--montage", str(montage_yaml), "--data", str(dataset), "--checkpoint", "tiny-mlp",
                     "--recipe", "probe", "--test-subject", "s01", "--out", str(tmp_path / "e")],
    }[command]
    result = RUN.invoke(app, [*args, "--verbose"])
    assert result.exit_code == 0, result.output
    out = result.output
    assert _files_read(out), out
    assert re.search(r"info: device cpu \(--device auto\)", out), out
    assert re.search(r"info: precision (fp32|bf16) \(--precision auto on cpu\)", out), out
    assert re.search(r"info: CPU threads \d+", out), out
    assert re.search(rf"info: {command} took \d+\.\d s", out), out


def test_inspect_and_check_name_the_files_and_the_time(tmp_path: Path, dataset: Path, montage_yaml: Path,
                                                       checkpoint: str) -> None:
    result = RUN.invoke(app, ["data", "inspect", str(dataset / "s01.edf"), "--verbose"])
    assert "info: opening" in result.output and re.search(r"info: inspect took \d", result.output), result.output
    result = RUN.invoke(app, ["check", "--montage", str(montage_yaml), "--data", str(dataset), "--checkpoint",
                              checkpoint, "--verbose"])
    assert _files_read(result.output) and re.search(r"info: check took \d", result.output), result.output


def test_without_verbose_none_of_it(tmp_path: Path, bundle: Path, dataset: Path) -> None:
    result = RUN.invoke(app, ["predict", "--adapter", str(bundle), str(dataset / "s01.edf"), "--out",
                              str(tmp_path / "p")])
    assert result.exit_code == 0 and "info:" not in result.output
