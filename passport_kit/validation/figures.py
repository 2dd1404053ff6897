"""The report's figures: Bland–Altman plots of a method's sleep measures, and each night's hypnograms side by side.

Bland–Altman panels (one per measure): one point per night at (the reference's value, device − reference), the
x axis of Menghini et al. and YASA (the proportional-bias and spread tests regress on it); the bias (solid) and the
limits of agreement (dashed) the assumption tests chose (flat, or the regression lines where the bias or the spread
changes with the reference's value), and the 95 % CIs of the parametric bias and limits as bars in a strip right
of every night. Hypnograms: per night, the reference scorer's on top and each method's under it on one time axis.
Matplotlib's object API, as :mod:`passport_kit.reports`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from passport_kit.validation.discrepancy import limits_at
from passport_kit.validation.nights import MEASURE_NAMES, MEASURES

#: Colour of the bias and of the limits (matplotlib's default blue and red).
_BIAS, _LIMIT = "tab:blue", "tab:red"
#: Hypnogram rows from top to bottom (the convention: wake up, REM next, then lighter to deeper sleep).
_HYPNO_ORDER = ("W", "REM", "N1", "N2", "N3")


def _ci_bars(ax: Any, group: dict[str, Any], x: float, step: float) -> None:
    """Draw the parametric bias's and limits' 95 % CIs as bars from ``x`` (right of every night), ``step`` apart: with
    few nights the limits' CIs overlap the bias's, and bars at one x would merge into one."""
    for k, (value, ci, colour) in enumerate(((group["bias"], group["bias_ci"], _BIAS),
                                             (group["loa"]["lower"], group["loa_ci"]["lower"], _LIMIT),
                                             (group["loa"]["upper"], group["loa_ci"]["upper"], _LIMIT))):
        if None in ci:
            continue
        ax.errorbar(x + k * step, value, yerr=[[value - ci[0]], [ci[1] - value]], color=colour, capsize=3, linewidth=1.2,
                    marker="_", markersize=6)


def _panel(ax: Any, measure: str, points: list[tuple[float, float]], group: dict[str, Any]) -> None:
    """Draw one measure's Bland–Altman panel on ``ax`` (``points``: per night (device, reference))."""
    device, reference = np.array(points, dtype=float).T
    diff = device - reference
    ax.scatter(reference, diff, s=18, color="black", zorder=3)
    ax.set_title(f"{MEASURE_NAMES[measure]} ({MEASURES[measure]})", fontsize=9)
    ax.axhline(0.0, color="grey", linewidth=0.6)
    if "bias" not in group:
        ax.text(0.5, 0.92, "no group discrepancy", transform=ax.transAxes, ha="center", fontsize=7)
        return
    lo, hi = float(reference.min()), float(reference.max())
    width = (hi - lo) or max(1.0, abs(hi) * 0.1)
    xs = np.linspace(lo, hi, 50) if hi > lo else np.array([lo - width / 2, hi + width / 2])
    bias, lower, upper = limits_at(group, xs, group["limits_chosen"])
    ax.plot(xs, bias, color=_BIAS, linewidth=1)
    ax.plot(xs, lower, color=_LIMIT, linestyle="--", linewidth=1)
    ax.plot(xs, upper, color=_LIMIT, linestyle="--", linewidth=1)
    # The CI bars in their own strip right of the last night: never on a night's point.
    strip = xs.max() + 0.1 * width
    _ci_bars(ax, group, strip, 0.07 * width)
    ax.axvline(xs.max() + 0.05 * width, color="lightgrey", linewidth=0.6)
    ax.set_xlim(xs.min() - 0.05 * width, strip + 0.21 * width)
    low, high = ax.get_ylim()
    if high - low < 1.0:  # every difference the same: a unit either side, not an axis in units of 1e-17
        centre = (low + high) / 2
        ax.set_ylim(centre - 1.0, centre + 1.0)


def bland_altman_figure(report: dict[str, Any], *, title: str = "") -> Any | None:
    """Return the Bland–Altman Figure of a :func:`~passport_kit.validation.nights.method_report` (one panel per
    measure), None when no measure has a group discrepancy (fewer than 3 nights: the per-night table says it all)."""
    from matplotlib.figure import Figure

    if not any("bias" in g for g in report["discrepancy"].values()):
        return None
    points = {m: [(n["discrepancy"][m]["device"], n["discrepancy"][m]["reference"]) for n in report["nights"]
                  if m in n["discrepancy"] and n["discrepancy"][m]["difference"] is not None] for m in MEASURES}
    shown = [m for m in MEASURES if points[m]]
    cols = min(5, len(shown))
    rows = math.ceil(len(shown) / cols)
    fig = Figure(figsize=(3.0 * cols, 2.6 * rows + 0.6), layout="constrained")
    axes = np.atleast_1d(fig.subplots(rows, cols, squeeze=False)).ravel()
    for ax, measure in zip(axes, shown):
        _panel(ax, measure, points[measure], report["discrepancy"][measure])
    for ax in axes[len(shown):]:
        ax.set_axis_off()
    fig.supxlabel("reference scorer's value", fontsize=9)
    fig.supylabel("device − reference", fontsize=9)
    fig.suptitle(title or f"{report['method']}: Bland–Altman (bias solid, limits of agreement dashed: lines where "
                          "the tests found the bias or spread changing; 95 % CIs of the mean bias and limits as bars "
                          "on the right)", fontsize=9)
    return fig


def _stage_rows(codes: np.ndarray, classes: Sequence[str]) -> np.ndarray:
    """Return each epoch's hypnogram row (0 = top: W) as floats, NaN where unscored or not a sleep stage."""
    row_of = {c: _HYPNO_ORDER.index(c) for c in _HYPNO_ORDER}
    rows = np.array([row_of.get(classes[k], np.nan) if k >= 0 else np.nan for k in np.asarray(codes)], dtype=float)
    return rows


def hypnogram_figure(name: str, reference: Sequence[int], devices: dict[str, Sequence[int]], classes: Sequence[str],
                     *, epoch_seconds: float) -> Any:
    """Return one night's Figure: the reference scorer's hypnogram (class index per epoch ``(N,)``, -1: unscored) on
    top, each method's (``{method: (N,) codes}``) under it, one shared time axis in hours."""
    from matplotlib.figure import Figure

    sides = {"reference scorer": np.asarray(reference), **{k: np.asarray(v) for k, v in devices.items()}}
    fig = Figure(figsize=(9.0, 0.55 + 0.95 * len(sides)), layout="constrained")
    axes = np.atleast_1d(fig.subplots(len(sides), 1, sharex=True, squeeze=False)).ravel()
    hours = np.arange(len(sides["reference scorer"]) + 1) * epoch_seconds / 3600.0
    for ax, (label, codes) in zip(axes, sides.items()):
        rows = _stage_rows(codes, classes)
        ax.stairs(rows, hours, color="black" if label == "reference scorer" else "tab:blue", linewidth=0.9,
                  baseline=None)
        ax.set_ylim(len(_HYPNO_ORDER) - 0.5, -0.5)
        ax.set_yticks(range(len(_HYPNO_ORDER)), _HYPNO_ORDER, fontsize=7)
        ax.set_ylabel(label, fontsize=7, rotation=0, ha="right", va="center")
    axes[-1].set_xlabel("hours from the first epoch", fontsize=8)
    fig.suptitle(f"{name}: reference scorer and each method", fontsize=9)
    return fig


__all__ = ["bland_altman_figure", "hypnogram_figure"]
