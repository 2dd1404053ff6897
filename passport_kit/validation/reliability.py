"""Reliability of a sleep measure between device and reference: ICC(A,1) with its CI, SEM and minimal detectable change.

What validation papers now report beside Bland–Altman (e.g. ICC 0.91 for TST, with the minimal detectable change per
measure): the intraclass correlation of the two methods' values, two-way random effects, absolute agreement, single
measurement (McGraw and Wong 1996's ICC(A,1), Shrout and Fleiss 1979's ICC(2,1); pingouin's ``ICC2``), with its
F-based 95 % CI (McGraw and Wong 1996, as pingouin computes it). Written here (a dozen lines of ANOVA) because
pingouin, which has it, is no longer installed with YASA 0.8 and is not a dependency of passport-kit; the tests
check it on Shrout and Fleiss's data (0.29 [0.019, 0.76], as R's psych::ICC gives).

The standard error of measurement ``SEM = SD · √(1 − ICC)`` (SD of all values, both methods) and the minimal
detectable change ``MDC95 = 1.96 · √2 · SEM`` (Weir 2005): the smallest change between two nights of one person that
the device tells apart from its disagreement with the reference. The MDC's CI is the ICC's CI carried through the
same formula (the SD held fixed): an approximation, said so in the report.

Example::

    >>> r = agreement_icc([410.0, 395.0, 420.0, 380.0], [420.0, 400.0, 435.0, 385.0])
    >>> round(r["icc"], 2), r["icc_ci"][0] < r["icc"] < r["icc_ci"][1]
    (0.89, True)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

#: z of the MDC's 95 % (a change beyond MDC95 is real with 95 % confidence).
_Z95 = 1.96


def icc_a1(ratings: np.ndarray, *, confidence: float = 0.95) -> tuple[float | None, list[float | None]]:
    """Return ICC(A,1) of ``ratings`` ``(n targets, k raters)`` and its CI (None where every rating is the same).

    Two-way ANOVA mean squares: rows (targets) ``MSR``, columns (raters) ``MSC``, residual ``MSE``;
    ``ICC = (MSR − MSE) / (MSR + (k − 1) MSE + k (MSC − MSE) / n)``; CI by McGraw and Wong 1996 (Satterthwaite's
    degrees of freedom ``v``), as pingouin's ``intraclass_corr`` gives for ``ICC2``.
    """
    from scipy import stats

    y = np.asarray(ratings, dtype=float)
    n, k = y.shape
    grand = y.mean()
    msr = k * np.sum((y.mean(axis=1) - grand) ** 2) / (n - 1)
    msc = n * np.sum((y.mean(axis=0) - grand) ** 2) / (k - 1)
    mse = np.sum((y - y.mean(axis=1, keepdims=True) - y.mean(axis=0, keepdims=True) + grand) ** 2) / ((n - 1) * (k - 1))
    denominator = msr + (k - 1) * mse + k * (msc - mse) / n
    if denominator <= 0:  # every value the same: nothing to correlate
        return None, [None, None]
    if mse == 0 and msc == 0:  # the two methods agree exactly on every target
        return 1.0, [1.0, 1.0]
    icc = float((msr - mse) / denominator)
    a = k * icc / (n * (1 - icc))
    b = 1 + k * icc * (n - 1) / (n * (1 - icc))
    v = (a * msc + b * mse) ** 2 / ((a * msc) ** 2 / (k - 1) + (b * mse) ** 2 / ((n - 1) * (k - 1)))
    q = 0.5 + confidence / 2
    f_up, f_low = stats.f.ppf(q, n - 1, v), stats.f.ppf(q, v, n - 1)
    lower = n * (msr - f_up * mse) / (f_up * (k * msc + (k * n - k - n) * mse) + n * msr)
    upper = n * (f_low * msr - mse) / (k * msc + (k * n - k - n) * mse + n * f_low * msr)
    return icc, [float(lower), float(upper)]


def _mdc(sd: float, icc: float | None) -> float | None:
    """Return MDC95 = 1.96 · √2 · SD · √(1 − ICC) (None without an ICC)."""
    return None if icc is None else float(_Z95 * np.sqrt(2.0) * sd * np.sqrt(max(0.0, 1.0 - icc)))


def agreement_icc(device: Sequence[float], reference: Sequence[float]) -> dict[str, Any]:
    """Return ``icc``, ``icc_ci``, ``sem`` and ``mdc``, ``mdc_ci`` of one measure over nights (device, reference).

    ``mdc_ci``: the MDC at the ICC's upper and lower bounds (a higher ICC, a smaller MDC).
    """
    dev, ref = np.asarray(device, dtype=float), np.asarray(reference, dtype=float)
    icc, ci = icc_a1(np.column_stack([dev, ref]))
    sd = float(np.concatenate([dev, ref]).std(ddof=1))
    return {"icc": icc, "icc_ci": ci,
            "sem": None if icc is None else float(sd * np.sqrt(max(0.0, 1.0 - icc))), "mdc": _mdc(sd, icc),
            "mdc_ci": [None if ci[1] is None else _mdc(sd, ci[1]), None if ci[0] is None else _mdc(sd, ci[0])]}


__all__ = ["agreement_icc", "icc_a1"]
