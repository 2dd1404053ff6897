"""One writer per output folder, and folders written as a whole (issue 28, item 2)."""

from __future__ import annotations

import errno
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from passport_kit.cli.app import app
from passport_kit.errors import OutputBusyError
from passport_kit.output_lock import output_lock

RUN = CliRunner()

_HOLD = """
import sys, time
from passport_kit.output_lock import output_lock
with output_lock(sys.argv[1], sys.argv[2]):
    print("held", flush=True)
    sys.stdin.readline()
"""


@pytest.fixture
def held(tmp_path: Path) -> Iterator[tuple[Path, int]]:
    """Yield a folder whose write lock another process holds (as a concurrent adapt would), and that process's pid."""
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-c", _HOLD, str(out), "adapt"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        yield out, proc.pid
    finally:
        proc.communicate("\n", timeout=30)


def test_a_second_lock_in_one_process_names_the_holder(tmp_path: Path) -> None:
    with output_lock(tmp_path / "out", "adapt"):
        with pytest.raises(OutputBusyError, match=r"being written by `adapt` \(pid \d+"):
            with output_lock(tmp_path / "out", "predict"):
                pass
    with output_lock(tmp_path / "out", "predict"):  # released: free again
        pass


def test_adapt_into_a_folder_another_process_writes_exits_2(held, montage_yaml: Path, dataset: Path,
                                                            checkpoint: str) -> None:
    out, pid = held
    result = RUN.invoke(app, ["adapt", "--montage", str(montage_yaml), "--data", str(dataset), "--checkpoint",
                              checkpoint, "--batch-size", "8", "--out", str(out), "--no-progress", "--max-steps", "2"])
    assert result.exit_code == 2, result.output
    assert f"is being written by `adapt` (pid {pid}" in result.output
    assert not (out / "adapter.json").exists()


def test_predict_into_a_folder_another_process_writes_exits_2(held, bundle: Path, dataset: Path) -> None:
    out, pid = held
    result = RUN.invoke(app, ["predict", "--adapter", str(bundle), str(dataset / "s01.edf"), "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert f"(pid {pid}" in result.output and not (out / "s01").exists()


def test_simulate_into_a_locked_folder_is_refused(held) -> None:
    from passport_kit.signals.simulator import simulate_dataset

    out, _ = held
    with pytest.raises(OutputBusyError):
        simulate_dataset("tuh-standard", out, n_subjects=1, hours=0.05)


def test_predict_refuses_earlier_outputs_unless_overwrite(bundle: Path, dataset: Path, tmp_path: Path) -> None:
    out = tmp_path / "pred"
    args = ["predict", "--adapter", str(bundle), str(dataset / "s01.edf"), "--out", str(out)]
    assert RUN.invoke(app, args).exit_code == 0
    before = (out / "s01" / "s01_summary.json").read_bytes()
    again = RUN.invoke(app, args)
    assert again.exit_code == 2
    assert "already holds predictions for 's01'" in again.output and "--overwrite" in again.output
    assert (out / "s01" / "s01_summary.json").read_bytes() == before
    assert RUN.invoke(app, [*args, "--overwrite"]).exit_code == 0


def test_a_full_disk_leaves_no_partial_prediction_folder(bundle: Path, dataset: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from passport_kit.inference import reports

    def full(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        raise OSError(errno.ENOSPC, "No space left on device", "summary.json")

    monkeypatch.setattr(reports, "write_json", full)  # the last file of a recording's folder
    out = tmp_path / "pred"
    result = RUN.invoke(app, ["predict", "--adapter", str(bundle), str(dataset / "s01.edf"), "--out", str(out)])
    assert result.exit_code == 2 and "the disk is full" in result.output
    assert [p.name for p in out.iterdir()] == []  # neither s01/ with 4 of 5 files nor a temporary folder


def test_predict_batch_size_0_is_one_line(bundle: Path, dataset: Path, tmp_path: Path) -> None:
    result = RUN.invoke(app, ["predict", "--adapter", str(bundle), str(dataset / "s01.edf"), "--out",
                              str(tmp_path / "p"), "--batch-size", "0"])
    assert result.exit_code == 2 and "batch_size (--batch-size) must be at least 1" in result.output


def test_a_failed_first_adapt_leaves_no_empty_out_folder(tmp_path: Path, montage_yaml: Path, dataset: Path) -> None:
    out = tmp_path / "never"
    result = RUN.invoke(app, ["adapt", "--montage", str(montage_yaml), "--data", str(dataset), "--checkpoint",
                              "no-such-checkpoint", "--out", str(out), "--no-progress", "--max-steps", "2"])
    assert result.exit_code == 2
    assert not out.exists()


def test_simulate_onto_a_full_disk_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import collections

    import edfio

    from passport_kit.signals.simulator import simulate as simulate_module

    def short_write(self, path, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        raise OSError("17280 requested and 4096 written")  # numpy's tofile on a full disk: no errno

    monkeypatch.setattr(edfio.Edf, "write", short_write)
    usage = collections.namedtuple("usage", "total used free")
    monkeypatch.setattr(simulate_module.shutil, "disk_usage", lambda path: usage(2**30, 2**30, 0))
    result = RUN.invoke(app, ["simulate", "--montage", "tuh-standard", "--subjects", "1", "--hours", "0.02",
                              "--out", str(tmp_path / "sim")])
    assert result.exit_code == 2, result.output
    assert "the disk is full" in result.output and "reads as incomplete" in result.output
    assert not (tmp_path / "sim" / "dataset.yaml").exists()
