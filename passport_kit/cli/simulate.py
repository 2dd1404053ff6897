"""CLI: ``passport-kit simulate`` writes a simulated sleep-EEG dataset for any montage.

Parses, calls :func:`passport_kit.signals.simulator.simulate_dataset`, prints. User errors
(unknown montage, bad options) are PassportErrors: exit code 2 and one line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from passport_kit.wording import counted

_BAD_HELP = ("Poor contacts: SUBJECT:CHANNEL:KIND[,...], KIND = noise|drift|flat, SUBJECT = s01.. "
             "or '*' (e.g. 's03:ELA:noise,s05:ERB:flat').")


def simulate_cmd(
    montage: Annotated[str, typer.Option("--montage", "-m",
                                         help="Registered montage name or montage YAML path.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder to write the dataset into.")],
    subjects: Annotated[int, typer.Option("--subjects", "-n",
                                          help="Number of subjects (one night each).")],
    hours: Annotated[float, typer.Option("--hours", help="Hours per night (rounded to 30-s epochs).")] = 8.0,
    seed: Annotated[int, typer.Option("--seed", help="Random seed; the same seed gives the same brains.")] = 0,
    bad_channels: Annotated[Optional[str], typer.Option("--bad-channels", help=_BAD_HELP)] = None,
    sfreq: Annotated[int, typer.Option("--sfreq", help="Sampling rate in Hz.")] = 200,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace a dataset already in --out.")] = False,
) -> None:
    """Simulate a sleep-staging dataset (EDF + labels + dataset.yaml) for a montage."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from passport_kit.cli import verbosity
    from passport_kit.cli.progress import on_terminal
    from passport_kit.montage import resolve_montage
    from passport_kit.signals.simulator import simulate_dataset, simulation_config

    layout = resolve_montage(montage)
    # Check every option before the progress bar starts, so an error is the only output line.
    simulation_config(n_subjects=subjects, hours=hours, seed=seed, sfreq=sfreq,
                      bad_channels=bad_channels, montage=layout)
    columns = (TextColumn("simulating {task.description}"), BarColumn(),
               TextColumn("{task.completed}/{task.total}"), TimeElapsedColumn())
    # Off a terminal rich's bar draws nothing but leaves an empty line in the output (issue 45): no bar there.
    with Progress(*columns, transient=True, disable=not (verbosity.shows_progress() and on_terminal())) as bar:
        task = bar.add_task(layout.name, total=subjects)
        folder = simulate_dataset(layout, out, n_subjects=subjects, hours=hours, seed=seed,
                                  bad_channels=bad_channels, sfreq=sfreq, overwrite=overwrite,
                                  progress=lambda done, total, subject: bar.update(task, completed=done))
    typer.echo(f"simulated {subjects} subject(s) x {hours:g} h of montage '{layout.name}' "
               f"({counted(layout.n_channels, 'channel')}, {sfreq} Hz) into {folder}")
    typer.echo(f"dataset description: {folder / 'dataset.yaml'}")


def register(app: typer.Typer) -> None:
    """Add ``simulate`` to the root app."""
    app.command("simulate")(simulate_cmd)
