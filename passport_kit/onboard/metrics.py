"""Classification metrics for adaptation and evaluation (one vocabulary for every report).

Multi-class tasks (sleep staging) report accuracy, balanced accuracy, Cohen's kappa,
**macro**-F1 (every class weighs the same, as LUNA reports; YASA and CBraMod report *weighted*
F1 — we name ours explicitly so the two are never confused) and per-class F1. Two-class tasks
add AUROC on the probability of the second class. The confusion matrix is always over the full
list of class names, so that a class absent from one subject still has its row.

Example::

    >>> import numpy as np
    >>> m = classification_metrics(np.array([0, 1, 1]), np.array([0, 1, 0]), ["W", "S"])
    >>> round(m.accuracy, 3), m.confusion
    (0.667, [[1, 0], [1, 1]])
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from sklearn import metrics as skm

from passport_kit.checkpoint.adapter_metrics import METRIC_NAMES, ClassificationMetrics
from passport_kit.errors import LabelError

__all__ = ["METRIC_NAMES", "ClassificationMetrics", "classification_metrics"]


def classification_metrics(
    y_true: np.ndarray,
    y_pred: np.ndarray,
    classes: list[str],
    proba: np.ndarray | None = None,
) -> ClassificationMetrics:
    """Return every metric of predictions ``y_pred`` against ``y_true``.

    Parameters
    ----------
    y_true, y_pred : np.ndarray, shape (N,)
        Class indices into ``classes``; reference entries equal to -1 (unlabeled) are skipped.
    classes : list of str
        Class names, in index order.
    proba : np.ndarray, shape (N, n_classes), optional
        Class probabilities; needed for AUROC (two-class tasks only).
    """
    y_true = np.asarray(y_true, dtype=np.int64)
    y_pred = np.asarray(y_pred, dtype=np.int64)
    if y_true.shape != y_pred.shape:
        raise ValueError(f"y_true {y_true.shape} and y_pred {y_pred.shape} differ in shape")
    keep = y_true >= 0
    y_true, y_pred = y_true[keep], y_pred[keep]
    if proba is not None:
        proba = np.asarray(proba, dtype=np.float64)[keep]
    if y_true.size == 0:
        raise LabelError("no labeled windows to score; check the labels of the evaluation data")
    labels = list(range(len(classes)))
    confusion = skm.confusion_matrix(y_true, y_pred, labels=labels)
    with warnings.catch_warnings():
        # sklearn warns when a class has no samples; those classes score 0 F1 by convention.
        warnings.simplefilter("ignore")
        f1 = skm.f1_score(y_true, y_pred, labels=labels, average=None, zero_division=0)
        present = sorted(set(y_true.tolist()))
        # Balanced accuracy = mean recall over the classes present in the reference.
        recalls = [confusion[c, c] / confusion[c].sum() for c in present]
        kappa = skm.cohen_kappa_score(y_true, y_pred, labels=labels)
    # kappa is NaN when both raters use one single class; report 0 agreement beyond chance then.
    kappa = 0.0 if math.isnan(kappa) else float(kappa)
    auroc = None
    if len(classes) == 2 and proba is not None and len(present) == 2:
        auroc = float(skm.roc_auc_score(y_true, proba[:, 1]))
    return ClassificationMetrics(
        n=int(y_true.size),
        accuracy=float(np.mean(y_true == y_pred)),
        balanced_accuracy=float(np.mean(recalls)),
        kappa=kappa,
        # Macro-F1 over the classes present in the reference or predicted, so a stage that never
        # occurs in a subject does not pull the score to 0 for that subject alone.
        macro_f1=float(np.mean([f1[c] for c in sorted(set(present) | set(y_pred.tolist()))])),
        per_class_f1={name: float(f1[i]) for i, name in enumerate(classes)},
        auroc=auroc,
        confusion=confusion.astype(int).tolist(),
        classes=list(classes),
    )
