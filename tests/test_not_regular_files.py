"""FIFOs, devices, folders and huge files named as YAML get one line and never hang (issue 35, item 4)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from passport_kit.bounded_yaml import MAX_YAML_BYTES, read_yaml_text
from passport_kit.cli.app import app
from passport_kit.errors import DataError, MontageError

RUN = CliRunner()


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe.yaml"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("kind", ["fifo", "device", "folder", "missing"])
def test_register_montage_refuses_what_is_no_yaml_file_with_one_line(kind: str, fifo: Path, tmp_path: Path) -> None:
    # Issue 35: `register-montage /dev/zero` hung (or MemoryError), and so did a FIFO.
    path = {"fifo": fifo, "device": Path("/dev/zero"), "folder": tmp_path, "missing": tmp_path / "no.yaml"}[kind]
    if kind == "device" and not path.exists():
        pytest.skip("no /dev/zero here")
    result = RUN.invoke(app, ["register-montage", str(path)])
    assert result.exit_code == 2
    expected = {"fifo": "is not a regular file (a device or a pipe)", "device": "is not a regular file",
                "folder": "is a folder", "missing": "does not exist"}[kind]
    assert expected in result.output and "Traceback" not in result.output


def test_a_yaml_file_over_the_limit_is_refused_before_reading(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    with path.open("wb") as f:
        f.truncate(MAX_YAML_BYTES + 1)
    with pytest.raises(MontageError, match="more than a YAML file here takes"):
        read_yaml_text(path, "montage file", MontageError)


def test_a_symlink_loop_is_one_line(tmp_path: Path) -> None:
    loop = tmp_path / "loop.yaml"
    loop.symlink_to(loop)
    with pytest.raises(DataError, match="loop.yaml"):
        read_yaml_text(loop, "dataset description", DataError)


def test_a_dataset_yaml_that_is_a_fifo_is_refused(fifo: Path) -> None:
    from passport_kit.signals.dataset_spec import load_dataset_spec

    with pytest.raises(DataError, match="is not a regular file or folder"):
        load_dataset_spec(fifo)


def test_a_recording_that_is_a_symlink_loop_is_named_so(tmp_path: Path) -> None:
    from passport_kit.inference.files import find_recordings
    from passport_kit.signals.readers import read_recording

    loop = tmp_path / "loop.edf"
    loop.symlink_to(loop)
    with pytest.raises(DataError, match="is a symlink that leads nowhere"):
        read_recording(loop)
    with pytest.raises(DataError, match="is a symlink that leads nowhere"):
        find_recordings([loop])


@pytest.mark.parametrize("kind", ["fifo", "device", "folder"])
def test_adapt_config_refuses_what_is_no_yaml_file_with_one_line(kind: str, fifo: Path, tmp_path: Path) -> None:
    # Issue 46: `adapt --config /dev/zero` read until the OOM killer struck (21 GB); a FIFO hung.
    path = {"fifo": fifo, "device": Path("/dev/zero"), "folder": tmp_path}[kind]
    if kind == "device" and not path.exists():
        pytest.skip("no /dev/zero here")
    result = RUN.invoke(app, ["adapt", "--config", str(path), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    expected = {"fifo": "is not a regular file", "device": "is not a regular file", "folder": "is a folder"}[kind]
    assert f"run file '{path}' {expected}" in result.output and "Traceback" not in result.output


def test_a_run_file_over_the_limit_is_refused_before_reading(tmp_path: Path) -> None:
    from passport_kit.errors import ConfigError
    from passport_kit.onboard.run_file import read_run_file

    path = tmp_path / "run.yaml"
    with path.open("wb") as f:
        f.truncate(MAX_YAML_BYTES + 1)
    with pytest.raises(ConfigError, match="more than a YAML file here takes"):
        read_run_file(path)


def test_register_montage_of_a_symlink_loop_says_loop(tmp_path: Path) -> None:
    # Issue 46: it said "does not exist".
    loop = tmp_path / "loop.yaml"
    loop.symlink_to(loop)
    result = RUN.invoke(app, ["register-montage", str(loop)])
    assert result.exit_code == 2 and "is a symlink that leads nowhere" in result.output, result.output


@pytest.mark.parametrize(("kind", "said"), [("fifo", "is not a regular file"), ("folder", "is a folder"),
                                            ("device", "is not a regular file"), ("loop", "is a symlink that leads")])
def test_a_dataset_yaml_that_is_no_regular_file_in_a_folder_is_said(kind: str, said: str, tmp_path: Path) -> None:
    # Issue 46: it was ignored, and the folder's files discovered instead.
    from passport_kit.signals.dataset_spec import load_dataset_spec

    named = tmp_path / "dataset.yaml"
    if kind == "fifo":
        os.mkfifo(named)
    elif kind == "folder":
        named.mkdir()
    elif kind == "device":
        if not Path("/dev/zero").exists():
            pytest.skip("no /dev/zero here")
        named.symlink_to("/dev/zero")
    else:
        named.symlink_to(named)
    with pytest.raises(DataError, match=f"dataset description '.*dataset.yaml' {said}"):
        load_dataset_spec(tmp_path)


def test_a_fifo_named_like_a_recording_in_a_folder_is_said(tmp_path: Path) -> None:
    # Issue 46: it was skipped without a word.
    from passport_kit.errors import PassportWarning
    from passport_kit.inference.files import find_recordings

    (tmp_path / "s01.edf").write_bytes(b"")
    os.mkfifo(tmp_path / "s02.edf")
    with pytest.warns(PassportWarning, match=r"skipped 1 entry in folder .* not a regular file .*: s02.edf"):
        assert find_recordings([tmp_path]) == [tmp_path / "s01.edf"]
