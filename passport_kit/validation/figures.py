"""Bland–Altman plots of a method's sleep measures (one panel per measure).

Each panel: one point per night at (mean of device and reference, device − reference), the bias (solid) and the
limits of agreement (dashed) with their 95 % CIs as bars right of the nights, and the regression line of the differences on the
means where the proportional-bias test found one (dotted). Matplotlib's object API, as :mod:`passport_kit.reports`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from passport_kit.validation.nights import MEASURES

#: Colour of the bias and of the limits (matplotlib's default blue and red).
_BIAS, _LIMIT = "tab:blue", "tab:red"


def _panel(ax: Any, measure: str, points: list[tuple[float, float]], group: dict[str, Any]) -> None:
    """Draw one measure's Bland–Altman panel on ``ax`` (``points``: per night (device, reference))."""
    device, reference = np.array(points, dtype=float).T
    mean, diff = (device + reference) / 2, device - reference
    ax.scatter(mean, diff, s=18, color="black", zorder=3)
    ax.set_title(f"{measure} ({MEASURES[measure]})", fontsize=9)
    if "bias" not in group:
        ax.text(0.5, 0.92, "no group discrepancy", transform=ax.transAxes, ha="center", fontsize=7)
        return
    lo, hi = ax.get_xlim() if len(mean) < 2 or np.ptp(mean) == 0 else (mean.min(), mean.max())
    width = (hi - lo) or 1.0
    # The CIs as bars right of the nights, side by side: with few nights the limits' CIs overlap the bias's, and
    # shaded bands would merge into one.
    for k, (value, ci, colour, style) in enumerate(((group["bias"], group["bias_ci"], _BIAS, "-"),
                                                    (group["loa"]["lower"], group["loa_ci"]["lower"], _LIMIT, "--"),
                                                    (group["loa"]["upper"], group["loa_ci"]["upper"], _LIMIT, "--"))):
        ax.axhline(value, color=colour, linestyle=style, linewidth=1)
        ax.errorbar(hi + width * (0.08 + 0.06 * k), value, yerr=[[value - ci[0]], [ci[1] - value]], color=colour,
                    capsize=3, linewidth=1.2)
    line = group["proportional_bias"]
    if line["present"]:
        xs = np.linspace(lo, hi, 2)
        ax.plot(xs, line["intercept"] + line["slope"] * xs, color="tab:purple", linestyle=":", linewidth=1.2)
    ax.axhline(0.0, color="grey", linewidth=0.6)
    low, high = ax.get_ylim()
    if high - low < 1.0:  # every difference the same: a unit either side, not an axis in units of 1e-17
        centre = (low + high) / 2
        ax.set_ylim(centre - 1.0, centre + 1.0)


def bland_altman_figure(report: dict[str, Any], *, title: str = "") -> Any | None:
    """Return the Bland–Altman Figure of a :func:`~passport_kit.validation.nights.method_report` (one panel per
    measure), None when no night has its discrepancy (all withheld)."""
    from matplotlib.figure import Figure

    points = {m: [(n["discrepancy"][m]["device"], n["discrepancy"][m]["reference"]) for n in report["nights"]
                  if n["discrepancy"] is not None and n["discrepancy"][m]["difference"] is not None]
              for m in MEASURES}
    shown = [m for m in MEASURES if points[m]]
    if not shown:
        return None
    cols = min(5, len(shown))
    rows = math.ceil(len(shown) / cols)
    fig = Figure(figsize=(3.0 * cols, 2.6 * rows + 0.5), layout="constrained")
    axes = np.atleast_1d(fig.subplots(rows, cols, squeeze=False)).ravel()
    for ax, measure in zip(axes, shown):
        _panel(ax, measure, points[measure], report["discrepancy"][measure])
    for ax in axes[len(shown):]:
        ax.set_axis_off()
    fig.supxlabel("mean of device and reference", fontsize=9)
    fig.supylabel("device − reference", fontsize=9)
    fig.suptitle(title or f"{report['method']}: Bland–Altman (bias solid, limits of agreement dashed, their 95 % CIs "
                          "as bars on the right)", fontsize=10)
    return fig


__all__ = ["bland_altman_figure"]
