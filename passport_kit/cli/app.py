"""The ``passport-kit`` command: one Typer app; each part registers its own commands.

Errors of the :class:`~passport_kit.errors.PassportError` family are mapped here, once,
for every command: exit code 2 and one line on stderr, no traceback; so are file-system errors
that a path the user gave causes (permission denied, read-only, not a folder, disk full:
:func:`~passport_kit.errors.file_system_message`); a
:class:`~passport_kit.errors.PassportWarning` becomes one ``warning: ...`` line on stderr. Every
command takes ``--quiet``/``--verbose`` (:mod:`passport_kit.cli.verbosity`).
"""

from __future__ import annotations

import warnings

import typer

from passport_kit.cli.options import HelpfulGroup
from passport_kit.errors import PassportError, PassportWarning, file_system_message

EXIT_USER_ERROR = 2


class _PassportGroup(HelpfulGroup):
    """Root command group that turns user errors into exit code 2 and one line."""

    def invoke(self, ctx):  # noqa: ANN001 - click's signature
        from passport_kit.cli import verbosity

        verbosity.set_level(verbosity.NORMAL)  # until the command's own --quiet/--verbose (many run in one process)
        with warnings.catch_warnings():
            shown = warnings.showwarning

            def show(message, category, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003 - warnings' signature
                if issubclass(category, PassportWarning):
                    typer.echo(f"warning: {message}", err=True)
                elif verbosity.level() > verbosity.QUIET:  # --quiet: another package's warning is not ours to show
                    shown(message, category, *args, **kwargs)

            warnings.showwarning = show
            try:
                return super().invoke(ctx)
            except PassportError as exc:
                typer.echo(f"error: {exc}", err=True)
                raise typer.Exit(EXIT_USER_ERROR) from None
            except OSError as exc:
                message = file_system_message(exc)
                if message is None:
                    raise  # not a path the user gave: a bug or a broken machine keeps its traceback
                typer.echo(f"error: {message}", err=True)
                raise typer.Exit(EXIT_USER_ERROR) from None


app = typer.Typer(
    cls=_PassportGroup,
    name="passport-kit",
    help="Onboard a new EEG device layout onto a pretrained EEG foundation model.",
    no_args_is_help=True,
    # Shell completion: `passport-kit --install-completion` (bash, zsh, fish, PowerShell).
    add_completion=True,
    pretty_exceptions_enable=False,
    # Plain help: rich panels cut long option names ('--mask-bad-channe…') at 80 columns.
    rich_markup_mode=None,
)


def _print_version(value: bool) -> None:
    if value:
        from passport_kit.version import __version__

        typer.echo(f"passport-kit {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", is_eager=True, callback=_print_version,
                                 help="Print the passport-kit version and exit."),
) -> None:
    """Onboard a new EEG device layout onto a pretrained EEG foundation model."""


@app.command()
def version() -> None:
    """Print the passport-kit version."""
    from passport_kit.version import __version__

    typer.echo(__version__)


def _register_commands() -> None:
    # Each part owns one module; importing it adds its commands to `app`.
    from passport_kit.cli import checkpoints, data, live, montages, onboard, pretrain, simulate, verbosity

    for module in (montages, checkpoints, data, simulate, pretrain, onboard, live):
        module.register(app)
    verbosity.add_to_every_command(app)


_register_commands()


def main() -> None:
    """Entry point of the ``passport-kit`` console script."""
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
