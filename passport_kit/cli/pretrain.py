"""``passport-kit pretrain``: masked patch reconstruction pretraining (alone or under torchrun).

Every option but ``--data`` and ``--montage`` (which together give ``sources``) is a field of
:class:`~passport_kit.pretrain.config.PretrainConfig`: its type, default and description (the
help text, with a final period) come from the field, so a new pretraining option is one field
there and, to show it on the command line, one name in :data:`_OPTIONS`.
"""

from __future__ import annotations

import typing
from collections.abc import Callable
from typing import Any, Literal

import typer

from passport_kit.cli import verbosity
from passport_kit.cli.options import EXIT_INTERRUPTED, notch_frequency, optional_float, options_in_place_of
from passport_kit.pretrain.config import PretrainConfig

#: The PretrainConfig fields that are options, in the order --help lists them.
_OPTIONS = (
    "embedding", "arch", "out", "steps", "stop_at", "batch_size", "seed", "lr", "resume", "device", "precision",
    "checkpoint_every", "val_every", "val_fraction", "val_subjects", "val_max_windows", "notch_freq",
    "amplitude_limit_uv", "corrupt_prob", "threads", "workers", "name", "progress", "init_from", "train",
    "temporal_position",
)
#: Fields whose option has another name than --<field>.
_FLAGS = {"arch": "--config", "notch_freq": "--notch"}
#: Fields whose None a user gives as 'none': their option is text, read by this (one-line errors).
_TAKES_NONE: dict[str, Callable[[str], float | None]] = {
    "notch_freq": lambda v: notch_frequency(v),
    "amplitude_limit_uv": lambda v: optional_float(v, "--amplitude-limit-uv", "a number of µV"),
}
#: Fields given to PretrainConfig only when the command line gives them: the architecture's default is the
#: --init-from source's, not the field's (so --help shows no default for it: its help names it).
_ONLY_GIVEN = ("arch",)


def _option(key: str) -> tuple[Any, Any]:
    """Return the annotation and the typer option of PretrainConfig field ``key``.

    A Literal stays text on the command line, so pydantic checks it with a one-line error; a
    flag that is on by default can be turned off (``--progress/--no-progress``), one that is off
    is a plain switch (``--resume``).
    """
    field = PretrainConfig.model_fields[key]
    flag = _FLAGS.get(key, "--" + key.replace("_", "-"))
    text = None if field.description is None else field.description + "."
    if key in _TAKES_NONE:
        return str, typer.Option(f"{field.default:g}", flag, help=text)
    if key in _ONLY_GIVEN:
        return field.annotation | None, typer.Option(None, flag, help=text)
    annotation = field.annotation
    if typing.get_origin(annotation) is Literal or Literal in map(typing.get_origin, typing.get_args(annotation)):
        annotation = str | None if field.default is None else str
    if annotation is bool and field.default:
        flag = f"{flag}/--no-{flag[2:]}"
    default = ... if field.is_required() else field.get_default(call_default_factory=True)
    return annotation, typer.Option(default, flag, help=text)


def _config(data: list[str], montage: list[str], options: dict[str, Any]) -> PretrainConfig:
    """Return the run's config from ``--data``/``--montage`` and the field options (one-line ConfigErrors)."""
    from passport_kit.pretrain.run import parse_sources

    sources = parse_sources(data, montage)
    given = {key: value for key, value in options.items() if not (key in _ONLY_GIVEN and value is None)}
    values = {key: _TAKES_NONE[key](v) if key in _TAKES_NONE else v for key, v in given.items()}
    values["val_subjects"] = [s for item in values["val_subjects"] for s in item.split(",") if s]
    # --quiet hides the progress bar (and its step lines in a log) as --no-progress does.
    values["progress"] = values["progress"] and verbosity.shows_progress()
    return PretrainConfig.from_options(sources=sources, **values)


@options_in_place_of("options", {key: _option(key) for key in _OPTIONS})
def pretrain_command(
    data: list[str] = typer.Option(
        ..., "--data", help="Dataset folder; repeat for several. DIR:MONTAGE names its montage."
    ),
    montage: list[str] = typer.Option(
        [], "--montage", help="Montage of the --data folders: once for all, or once per --data in order."
    ),
    options: dict[str, Any] = None,  # type: ignore[assignment] - options_in_place_of: the PretrainConfig options
) -> None:
    """Pretrain a backbone and channel embedding by masked patch reconstruction.

    With --init-from, grow an expert bank around another base checkpoint's backbone (e.g. the
    official CBraMod weights after `checkpoints import-cbramod`) instead of starting from scratch.
    Run it under `torchrun --nproc_per_node=N` for several processes (DDP). Ctrl-C saves the
    state; rerun with --resume to continue.
    """
    from passport_kit.pretrain.run import TrainingInterrupted, pretrain

    cfg = _config(data, montage, options)
    try:
        folder = pretrain(cfg)
    except TrainingInterrupted as stop:
        typer.echo(f"{stop}; continue with the same command plus --resume", err=True)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    from passport_kit.pretrain.distributed import env_context

    if env_context().is_main:  # under torchrun, one line from rank 0 only
        typer.echo(f"base checkpoint written to {folder}")


def register(app: typer.Typer) -> None:
    """Add ``pretrain`` to the root app."""
    app.command("pretrain")(pretrain_command)
