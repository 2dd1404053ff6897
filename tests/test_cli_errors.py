"""The CLI maps the PassportError family to exit code 2 and one line, once, for every command."""

from __future__ import annotations

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
