"""A linear read-out fitted on frozen features: the primitives of the ladder (:mod:`passport_kit.onboard.ladder`).

Why (issue 18, docs/history/accuracy.md § Real EEG): on small real data sets the paper's fine-tuning
recipe barely moved from its initialisation, while a cross-validated logistic regression on the
same frozen features did far better. The read-out here is that regression:

1. Inputs (:class:`~passport_kit.model.heads.ProbeHead`'s): pooled backbone features (D, or 2 D
   with pooling "meanstd"), each channel's log absolute and relative band power, and, where a
   sleep prior is stacked, its per-epoch log-probabilities; with temporal context also their
   running mean over the neighbouring epochs.
2. Standardised as scikit-learn's ``StandardScaler`` does, then each block scaled by its weight
   (band power 1; the backbone block by ``backbone_weight``, the prior block by
   ``prior_weight``: a smaller weight is a stronger L2 penalty on that block; 0 leaves it out).
3. scikit-learn's ``LogisticRegression`` (lbfgs) with balanced class weights (``class_weight=
   "balanced"``'s n / (k · count)): with the band-power block alone this is exactly the textbook
   pipeline ``make_pipeline(StandardScaler(), LogisticRegression(C, class_weight="balanced"))``
   (tested to 1e-6). A well-kept solver for this problem, not re-written here.
4. The fitted standardisation and coefficients are folded into the head's linear layer.

Which blocks, which weights, which C: the ladder decides by cross-validation over subjects.
"""

from __future__ import annotations

import copy
import warnings
from typing import Any

import numpy as np
import torch
from torch import nn

from passport_kit.model.heads import pooled_width, read_out_inputs
from passport_kit.onboard.fitting import class_weights
from passport_kit.onboard.read_out import ReadOutChoice

#: Most inner folds (grouped by subject).
MAX_INNER_FOLDS = 5
#: A class with fewer training windows than this is flagged as too rare to learn reliably.
RARE_CLASS_WINDOWS = 20
#: The solver's iteration cap (the textbook pipeline the equivalence test builds uses the same).
MAX_ITER = 2000


class Standardiser:
    """scikit-learn's ``StandardScaler``, then each block scaled by its weight (0: the block is left out)."""

    def __init__(self, z: np.ndarray, weight: np.ndarray) -> None:
        from sklearn.preprocessing import StandardScaler

        scaler = StandardScaler().fit(z)
        self.mean = scaler.mean_
        self.scale = scaler.scale_  # constant features (an absent band) get 1: they stay at zero
        self.weight = np.asarray(weight, dtype=np.float64)
        #: Columns the regression sees: a block of weight 0 is left out (same solution, faster).
        self.active = self.weight != 0
        self._all_ones = bool(np.all(self.weight == 1.0))

    def __call__(self, z: np.ndarray) -> np.ndarray:
        scaled = (z - self.mean) / self.scale
        if self._all_ones:  # the textbook block alone: exactly StandardScaler's output
            return scaled
        return (scaled * self.weight)[:, self.active]


class _OneClass:
    """What an inner fold whose training part holds one class can predict: that class, always."""

    def __init__(self, label: int) -> None:
        self.classes_ = np.array([label])

    def predict_proba(self, z: np.ndarray) -> np.ndarray:
        return np.ones((len(z), 1))


def balanced_weights(y: np.ndarray, n_classes: int) -> np.ndarray:
    """Return per-row weights n / (k · count) over the classes present in ``y`` (``class_weight="balanced"``)."""
    return class_weights(y, n_classes, cap=np.inf)[y]


def fit_lr(z: np.ndarray, y: np.ndarray, sample_weight: np.ndarray, c: float, seed: int, warm: Any = None) -> Any:
    """Return a logistic regression fitted on ``z``; ``warm``: a fit on the same rows to start from (a path over C)."""
    from sklearn.linear_model import LogisticRegression

    if len(np.unique(y)) < 2:  # an inner fold of a very skewed data set (the full fit has two classes)
        return _OneClass(int(y[0]))

    model = LogisticRegression(C=c, max_iter=MAX_ITER, random_state=seed, warm_start=warm is not None)
    if warm is not None:  # lbfgs starts from the previous C's solution: the same optimum, fewer iterations
        model.coef_, model.intercept_ = warm.coef_.copy(), warm.intercept_.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # lbfgs convergence chatter on separable folds
        model.fit(z, y, sample_weight=sample_weight)
    return model


def class_proba(model: Any, z: np.ndarray, n_classes: int) -> np.ndarray:
    """Return ``(N, n_classes)`` probabilities; classes the fold never saw get 0."""
    out = np.zeros((len(z), n_classes))
    out[:, model.classes_] = model.predict_proba(z)
    return out


def repeated_group_folds(groups: np.ndarray, n_folds: int, repeats: int, seed: int
                         ) -> list[list[tuple[np.ndarray, np.ndarray]]]:
    """Return ``repeats`` draws of ``n_folds`` grouped folds ``(fit rows, test rows)`` (no group split).

    The first draw is scikit-learn's ``GroupKFold`` (groups balanced by size); later draws deal
    the groups, shuffled with ``seed``, round-robin into the folds.
    """
    from sklearn.model_selection import GroupKFold

    rows = np.arange(len(groups))
    draws = [list(GroupKFold(n_splits=n_folds).split(rows, groups=groups))]
    names = np.unique(groups)
    rng = np.random.default_rng(seed)
    for _ in range(1, repeats):
        fold_of = dict(zip(rng.permutation(names).tolist(), np.arange(len(names)) % n_folds))
        assign = np.array([fold_of[g] for g in groups.tolist()])
        draws.append([(rows[assign != f], rows[assign == f]) for f in range(n_folds)])
    return draws


def read_out_matrix(plain: dict[str, np.ndarray], choice: ReadOutChoice, prior: np.ndarray | None = None,
                    recordings: list[Any] | None = None) -> np.ndarray:
    """Return the head's read-out inputs ``(N, F)`` for ``choice``: ``[backbone, band power, prior]`` scaled and
    with context as the head computes them (the prior block only where ``choice.prior_weight`` > 0)."""
    z, n_prior = plain[choice.pooling], 0
    if choice.reads_prior:
        if prior is None:
            raise ValueError("a read-out with a prior block needs the prior's log-probabilities")
        z, n_prior = np.concatenate([z, prior], axis=1), prior.shape[1]
    # The stager's block is never scaled per recording (issue 55): an offset read-out adds it as it is, and the
    # folded head (ProbeHead.unscaled_inputs) reads it as the fit did.
    return read_out_inputs(torch.from_numpy(np.ascontiguousarray(z)), choice.context, choice.scaling,
                           recordings, unscaled=n_prior).numpy()


def column_weights(choice: ReadOutChoice, z: np.ndarray, n_backbone: int, n_plain: int) -> np.ndarray:
    """Return the weight of every column of ``z`` (:func:`read_out_matrix`'s output; ``n_plain``: the width of the
    backbone and band-power blocks): backbone ``backbone_weight``, band power ``bandpower_weight``, prior
    ``prior_weight``; with context, the running mean's copy the same."""
    width = z.shape[1] // (2 if choice.context else 1)
    one = np.full(width, float(choice.bandpower_weight))
    one[:n_backbone] = choice.backbone_weight
    one[n_plain:] = choice.prior_weight  # empty without a prior block
    return np.tile(one, 2) if choice.context else one


def fit_read_out(
    plain: dict[str, np.ndarray], y: np.ndarray, choice: ReadOutChoice, n_classes: int, *, d_model: int,
    recordings: list[Any] | None = None, seed: int = 0, prior: np.ndarray | None = None,
) -> tuple[Any, Standardiser]:
    """Return the logistic regression of ``choice`` fitted on every row (a cold start), and its standardisation."""
    z = read_out_matrix(plain, choice, prior, recordings)
    n_backbone = pooled_width(d_model, choice.pooling)
    standardise = Standardiser(z, column_weights(choice, z, n_backbone, plain[choice.pooling].shape[1]))
    lr = fit_lr(standardise(z), y, balanced_weights(y, n_classes), choice.c, seed)
    return lr, standardise


def plain_features(z_both: np.ndarray, d_model: int, poolings: tuple[str, ...]) -> dict[str, np.ndarray]:
    """Return the read-out inputs per pooling from the "meanstd" ones ``[mean (D), spread (D), spectral]``."""
    plain = {"meanstd": z_both, "mean": np.concatenate([z_both[:, :d_model], z_both[:, 2 * d_model:]], axis=1)}
    return {p: plain[p] for p in poolings}


def fit_head(head: nn.Module, plain: dict[str, np.ndarray], y: np.ndarray, choice: ReadOutChoice, n_classes: int,
             *, recordings: list[Any] | None, seed: int, prior: np.ndarray | None = None,
             stager_choice: dict[str, Any] | None = None, stages: list[int] | None = None) -> np.ndarray:
    """Give ``head`` the read-out of ``choice`` fitted on every row (context, pooling, scaling, prior block set);
    ``stages``: each class's stage in the prior block (an offset read-out needs it).

    Return the fit's own probabilities ``(N, n_classes)`` of those rows, computed by the solver's model on the
    inputs it was fitted on (not by the head): what the head must reproduce (issue 55's parity check).
    """
    n_prior = prior.shape[1] if choice.reads_prior and prior is not None else 0
    head.set_read_out(choice.context, choice.pooling, choice.scaling, prior=stager_choice, n_prior=n_prior)
    if choice.offset:
        if prior is None or stages is None:
            raise ValueError("an offset read-out needs the prior's log-probabilities and each class's stage")
        fit, standardise = fit_offset_read_out(plain, y, choice, prior, stages, d_model=head.d_model,
                                               recordings=recordings)
        _fold_offset_into_linear(head.linear, fit, standardise, stages, n_prior, bool(choice.context))
        z, _, offset, _ = offset_inputs(plain, choice, prior, stages, recordings, head.d_model)
        return fit.predict_proba(standardise(z), offset)
    lr, standardise = fit_read_out(plain, y, choice, n_classes, d_model=head.d_model, recordings=recordings,
                                   seed=seed, prior=prior)
    _fold_into_linear(head.linear, lr, standardise, n_classes)
    return class_proba(lr, standardise(read_out_matrix(plain, choice, prior, recordings)), n_classes)


def offset_inputs(plain: dict[str, np.ndarray], choice: ReadOutChoice, prior: np.ndarray, stages: list[int],
                  recordings: list[Any] | None, d_model: int
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """Return an offset read-out's inputs ``(N, F)``, its column weights, its offset ``(N, K)`` (the prior's
    log-probabilities of the classes' stages) and, for a diagonal read-out, the ``(K, F_active)`` mask."""
    from passport_kit.onboard.offset import diagonal_mask

    z = read_out_matrix(plain, choice, prior, recordings)
    weight = column_weights(choice, z, pooled_width(d_model, choice.pooling), plain[choice.pooling].shape[1])
    offset = np.asarray(prior, dtype=np.float64)[:, stages]
    mask = None
    if choice.diagonal:  # the active columns are the prior block alone (no context): stage s is column s
        if choice.context or int(np.count_nonzero(weight)) != prior.shape[1]:
            raise ValueError("a diagonal (recalibration) read-out reads the prior block alone, without context")
        mask = diagonal_mask(len(stages), prior.shape[1], list(stages))
    return z, weight, offset, mask


def fit_offset_read_out(plain: dict[str, np.ndarray], y: np.ndarray, choice: ReadOutChoice, prior: np.ndarray,
                        stages: list[int], *, d_model: int, recordings: list[Any] | None = None) -> tuple[Any, Standardiser]:
    """Return the offset read-out of ``choice`` fitted on every row (:mod:`passport_kit.onboard.offset`), and its
    standardisation."""
    from passport_kit.onboard.offset import fit_offset

    z, weight, offset, mask = offset_inputs(plain, choice, prior, stages, recordings, d_model)
    standardise = Standardiser(z, weight)
    return fit_offset(standardise(z), y, offset, choice.c, mask=mask), standardise


def one_blas_thread() -> Any:
    """Return a context in which BLAS runs on one thread: the selection fits hundreds of small regressions, which
    gain nothing from threads, and OpenBLAS threads spinning on a busy 2-core machine made them 4x slower
    (measured: 117 s vs 26 s for one eegmat-sized selection under load)."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1, user_api="blas")


def class_warnings(y_train: np.ndarray, classes: list[str]) -> list[str]:
    """Return the warnings about the training classes that a user must see (rare or absent classes); both recipes."""
    notes = []
    counts = np.bincount(y_train, minlength=len(classes))
    rare = [f"{c} ({n})" for c, n in zip(classes, counts) if 0 < n < RARE_CLASS_WINDOWS]
    absent = [c for c, n in zip(classes, counts) if n == 0]
    if rare:
        notes.append(f"classes with fewer than {RARE_CLASS_WINDOWS} training windows are hard to learn: "
                     f"{', '.join(rare)}")
    if absent:
        notes.append(f"classes absent from the training windows will never be predicted: {', '.join(absent)}")
    return notes


def _fold_offset_into_linear(linear: nn.Linear, fit: Any, standardise: Standardiser, stages: list[int],
                             n_prior: int, context: bool) -> None:
    """Write an offset read-out into ``linear``: its deviation on the raw inputs plus an identity from each class to
    its stage's log-probability in the (first, un-averaged) prior block."""
    active = standardise.active
    factor = (standardise.weight / standardise.scale)[active]
    coef = np.zeros((len(stages), linear.in_features))
    coef[:, active] = fit.coef * factor
    bias = fit.intercept - (fit.coef * factor) @ standardise.mean[active]
    start = linear.in_features // (2 if context else 1) - n_prior  # with context: [inputs, their running mean]
    for cls, stage in enumerate(stages):
        coef[cls, start + stage] += 1.0
    with torch.no_grad():
        linear.weight.copy_(torch.as_tensor(coef, dtype=linear.weight.dtype))
        linear.bias.copy_(torch.as_tensor(bias, dtype=linear.bias.dtype))


def _fold_into_linear(linear: nn.Linear, lr: Any, standardise: Standardiser, n_classes: int) -> None:
    """Write ``lr`` (fitted on standardised inputs) into ``linear`` (which reads raw inputs)."""
    coef = np.zeros((n_classes, linear.in_features))
    bias = np.full(n_classes, -30.0)  # a class the regression never saw: never predicted
    if len(lr.classes_) == 2:
        # scikit-learn keeps one row for two classes: logit(class 1) - logit(class 0).
        rows = np.vstack([-lr.coef_[0] / 2, lr.coef_[0] / 2])
        icpt = np.array([-lr.intercept_[0] / 2, lr.intercept_[0] / 2])
    else:
        rows, icpt = lr.coef_, lr.intercept_
    active = standardise.active
    factor = (standardise.weight / standardise.scale)[active]
    mean = standardise.mean[active]
    for k, cls in enumerate(lr.classes_):
        coef[cls, active] = rows[k] * factor
        bias[cls] = icpt[k] - float(np.dot(rows[k] * factor, mean))
    with torch.no_grad():
        linear.weight.copy_(torch.as_tensor(coef, dtype=linear.weight.dtype))
        linear.bias.copy_(torch.as_tensor(bias, dtype=linear.bias.dtype))


__all__ = ["MAX_INNER_FOLDS", "ReadOutChoice", "Standardiser", "balanced_weights", "class_proba", "class_warnings",
           "column_weights", "fit_head", "fit_lr", "fit_offset_read_out", "fit_read_out", "offset_inputs",
           "one_blas_thread", "plain_features", "read_out_matrix", "repeated_group_folds"]
