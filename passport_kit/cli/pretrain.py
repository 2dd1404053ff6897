"""``passport-kit pretrain``: masked patch reconstruction pretraining (alone or under torchrun)."""

from __future__ import annotations

from pathlib import Path

import typer

from passport_kit.cli import verbosity
from passport_kit.cli.options import EXIT_INTERRUPTED, notch_frequency, optional_float
from passport_kit.embedding_kinds import EMBEDDING_KINDS, EXPERT_KINDS


def _limit(value: str) -> float | None:
    """Return the amplitude limit in µV, or None for 'none'."""
    return optional_float(value, "--amplitude-limit-uv", "a number of µV")


def pretrain_command(
    data: list[str] = typer.Option(
        ..., "--data", help="Dataset folder; repeat for several. DIR:MONTAGE names its montage."
    ),
    montage: list[str] = typer.Option(
        [], "--montage", help="Montage of the --data folders: once for all, or once per --data in order."
    ),
    embedding: str = typer.Option(
        ..., "--embedding", help=f"Channel embedding: {', '.join(EMBEDDING_KINDS)}."
    ),
    config: str | None = typer.Option(
        None, "--config", help="Architecture: cbramod-base, cbramod-small (default), cbramod-tiny; with --init-from, the source's."
    ),
    out: Path = typer.Option(..., "--out", help="Run folder; the base checkpoint is written here."),
    steps: int = typer.Option(1000, "--steps", help="Optimisation steps (the cosine schedule spans them)."),
    stop_at: int | None = typer.Option(
        None, "--stop-at", help="End the run at this step and write the checkpoint (the schedule still spans "
        "--steps); may change on --resume, e.g. to end an interrupted run where it stopped."
    ),
    batch_size: int = typer.Option(16, "--batch-size", help="Windows per step and process."),
    seed: int = typer.Option(42, "--seed"),
    lr: float = typer.Option(5e-4, "--lr", help="Peak AdamW learning rate (CBraMod: 5e-4 at batch 128)."),
    resume: bool = typer.Option(False, "--resume", help="Continue the run saved in --out."),
    device: str = typer.Option("auto", "--device", help="auto, cpu or cuda."),
    precision: str = typer.Option("auto", "--precision", help="auto, fp32 or bf16."),
    checkpoint_every: int = typer.Option(100, "--checkpoint-every", help="Save the training state every N steps."),
    val_every: int | None = typer.Option(None, "--val-every", help="Validate every N steps (default: at checkpoints)."),
    val_fraction: float = typer.Option(0.1, "--val-fraction", help="Fraction of subjects per dataset held out."),
    val_subjects: list[str] = typer.Option(
        [], "--val-subjects", help="Subjects to hold out, comma-separated or repeated; a dataset that has any of "
        "them holds out exactly those, the others --val-fraction."
    ),
    val_max_windows: int = typer.Option(256, "--val-max-windows", help="Held-out windows scored per dataset (evenly spaced)."),
    notch: str = typer.Option("50", "--notch", help="Mains notch in Hz (60 for TUH and other 60 Hz recordings; 'none' for no notch)."),
    amplitude_limit_uv: str = typer.Option("100", "--amplitude-limit-uv", help="Drop windows over this many µV ('none' keeps all)."),
    corrupt_prob: float = typer.Option(0.0, "--corrupt-prob", help="Share of windows (0-1) in which random channels are "
                                       "replaced by synthetic faults (noise, drift, flat, line); the loss asks for the "
                                       "clean signal. 0 = CBraMod's recipe."),
    threads: int | None = typer.Option(None, "--threads", help="CPU threads per process."),
    workers: int | None = typer.Option(
        None, "--workers", help="DataLoader worker processes per process that read the cached windows ahead of "
        "the training step (default: 0 on CPU, min(4, CPU cores per process - 1) on a GPU). The weights do not "
        "depend on it; it may change on --resume."
    ),
    name: str | None = typer.Option(None, "--name", help="Checkpoint name (default: the --out folder name)."),
    progress: bool = typer.Option(True, "--progress/--no-progress"),
    init_from: str | None = typer.Option(
        None, "--init-from", help="Upcycle: start from this base checkpoint's backbone (name or folder), e.g. an "
        f"imported CBraMod; --embedding must be {' or '.join(EXPERT_KINDS)}."
    ),
    train: str | None = typer.Option(
        None, "--train", help="With --init-from: 'experts' (default; the expert bank + mixture only, every backbone "
        "tensor frozen) or 'all'."
    ),
    temporal_position: str | None = typer.Option(
        None, "--temporal-position", help="With --init-from: 'acpe-conv' keeps an acpe source's convolution for time "
        "(default for acpe sources), 'sinusoid' replaces it by the fixed patch-index sinusoid."
    ),
) -> None:
    """Pretrain a backbone and channel embedding by masked patch reconstruction.

    With --init-from, grow an expert bank around another base checkpoint's backbone (e.g. the
    official CBraMod weights after `checkpoints import-cbramod`) instead of starting from scratch.
    Run it under `torchrun --nproc_per_node=N` for several processes (DDP). Ctrl-C saves the
    state; rerun with --resume to continue.
    """
    from passport_kit.pretrain.run import PretrainConfig, TrainingInterrupted, parse_sources, pretrain

    given = {key: value for key, value in (("arch", config), ("init_from", init_from), ("train", train),
                                           ("temporal_position", temporal_position)) if value is not None}
    cfg = PretrainConfig.from_options(
        **given, sources=parse_sources(data, montage), embedding=embedding, out=out, steps=steps, stop_at=stop_at,
        batch_size=batch_size, seed=seed, lr=lr, resume=resume, device=device, precision=precision,
        checkpoint_every=checkpoint_every, val_every=val_every, val_fraction=val_fraction,
        val_subjects=[s for item in val_subjects for s in item.split(",") if s],
        val_max_windows=val_max_windows, amplitude_limit_uv=_limit(amplitude_limit_uv),
        notch_freq=notch_frequency(notch), corrupt_prob=corrupt_prob,
        # --quiet hides the progress bar (and its step lines in a log) as --no-progress does.
        threads=threads, workers=workers, name=name, progress=progress and verbosity.shows_progress(),
    )
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
