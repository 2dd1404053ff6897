"""What the commands share: option parsing (one rule per kind of value), JSON output, the group and command classes."""

from __future__ import annotations

import functools
import inspect
import json
import types
import typing
from collections.abc import Callable
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup

from passport_kit.errors import ConfigError

#: Exit code after Ctrl-C, once the training state has been saved (128 + SIGINT).
EXIT_INTERRUPTED = 130

#: The ``rich_help_panel=`` of options, in the order ``--help`` shows them; options without one come last,
#: under "Options" (--quiet, --verbose, --help).
DATA, SCORER, MODEL, EVALUATION = "Data", "Scorer's labels", "Model", "Evaluation"
PROBE, FINETUNE = "Training (probe)", "Training (finetune only)"
CONTACTS, COMPUTE, OUTPUT = "Poor contacts", "Compute", "Output"
PANELS = (DATA, SCORER, MODEL, EVALUATION, PROBE, FINETUNE, CONTACTS, COMPUTE, OUTPUT)


class HelpfulGroup(TyperGroup):
    """A command group that, called without a command, prints its help and exits 0 (as git and pip do)."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if not args and self.no_args_is_help and not ctx.resilient_parsing:
            typer.echo(ctx.get_help())
            ctx.exit(0)
        return super().parse_args(ctx, args)


class PanelledCommand(TyperCommand):
    """A command whose plain ``--help`` lists its options in one section per ``rich_help_panel`` (in PANELS order).

    The app's help is plain (``rich_markup_mode=None``: rich panels cut long option names at 80
    columns), and typer's plain help ignores the panels; this keeps them as titled sections.
    """

    def format_options(self, ctx: Any, formatter: Any) -> None:
        arguments, sections = [], {}  # type: ignore[var-annotated]
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            if param.param_type_name == "argument":
                arguments.append(record)
            else:
                sections.setdefault(getattr(param, "rich_help_panel", None) or "Options", []).append(record)
        # One description column for all sections, as in one list: pad the names to the widest that fits
        # (click's write_dl puts a name wider than 30 on a line of its own).
        width = min(30, max(len(name) for rows in [arguments, *sections.values()] for name, _ in rows))
        order = {title: i for i, title in enumerate(PANELS)}
        if arguments:
            with formatter.section("Arguments"):
                formatter.write_dl([(name.ljust(width), text) for name, text in arguments])
        for title in sorted(sections, key=lambda t: order.get(t, len(PANELS))):  # stable: others as they come
            with formatter.section(title):
                formatter.write_dl([(name.ljust(width), text) for name, text in sections[title]])


def options_in_place_of(parameter: str, options: dict[str, tuple[Any, Any]]
                        ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Return a decorator that puts ``options`` in the place of a command's ``parameter``, which then receives
    their values as one dict (in ``options``' order, as the command line gave them).

    ``options`` maps each parameter name to its annotation and ``typer.Option``, e.g. generated from
    the fields of a pydantic model, so an option is declared once, as a field.
    """
    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        hints = typing.get_type_hints(command, include_extras=True)
        params: list[inspect.Parameter] = []
        for param in inspect.signature(command).parameters.values():
            if param.name == parameter:
                params += [inspect.Parameter(key, param.kind, annotation=annotation, default=option)
                           for key, (annotation, option) in options.items()]
            else:
                params.append(param.replace(annotation=hints.get(param.name, param.annotation)))

        @functools.wraps(command)
        def run(*args: Any, **kwargs: Any) -> Any:
            values = {key: kwargs.pop(key) for key in options}
            return command(*args, **{parameter: values}, **kwargs)

        run.__signature__ = inspect.signature(command).replace(parameters=params)  # type: ignore[attr-defined]
        run.__annotations__ = {p.name: p.annotation for p in params if p.annotation is not inspect.Parameter.empty}
        return run

    return decorate


def field_options(model: Any, panels: str | dict[str, str], *, leave_out: tuple[str, ...] = (),
                  spelled: dict[str, tuple[Any, str, str]] | None = None) -> dict[str, tuple[Any, Any]]:
    """Return ``{field: (annotation, typer option)}`` of the fields of pydantic ``model`` (but ``leave_out``), for
    :func:`options_in_place_of`: each option's help is its field's description, its default the field's.

    ``panels``: the ``rich_help_panel`` of every option, or one per field. The flag is the field's
    name with '-' for '_' (a bool defaulting to True: ``--x/--no-x``); ``spelled`` gives the
    annotation, flag and metavar of a field the command line spells otherwise (``renames``, a dict,
    is ``--rename NAME=NAME_IN_FILE`` repeated). An optional list is an empty list on the command
    line; an optional path or name, text.
    """
    options: dict[str, tuple[Any, Any]] = {}
    for key, field in model.model_fields.items():
        if key in leave_out:
            continue
        panel = panels if isinstance(panels, str) else panels[key]
        annotation, flag, metavar = (spelled or {}).get(key, (field.annotation, "--" + key.replace("_", "-"), None))
        args = typing.get_args(annotation)
        if typing.get_origin(annotation) in (typing.Union, types.UnionType) and any(
                typing.get_origin(a) is list for a in args):
            annotation = next(a for a in args if typing.get_origin(a) is list)   # list[X] | None: a repeated option
        elif type(None) in args and len(args) > 2:
            annotation = str | None   # str | Path | None: a name or a path, as text
        default = [] if typing.get_origin(annotation) is list and field.default is None else field.default
        if annotation is bool and default is True:
            flag = f"{flag}/--no-{flag[2:]}"
        options[key] = (annotation, typer.Option(default, flag, help=str(field.description), metavar=metavar,
                                                 rich_help_panel=panel))
    return options


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


def renames_option(values: list[str]) -> dict[str, str] | None:
    """Return ``{montage channel: name in the file}`` from ``--rename ELA='EEG ELA-REF'`` options."""
    renames = {}
    for value in values:
        montage_name, sep, file_name = value.partition("=")
        if not sep or not montage_name.strip() or not file_name.strip():
            raise ConfigError(f"--rename takes MONTAGE_CHANNEL=NAME_IN_FILE, e.g. --rename ELA='EEG ELA-REF'; "
                              f"got {value!r}")
        renames[montage_name.strip()] = file_name.strip()
    return renames or None
