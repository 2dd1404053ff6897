"""What a long run tells while it runs: a metrics CSV (plus TensorBoard) and a progress bar.

The CSV has one row per step: the training columns (``step, epoch, montage, loss, lr, grad_norm,
samples_per_s, elapsed_s``), then the objective's validation columns (masked reconstruction:
``val_loss, val_zero_loss``), filled on validation steps only. It is flushed after every row, so a killed run keeps its history; on ``--resume`` rows
after the resumed step (written after the last saved state) are dropped first, so the file
describes exactly the run that produced the final weights.
"""

from __future__ import annotations

import csv
import io
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from passport_kit.atomic_io import atomic_write_text

#: The columns of every step; the objective's validation columns follow them (``Objective.logged``).
TRAINING_COLUMNS: tuple[str, ...] = (
    "step", "epoch", "montage", "loss", "lr", "grad_norm", "samples_per_s", "elapsed_s",
)
#: The training columns of the TensorBoard scalars (the validation columns are scalars too).
_SCALARS = ("loss", "lr", "grad_norm", "samples_per_s")


class MetricsLog:
    """Append-only metrics CSV (and TensorBoard scalars where ``tensorboard`` is installed).

    ``columns``: the CSV's, in order: :data:`TRAINING_COLUMNS` and the objective's validation columns.
    """

    def __init__(self, path: Path, *, columns: tuple[str, ...] = TRAINING_COLUMNS,
                 resume_step: int | None = None) -> None:
        self.path = Path(path)
        self.columns = columns
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if resume_step is not None and self.path.exists():
            _truncate_after(self.path, resume_step, columns)
        new = not self.path.exists() or self.path.stat().st_size == 0
        self._file = open(self.path, "a", newline="", encoding="utf-8")  # noqa: SIM115 - closed in close()
        self._writer = csv.DictWriter(self._file, fieldnames=columns, extrasaction="ignore")
        if new:
            self._writer.writeheader()
            self._file.flush()
        self._tb = _tensorboard_writer(self.path.parent / "tensorboard", purge_step=resume_step)

    def write(self, row: dict[str, Any]) -> None:
        """Append one row (missing columns stay empty) and flush it to disk."""
        self._writer.writerow({k: _fmt(row.get(k)) for k in self.columns})
        self._file.flush()
        if self._tb is not None:
            for key in _SCALARS + self.columns[len(TRAINING_COLUMNS):]:
                if isinstance(row.get(key), float):
                    self._tb.add_scalar(f"pretrain/{key}", row[key], int(row["step"]))

    def close(self) -> None:
        """Close the CSV (and TensorBoard) files."""
        if not self._file.closed:
            self._file.close()
        if self._tb is not None:
            self._tb.close()
            self._tb = None


def read_metrics(path: Path) -> list[dict[str, str]]:
    """Return the rows of a metrics CSV as dicts of strings."""
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _truncate_after(path: Path, step: int, columns: tuple[str, ...]) -> None:
    """Rewrite ``path`` atomically without the rows after ``step``."""
    rows = [r for r in read_metrics(path) if r.get("step", "").isdigit() and int(r["step"]) <= step]
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
    atomic_write_text(path, buffer.getvalue())


def _fmt(value: Any) -> Any:
    if isinstance(value, float):
        return f"{value:.6g}"
    return "" if value is None else value


def _tensorboard_writer(folder: Path, *, purge_step: int | None) -> Any:
    """Return a TensorBoard SummaryWriter, or None when tensorboard is not installed."""
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:
        return None
    return SummaryWriter(str(folder), purge_step=purge_step)


class ProgressReporter:
    """Progress bar with loss and samples/s on a terminal; a plain line every 30 s in logs."""

    def __init__(self, *, total: int, start: int = 0, enabled: bool = True, every_s: float = 30.0) -> None:
        self.total = total
        self.start = start
        self.enabled = enabled
        self.every_s = every_s
        self._progress: Any = None
        self._task: Any = None
        self._last_print = 0.0

    def __enter__(self) -> ProgressReporter:
        if not self.enabled:
            return self
        from rich.console import Console

        console = Console(stderr=True)
        if console.is_terminal:
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                                       TimeRemainingColumn)

            # Elapsed and left, as every other bar of passport-kit (passport_kit.cli.progress).
            self._progress = Progress(
                TextColumn("pretrain"), BarColumn(), MofNCompleteColumn(),
                TextColumn("loss {task.fields[loss]:.4f}"), TextColumn("{task.fields[rate]:.1f} samples/s"),
                TextColumn("elapsed"), TimeElapsedColumn(), TextColumn("left"), TimeRemainingColumn(), console=console,
            )
            self._progress.start()
            self._task = self._progress.add_task("pretrain", total=self.total, completed=self.start,
                                                 loss=float("nan"), rate=0.0)
        self._last_print = time.monotonic()
        return self

    def update(self, step: int, loss: float, samples_per_s: float) -> None:
        """Show ``step`` of ``total`` with the current loss and throughput."""
        if not self.enabled:
            return
        if self._progress is not None:
            self._progress.update(self._task, completed=step, loss=loss, rate=samples_per_s)
            return
        now = time.monotonic()
        if now - self._last_print >= self.every_s or step == self.total:
            self._last_print = now
            print(f"step {step}/{self.total} loss {loss:.4f} {samples_per_s:.1f} samples/s",
                  file=sys.stderr, flush=True)

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._progress is not None:
            self._progress.stop()
