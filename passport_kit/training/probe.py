"""The ``probe`` recipe: fit a probe head as a regularised logistic regression on frozen features.

Why (issue 18, docs/RESULTS.md § Real EEG): on small real data sets the paper's fine-tuning
recipe (AdamW on a fresh MLP head, early stopping on one validation subject) barely moved from
its initialisation, while a cross-validated logistic regression on the same frozen features did
far better. This module is that regression, built into ``adapt`` and ``evaluate``:

1. Features: every training window goes once through the frozen model (backbone, experts and
   mixture adapter as pretrained; masking and distrust as in training) to the
   :class:`~passport_kit.model.heads.ProbeHead`'s input: pooled encoder features (D) and each
   channel's log band power (C · 6).
2. Each block is standardised on the training windows; the encoder block is then scaled by
   ``backbone_weight`` (a smaller weight is a stronger L2 penalty on it: with tens of windows,
   D = 200 encoder features would otherwise drown the 6 · C spectral ones).
3. The L2 strength ``C`` and ``backbone_weight`` are chosen by cross-validation over subjects
   inside the training data (grouped folds, up to 5; out-of-fold predictions pooled; kappa,
   or AUROC for two classes), then the model is refitted on every training window. No window
   is held out for selection alone, and no single validation subject decides.
4. Class weights are inverse class frequencies capped at ``MAX_CLASS_WEIGHT`` (a class of five
   windows among three hundred must not turn every epoch into itself).
5. The fitted standardisation and coefficients are folded into the head's linear layer.

scikit-learn's ``LogisticRegression`` (lbfgs) does the fitting: a well-kept solver for exactly
this problem, not re-written here.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn

from passport_kit.errors import DataError
from passport_kit.model.meta import ChannelMeta
from passport_kit.inference.forward import read_out_features
from passport_kit.model.heads import PROBE_POOLINGS, pooled_width, sequence_features
from passport_kit.training.finetune import (
    MAX_CLASS_WEIGHT,
    class_weights,
    near_chance,
    selection_metric,
    selection_score,
)
from passport_kit.training.metrics import ClassificationMetrics, classification_metrics

#: Grid of the inner cross-validation: inverse L2 strength and the encoder block's scale.
C_GRID = (0.03, 0.1, 0.3, 1.0)
BACKBONE_WEIGHTS = (0.1, 0.3)
#: Temporal context (windows on each side) tried for sleep staging: none, or ±2 epochs (2.5 min).
CONTEXTS = (0, 2)
#: Pooling of the backbone features tried: those a ``ProbeHead`` knows (mean; mean and spread over
#: the window's patches); the first is the fallback.
POOLINGS = PROBE_POOLINGS
#: Used when fewer than two training subjects leave nothing to cross-validate over: C, the grid's
#: smallest backbone weight (without evidence, lean on the backbone least), no context.
FALLBACK = (0.3, min(BACKBONE_WEIGHTS), 0)
#: Most inner folds (grouped by subject).
MAX_INNER_FOLDS = 5
#: A class with fewer training windows than this is flagged as too rare to learn reliably.
RARE_CLASS_WINDOWS = 20


@dataclass
class ProbeResult:
    """Outcome of fitting a probe head: the choice made, its cross-validated score, warnings."""

    c: float
    backbone_weight: float
    context: int
    pooling: str
    selection_metric: str
    selection_score: float | None
    inner_folds: int
    validation: ClassificationMetrics | None
    seconds: float
    warnings: list[str] = field(default_factory=list)
    grid: list[dict[str, Any]] = field(default_factory=list)


class _Standardiser:
    """Per-feature standardisation with the encoder block scaled by ``backbone_weight``."""

    def __init__(self, z: np.ndarray, backbone_columns: np.ndarray, backbone_weight: float) -> None:
        self.mean = z.mean(axis=0)
        self.scale = z.std(axis=0)
        self.scale[self.scale < 1e-8] = 1.0  # constant features (an absent band) stay at zero
        self.weight = np.ones(z.shape[1])
        self.weight[backbone_columns] = backbone_weight

    def __call__(self, z: np.ndarray) -> np.ndarray:
        return (z - self.mean) / self.scale * self.weight


class _OneClass:
    """What an inner fold whose training part holds one class can predict: that class, always."""

    def __init__(self, label: int) -> None:
        self.classes_ = np.array([label])

    def predict_proba(self, z: np.ndarray) -> np.ndarray:
        return np.ones((len(z), 1))


def _fit_lr(z: np.ndarray, y: np.ndarray, sample_weight: np.ndarray, c: float, seed: int) -> Any:
    from sklearn.linear_model import LogisticRegression

    if len(np.unique(y)) < 2:  # an inner fold of a very skewed data set (the full fit has two classes)
        return _OneClass(int(y[0]))

    model = LogisticRegression(C=c, max_iter=2000, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # lbfgs convergence chatter on separable folds
        model.fit(z, y, sample_weight=sample_weight)
    return model


def _proba(model: Any, z: np.ndarray, n_classes: int) -> np.ndarray:
    """Return ``(N, n_classes)`` probabilities; classes the fold never saw get 0."""
    out = np.zeros((len(z), n_classes))
    out[:, model.classes_] = model.predict_proba(z)
    return out


def _score(y: np.ndarray, proba: np.ndarray, classes: list[str]) -> tuple[float, ClassificationMetrics]:
    metrics = classification_metrics(y, proba.argmax(1), classes, proba)
    return selection_score(metrics), metrics


def fit_probe(
    model: nn.Module,
    x: np.ndarray,
    y: np.ndarray,
    meta: ChannelMeta,
    classes: list[str],
    train_index: np.ndarray,
    groups: np.ndarray,
    *,
    seed: int = 0,
    batch_size: int = 64,
    device: torch.device | None = None,
    channel_mask: np.ndarray | None = None,
    distrust: np.ndarray | None = None,
    recordings: np.ndarray | None = None,
    contexts: tuple[int, ...] = (0,),
    poolings: tuple[str, ...] = POOLINGS,
) -> ProbeResult:
    """Fit ``model``'s probe head on rows ``train_index`` of ``x`` ``(N, C, P, 200)``; return the choice made.

    ``groups`` ``(N,)`` names the subject of every row (inner folds never split a subject).
    ``contexts``: the head's temporal context (windows on each side) is chosen among these by
    the same cross-validation; ``recordings`` ``(N,)`` then says which rows are consecutive
    windows of one recording (rows of a recording in time order). On return the head holds
    the refitted read-out (and the chosen context) and the model is in eval mode.
    ``poolings``: the head's pooling of the backbone features is chosen among these too
    (the first is the fallback without cross-validation).
    """
    from sklearn.model_selection import GroupKFold

    start = time.perf_counter()
    train_index = np.asarray(train_index, dtype=np.int64)
    y_train = np.asarray(y, dtype=np.int64)[train_index]
    if len(train_index) == 0 or (y_train < 0).any():
        raise DataError("no labeled training windows; check the labels and the training subjects")
    if len(np.unique(y_train)) < 2:
        raise DataError(f"the training windows hold one class only ({classes[y_train[0]]}); "
                        "adapt needs at least two classes")
    n_classes = len(classes)
    head = model.head
    # One forward pass gives both poolings: [mean (D), spread (D), band powers]; "mean" drops the spread.
    z_both = read_out_features(model, x, meta, train_index, batch_size=batch_size, device=device,
                               channel_mask=channel_mask, distrust=distrust, pooling="meanstd")
    d = head.d_model
    plain = {"meanstd": z_both, "mean": np.concatenate([z_both[:, :d], z_both[:, 2 * d:]], axis=1)}
    seq = None if recordings is None else list(np.asarray(recordings)[train_index])
    inputs = {(p, k): sequence_features(torch.from_numpy(plain[p]), k, seq).numpy()
              for p in poolings for k in contexts}
    weights = class_weights(y_train, n_classes)
    sample_weight = weights[y_train]
    g = np.asarray(groups)[train_index]
    n_groups = len(np.unique(g))
    metric = selection_metric(n_classes)
    notes = class_warnings(y_train, classes)
    if n_groups < 2:
        notes.append(f"only {n_groups} training subject: nothing to cross-validate over, so the "
                     f"regularisation is the fixed fallback (C {FALLBACK[0]:g}, no temporal context) and no "
                     "validation score exists")

    grid: list[dict[str, Any]] = []
    best: tuple[float, float, int, str] = (FALLBACK[0], FALLBACK[1], min(contexts, key=abs), poolings[0])
    best_score: float | None = None
    best_metrics: ClassificationMetrics | None = None
    folds = min(MAX_INNER_FOLDS, n_groups)
    if folds >= 2:
        splits = list(GroupKFold(n_splits=folds).split(z_both, y_train, g))
        for (p, k), z in inputs.items():
            n_backbone = _backbone_columns(pooled_width(d, p), plain[p].shape[1], k)
            for w in BACKBONE_WEIGHTS:
                for c in C_GRID:
                    oof = np.zeros((len(z), n_classes))
                    for fit_rows, test_rows in splits:
                        standardise = _Standardiser(z[fit_rows], n_backbone, w)
                        lr = _fit_lr(standardise(z[fit_rows]), y_train[fit_rows], sample_weight[fit_rows], c, seed)
                        oof[test_rows] = _proba(lr, standardise(z[test_rows]), n_classes)
                    score, metrics = _score(y_train, oof, classes)
                    grid.append({"C": c, "backbone_weight": w, "context": k, "pooling": p,
                                 metric: round(float(score), 4)})
                    if best_score is None or score > best_score + 1e-9:
                        best, best_score, best_metrics = (c, w, k, p), float(score), metrics
        if best_score is not None and near_chance(best_score, metric):
            notes.append(f"cross-validated {metric} {best_score:.3f} is near chance: the classes may not be "
                         "separable with this montage and these labels")
    c, w, k, p = best
    z = inputs[(p, k)]
    head.set_read_out(k, p)
    standardise = _Standardiser(z, _backbone_columns(head.n_backbone_features, plain[p].shape[1], k), w)
    lr = _fit_lr(standardise(z), y_train, sample_weight, c, seed)
    _fold_into_linear(head.linear, lr, standardise, n_classes)
    model.eval()
    return ProbeResult(c=c, backbone_weight=w, context=k, pooling=p, selection_metric=metric, selection_score=best_score,
                       inner_folds=folds if folds >= 2 else 0, validation=best_metrics,
                       seconds=time.perf_counter() - start, warnings=notes, grid=grid)


def _backbone_columns(n_backbone: int, n_plain: int, context: int) -> np.ndarray:
    """Return the column indices of the encoder block in read-out inputs with ``context`` (its running mean too)."""
    cols = np.arange(n_backbone)
    return np.concatenate([cols, n_plain + cols]) if context else cols


def class_warnings(y_train: np.ndarray, classes: list[str]) -> list[str]:
    """Return the warnings about the training classes that a user must see (rare or absent classes); both recipes."""
    notes = []
    counts = np.bincount(y_train, minlength=len(classes))
    rare = [f"{c} ({n})" for c, n in zip(classes, counts) if 0 < n < RARE_CLASS_WINDOWS]
    absent = [c for c, n in zip(classes, counts) if n == 0]
    if rare:
        notes.append(f"classes with fewer than {RARE_CLASS_WINDOWS} training windows are hard to learn: "
                     f"{', '.join(rare)}; their class weight is capped at {MAX_CLASS_WEIGHT:g}")
    if absent:
        notes.append(f"classes absent from the training windows will never be predicted: {', '.join(absent)}")
    return notes


def _fold_into_linear(linear: nn.Linear, lr: Any, standardise: _Standardiser, n_classes: int) -> None:
    """Write ``lr`` (fitted on standardised inputs) into ``linear`` (which reads raw inputs)."""
    coef = np.zeros((n_classes, linear.in_features))
    bias = np.full(n_classes, -30.0)  # a class the regression never saw: never predicted
    if len(lr.classes_) == 2:
        # scikit-learn keeps one row for two classes: logit(class 1) - logit(class 0).
        rows = np.vstack([-lr.coef_[0] / 2, lr.coef_[0] / 2])
        icpt = np.array([-lr.intercept_[0] / 2, lr.intercept_[0] / 2])
    else:
        rows, icpt = lr.coef_, lr.intercept_
    factor = standardise.weight / standardise.scale
    for k, cls in enumerate(lr.classes_):
        coef[cls] = rows[k] * factor
        bias[cls] = icpt[k] - float(np.dot(rows[k] * factor, standardise.mean))
    with torch.no_grad():
        linear.weight.copy_(torch.as_tensor(coef, dtype=linear.weight.dtype))
        linear.bias.copy_(torch.as_tensor(bias, dtype=linear.bias.dtype))


def probe_summary(result: ProbeResult) -> dict[str, Any]:
    """Return the ``selection`` block of adapter.json for a probe fit."""
    return {
        "recipe": "probe",
        "metric": result.selection_metric,
        "score": None if result.selection_score is None else round(result.selection_score, 4),
        "method": (f"{result.inner_folds}-fold cross-validation over training subjects, then refit on all"
                   if result.inner_folds else "none (fewer than 2 training subjects): fixed fallback"),
        "C": result.c,
        "backbone_weight": result.backbone_weight,
        "context": result.context,
        "pooling": result.pooling,
        "grid": result.grid,
    }


__all__ = ["CONTEXTS", "ProbeResult", "class_warnings", "fit_probe", "probe_summary"]
