"""CLI for datasets: ``passport-kit data inspect DIR --montage M``, ``data quality`` and ``data clear-cache``.

Parses, calls :mod:`passport_kit.signals`, prints. User errors are DataErrors (or other
PassportErrors), which the root app turns into exit code 2 and one line.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from passport_kit.cli.options import HelpfulGroup, echo_json, notch_frequency
from passport_kit.wording import counted

if TYPE_CHECKING:  # pragma: no cover
    from passport_kit.signals.quality import ChannelQuality

data_app = typer.Typer(name="data", help="Inspect datasets and manage the window cache.", no_args_is_help=True,
                       cls=HelpfulGroup, rich_markup_mode=None)


@data_app.command("inspect")
def inspect_cmd(
    path: Annotated[Path, typer.Argument(help="A recording file, a dataset folder (dataset.yaml, BIDS, or a folder of recordings) or a dataset.yaml.")],
    montage: Annotated[Optional[str], typer.Option("--montage", "-m", help="Montage name or YAML path (a dataset needs it; for one file it adds the mapping).")] = None,
    window_seconds: Annotated[Optional[float], typer.Option(help="Window length in seconds (default: dataset.yaml's, else 30).")] = None,
    notch: Annotated[str, typer.Option("--notch", help="Mains frequency to notch (50, 60) or 'none'.")] = "50",
    h_freq: Annotated[Optional[float], typer.Option(help="Upper band-pass edge in Hz (default: dataset.yaml's, "
                                                    "else 75, lowered for a slowly sampled dataset).")] = None,
    l_freq: Annotated[Optional[float], typer.Option(help="Lower band-pass edge in Hz (default: dataset.yaml's, else "
                                                    "0.3).")] = None,
    label_column: Annotated[Optional[str], typer.Option(help="Column of *_events.tsv holding the labels.")] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not read or write the window cache.")] = False,
    sfreq: Annotated[Optional[float], typer.Option(help="One recording: its rate in Hz when the file has none "
                                                   "(DREAMS .txt, CSV without timestamps).")] = None,
    units: Annotated[Optional[str], typer.Option(help="One recording: the unit of its numbers where the header is "
                                                 "wrong (uV, mV, V, nV).")] = None,
    rename: Annotated[list[str], typer.Option("--rename", help="One recording: MONTAGE_CHANNEL=NAME_IN_FILE for a "
                                              "channel whose name neither the montage nor its aliases know; repeat "
                                              "per channel (as predict's --rename).")] = [],  # noqa: B006 - typer
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")] = False,
) -> None:
    """Print one recording's own channels, rate and length, or load a dataset: recordings, windows, classes, mapping."""
    from passport_kit.cli import verbosity
    from passport_kit.cli.options import renames_option
    from passport_kit.errors import ConfigError
    from passport_kit.montage import resolve_montage
    from passport_kit.signals import PreprocessConfig, load_dataset, load_dataset_spec
    from passport_kit.signals.channels import describe_mapping
    from passport_kit.signals.dataset import lowest_sampling_rate
    from passport_kit.signals.readers import is_recording_file, read_recording
    from passport_kit.signals.recording import fit_preprocessing, with_high_pass

    if path.is_file() and is_recording_file(path, text=True):
        _inspect_recording(path, None if montage is None else resolve_montage(montage), as_json=as_json,
                           sfreq=sfreq, units=units, renames=renames_option(rename))
        return
    if sfreq is not None or units is not None or rename:  # a dataset says them per recording
        raise ConfigError("--sfreq, --units and --rename apply to one recording file; for a dataset give 'sfreq:', "
                          "'units:' and 'channels:' of each recording in its dataset.yaml")
    if montage is None:
        raise ConfigError(f"data inspect of a dataset needs --montage NAME (to map and window its recordings); "
                          f"give a recording file instead of '{path}' to see its own channels and rate")
    m = resolve_montage(montage)
    spec = load_dataset_spec(path)
    # The rule of adapt (signals.recording.fit_preprocessing) over the default contract.
    config = fit_preprocessing(PreprocessConfig(), rate=lambda: lowest_sampling_rate(spec),
                               window_seconds=window_seconds if window_seconds is not None else spec.window_seconds,
                               notch_freq=notch_frequency(notch),
                               h_freq=h_freq if h_freq is not None else spec.h_freq)
    config = with_high_pass(config, l_freq, spec)
    from rich.console import Console
    from rich.progress import Progress

    with Progress(console=Console(stderr=True), transient=True, disable=not verbosity.shows_progress()) as bar:
        task = bar.add_task("loading", total=len(spec.recordings))

        def advance(done: int, total: int, name: str) -> None:
            bar.update(task, completed=done, description=name)

        ws = load_dataset(path, m, config, cache=not no_cache, label_column=label_column, progress=advance)

    first = spec.recordings[0]
    raw = read_recording(spec.path_of(first.file), sfreq=first.sfreq)
    mapping = describe_mapping(list(raw.ch_names), m, first.channels or None, source=f"recording '{first.file}'")

    counts = ws.class_counts()
    unlabeled = int((ws.y < 0).sum())
    flags = ws.flag_summary()
    windows = {rec.file: int((ws.recording == rec.file).sum()) for rec in spec.recordings}
    if as_json:
        echo_json({"dataset": path, "origin": spec.origin, "task": spec.task, "montage": m.name,
                   "montage_hash": m.content_hash, "windows": len(ws), "window_seconds": ws.x.shape[2],
                   "preprocessing": config.model_dump(mode="json"), "classes": counts, "unlabeled": unlabeled,
                   "flags": flags, "mapping": {"recording": first.file, "channels": dict(mapping)},
                   "recordings": [{"subject": rec.subject, "file": rec.file, "windows": windows[rec.file]}
                                  for rec in spec.recordings]})
        return
    echo = typer.echo
    echo(f"dataset: {path} ({spec.origin}), task {spec.task}")
    echo(f"montage: {m.name} ({counted(len(m.ch_names), 'channel')}, hash {m.content_hash[:12]})")
    echo(f"windows: {len(ws)} × {ws.x.shape[1]} ch × {ws.x.shape[2]} s "
         f"from {counted(len(set(ws.recording.tolist())), 'recording')} of "
         f"{counted(len(set(ws.subject.tolist())), 'subject')}")
    echo("classes: " + (", ".join(f"{k} {v}" for k, v in counts.items()) or "none") + f"; unlabeled {unlabeled}")
    echo("flags (window × channel): " + ", ".join(f"{k} {v}" for k, v in flags.items()))
    echo(f"channel mapping of {first.file}:")
    for name, origin in mapping:
        echo(f"  {name:<12} ← {origin}")
    echo("recordings:")
    for rec in spec.recordings:
        echo(f"  {rec.subject:<14} {rec.file}  {counted(windows[rec.file], 'window')}")


def _inspect_recording(path: Path, montage: object | None, *, as_json: bool = False, sfreq: float | None = None,
                       units: str | None = None, renames: dict[str, str] | None = None) -> None:
    """Print a recording's format, rate, length, start, channels and annotations (and its mapping onto ``montage``)."""
    from collections import Counter

    from passport_kit.errors import ChannelMappingError
    from passport_kit.signals.channels import describe_mapping
    from passport_kit.signals.readers import FORMATS, read_recording, recording_suffix

    raw = read_recording(path, sfreq=sfreq, units=units)
    seconds = raw.n_times / raw.info["sfreq"]
    types = raw.get_channel_types()
    counts = Counter(raw.annotations.description)
    mapping = None
    if montage is not None:
        try:
            mapping = describe_mapping(list(raw.ch_names), montage, renames,  # type: ignore[arg-type]
                                       source=f"recording '{path}'")
        except ChannelMappingError as exc:
            if not exc.missing:
                raise
            # One file has no dataset.yaml to map it in: advise this command's own option.
            raise ChannelMappingError(f"{exc.detail}; map them with --rename {exc.missing[0]}='<name in file>', once "
                                      "per channel", missing=exc.missing, detail=exc.detail) from None
    if as_json:
        echo_json({"recording": path, "format": FORMATS[recording_suffix(path)], "sfreq": raw.info["sfreq"],
                   "n_times": int(raw.n_times), "seconds": float(seconds), "start": raw.info["meas_date"],
                   "channels": [{"name": n, "type": t} for n, t in zip(raw.ch_names, types)],
                   "annotations": dict(counts), "mapping": None if mapping is None else dict(mapping)})
        return
    echo = typer.echo
    echo(f"recording: {path} ({FORMATS[recording_suffix(path)]})")
    echo(f"sampling rate: {raw.info['sfreq']:g} Hz; length {int(seconds // 3600)}:{int(seconds % 3600 // 60):02d}:"
         f"{seconds % 60:04.1f} ({raw.n_times} samples)")
    echo(f"start: {raw.info['meas_date'] or 'unknown'}")
    echo(f"channels ({len(raw.ch_names)}): " + ", ".join(f"{n} ({t})" for n, t in zip(raw.ch_names, types)))
    echo(f"annotations: {len(raw.annotations)}" + (" (" + ", ".join(f"{d} ×{k}" for d, k in counts.most_common(8))
                                                   + (", ..." if len(counts) > 8 else "") + ")" if counts else ""))
    if mapping is not None:
        echo(f"channel mapping onto {montage.name}:")  # type: ignore[attr-defined]
        for name, origin in mapping:
            echo(f"  {name:<12} ← {origin}")


@data_app.command("quality")
def quality_cmd(
    path: Annotated[Path, typer.Argument(help="A recording file, or a dataset folder / dataset.yaml (every recording).")],
    montage: Annotated[str, typer.Option("--montage", "-m", help="Montage name or YAML path.")],
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="Write a BIDS-like channels TSV here (several recordings: one table with a 'recording' column).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")] = False,
    window_seconds: Annotated[Optional[float], typer.Option(help="Length of the scored windows in seconds (default: "
                                                             "dataset.yaml's window_seconds, else 30).")] = None,
    notch: Annotated[str, typer.Option("--notch", help="Mains frequency (50, 60) of the line-noise statistic, as "
                                       "adapt's --notch, or 'none' to skip it.")] = "50",
    fail_on_bad: Annotated[bool, typer.Option("--fail-on-bad", help="Exit with code 1 when any channel is bad.")] = False,
) -> None:
    """Score every channel's quality (flat, variance, line noise, drift, neighbour correlation) from the raw signal."""
    import json

    from passport_kit.errors import ConfigError
    from passport_kit.montage import resolve_montage
    from passport_kit.signals.quality import TABLE_DIGITS, recording_quality

    if window_seconds is not None and window_seconds <= 0:
        raise ConfigError("--window-seconds must be positive")
    notch_freq = notch_frequency(notch)
    m = resolve_montage(montage)
    targets, dataset_seconds = _quality_targets(path)
    seconds = window_seconds or dataset_seconds or 30.0  # the windows adapt and predict use for this data
    results = [
        (name, recording_quality(file, m, renames=renames, sfreq=sfreq, window_seconds=seconds,
                                 notch_freq=notch_freq, bids=bids, units=units, scale=scale))
        for name, file, renames, sfreq, bids, units, scale in targets
    ]
    if out is not None:
        if len(results) == 1:
            results[0][1].to_tsv(out)
        else:
            from passport_kit.atomic_io import write_table

            rows = [{"recording": name, **row} for name, q in results for row in q.rows()]
            write_table(out, rows, delimiter="\t", digits=TABLE_DIGITS)
    if as_json:
        payload = results[0][1].to_dict() if len(results) == 1 else {"recordings": [q.to_dict() for _, q in results]}
        typer.echo(json.dumps(payload, indent=2, allow_nan=False))
    else:
        _print_quality(results, m.name)
        if out is not None:
            typer.echo(f"wrote {out}")
    if fail_on_bad and any(q.bad.any() for _, q in results):
        raise typer.Exit(1)


def _quality_targets(path: Path) -> tuple[list[tuple[Any, ...]], float | None]:
    """Return ``([(name, file, renames, sfreq, bids, units, scale)], window_seconds)`` of a recording or a dataset.

    ``window_seconds``: the dataset's (dataset.yaml), None for a single recording.
    """
    from passport_kit.errors import DataError
    from passport_kit.signals import load_dataset_spec

    if path.is_file() and path.name != "dataset.yaml":
        return [(path.name, path, None, None, False, None, None)], None
    if not path.exists():
        raise DataError(f"'{path}' does not exist; give a recording file, a dataset folder or a dataset.yaml")
    spec = load_dataset_spec(path)
    return [(rec.file, spec.path_of(rec.file), rec.channels or None, rec.sfreq, spec.origin == "bids", rec.units,
             rec.scale) for rec in spec.recordings], spec.window_seconds


def _print_quality(results: list[tuple[str, ChannelQuality]], montage_name: str) -> None:
    """Print one rich table per recording: channel, status, score, bad windows, reasons."""
    from rich.console import Console
    from rich.table import Table

    console = Console()
    for name, q in results:
        n_windows = q.window_score.shape[0]
        table = Table(title=f"{name} — {montage_name}, {n_windows} windows of {q.window_seconds:g} s "
                            f"({len(q.bad_channels)} bad)", title_justify="left")
        for column, justify in (("channel", "left"), ("status", "left"), ("score", "right"),
                                ("bad windows", "right"), ("reasons", "left")):
            table.add_column(column, justify=justify)  # type: ignore[arg-type]
        fraction = q.bad_window_fraction
        for c, channel in enumerate(q.ch_names):
            status = "[red]bad[/red]" if q.bad[c] else "good"
            table.add_row(channel, status, f"{q.score[c]:.2f}", f"{fraction[c]:.0%}", "; ".join(q.reasons[c]))
        console.print(table)
        console.print(f"bad channels: {', '.join(q.bad_channels) or 'none'}")


@data_app.command("clear-cache")
def clear_cache_cmd() -> None:
    """Delete every cached window set (they are rebuilt on the next load)."""
    from passport_kit.signals.cache import cache_root, clear_cache

    freed = clear_cache()
    typer.echo(f"cleared {cache_root()} ({freed / 1e6:.1f} MB)")


def register(app: typer.Typer) -> None:
    """Add the ``data`` command group to the root app."""
    app.add_typer(data_app, name="data")
