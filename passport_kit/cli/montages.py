"""CLI for the montage registry: ``register-montage`` and ``montages list|show|plot|remove|import``.

Parses, calls :mod:`passport_kit.montage`, prints. User errors are MontageErrors, which the
root app turns into exit code 2 and one line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from passport_kit.cli.options import HelpfulGroup, echo_json
from passport_kit.wording import counted

montages_app = typer.Typer(
    name="montages",
    help="List, show, plot, remove and import montages (named electrode layouts).",
    no_args_is_help=True,
    cls=HelpfulGroup,
    rich_markup_mode=None,
)


def _console():  # noqa: ANN202 - rich type
    from rich.console import Console

    # Created per call so that output follows the current sys.stdout (CliRunner, pipes).
    return Console(highlight=False, soft_wrap=False)


def _fmt_mm(p: tuple[float, float, float] | None) -> list[str]:
    if p is None:
        return ["", "", ""]
    return [f"{v * 1000:.1f}" for v in p]


def register_montage_cmd(
    file: Annotated[Path, typer.Argument(help="Montage YAML (name, units, channels with positions).")],
    force: Annotated[bool, typer.Option("--force", help="Replace a user montage of the same name.")] = False,
) -> None:
    """Validate a montage YAML and store it in the user registry."""
    from passport_kit.montage import Montage, register_montage
    from passport_kit.montage.registry import is_registered

    montage = Montage.from_yaml(file)
    unchanged = is_registered(montage)
    path = register_montage(montage, force=force)
    typer.echo(f"{'montage already registered, unchanged' if unchanged else 'registered montage'} "
               f"'{montage.name}': {counted(montage.n_channels, 'channel')}, hash {montage.content_hash[:12]}, "
               f"stored at {path}")


@montages_app.command("list")
def list_cmd(
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """List the built-in and user montages."""
    from rich.table import Table

    from passport_kit.montage import list_montages

    rows = list_montages()
    if as_json:
        echo_json([{"name": r.name, "source": r.source, "n_channels": r.n_channels,
                     "content_hash": r.content_hash, "path": str(r.path),
                     "description": r.description} for r in rows])
        return
    table = Table(title="montages")
    widest = max([len(r.name) for r in rows] + [4])
    table.add_column("name", no_wrap=True, min_width=widest)
    table.add_column("source", no_wrap=True, min_width=7)
    table.add_column("channels", justify="right", no_wrap=True, min_width=8)
    table.add_column("hash", no_wrap=True, min_width=8)
    # The description is the column that gives way (wraps) on a narrow terminal.
    table.add_column("description", ratio=1)
    for r in rows:
        # The first sentence, whole (it wraps): `montages show NAME` prints the rest.
        table.add_row(r.name, r.source, str(r.n_channels), r.content_hash[:8], r.description.split(". ")[0])
    _console().print(table)


@montages_app.command("show")
def show_cmd(
    name: Annotated[str, typer.Argument(help="Montage name, or a path to a montage YAML.")],
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output (metres).")] = False,
) -> None:
    """Show a montage's channels and positions (table in mm)."""
    from rich.table import Table

    from passport_kit.montage import resolve_montage

    m = resolve_montage(name)
    if as_json:
        echo_json({**m.to_dict(units="m"), "content_hash": m.content_hash,
                    "n_channels": m.n_channels})
        return
    console = _console()
    console.print(f"[bold]{m.name}[/bold]: {counted(m.n_channels, 'channel')}, frame {m.coordinate_frame}, "
                  f"reference {m.reference}")
    console.print(f"content hash: {m.content_hash}")
    if m.description:
        console.print(m.description)
    # Provenance at a glance (nested metadata stays in --json).
    scalars = [f"{k}: {v}" for k, v in m.metadata.items() if isinstance(v, (str, int, float, bool))]
    if scalars:
        console.print("metadata: " + "; ".join(scalars))
    bipolar = any(ch.is_bipolar for ch in m.channels)
    table = Table(caption="positions in mm, MNE head frame (+x right ear, +y nose, +z up)")
    columns = ["#", "name", "kind", "x", "y", "z"]
    if bipolar:
        columns += ["ref x", "ref y", "ref z"]
    columns.append("aliases")
    for col in columns:
        numeric = col in ("#", "x", "y", "z", "ref x", "ref y", "ref z")
        table.add_column(col, justify="right" if numeric else "left", no_wrap=col != "aliases")
    for i, ch in enumerate(m.channels, start=1):
        row = [str(i), ch.name, ch.kind, *_fmt_mm(ch.position)]
        if bipolar:
            row += _fmt_mm(ch.reference_position)
        row.append(", ".join(ch.aliases))
        table.add_row(*row)
    console.print(table)


@montages_app.command("plot")
def plot_cmd(
    name: Annotated[str, typer.Argument(help="Montage name, or a path to a montage YAML.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Image file to write (.png, .pdf, .svg).")],
    names: Annotated[bool, typer.Option("--names/--no-names", help="Label the sensors.")] = True,
) -> None:
    """Draw the sensors on a head: 2-D topographic view and 3-D view."""
    from passport_kit.montage import resolve_montage
    from passport_kit.montage.plot import plot_montage

    m = resolve_montage(name)
    plot_montage(m, out, show_names=names)
    typer.echo(f"wrote {out}")


@montages_app.command("remove")
def remove_cmd(
    name: Annotated[str, typer.Argument(help="Name of a user montage.")],
) -> None:
    """Remove a user montage from the registry (built-ins cannot be removed)."""
    from passport_kit.montage import remove_montage

    path = remove_montage(name)
    typer.echo(f"removed montage '{name}' ({path})")


@montages_app.command("import")
def import_cmd(
    source: Annotated[str, typer.Argument(
        help="An MNE standard template (e.g. colin27_1005, biosemi64), a file "
             "mne.channels.read_custom_montage reads, or a BIDS *_electrodes.tsv.")],
    name: Annotated[str, typer.Option("--name", "-n", help="Name of the new montage (lowercase, digits, '-').")],
    channels: Annotated[Optional[list[str]], typer.Option(  # noqa: UP007 - typer needs Optional
        "--channels", "-c", help="Channels to keep, in order (comma-separated or repeated); default all.")] = None,
    units: Annotated[Optional[str], typer.Option(  # noqa: UP007
        "--units", help="Units of the numbers in a .csv/.tsv/.xyz/.sfp file or electrodes.tsv (m, cm, mm).")] = None,
    head_size: Annotated[Optional[float], typer.Option(  # noqa: UP007
        "--head-size", help="Rescale a montage file to this head radius in metres (default: 0.095 for "
                            "polar/spherical formats; Cartesian files keep their coordinates).")] = None,
    coordsystem: Annotated[Optional[Path], typer.Option(  # noqa: UP007
        "--coordsystem", help="BIDS *_coordsystem.json (default: the one next to electrodes.tsv).")] = None,
    description: Annotated[Optional[str], typer.Option("--description", help="Description to store.")] = None,  # noqa: UP007
    reference: Annotated[str, typer.Option("--reference", help="Reference electrode or scheme.")] = "unspecified",
    out: Annotated[Optional[Path], typer.Option(  # noqa: UP007
        "--out", "-o", help="Write the montage YAML (mm) here instead of registering it.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace a user montage of the same name.")] = False,
) -> None:
    """Build a montage from an MNE template, an MNE montage file or BIDS electrodes, and register it."""
    from passport_kit.montage import register_montage
    from passport_kit.montage.importers import import_montage

    result = import_montage(source, name=name, channels=channels, units=units, coordsystem=coordsystem,
                            description=description, reference=reference, head_size=head_size)
    m = result.montage
    from passport_kit.cli.verbosity import note as say

    for note in result.notes:
        say(f"note: {note}")
    if out is not None:
        m.to_yaml(out, units="mm")
        typer.echo(f"wrote montage '{m.name}' ({counted(m.n_channels, 'channel')}, hash {m.content_hash[:12]}) "
                   f"to {out}; register it with `passport-kit register-montage {out}`")
        return
    path = register_montage(m, force=force)
    typer.echo(f"registered montage '{m.name}': {counted(m.n_channels, 'channel')}, hash {m.content_hash[:12]}, "
               f"stored at {path}")


def register(app: typer.Typer) -> None:
    """Add ``register-montage`` and the ``montages`` group to the root app."""
    app.command("register-montage")(register_montage_cmd)
    app.add_typer(montages_app, name="montages")
