"""``--quiet`` / ``--verbose`` on every command (issue 27 item 7)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from passport_kit.cli import verbosity
from passport_kit.cli.app import app

RUN = CliRunner()


def _commands(group: typer.Typer, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = [prefix + ((info.name or info.callback.__name__.replace("_", "-")),) for info in group.registered_commands]
    for sub in group.registered_groups:
        found += _commands(sub.typer_instance, prefix + (sub.typer_instance.info.name,))
    return found


@pytest.mark.parametrize("command", _commands(app), ids=" ".join)
def test_every_command_takes_quiet_and_verbose(command: tuple[str, ...]) -> None:
    result = RUN.invoke(app, [*command, "--help"])
    assert result.exit_code == 0, result.output
    assert "-q, --quiet" in result.output and "-v, --verbose" in result.output


def test_quiet_and_verbose_together_is_one_line_exit_2() -> None:
    result = RUN.invoke(app, ["montages", "list", "-q", "-v"])
    assert result.exit_code == 2 and result.output.strip() == (
        "error: --quiet and --verbose contradict each other; give one of them")


def test_verbose_prints_log_lines_and_the_next_command_does_not(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    @app.command("_log-something", hidden=True)
    def _log_something() -> None:
        logging.getLogger("passport_kit.test").info("read s01.edf")

    verbosity.add_to_every_command(app)
    try:
        assert "info: read s01.edf" in RUN.invoke(app, ["_log-something", "--verbose"]).output
        assert "read s01.edf" not in RUN.invoke(app, ["_log-something"]).output
    finally:
        app.registered_commands.pop()
