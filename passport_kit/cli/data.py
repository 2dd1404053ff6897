"""CLI for datasets: ``passport-kit data inspect DIR --montage M`` and ``data clear-cache``.

Parses, calls :mod:`passport_kit.signals`, prints. User errors are DataErrors (or other
PassportErrors), which the root app turns into exit code 2 and one line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

data_app = typer.Typer(name="data", help="Inspect datasets and manage the window cache.", no_args_is_help=True)


@data_app.command("inspect")
def inspect_cmd(
    path: Annotated[Path, typer.Argument(help="Dataset folder (dataset.yaml, BIDS, or a folder of recordings) or a dataset.yaml.")],
    montage: Annotated[str, typer.Option("--montage", "-m", help="Montage name or YAML path.")],
    window_seconds: Annotated[Optional[float], typer.Option(help="Window length in seconds (default: dataset.yaml's, else 30).")] = None,
    notch: Annotated[Optional[float], typer.Option(help="Mains frequency in Hz for the notch (default 50).")] = None,
    no_notch: Annotated[bool, typer.Option("--no-notch", help="Skip the notch filter.")] = False,
    h_freq: Annotated[Optional[float], typer.Option(help="Upper band-pass edge in Hz (default 75).")] = None,
    label_column: Annotated[Optional[str], typer.Option(help="Column of *_events.tsv holding the labels.")] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not read or write the window cache.")] = False,
) -> None:
    """Load a dataset and print recordings, subjects, windows, classes, flags and the channel mapping."""
    from passport_kit.montage import resolve_montage
    from passport_kit.signals import PreprocessConfig, load_dataset, load_dataset_spec
    from passport_kit.signals.channels import describe_mapping
    from passport_kit.signals.readers import read_recording

    m = resolve_montage(montage)
    spec = load_dataset_spec(path)
    overrides: dict[str, object] = {}
    if window_seconds is not None:
        overrides["window_seconds"] = window_seconds
    elif spec.window_seconds is not None:
        overrides["window_seconds"] = spec.window_seconds
    if no_notch:
        overrides["notch_freq"] = None
    elif notch is not None:
        overrides["notch_freq"] = notch
    if h_freq is not None:
        overrides["h_freq"] = h_freq
    config = PreprocessConfig.from_dict(overrides)
    from rich.console import Console
    from rich.progress import Progress

    with Progress(console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("loading", total=len(spec.recordings))

        def advance(done: int, total: int, name: str) -> None:
            bar.update(task, completed=done, description=name)

        ws = load_dataset(path, m, config, cache=not no_cache, label_column=label_column, progress=advance)

    first = spec.recordings[0]
    raw = read_recording(spec.path_of(first.file), sfreq=first.sfreq)
    mapping = describe_mapping(list(raw.ch_names), m, first.channels or None, source=f"recording '{first.file}'")

    echo = typer.echo
    echo(f"dataset: {path} ({spec.origin}), task {spec.task}")
    echo(f"montage: {m.name} ({len(m.ch_names)} channels, hash {m.content_hash[:12]})")
    echo(f"windows: {len(ws)} × {ws.x.shape[1]} ch × {ws.x.shape[2]} s "
         f"from {len(set(ws.recording.tolist()))} recordings of {len(set(ws.subject.tolist()))} subjects")
    counts = ws.class_counts()
    unlabeled = int((ws.y < 0).sum())
    echo("classes: " + (", ".join(f"{k} {v}" for k, v in counts.items()) or "none") + f"; unlabeled {unlabeled}")
    flags = ws.flag_summary()
    echo("flags (window × channel): " + ", ".join(f"{k} {v}" for k, v in flags.items()))
    echo(f"channel mapping of {first.file}:")
    for name, origin in mapping:
        echo(f"  {name:<12} ← {origin}")
    echo("recordings:")
    for rec in spec.recordings:
        n = int((ws.recording == rec.file).sum())
        echo(f"  {rec.subject:<14} {rec.file}  {n} windows")


@data_app.command("clear-cache")
def clear_cache_cmd() -> None:
    """Delete every cached window set (they are rebuilt on the next load)."""
    from passport_kit.signals.cache import cache_root, clear_cache

    freed = clear_cache()
    typer.echo(f"cleared {cache_root()} ({freed / 1e6:.1f} MB)")


def register(app: typer.Typer) -> None:
    """Add the ``data`` command group to the root app."""
    app.add_typer(data_app, name="data")
