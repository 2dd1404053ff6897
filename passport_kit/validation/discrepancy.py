"""Discrepancy of a device's sleep measures with a reference's: Bland–Altman bias and limits, by YASA's framework.

For each measure (TST, SE, ...) over nights, :func:`discrepancies` gives what Menghini et al. (SLEEP 2021) report, as
YASA computes it (``yasa.evaluation.SleepStatsAgreement``, the maintained Python port of their framework, YASA ≥ 0.8.1):

- the bias (mean difference device − reference) and the limits of agreement (bias ± 1.96 SD) with their parametric
  95 % CIs (``± t · SD / √n``; each limit ``± t · SD · √(3 / n)``);
- the proportional-bias test (the differences regressed on the reference's value) and the heteroscedasticity test
  (the absolute residuals of that regression on the reference's value), each with YASA's effect-size gate (R² > 0.1;
  the fitted spread changing by more than 1.5× across the range), so that a tiny, significant slope does not count;
- three kinds of limits: **parametric** (bias ± 1.96 SD), **regression** (bias line b0 + b1 · ref, limits
  ± 2.46 (c0 + c1 · ref), or ± 1.96 SD of the residuals around the bias line where only the bias is proportional)
  and **log** (Euser et al. 2008: bias ± slope · ref, the slope from the SD of the log-ratios; defined where no
  value is 0); :data:`LIMITS_CHOSEN` says which one the report shows first (YASA's ``auto`` rule without the log);
- the ICC and the minimal detectable change (:mod:`~passport_kit.validation.reliability`).

We use YASA rather than our own formulas (issue 56): it is already a dependency, it is where the framework is kept up
(repeated nights, effect-size gates), and a reader can recompute every number with it. CIs are YASA's parametric ones
(``ci_method="param"``): bootstrap CIs would change from run to run and take seconds per measure. A measure whose
difference is the same on every night (a device that is always exactly 10 min short) has no spread for YASA to test;
its numbers are written here: bias = limits = that difference, with zero-width CIs and no test.

Example::

    >>> ba = bland_altman([410.0, 395.0, 420.0], [420.0, 400.0, 435.0])
    >>> ba["bias"], ba["loa"]["lower"] < ba["bias"] < ba["loa"]["upper"]
    (-10.0, True)
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from passport_kit.validation.reliability import agreement_icc

#: Fewest nights for a group discrepancy: a bias and its SD need two, its regressions three.
MIN_NIGHTS = 3
#: How YASA's assumption tests choose the limits a report shows first (without the log, which it never chooses
#: by a test): parametric where the bias is constant and the spread too, regression otherwise.
LIMITS_CHOSEN = {"parametric": "bias ± 1.96 SD", "parallel": "bias line ± 1.96 SD of its residuals",
                 "regression": "bias line ± 2.46 (c0 + c1 · reference)"}
#: The multiple of the modelled absolute residual in regression limits: 1.96 · √(π/2) (YASA's and Bland–Altman's).
REGRESSION_AGREEMENT = 1.96 * float(np.sqrt(np.pi / 2))


def _pair(frame: Any, stat: str, name: str) -> list[float | None]:
    """Return ``[lower, upper]`` of variable ``name`` of YASA's summary row ``stat`` (None where NaN)."""
    return [_num(frame.at[stat, (name, "lower")]), _num(frame.at[stat, (name, "upper")])]


def _num(value: Any) -> float | None:
    """Return ``value`` as a float, None where it is NaN or infinite (YASA's 'not computed')."""
    v = float(value)
    return v if np.isfinite(v) else None


def _described(dev: np.ndarray, ref: np.ndarray) -> dict[str, Any]:
    """Return ``n`` and each side's mean and SD (n − 1)."""
    return {"n": int(dev.size), "device_mean": float(dev.mean()), "device_sd": float(dev.std(ddof=1)),
            "reference_mean": float(ref.mean()), "reference_sd": float(ref.std(ddof=1))}


def _constant(dev: np.ndarray, ref: np.ndarray) -> dict[str, Any]:
    """Return the discrepancy of a measure whose difference is the same on every night: no spread, no test."""
    d = float(dev[0] - ref[0])
    no_test = {"slope": None, "p": None, "present": False}
    return {**_described(dev, ref), "bias": d, "bias_ci": [d, d], "sd": 0.0, "loa": {"lower": d, "upper": d},
            "loa_ci": {"lower": [d, d], "upper": [d, d]}, "proportional_bias": {**no_test, "r2": None},
            "spread_changes": {**no_test, "direction": None, "sd_ratio": None}, "normal": {"p": None, "present": True},
            "regression": None, "log": None, "limits_chosen": "parametric",
            "note": "the difference is the same on every night: no spread to test", **agreement_icc(dev, ref)}


def _from_yasa(stat: str, summary: Any, assumptions: Any, dev: np.ndarray, ref: np.ndarray) -> dict[str, Any]:
    """Return one measure's discrepancy from YASA's ``summary(ci_method="param")`` and ``assumptions`` rows."""
    a = assumptions.loc[stat]
    s = summary.loc[stat]
    proportional = not bool(a[("constant_bias", "passed")])
    changes = not bool(a[("homoscedastic", "passed")])
    ratio = _num(a[("homoscedastic", "sd_ratio")])
    out: dict[str, Any] = {
        **_described(dev, ref), "bias": float(s[("bias_mean", "center")]), "bias_ci": _pair(summary, stat, "bias_mean"),
        "sd": float(np.std(dev - ref, ddof=1)),
        "loa": {"lower": float(s[("loa_lower", "center")]), "upper": float(s[("loa_upper", "center")])},
        "loa_ci": {"lower": _pair(summary, stat, "loa_lower"), "upper": _pair(summary, stat, "loa_upper")},
        "proportional_bias": {"slope": _num(a[("constant_bias", "slope")]), "p": _num(a[("constant_bias", "pvalue")]),
                              "r2": _num(a[("constant_bias", "r2")]), "present": proportional},
        "spread_changes": {"slope": _num(a[("homoscedastic", "slope")]), "p": _num(a[("homoscedastic", "pvalue")]),
                           "sd_ratio": ratio, "present": changes,
                           "direction": None if ratio is None or ratio == 1 else "grows" if ratio > 1 else "shrinks"},
        "normal": {"p": _num(a[("normal", "pvalue")]), "present": bool(a[("normal", "passed")])},
        "regression": {
            "bias_intercept": float(s[("bias_intercept", "center")]), "bias_intercept_ci": _pair(summary, stat,
                                                                                               "bias_intercept"),
            "bias_slope": float(s[("bias_slope", "center")]), "bias_slope_ci": _pair(summary, stat, "bias_slope"),
            "loa_intercept": float(s[("loa_intercept", "center")]), "loa_intercept_ci": _pair(summary, stat,
                                                                                            "loa_intercept"),
            "loa_slope": float(s[("loa_slope", "center")]), "loa_slope_ci": _pair(summary, stat, "loa_slope"),
            "halfwidth": float(s[("loa_halfwidth", "center")]), "halfwidth_ci": _pair(summary, stat, "loa_halfwidth"),
            "agreement": REGRESSION_AGREEMENT},
        "limits_chosen": "regression" if changes else "parallel" if proportional else "parametric", "note": None,
    }
    log_slope = _num(s[("loa_log_slope", "center")]) if ("loa_log_slope", "center") in s.index else None
    out["log"] = None if log_slope is None else {"slope": log_slope, "slope_ci": _pair(summary, stat, "loa_log_slope")}
    if log_slope is None:
        out["note"] = "a night's value is 0: no log-scale limits"
    return out | agreement_icc(dev, ref)


def discrepancies(device: Mapping[str, Sequence[float]], reference: Mapping[str, Sequence[float]]) -> dict[str, Any]:
    """Return each measure's group discrepancy: ``{measure: {...}}`` from the per-night values of both sides.

    ``device``, ``reference``: per measure, the value of each night (same nights, same order; at least
    :data:`MIN_NIGHTS`, none missing). Per measure: ``n``, each side's mean and SD, ``bias`` + ``bias_ci``, ``sd``,
    ``loa`` + ``loa_ci`` (parametric), ``proportional_bias`` (slope, p, r2, ``present``), ``spread_changes``
    (slope, p, sd_ratio, ``direction``: grows / shrinks, ``present``), ``normal``, ``regression`` (bias line and
    limits' coefficients with CIs, ``halfwidth``), ``log`` (Euser slope with CI, or None), ``limits_chosen``
    (a key of :data:`LIMITS_CHOSEN`), ``icc``/``icc_ci``/``sem``/``mdc``/``mdc_ci``, ``note``.
    """
    import pandas as pd

    arrays = {m: (np.asarray(device[m], dtype=float), np.asarray(reference[m], dtype=float)) for m in device}
    for m, (dev, ref) in arrays.items():
        if dev.shape != ref.shape or dev.ndim != 1:
            raise ValueError(f"{m}: device {dev.shape} and reference {ref.shape} differ in shape")
        if dev.size < MIN_NIGHTS:
            raise ValueError(f"{m}: a group discrepancy needs {MIN_NIGHTS} nights, got {dev.size}")
    out = {m: _constant(dev, ref) for m, (dev, ref) in arrays.items() if np.ptp(dev - ref) == 0}
    varied = [m for m in arrays if m not in out]
    if varied:
        # One YASA table for every measure: YASA drops each measure's missing values on its own, so a measure with
        # fewer nights (REM latency: those with REM) fills its first rows and leaves the rest NaN.
        rows = max(arrays[m][0].size for m in varied)
        padded = [{m: np.pad(arrays[m][side], (0, rows - arrays[m][side].size), constant_values=np.nan)
                   for m in varied} for side in (0, 1)]
        summary, assumptions = _yasa_agreement(pd.DataFrame(padded[0]), pd.DataFrame(padded[1]))
        out |= {m: _from_yasa(m, summary, assumptions, *arrays[m]) for m in varied}
    return {m: out[m] for m in arrays}


def _yasa_agreement(device: Any, reference: Any) -> tuple[Any, Any]:
    """Return YASA's ``summary(ci_method="param")`` and ``assumptions`` of ``device`` against ``reference`` tables."""
    from yasa.evaluation import SleepStatsAgreement

    quiet = logging.getLogger("yasa")
    level = quiet.level
    quiet.setLevel(logging.ERROR)  # 'Removed ...' lines: this module says itself what is left out and why
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # Shapiro on 3 nights, log of a ratio near 1
            # The log limits need no value at or below 0: YASA leaves out (with NaN) a measure with a 0 and
            # refuses a negative one, which no sleep measure has.
            ssa = SleepStatsAgreement(reference, device, ref_scorer="reference", obs_scorer="device",
                                      log_transform=bool((device.fillna(1).to_numpy() >= 0).all()
                                                         and (reference.fillna(1).to_numpy() >= 0).all()))
            return ssa.summary(ci_method="param"), ssa.assumptions
    finally:
        quiet.setLevel(level)


def bland_altman(device: Sequence[float], reference: Sequence[float]) -> dict[str, Any]:
    """Return the group discrepancy of one measure (:func:`discrepancies` of one column)."""
    return discrepancies({"measure": device}, {"measure": reference})["measure"]


def limits_at(group: dict[str, Any], reference: np.ndarray, method: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return (bias, lower, upper) at the reference values ``reference`` ``(n,)`` under ``method``.

    ``method``: ``parametric``, ``parallel`` or ``regression`` (:data:`LIMITS_CHOSEN`), or ``log``.
    """
    x = np.asarray(reference, dtype=float)
    r = group["regression"]
    flat = np.ones_like(x)
    if method == "parametric" or r is None:
        return group["bias"] * flat, group["loa"]["lower"] * flat, group["loa"]["upper"] * flat
    if method == "log":  # Euser: the bias on the original scale, the half-width proportional to the reference
        half = group["log"]["slope"] * x
        return group["bias"] * flat, group["bias"] - half, group["bias"] + half
    # The bias line where the bias is proportional (always under 'parallel': Menghini's eq. 2), else the mean bias.
    proportional = method == "parallel" or group["proportional_bias"]["present"]
    line = r["bias_intercept"] + r["bias_slope"] * x if proportional else group["bias"] * flat
    half = r["halfwidth"] * flat if method == "parallel" else r["agreement"] * (r["loa_intercept"] + r["loa_slope"] * x)
    return line, line - half, line + half


__all__ = ["LIMITS_CHOSEN", "MIN_NIGHTS", "REGRESSION_AGREEMENT", "bland_altman", "discrepancies", "limits_at"]
