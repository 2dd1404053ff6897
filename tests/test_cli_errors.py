"""The CLI maps the PassportError family to exit code 2 and one line, once, for every command."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest
from typer.testing import CliRunner

from passport_kit.cli.app import app
from passport_kit.errors import ConfigError


def test_user_error_exits_2_with_one_line() -> None:
    @app.command("_raise-user-error", hidden=True)
    def _raise() -> None:
        raise ConfigError("option --foo is wrong;\n set --foo to bar")

    try:
        result = CliRunner().invoke(app, ["_raise-user-error"])
    finally:
        app.registered_commands[:] = [c for c in app.registered_commands if c.name != "_raise-user-error"]
    assert result.exit_code == 2
    assert result.output.strip() == "error: option --foo is wrong; set --foo to bar"


def test_bug_keeps_its_traceback() -> None:
    @app.command("_raise-bug", hidden=True)
    def _bug() -> None:
        raise RuntimeError("a bug")

    try:
        result = CliRunner().invoke(app, ["_raise-bug"])
    finally:
        app.registered_commands[:] = [c for c in app.registered_commands if c.name != "_raise-bug"]
    assert result.exit_code == 1
    assert isinstance(result.exception, RuntimeError)


def test_help_lists_every_command() -> None:
    result = CliRunner().invoke(app, ["--help"])
    assert result.exit_code == 0
    for command in ("register-montage", "simulate", "pretrain", "adapt", "evaluate", "predict", "check", "demo"):
        assert command in result.output


def _invoke_raising(exc: BaseException):
    @app.command("_raise-os-error", hidden=True)
    def _raise() -> None:
        raise exc

    try:
        return CliRunner().invoke(app, ["_raise-os-error"])
    finally:
        app.registered_commands[:] = [c for c in app.registered_commands if c.name != "_raise-os-error"]


@pytest.mark.parametrize(("exc", "expected"), [
    (PermissionError(errno.EACCES, "Permission denied", "/data/ro/run"),
     "error: '/data/ro/run': Permission denied; choose a place you can write to"),
    (NotADirectoryError(errno.ENOTDIR, "Not a directory", "notes.txt/run"),
     "error: 'notes.txt/run': Not a directory; part of that path is a file, not a folder"),
    (OSError(errno.EROFS, "Read-only file system", "/mnt/cd/run"), "read-only file system"),
    (OSError(errno.ENOSPC, "No space left on device", "/tmp/run/x.npy"), "the disk is full"),
    # issue 46: `ulimit -f` (EFBIG) was a traceback
    (OSError(errno.EFBIG, "File too large", "/tmp/run/x.npy"), "largest file allowed here (ulimit -f"),
])
def test_file_system_errors_exit_2_with_one_line(exc: OSError, expected: str) -> None:
    result = _invoke_raising(exc)
    assert result.exit_code == 2
    assert len(result.output.strip().splitlines()) == 1 and expected in result.output


def test_other_os_errors_keep_their_traceback() -> None:
    result = _invoke_raising(OSError(errno.EIO, "Input/output error", "/dev/sdz"))
    assert result.exit_code == 1 and isinstance(result.exception, OSError)


@pytest.mark.parametrize("under", ["a-file", "/proc"])
def test_out_under_a_file_or_in_proc_exits_2(tmp_path: Path, under: str) -> None:
    if under == "a-file":
        (tmp_path / "a-file").write_text("not a folder")
        under = str(tmp_path / "a-file")
    elif not Path("/proc/self").exists():
        pytest.skip("no /proc on this system")
    result = CliRunner().invoke(app, ["simulate", "--montage", "muse", "--subjects", "1", "--hours", "0.01",
                                      "--out", f"{under}/sim"])
    assert result.exit_code == 2, result.output
    assert result.output.strip().startswith("error: ") and len(result.output.strip().splitlines()) == 1
