"""What the commands share: option parsing (one rule per kind of value), JSON output, the group class."""

from __future__ import annotations

import json
from typing import Any

import typer
from typer.core import TyperGroup

from passport_kit.errors import ConfigError

#: Exit code after Ctrl-C, once the training state has been saved (128 + SIGINT).
EXIT_INTERRUPTED = 130


class HelpfulGroup(TyperGroup):
    """A command group that, called without a command, prints its help and exits 0 (as git and pip do)."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if not args and self.no_args_is_help and not ctx.resilient_parsing:
            typer.echo(ctx.get_help())
            ctx.exit(0)
        return super().parse_args(ctx, args)


def echo_json(data: object) -> None:
    """Print ``data`` as indented JSON on stdout (``--json`` of every command); ``default=str`` for dates and paths."""
    typer.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def notch_frequency(value: str, option: str = "--notch") -> float | None:
    """Return the mains frequency to notch in Hz, or None for 'none'/'off'.

    Unlike the thresholds, ``0`` is refused: it reads as a frequency, and silently meant "no
    notch" (issue 28).
    """
    try:
        zero = float(value) == 0
    except ValueError:
        zero = False
    if zero:
        raise ConfigError(f"{option} 0 is not a mains frequency; give 50 or 60, or 'none' for no notch")
    return optional_float(value, option, "a frequency in Hz (50, 60)")


def optional_float(value: str, option: str, what: str) -> float | None:
    """Return ``value`` as a float, or None for 'none', 'off' or '0'.

    ``option`` (e.g. ``--notch``) and ``what`` (e.g. ``a frequency in Hz (50, 60)``) name the
    option in the one-line error a bad value gives.
    """
    if value.strip().lower() in {"none", "off", "0"}:
        return None
    try:
        return float(value)
    except ValueError:
        raise ConfigError(f"{option} must be {what} or 'none', got {value!r}") from None
