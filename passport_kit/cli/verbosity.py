"""``--quiet`` / ``--verbose`` on every command: how much a command says besides its results.

- ``--quiet`` (``-q``): results and problems only. No progress bars or step lines, no notes
  (``note: ...``, the channel-quality line before training), no other package's warnings or
  log lines (scikit-learn's version note on YASA's pickled classifier, MNE's "Creating
  RawArray"); passport-kit's ``warning:`` and ``error:`` lines and everything a command prints
  as its result (tables, summaries, JSON) stay.
- ``--verbose`` (``-v``): also passport-kit's log messages as ``info:``/``debug:`` lines on
  stderr, the same in every command: each file opened and each recording's windows taken from
  the cache, the device, precision and CPU threads chosen, and how long the command took.

Both options are added to every registered command once (:func:`add_to_every_command`), so
each command's ``--help`` lists them and no command has to declare them; commands ask
:func:`shows_progress` before drawing progress and print notes through :func:`note`.
"""

from __future__ import annotations

import functools
import inspect
import logging
import time
import typing
from collections.abc import Callable
from typing import Any

import typer

QUIET, NORMAL, VERBOSE = 0, 1, 2
_state = {"level": NORMAL}
#: The options' --help texts.
QUIET_HELP = "Print results, warnings and errors only (no progress, no notes)."
VERBOSE_HELP = ("Also print passport-kit's log messages on stderr: files read, cache hits, device, precision, "
                "threads, timings.")


def level() -> int:
    """Return the verbosity of the running command: QUIET, NORMAL or VERBOSE."""
    return _state["level"]


def shows_progress() -> bool:
    """Return whether progress bars and step lines are wanted (not under --quiet)."""
    return _state["level"] > QUIET


def note(text: str) -> None:
    """Print an informational line on stderr unless --quiet."""
    if shows_progress():
        typer.echo(text, err=True)


class _Lines(logging.Handler):
    """Logs as ``info: ...`` / ``debug: ...`` lines on stderr, like the CLI's warnings."""

    def emit(self, record: logging.LogRecord) -> None:
        typer.echo(f"{record.levelname.lower()}: {record.getMessage()}", err=True)


_HANDLER = _Lines()


#: Other packages' loggers that --quiet holds to warnings and errors (MNE prints "Creating RawArray ..." at info).
QUIETED_LOGGERS = ("mne",)


def set_level(value: int) -> None:
    """Set the verbosity; VERBOSE routes the ``passport_kit`` loggers to stderr, the others detach them; QUIET holds
    :data:`QUIETED_LOGGERS` to warnings."""
    _state["level"] = value
    for name in QUIETED_LOGGERS:
        other = logging.getLogger(name)
        saved = _state.setdefault(f"logger:{name}", other.level)
        other.setLevel(logging.WARNING if value == QUIET else saved)
    logger = logging.getLogger("passport_kit")
    if value >= VERBOSE:
        if _HANDLER not in logger.handlers:
            logger.addHandler(_HANDLER)
        logger.setLevel(logging.DEBUG)
    else:
        logger.removeHandler(_HANDLER)
        logger.setLevel(logging.NOTSET)


def with_verbosity(command: Callable[..., Any]) -> Callable[..., Any]:
    """Return ``command`` taking ``--quiet/-q`` and ``--verbose/-v`` too (set before it runs, not passed to it)."""
    hints = typing.get_type_hints(command, include_extras=True)
    signature = inspect.signature(command)
    params = [p.replace(annotation=hints.get(p.name, p.annotation)) for p in signature.parameters.values()]
    params += [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=bool,
                                 default=typer.Option(False, f"--{name}", f"-{name[0]}", help=text))
               for name, text in (("quiet", QUIET_HELP), ("verbose", VERBOSE_HELP))]

    @functools.wraps(command)
    def run(*args: Any, quiet: bool = False, verbose: bool = False, **kwargs: Any) -> Any:
        if quiet and verbose:
            from passport_kit.errors import ConfigError

            raise ConfigError("--quiet and --verbose contradict each other; give one of them")
        set_level(QUIET if quiet else VERBOSE if verbose else NORMAL)
        start = time.perf_counter()
        try:
            return command(*args, **kwargs)
        finally:
            logging.getLogger("passport_kit.cli").info("%s took %.1f s", command.__name__.removesuffix("_command")
                                                       .removesuffix("_cmd").replace("_", " "),
                                                       time.perf_counter() - start)

    run.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
    run.__annotations__ = {**hints, "quiet": bool, "verbose": bool}
    return run


def add_to_every_command(app: typer.Typer) -> None:
    """Give every command of ``app`` and of its command groups ``--quiet`` and ``--verbose`` (once)."""
    for info in app.registered_commands:
        if info.callback is not None and not getattr(info.callback, "_verbosity", False):
            info.callback = with_verbosity(info.callback)
            info.callback._verbosity = True  # type: ignore[attr-defined]
    for group in app.registered_groups:
        if group.typer_instance is not None:
            add_to_every_command(group.typer_instance)
