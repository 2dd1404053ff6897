"""Figures and tables that onboarding and prediction both write: the figure writer, confusion, sweep and history plots.

Below both rooms (it imports neither ``passport_kit.onboard`` nor ``passport_kit.inference``):
``adapt`` writes its learning curve here, ``evaluate`` its tables, confusion matrices and
sweep, and prediction's own writers (:mod:`passport_kit.inference.reports`: per-window CSV,
events, hypnogram) save their figures through :func:`save_figure`. Every writer takes the
target path first, writes atomically (a temp file in the same folder, then ``os.replace``;
:mod:`passport_kit.atomic_io`), and returns the path, so a crash never leaves a half-written
report that reads as valid. Plots use matplotlib's object API (``Figure``), never pyplot's
global state, so they work headless and from threads.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from passport_kit.atomic_io import atomic_output, write_json, write_table

#: Formats a plot can be written in, by the path's suffix: PNG (120 dpi) or the vector formats a
#: report or a scorer's annotation tool takes without blurring (``predict --plot-format``).
PLOT_FORMATS: tuple[str, ...] = ("png", "svg", "pdf")


def save_figure(fig: Any, path: Path | str, *, tight: bool = True) -> Path:
    """Write ``fig`` atomically in the format of ``path``'s suffix (PLOT_FORMATS; PNG at 120 dpi); return the path.

    ``tight`` crops it to what is drawn (one more draw).
    """
    fmt = Path(path).suffix.lstrip(".").lower()
    if fmt not in PLOT_FORMATS:
        raise ValueError(f"plot path {str(path)!r} must end in one of .{', .'.join(PLOT_FORMATS)}")
    with atomic_output(path) as tmp:
        fig.savefig(tmp, format=fmt, dpi=120, bbox_inches="tight" if tight else None)
    return Path(path)


def plot_confusion(path: Path | str, confusion: Sequence[Sequence[int]], classes: Sequence[str], *,
                   title: str = "") -> Path:
    """Draw the confusion matrix as counts and row-normalised (recall) panels; write a PNG."""
    return save_figure(confusion_figure(confusion, classes, title=title), path)


def confusion_figure(confusion: Sequence[Sequence[int]], classes: Sequence[str], *, title: str = "") -> Any:
    """Return the matplotlib Figure of :func:`plot_confusion` (counts, and fractions of each row)."""
    from matplotlib.figure import Figure

    counts = np.asarray(confusion, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        norm = counts / counts.sum(axis=1, keepdims=True)
    # Constrained layout leaves each panel room for its tick labels: a long class name ('arithmetic')
    # pushed the right panel's axis label onto its ticks.
    fig = Figure(figsize=(10, 4.4), layout="constrained")
    for ax, values, label in zip(fig.subplots(1, 2), (counts, norm), ("count", "fraction of row")):
        ax.imshow(np.nan_to_num(values), cmap="Blues", vmin=0)
        for (i, j), v in np.ndenumerate(values):
            text = f"{int(v)}" if label == "count" else ("-" if np.isnan(v) else f"{v:.2f}")
            ax.text(j, i, text, ha="center", va="center", fontsize=8,
                    color="white" if np.nan_to_num(values[i, j]) > 0.6 * np.nanmax(values) else "black")
        ax.set_xticks(range(len(classes)), classes)
        ax.set_yticks(range(len(classes)), classes)
        ax.set_xlabel("predicted")
        ax.set_ylabel("reference")
        ax.set_title(f"{title} ({label})" if title else label)
    return fig


def plot_sweep(path: Path | str, curves: dict[str, dict[int, list[float]]], *, metric: str) -> Path:
    """Draw metric vs number of training subjects, one line per method (mean ± SD over seeds)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6, 4))
    ax = fig.subplots()
    for method, points in curves.items():
        xs = sorted(points)
        values = [np.asarray(points[x], dtype=float) for x in xs]
        mean = np.array([np.nanmean(v) for v in values])
        sd = np.array([np.nanstd(v) for v in values])
        ax.errorbar(xs, mean, yerr=sd, marker="o", capsize=3, label=method)
        for x, v in zip(xs, values):
            ax.scatter(np.full(v.shape, x), v, s=8, alpha=0.4)
    ax.set_xlabel("training subjects")
    ax.set_ylabel(metric)
    ax.set_xscale("log", base=2)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return save_figure(fig, path)


def plot_history(path: Path | str, history: Sequence[dict[str, Any]]) -> Path:
    """Draw the learning curve of ``adapt`` (train loss; validation kappa when present); write a PNG."""
    return save_figure(history_figure(history), path)


def history_figure(history: Sequence[dict[str, Any]]) -> Any:
    """Return the Figure of :func:`plot_history`: train loss above validation kappa, on a shared step axis.

    Two panels, not two y axes over one panel: on twin axes the curves crossed and one hid the other.
    """
    from matplotlib.figure import Figure

    steps = [h["step"] for h in history]
    validated = [h for h in history if "val_kappa" in h]
    fig = Figure(figsize=(7, 5 if validated else 3.2), layout="constrained")
    axes = fig.subplots(2 if validated else 1, 1, sharex=True, squeeze=False)[:, 0]
    axes[0].plot(steps, [h["train_loss"] for h in history], marker="o", color="tab:blue", label="train loss")
    axes[0].set_ylabel("train loss (smoothed)")
    if validated:
        axes[1].plot([h["step"] for h in validated], [h["val_kappa"] for h in validated], marker="s",
                     color="tab:red", label="validation kappa")
        axes[1].set_ylabel("validation kappa")
    axes[-1].set_xlabel("step")
    for ax in axes:
        ax.grid(alpha=0.3)
    return fig


__all__ = [
    "PLOT_FORMATS",
    "confusion_figure",
    "history_figure",
    "plot_confusion",
    "plot_history",
    "plot_sweep",
    "save_figure",
    "write_json",
    "write_table",
]
