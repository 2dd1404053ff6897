"""Hostile and huge inputs get one line, not a traceback or a hang (issue 28, items 5, 6 and 10)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from passport_kit.bounded_yaml import MAX_DEPTH, load_yaml
from passport_kit.errors import ConfigError, DataError, LabelError, MontageError

MONTAGE = """\
name: tiny-ear
coordinate_frame: head
units: mm
channels:
  - name: EL1
    position: [-80.0, -5.0, 10.0]
  - name: ER1
    position: [80.0, -5.0, 10.0]
"""

#: Nine levels of nine aliases: 9**9 (387 million) strings once expanded.
BOMB = 'metadata:\n  a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
    f"  {chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 9)}]\n" for i in range(8))
DEEP = "[" * 20_000 + "]" * 20_000


def test_load_yaml_reads_what_safe_load_reads() -> None:
    text = "a: &x [1, 2]\nb: *x\nc: {d: 1.5, e: null}\n"
    assert load_yaml(text) == yaml.safe_load(text)


@pytest.mark.parametrize(("text", "problem"), [
    (BOMB, "expand to more than"),
    ("x: " + DEEP, f"nested more than {MAX_DEPTH} levels"),
    ("x: " + "9" * 400, "too large"),
])
def test_load_yaml_refuses_bombs_depth_and_huge_numbers(text: str, problem: str) -> None:
    with pytest.raises(yaml.YAMLError, match=problem):
        load_yaml(text)


@pytest.mark.parametrize(("extra", "problem"), [
    (BOMB, "expand to more than"),
    ("metadata:\n  x: " + DEEP + "\n", "nested more than"),
])
def test_a_hostile_montage_is_one_montage_error(tmp_path: Path, extra: str, problem: str) -> None:
    from passport_kit.montage import Montage

    path = tmp_path / "m.yaml"
    path.write_text(MONTAGE + extra)
    with pytest.raises(MontageError, match=problem):
        Montage.from_yaml(path)


def test_a_400_digit_position_is_one_montage_error(tmp_path: Path) -> None:
    from passport_kit.montage import Montage

    path = tmp_path / "m.yaml"
    path.write_text(MONTAGE.replace("-80.0", "-8" + "0" * 400))
    with pytest.raises(MontageError, match="too large"):
        Montage.from_yaml(path)


def test_a_deep_dataset_yaml_is_one_data_error(tmp_path: Path) -> None:
    from passport_kit.signals.dataset_spec import load_dataset_spec

    (tmp_path / "dataset.yaml").write_text("task: " + DEEP + "\n")
    with pytest.raises(DataError, match="nested more than"):
        load_dataset_spec(tmp_path)


def test_a_deep_run_file_is_one_config_error(tmp_path: Path) -> None:
    from passport_kit.onboard.run_file import read_run_file

    (tmp_path / "run.yaml").write_text("montage: " + DEEP + "\n")
    with pytest.raises(ConfigError, match="nested more than"):
        read_run_file(tmp_path / "run.yaml")


def test_an_unknown_dataset_yaml_key_is_named(tmp_path: Path) -> None:
    from passport_kit.signals.dataset_spec import load_dataset_spec

    (tmp_path / "a.edf").touch()
    (tmp_path / "dataset.yaml").write_text("recordingz: []\nrecordings:\n  - {subject: s1, file: a.edf}\n")
    with pytest.raises(DataError, match="'recordingz' is not a dataset.yaml key"):
        load_dataset_spec(tmp_path)


def test_a_huge_label_file_is_refused_before_reading(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from passport_kit.signals import labels

    path = tmp_path / "big.csv"
    with path.open("wb") as f:  # sparse: 100 MiB on paper, nothing on disk
        f.truncate(100 * 2**20)
    monkeypatch.setattr(Path, "read_bytes", lambda self: pytest.fail("read a file past the size limit"))
    with pytest.raises(LabelError, match="more than labels take"):
        labels.read_label_file(path)


@pytest.mark.parametrize(("encoding", "shown"), [("utf-16", "UTF-16"), ("latin-1", "byte e9 at offset 8, Latin-1")])
def test_a_label_file_not_in_utf8_says_so(tmp_path: Path, encoding: str, shown: str) -> None:
    from passport_kit.signals.labels import read_label_file

    path = tmp_path / "labels.csv"
    path.write_bytes("stage\nW\néveil\n".encode(encoding))
    with pytest.raises(LabelError, match=f"is not UTF-8 text \\({shown}.*save it as UTF-8"):
        read_label_file(path)


@pytest.mark.parametrize("kind", ["folder", "fifo", "device"])
def test_a_label_path_that_is_no_file_gets_the_right_message(tmp_path: Path, kind: str) -> None:
    from passport_kit.signals.labels import read_label_file

    if kind == "folder":
        path, expected = tmp_path / "labels", "is a folder"
        path.mkdir()
    elif kind == "fifo":
        path, expected = tmp_path / "labels.csv", "not a regular file"
        os.mkfifo(path)
    else:
        path, expected = Path("/dev/zero"), "not a regular file"
    with pytest.raises(LabelError, match=expected):
        read_label_file(path)


def _dataset(folder: Path, labels: str, *, allow: bool = False) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "s01.edf").touch()
    allow_line = "allow_outside_paths: true\n" if allow else ""
    (folder / "dataset.yaml").write_text(f"{allow_line}recordings:\n  - {{subject: s01, file: s01.edf, labels: '{labels}'}}\n")
    return folder


def test_a_relative_path_out_of_the_dataset_folder_is_refused(tmp_path: Path) -> None:
    from passport_kit.signals.dataset_spec import load_dataset_spec

    (tmp_path / "secret.txt").write_text("root:x:0:0\n")
    with pytest.raises(DataError, match=r"'labels: \.\./secret.txt' \(s01\) resolves outside the dataset folder"):
        load_dataset_spec(_dataset(tmp_path / "ds", "../secret.txt"))


def test_a_symlink_out_of_the_dataset_folder_is_refused(tmp_path: Path) -> None:
    from passport_kit.signals.dataset_spec import load_dataset_spec

    (tmp_path / "secret.txt").write_text("W\n")
    folder = _dataset(tmp_path / "ds", "s01.csv")
    (folder / "s01.csv").symlink_to(tmp_path / "secret.txt")
    with pytest.raises(DataError, match="resolves outside the dataset folder"):
        load_dataset_spec(folder)


def test_an_absolute_path_out_of_the_folder_is_refused_unless_allowed(tmp_path: Path) -> None:
    # Issue 35: 'labels: /etc/passwd' was read after a warning, and check printed its lines.
    import warnings

    from passport_kit.signals.dataset_spec import load_dataset_spec

    outside = tmp_path / "labels.csv"
    outside.write_text("W\n")
    with pytest.raises(DataError, match="is an absolute path outside the dataset folder .*allow_outside_paths: true"):
        load_dataset_spec(_dataset(tmp_path / "ds", str(outside)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert load_dataset_spec(_dataset(tmp_path / "ok", str(outside), allow=True)).allow_outside_paths
        assert load_dataset_spec(_dataset(tmp_path / "ok2", "../labels.csv", allow=True)).allow_outside_paths


def test_a_symlink_loop_named_by_dataset_yaml_is_one_line(tmp_path: Path) -> None:
    from passport_kit.signals.dataset_spec import load_dataset_spec

    folder = _dataset(tmp_path / "ds", "loop.csv")
    (folder / "loop.csv").symlink_to(folder / "loop.csv")
    with pytest.raises(DataError, match="loop.csv.*(symlink loop|does not exist)"):
        load_dataset_spec(folder)


def test_check_does_not_echo_a_file_outside_the_dataset(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from passport_kit.cli.app import app

    (tmp_path / "secret.txt").write_text("root:x:0:0:root:/root:/bin/bash\n")
    folder = _dataset(tmp_path / "ds", "../secret.txt")
    result = CliRunner().invoke(app, ["check", "--montage", "tuh-standard", "--data", str(folder)])
    assert result.exit_code == 2 and "root:x" not in result.output


@pytest.mark.parametrize("kind", ["folder", "fifo", "device"])
def test_a_recording_path_that_is_no_file_gets_the_right_message(tmp_path: Path, kind: str) -> None:
    from passport_kit.signals import read_recording

    if kind == "folder":
        path, expected = tmp_path / "s01.edf", "is a folder"
        path.mkdir()
    elif kind == "fifo":
        path, expected = tmp_path / "s01.edf", "not a regular file"
        os.mkfifo(path)
    else:
        path, expected = Path("/dev/zero"), "not a regular file"
    with pytest.raises(DataError, match=expected):
        read_recording(path)


def test_predict_names_a_fifo_as_such(tmp_path: Path) -> None:
    from passport_kit.inference.files import find_recordings

    os.mkfifo(tmp_path / "night.edf")
    with pytest.raises(DataError, match="not a regular file"):
        find_recordings([tmp_path / "night.edf"])


def test_a_full_cache_disk_says_it_is_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import collections

    import numpy as np

    from passport_kit.signals import cache

    monkeypatch.setenv("PASSPORT_KIT_HOME", str(tmp_path / "home"))
    usage = collections.namedtuple("usage", "total used free")
    monkeypatch.setattr(cache.shutil, "disk_usage", lambda path: usage(2**30, 2**30 - 2**20, 2**20))
    with pytest.raises(DataError, match=r"window cache at .*home/cache needs .* MiB more.*PASSPORT_KIT_HOME"):
        cache.write_entry("ab" * 32, {"x": np.zeros((4, 4), dtype=np.float32)}, {})
    assert not list((tmp_path / "home" / "cache").rglob("*.tmp-*"))


def test_one_file_under_two_subjects_warns(tmp_path: Path) -> None:
    from passport_kit.errors import PassportWarning
    from passport_kit.signals.dataset_spec import load_dataset_spec

    (tmp_path / "a.edf").touch()
    (tmp_path / "dataset.yaml").write_text("recordings:\n  - {subject: s1, file: a.edf, label: x}\n"
                                           "  - {subject: s2, file: ./a.edf, label: x}\n")
    with pytest.warns(PassportWarning, match="lists './a.edf' for subjects s1 and s2"):
        load_dataset_spec(tmp_path)


def test_two_channels_at_one_position_warn(tmp_path: Path) -> None:
    from passport_kit.errors import PassportWarning
    from passport_kit.montage import Montage

    path = tmp_path / "m.yaml"
    path.write_text(MONTAGE.replace("[80.0, -5.0, 10.0]", "[-80.0, -5.0, 10.0]"))
    with pytest.warns(PassportWarning, match="channels 'EL1' and 'ER1' have the same position"):
        Montage.from_yaml(path)


@pytest.mark.parametrize(("value", "message"), [
    ("-1e308", "is read as text by YAML; write it as -1.000000e\\+308"),
    ("-1.0e+308", "m from the head centre"),
    ("1e400", "too large for a position"),
])
def test_extreme_positions_are_one_line_without_numpy_warnings(tmp_path: Path, value: str, message: str) -> None:
    import warnings

    from passport_kit.montage import Montage

    path = tmp_path / "m.yaml"
    path.write_text(MONTAGE.replace("-80.0", value))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a RuntimeWarning (overflow) would fail here
        with pytest.raises(MontageError, match=message):
            Montage.from_yaml(path)


def test_a_recording_larger_than_memory_is_refused_before_reading() -> None:
    from passport_kit.signals.channels import check_fits_memory

    check_fits_memory(4, 200 * 3600 * 8, 200.0, source="recording 'night.edf'")  # a night: fine
    with pytest.raises(DataError, match=r"recording 'big.edf' holds 2,000,000 hours of 8 channels .* more than this "
                                        r"machine's memory"):
        check_fits_memory(8, 200 * 3600 * 2_000_000, 200.0, source="recording 'big.edf'")


def test_an_unknown_label_error_shows_a_short_escaped_excerpt_only() -> None:
    # Issue 35: check and adapt printed the lines of a file named as labels (/etc/passwd) in the error.
    from passport_kit.errors import LabelError
    from passport_kit.signals.labels import encode_labels, identity_map

    lines = [f"user{i}:x:{i}:{i}:Secret Person {i}\x1b[31m:/home/user{i}:/bin/bash" for i in range(50)]
    with pytest.raises(LabelError) as caught:
        encode_labels(lines, identity_map(["W", "N1"]), ["W", "N1"], n_windows=50, window_seconds=30, source="labels")
    message = str(caught.value)
    assert "and 47 more" in message and "/bin/bash" not in message and "\x1b" not in message
    assert len(message) < 600
