"""Epoch-by-epoch agreement of a device's staging with a reference scorer's, as sleep-tracker validations report it.

One night (or the nights pooled) gives the error matrix (reference stages down, device stages across) in counts and
in proportions of each reference stage, and for each stage against the others its sensitivity, specificity, PPV,
NPV, accuracy and PABAK; for all stages at once the accuracy, Cohen's kappa and the prevalence-adjusted bias-adjusted
kappa (PABAK). :func:`night_spread` gives the mean, SD and range of a per-night number (the per-night kappa's).
Definitions: Menghini et al., SLEEP 2021 (``errorMatrix``, ``indEBE``, ``groupEBE`` of their R functions).

Example::

    >>> import numpy as np
    >>> a = epoch_agreement(np.array([0, 0, 1, 1]), np.array([0, 1, 1, 1]), ["W", "N2"])
    >>> a["accuracy"], a["pabak"], a["stages"]["W"]["sensitivity"]
    (0.75, 0.5, 0.5)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

#: The per-stage numbers of :func:`epoch_agreement`, in table order.
STAGE_METRICS: tuple[str, ...] = ("sensitivity", "specificity", "ppv", "npv", "accuracy", "pabak")


def pabak(observed: float, n_categories: int) -> float:
    """Return the prevalence-adjusted bias-adjusted kappa of an observed agreement ``observed`` (a share in [0, 1]).

    Byrt, Bishop and Carlin (1993): kappa with chance agreement fixed at ``1 / n_categories``, i.e.
    ``(k · p_o − 1) / (k − 1)``; for two categories ``2 · p_o − 1``. Hand-written: neither scikit-learn nor
    scipy has it, and it is one line.
    """
    k = int(n_categories)
    if k < 2:
        raise ValueError(f"PABAK needs at least two categories, got {k}")
    return (k * float(observed) - 1.0) / (k - 1.0)


def _share(numerator: float, denominator: float) -> float | None:
    """Return ``numerator / denominator``, None when the denominator is 0 (a stage absent: undefined, never 0)."""
    return float(numerator) / float(denominator) if denominator else None


def stage_metrics(confusion: np.ndarray, classes: Sequence[str]) -> dict[str, dict[str, float | None]]:
    """Return each stage's sensitivity, specificity, PPV, NPV, accuracy and PABAK against all other stages.

    ``confusion`` ``(K, K)``: counts, reference stages down, device stages across. Undefined shares (a stage the
    reference never scored has no sensitivity) are None.
    """
    confusion = np.asarray(confusion, dtype=np.int64)
    n = int(confusion.sum())
    out: dict[str, dict[str, float | None]] = {}
    for i, stage in enumerate(classes):
        tp = int(confusion[i, i])
        fn = int(confusion[i].sum()) - tp
        fp = int(confusion[:, i].sum()) - tp
        tn = n - tp - fn - fp
        accuracy = _share(tp + tn, n)
        out[stage] = {"sensitivity": _share(tp, tp + fn), "specificity": _share(tn, tn + fp),
                      "ppv": _share(tp, tp + fp), "npv": _share(tn, tn + fn), "accuracy": accuracy,
                      "pabak": None if accuracy is None else pabak(accuracy, 2)}
    return out


def epoch_agreement(reference: np.ndarray, device: np.ndarray, classes: Sequence[str]) -> dict[str, Any]:
    """Return the epoch-by-epoch agreement of ``device`` with ``reference`` (class indices ``(N,)``; -1: skipped).

    Keys: ``epochs`` (compared), ``confusion`` (counts ``[reference][device]``), ``proportions`` (each reference
    row divided by its total: the share of the scorer's epochs of a stage the device put in each stage; None for a
    stage the scorer never scored), ``stages`` (:func:`stage_metrics`), ``accuracy``, ``kappa`` (Cohen's, from
    scikit-learn; None where undefined: no epoch, or one stage on both sides) and ``pabak`` (over all ``K``
    classes, :func:`pabak`).
    """
    from sklearn.metrics import cohen_kappa_score, confusion_matrix

    reference, device = np.asarray(reference), np.asarray(device)
    both = (reference >= 0) & (device >= 0)
    ref, dev = reference[both], device[both]
    labels = list(range(len(classes)))
    confusion = confusion_matrix(ref, dev, labels=labels) if ref.size else np.zeros((len(classes),) * 2, int)
    rows = confusion.sum(axis=1)
    proportions = [[float(v) / rows[i] for v in confusion[i]] if rows[i] else None for i in range(len(classes))]
    n = int(both.sum())
    accuracy = float(np.trace(confusion)) / n if n else None
    # One stage on both sides: chance agreement is 1 and kappa 0/0; say so (None) rather than pick 0 or 1.
    single = len(set(ref.tolist()) | set(dev.tolist())) <= 1
    kappa = None if single else float(cohen_kappa_score(ref, dev, labels=labels))
    return {"epochs": n, "confusion": confusion.astype(int).tolist(), "proportions": proportions,
            "stages": stage_metrics(confusion, classes), "accuracy": accuracy, "kappa": kappa,
            "pabak": None if accuracy is None else pabak(accuracy, len(classes))}


def night_spread(values: Sequence[float | None]) -> dict[str, float | int | None]:
    """Return ``n``, ``mean``, ``sd`` (n − 1), ``min`` and ``max`` of the defined values (None ones left out)."""
    arr = np.array([v for v in values if v is not None], dtype=float)
    if not arr.size:
        return {"n": 0, "mean": None, "sd": None, "min": None, "max": None}
    return {"n": int(arr.size), "mean": float(arr.mean()), "sd": float(arr.std(ddof=1)) if arr.size > 1 else None,
            "min": float(arr.min()), "max": float(arr.max())}


__all__ = ["STAGE_METRICS", "epoch_agreement", "night_spread", "pabak", "stage_metrics"]
