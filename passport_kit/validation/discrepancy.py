"""Discrepancy of a device's sleep measures with a reference's: Bland–Altman bias and limits of agreement.

For one measure (TST, SE, ...) over nights, :func:`bland_altman` gives what Menghini et al. (SLEEP 2021,
``groupDiscr``) report: the bias (mean difference device − reference) with its 95 % CI, the limits of agreement
(bias ± 1.96 SD of the differences) with their CIs, a test for proportional bias (ordinary least squares of the
differences on the pair means, Bland and Altman 1999 §3.1), a test for differences that grow with the mean (the
absolute residuals of that regression against the means, §3.2), and where they grow, the limits on the log scale
(§3.3 / Euser et al. 2008: the device's value as a ratio of the reference's).

The formulas are written here, each one line, because the one library that packages them, pingouin
(``plot_blandaltman``), is not a dependency of passport-kit (YASA 0.8 no longer brings it); they are the same as
pingouin's and BlandAltmanLeh's (which Menghini's R functions call): the CI of the bias ``± t · SD / √n``, of each
limit ``± t · SD · √(3 / n)`` (Bland and Altman 1986's approximation), ``t`` Student's with ``n − 1`` degrees of
freedom; the limits at the normal quantile (1.95996 at 95 %), where pingouin's default rounds it to 1.96. scipy gives the quantiles and the regressions (``scipy.stats.linregress``).

Example::

    >>> ba = bland_altman([410.0, 395.0, 420.0], [420.0, 400.0, 435.0])
    >>> ba["bias"], ba["loa"]["lower"] < ba["bias"] < ba["loa"]["upper"]
    (-10.0, True)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

#: Significance level of the proportional-bias and growing-differences tests.
ALPHA = 0.05
#: Fewest nights for a group discrepancy: a bias and its SD need two, its regressions three.
MIN_NIGHTS = 3


def _interval(centre: float, half: float) -> list[float]:
    """Return ``[centre − half, centre + half]``."""
    return [float(centre - half), float(centre + half)]


def limits(differences: np.ndarray, *, confidence: float = 0.95) -> dict[str, Any]:
    """Return the bias, SD and limits of agreement of ``differences`` ``(n,)``, each with its confidence interval.

    Keys: ``bias``, ``bias_ci``, ``sd`` (n − 1), ``loa`` (``lower``, ``upper``: bias ∓ z · SD, z the normal
    quantile of ``confidence``: 1.96 at 95 %) and ``loa_ci`` (``lower``, ``upper``: each limit ± t · SD · √(3/n)).
    """
    from scipy import stats

    d = np.asarray(differences, dtype=float)
    n = d.size
    bias, sd = float(d.mean()), float(d.std(ddof=1))
    z = float(stats.norm.ppf(0.5 + confidence / 2))
    t = float(stats.t.ppf(0.5 + confidence / 2, n - 1))
    lower, upper = bias - z * sd, bias + z * sd
    loa_half = t * sd * np.sqrt(3.0 / n)
    return {"bias": bias, "bias_ci": _interval(bias, t * sd / np.sqrt(n)), "sd": sd,
            "loa": {"lower": lower, "upper": upper},
            "loa_ci": {"lower": _interval(lower, loa_half), "upper": _interval(upper, loa_half)}}


def _regression(x: np.ndarray, y: np.ndarray) -> dict[str, float | None]:
    """Return the OLS line of ``y`` on ``x``: ``intercept``, ``slope`` and the slope's two-sided ``p``.

    ``p`` is None where there is nothing to test: every ``x`` the same, or every ``y`` (a device whose error is the
    same every night: no slope, and scipy's p would be 0/0).
    """
    from scipy import stats

    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return {"intercept": float(np.mean(y)), "slope": 0.0, "p": None}
    fit = stats.linregress(x, y)
    return {"intercept": float(fit.intercept), "slope": float(fit.slope), "p": float(fit.pvalue)}


def log_limits(device: np.ndarray, reference: np.ndarray, *, confidence: float = 0.95) -> dict[str, Any] | None:
    """Return :func:`limits` of ``ln(device) − ln(reference)``, back-transformed to ratios device / reference.

    ``ratio`` (exp of the bias) and ``loa`` / ``loa_ci`` as ratios: limits whose width grows with the measure,
    as Bland and Altman 1999 §3.3 give them. None where a value is 0 or below (its logarithm is undefined).
    """
    device, reference = np.asarray(device, dtype=float), np.asarray(reference, dtype=float)
    if (device <= 0).any() or (reference <= 0).any():
        return None
    on_log = limits(np.log(device) - np.log(reference), confidence=confidence)
    return {"ratio": float(np.exp(on_log["bias"])), "ratio_ci": np.exp(on_log["bias_ci"]).tolist(),
            "loa": {k: float(np.exp(v)) for k, v in on_log["loa"].items()},
            "loa_ci": {k: np.exp(v).tolist() for k, v in on_log["loa_ci"].items()}}


def bland_altman(device: Sequence[float], reference: Sequence[float], *, confidence: float = 0.95) -> dict[str, Any]:
    """Return the group discrepancy of one measure: :func:`limits` plus the proportional-bias and spread tests.

    ``device``, ``reference``: the measure per night, same order. Adds ``n``, ``device_mean``/``_sd``,
    ``reference_mean``/``_sd``, ``proportional_bias`` (regression of the differences on the pair means, and
    ``present``: its slope differs from 0 at p < :data:`ALPHA`), ``spread_grows`` (regression of the absolute
    residuals on the means, ``present``: a positive slope at p < ALPHA) and ``log_scale`` (:func:`log_limits`,
    given only where the spread grows; ``log_scale_note`` says why not otherwise). Needs :data:`MIN_NIGHTS`.
    """
    dev, ref = np.asarray(device, dtype=float), np.asarray(reference, dtype=float)
    if dev.shape != ref.shape:
        raise ValueError(f"device {dev.shape} and reference {ref.shape} differ in shape")
    if dev.size < MIN_NIGHTS:
        raise ValueError(f"a group discrepancy needs {MIN_NIGHTS} nights, got {dev.size}")
    diff, mean = dev - ref, (dev + ref) / 2
    out: dict[str, Any] = {"n": int(dev.size), "device_mean": float(dev.mean()), "device_sd": float(dev.std(ddof=1)),
                           "reference_mean": float(ref.mean()), "reference_sd": float(ref.std(ddof=1)),
                           **limits(diff, confidence=confidence)}
    line = _regression(mean, diff)
    out["proportional_bias"] = {**line, "present": line["p"] is not None and line["p"] < ALPHA}
    residuals = np.abs(diff - (line["intercept"] + line["slope"] * mean))
    spread = _regression(mean, residuals)
    out["spread_grows"] = {**spread, "present": spread["p"] is not None and spread["slope"] > 0 and spread["p"] < ALPHA}
    log = log_limits(dev, ref, confidence=confidence) if out["spread_grows"]["present"] else None
    out["log_scale"] = log
    out["log_scale_note"] = (None if log is not None else "a night's value is 0: no log scale"
                             if out["spread_grows"]["present"] else
                             "no sign that the differences grow with the mean" + (
                                 "" if spread["p"] is None else f" (p = {spread['p']:.2g})"))
    return out


__all__ = ["ALPHA", "MIN_NIGHTS", "bland_altman", "limits", "log_limits"]
