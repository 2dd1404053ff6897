"""Output locks leave no file behind once released (issue 35, item 5); a held one still refuses a second writer."""

from __future__ import annotations

from pathlib import Path

import pytest

from passport_kit.errors import OutputBusyError
from passport_kit.output_lock import lock_path, output_lock


def test_the_lock_file_is_removed_on_release(tmp_path: Path) -> None:
    out = tmp_path / "pred"
    with output_lock(out, "predict"):
        assert lock_path(out).exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_the_lock_file_is_removed_when_the_block_fails(tmp_path: Path) -> None:
    out = tmp_path / "pred"
    with pytest.raises(ValueError), output_lock(out, "predict"):
        raise ValueError("boom")
    assert not lock_path(out).exists()


def test_a_held_lock_still_refuses_a_second_writer_and_is_free_again_after(tmp_path: Path) -> None:
    out = tmp_path / "pred"
    with output_lock(out, "predict"):
        with pytest.raises(OutputBusyError, match="is being written by `predict`|is being written by"):
            with output_lock(out, "adapt"):
                pass
    with output_lock(out, "adapt"):
        pass
    assert not lock_path(out).exists()


def test_a_stale_lock_file_is_taken_over(tmp_path: Path) -> None:
    # What kill -9 leaves: the file, without a holder (the operating system dropped the lock).
    out = tmp_path / "pred"
    lock_path(out).write_text("")
    with output_lock(out, "predict"):
        pass
    assert not lock_path(out).exists()


def test_a_folder_whose_lock_cannot_be_made_is_not_called_busy(tmp_path: Path) -> None:
    # Issue 57: an --out symlink to /proc/self was said to be "being written by another process".
    from passport_kit.errors import ConfigError

    out = tmp_path / "out"
    out.symlink_to("/proc/self")
    with pytest.raises(ConfigError, match="its lock file cannot be made in '/proc'"):
        with output_lock(out, "predict"):
            pass
