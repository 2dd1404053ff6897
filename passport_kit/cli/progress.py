"""Progress bars where users wait: rich bars with the elapsed time and an estimate of the rest.

One display per command (:func:`progress_display`), one bar per kind of work on it (the runs of
an evaluation, the steps inside one, the recordings of a predict run). Drawn only on a terminal
and not under ``--quiet``: in a log file, a pipe or a job scheduler's output nothing is drawn
(the results and the ``note:``/``warning:`` lines say what happened), so a log never fills with
redrawn bars.

A bar restarts (its count and its estimate) when its ``stage`` changes: ``adapt``'s selection
goes through stages of different lengths (the read-out's inner folds, then LP-FT's folds), and
an estimate carried over from one to the next would mislead. Library code reports through the
plain callbacks it already takes (:data:`~passport_kit.onboard.recipe.ProgressFn`: ``(step,
total, info)``, with ``info["stage"]`` naming the stage where there are several).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import Any

from passport_kit.cli import verbosity


def on_terminal() -> bool:
    """Return whether stderr is a terminal (bars are drawn only there)."""
    return sys.stderr.isatty()


class Display:
    """The bars of one command; :meth:`bar` returns the callback that advances one of them."""

    def __init__(self, progress: Any | None) -> None:
        self._progress = progress
        self._tasks: dict[str, tuple[Any, str | None]] = {}

    @property
    def drawn(self) -> bool:
        """Return whether anything is drawn (on a terminal, not --quiet, not switched off)."""
        return self._progress is not None

    def bar(self, name: str) -> Callable[..., None]:
        """Return ``update(done, total, what="", stage=None)`` for the bar ``name``: ``total`` None while unknown."""
        def update(done: int, total: int | None, what: str = "", stage: str | None = None) -> None:
            if self._progress is None:
                return
            task, shown = self._tasks.get(name, (None, None))
            label = f"{name}: {stage}" if stage else name
            if task is None or stage != shown:
                if task is not None:
                    self._progress.remove_task(task)  # a new stage: a new count and a new estimate
                task = self._progress.add_task(label, total=total, info=what)
                self._tasks[name] = (task, stage)
            self._progress.update(task, completed=done, total=total, info=what)

        return update

    def steps(self, name: str) -> Callable[[int, int, dict[str, Any]], None]:
        """Return a :data:`~passport_kit.onboard.recipe.ProgressFn` that draws the bar ``name`` (its stage in
        ``info["stage"]``; a loss or a cross-validated score beside it)."""
        bar = self.bar(name)

        def update(step: int, total: int, info: dict[str, Any]) -> None:
            bar(step, total, step_text(info), info.get("stage"))

        return update


def step_text(info: dict[str, Any]) -> str:
    """Return what a step reports beside its bar: ``loss 0.412  val kappa 0.701``, or the ladder's rung being tried
    (``info["rung"]``); empty when nothing."""
    parts = [] if info.get("rung") is None else [f"trying {info['rung']}"]
    parts += [] if info.get("loss") is None else [f"loss {info['loss']:.3f}"]
    if info.get("val") is not None:
        kind = "val" if info.get("loss") is not None else "cross-validated"
        parts.append(f"{kind} {info.get('metric', 'score')} {info['val']:.3f}")
    return "  ".join(parts)


@contextlib.contextmanager
def progress_display(enabled: bool = True, *, console: Any = None) -> Iterator[Display]:
    """Yield the command's :class:`Display`: rich bars on a terminal, nothing under --quiet, off a terminal or with
    ``enabled`` False (``--no-progress``). ``console``: a rich Console to draw on (default: stderr's)."""
    from rich.console import Console

    console = console if console is not None else Console(stderr=True)
    terminal = console.is_terminal if console.file is not sys.stderr else on_terminal()
    if not (enabled and verbosity.shows_progress() and terminal):
        yield Display(None)
        return
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                               TimeRemainingColumn)

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[info]}"),
               TextColumn("elapsed"), TimeElapsedColumn(), TextColumn("left"), TimeRemainingColumn())
    with Progress(*columns, console=console, transient=True) as progress:
        yield Display(progress)
