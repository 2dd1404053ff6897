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

import copy
import time
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn

from passport_kit.errors import DataError
from passport_kit.model.meta import ChannelMeta
from passport_kit.engine.forward import read_out_features
from passport_kit.model.heads import PROBE_POOLINGS, pooled_width, read_out_inputs
from passport_kit.onboard.finetune import (
    MAX_CLASS_WEIGHT,
    class_weights,
    near_chance,
    selection_metric,
    selection_score,
)
from passport_kit.onboard.metrics import ClassificationMetrics, classification_metrics

#: Grid of the inner cross-validation: inverse L2 strength and the encoder block's scale. Weight 0 turns the
#: encoder block off: the read-out is then the textbook band-power classifier (with the chosen context and
#: scaling), a special case the selection can always fall back on (issue 24).
C_GRID = (0.03, 0.1, 0.3, 1.0)
BACKBONE_WEIGHTS = (0.0, 0.1, 0.3)
#: Temporal context (windows on each side) tried for sleep staging: none, ±2 epochs (2.5 min) or ±7 (7.5 min,
#: YASA's longer rolling window).
CONTEXTS = (0, 2, 7)
#: Pooling of the backbone features tried: those a ``ProbeHead`` knows (mean; mean and spread over
#: the window's patches); the first is the fallback.
POOLINGS = PROBE_POOLINGS
#: Used when fewer than two training subjects leave nothing to cross-validate over: C and the backbone weight
#: (without evidence, band power alone: the textbook model); context and scaling: none (:func:`fallback`).
FALLBACK = (1.0, 0.0)
#: Most inner folds (grouped by subject), and how many times the grouped folds are drawn anew (a selection
#: over one split of a few subjects picks noise; repeats average it out). Large data sets get one draw.
MAX_INNER_FOLDS = 5
INNER_REPEATS = 3
REPEAT_MAX_WINDOWS = 4000
#: A class with fewer training windows than this is flagged as too rare to learn reliably.
RARE_CLASS_WINDOWS = 20


@dataclass(frozen=True)
class ReadOutChoice:
    """One candidate of the probe's inner cross-validation: how the read-out is built and regularised."""

    c: float
    backbone_weight: float
    context: int
    pooling: str
    scaling: str

    def complexity(self, poolings: tuple[str, ...]) -> tuple[float, ...]:
        """Return a key that sorts simpler read-outs first: no encoder block, first pooling, no context or scaling,
        stronger regularisation (the one-standard-error rule picks the first within reach of the best)."""
        return (self.backbone_weight, float(poolings.index(self.pooling)) if self.pooling in poolings else 0.0,
                float(self.context), float(self.scaling != "none"), self.c)

    def as_dict(self) -> dict[str, Any]:
        """Return the choice as adapter.json's selection block names it."""
        return {"C": self.c, "backbone_weight": self.backbone_weight, "context": self.context, "pooling": self.pooling,
                "scaling": self.scaling}


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
    scaling: str = "none"
    #: The best cross-validated score of band power alone (backbone weight 0), on the same folds.
    bandpower_score: float | None = None
    inner_repeats: int = 0
    best_score: float | None = None
    standard_error: float | None = None
    #: A copy of the head holding the best band-power read-out (backbone weight 0) fitted on the same rows.
    bandpower_head: nn.Module | None = None
    #: The read-out LP-FT starts from: the choice when it reads the backbone, else the best cross-validated one
    #: that does (None without cross-validation). ``features``: the read-out inputs per pooling of the rows.
    lpft_start: ReadOutChoice | None = None
    features: dict[str, np.ndarray] | None = field(default=None, repr=False)

    @property
    def choice(self) -> ReadOutChoice:
        """Return the read-out the probe chose."""
        return ReadOutChoice(self.c, self.backbone_weight, self.context, self.pooling, self.scaling)


class _Standardiser:
    """Per-feature standardisation with the encoder block scaled by ``backbone_weight`` (0: left out)."""

    def __init__(self, z: np.ndarray, backbone_columns: np.ndarray, backbone_weight: float) -> None:
        self.mean = z.mean(axis=0)
        self.scale = z.std(axis=0)
        self.scale[self.scale < 1e-8] = 1.0  # constant features (an absent band) stay at zero
        self.weight = np.ones(z.shape[1])
        self.weight[backbone_columns] = backbone_weight
        #: Columns the regression sees: a block of weight 0 is left out (same solution, faster).
        self.active = self.weight != 0

    def __call__(self, z: np.ndarray) -> np.ndarray:
        return ((z - self.mean) / self.scale * self.weight)[:, self.active]


class _OneClass:
    """What an inner fold whose training part holds one class can predict: that class, always."""

    def __init__(self, label: int) -> None:
        self.classes_ = np.array([label])

    def predict_proba(self, z: np.ndarray) -> np.ndarray:
        return np.ones((len(z), 1))


def _fit_lr(z: np.ndarray, y: np.ndarray, sample_weight: np.ndarray, c: float, seed: int, warm: Any = None) -> Any:
    """Return a logistic regression fitted on ``z``; ``warm``: a fit on the same rows to start from (a path over C)."""
    from sklearn.linear_model import LogisticRegression

    if len(np.unique(y)) < 2:  # an inner fold of a very skewed data set (the full fit has two classes)
        return _OneClass(int(y[0]))

    model = LogisticRegression(C=c, max_iter=2000, random_state=seed, warm_start=warm is not None)
    if warm is not None:  # lbfgs starts from the previous C's solution: the same optimum, fewer iterations
        model.coef_, model.intercept_ = warm.coef_.copy(), warm.intercept_.copy()
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


def candidates(poolings: tuple[str, ...], contexts: tuple[int, ...], scalings: tuple[str, ...],
               backbone_weights: tuple[float, ...] = BACKBONE_WEIGHTS) -> list[ReadOutChoice]:
    """Return the inner cross-validation's grid (with backbone weight 0 the pooling is moot: its first only)."""
    out = []
    for w in backbone_weights:
        for p in (poolings if w else poolings[:1]):
            for k in contexts:
                for s in scalings:
                    out += [ReadOutChoice(c, w, k, p, s) for c in C_GRID]
    return out


def fallback(contexts: tuple[int, ...], scalings: tuple[str, ...], poolings: tuple[str, ...]) -> ReadOutChoice:
    """Return the read-out used without two training subjects: the simplest one, band power alone (C 1, the
    textbook's), no context (the smallest allowed), no scaling (the first allowed). Measured on DREAMS (one training night,
    docs/RESULTS.md § issue 24): context and per-night scaling fitted on one night lost to the plain read-out."""
    return ReadOutChoice(FALLBACK[0], FALLBACK[1], min(contexts, key=abs), poolings[0], scalings[0])


@dataclass
class Selection:
    """What the inner cross-validation found: the choice, its scores, the band-power reference, the grid."""

    choice: ReadOutChoice
    score: float | None = None
    best_score: float | None = None
    standard_error: float | None = None
    bandpower_score: float | None = None
    metrics: ClassificationMetrics | None = None
    folds: int = 0
    repeats: int = 0
    grid: list[dict[str, Any]] = field(default_factory=list)
    results: list[Any] = field(default_factory=list)


def select_read_out(
    plain: dict[str, np.ndarray], y: np.ndarray, groups: np.ndarray, classes: list[str], *, d_model: int,
    recordings: list[Any] | None = None, contexts: tuple[int, ...] = (0,), scalings: tuple[str, ...] = ("none",),
    poolings: tuple[str, ...] = POOLINGS, seed: int = 0, repeats: int | None = None,
    backbone_weights: tuple[float, ...] = BACKBONE_WEIGHTS, rule: str = "one-se",
) -> Selection:
    """Return the read-out chosen for features ``plain[pooling]`` ``(N, F)`` and labels ``y`` by grouped inner CV.

    Candidates of :func:`candidates` are scored on the same repeated grouped folds (mean
    per-fold kappa, or AUROC for two classes), in two stages: band power alone (backbone weight
    0) over context, scaling and C, then the encoder block with the context and scaling that
    stage chose. The rule (:func:`choose`) is the one-standard-error rule: the
    simplest candidate (:meth:`ReadOutChoice.complexity`) whose mean is within one standard
    error of the best mean, so a richer read-out (the encoder block, context, scaling) is kept
    only when it wins clearly (``rule="best"``: the best mean, the ablation). With fewer than
    two groups, :func:`fallback`. ``backbone_weights`` replaces the grid's (ablations).
    """
    n_classes = len(classes)
    metric = selection_metric(n_classes)
    n_groups = len(np.unique(groups))
    folds = min(MAX_INNER_FOLDS, n_groups)
    if folds < 2:
        return Selection(choice=fallback(contexts, scalings, poolings))
    if repeats is None:
        repeats = INNER_REPEATS if len(y) <= REPEAT_MAX_WINDOWS else 1
    repeats = repeats if n_groups > folds else 1  # leave-one-group-out is the same on every draw
    draws = repeated_group_folds(np.asarray(groups), folds, repeats, seed)
    sample_weight = class_weights(y, n_classes)[y]
    inputs: dict[tuple[str, int, str], np.ndarray] = {}
    results: list[Scored] = []

    def evaluate(group: list[ReadOutChoice]) -> None:
        """Score candidates that differ only in C (ascending), warm-starting each fit from the previous C's."""
        first = group[0]
        key = (first.pooling, first.context, first.scaling)
        if key not in inputs:
            inputs[key] = read_out_inputs(torch.from_numpy(plain[first.pooling]), first.context, first.scaling,
                                          recordings).numpy()
        z = inputs[key]
        n_backbone = _backbone_columns(pooled_width(d_model, first.pooling), plain[first.pooling].shape[1],
                                       first.context)
        fold_scores: list[list[float]] = [[] for _ in group]
        first_oof = [np.zeros((len(z), n_classes)) for _ in group]
        pooled: list[list[float]] = [[] for _ in group]  # per draw: the score of its out-of-fold predictions
        for r, splits in enumerate(draws):
            oof = [np.zeros((len(z), n_classes)) for _ in group]
            for fit_rows, test_rows in splits:
                standardise = _Standardiser(z[fit_rows], n_backbone, first.backbone_weight)
                z_fit, z_test = standardise(z[fit_rows]), standardise(z[test_rows])
                warm = None
                for i, cand in enumerate(group):
                    lr = _fit_lr(z_fit, y[fit_rows], sample_weight[fit_rows], cand.c, seed, warm)
                    warm = lr if hasattr(lr, "coef_") else None
                    proba = _proba(lr, z_test, n_classes)
                    oof[i][test_rows] = proba
                    if len(np.unique(y[test_rows])) > 1 or metric != "auroc":
                        fold_scores[i].append(_score(y[test_rows], proba, classes)[0])
            for i in range(len(group)):
                pooled[i].append(_score(y, oof[i], classes)[0])
                if r == 0:
                    first_oof[i] = oof[i]
        for i, cand in enumerate(group):
            scores = np.asarray([v for v in fold_scores[i] if np.isfinite(v)])
            if len(scores) < 2:  # e.g. AUROC where every test fold holds one class: score the pooled predictions
                scores = np.asarray([v for v in pooled[i] if np.isfinite(v)])
            mean = float(scores.mean()) if len(scores) else float("nan")
            se = float(scores.std(ddof=1) / np.sqrt(folds)) if len(scores) > 1 else 0.0
            results.append(Scored(cand, mean, se, _score(y, first_oof[i], classes)[1]))

    def run(cands: list[ReadOutChoice]) -> None:
        groups_of: dict[tuple[Any, ...], list[ReadOutChoice]] = {}
        for cand in cands:
            groups_of.setdefault((cand.backbone_weight, cand.pooling, cand.context, cand.scaling), []).append(cand)
        for group in groups_of.values():
            evaluate(sorted(group, key=lambda c: c.c))

    # Stage 1: the band-power read-out (backbone weight 0) over context, scaling and C; stage 2: the
    # encoder block on top of the context and scaling stage 1 chose. Staged, the grid grows by the
    # sum of its axes instead of their product (sleep: 40 candidates instead of 120).
    grid = candidates(poolings, contexts, scalings, backbone_weights)
    run([c for c in grid if c.backbone_weight == 0])
    stage1 = choose(results, poolings, rule) if results else None
    run([c for c in grid if c.backbone_weight and (stage1 is None or (c.context, c.scaling) == (
        stage1.choice.context, stage1.choice.scaling))])
    table = [r.choice.as_dict() | {metric: round(r.mean, 4), "se": round(r.se, 4)} for r in results]
    chosen = choose(results, poolings, rule)
    if chosen is None:
        return Selection(choice=fallback(contexts, scalings, poolings), folds=folds, repeats=repeats, grid=table)
    finite = [r for r in results if np.isfinite(r.mean)]
    best = max(finite, key=lambda r: r.mean)
    bandpower = [r.mean for r in finite if r.choice.backbone_weight == 0]
    return Selection(choice=chosen.choice, score=chosen.mean, best_score=best.mean, standard_error=best.se,
                     bandpower_score=max(bandpower) if bandpower else None, metrics=chosen.metrics, folds=folds,
                     repeats=repeats, grid=table, results=results)


@dataclass
class Scored:
    """One evaluated candidate: its mean inner-fold score, the standard error of that mean, pooled metrics."""

    choice: ReadOutChoice
    mean: float
    se: float
    metrics: ClassificationMetrics


def choose(results: list[Scored], poolings: tuple[str, ...] = POOLINGS, rule: str = "one-se") -> Scored | None:
    """Return the simplest of ``results`` within one standard error of the best (``rule="best"``: the best).

    ``rule="one-se-structure"``: the one-standard-error rule decides the structure (blocks, context,
    scaling) only; within the simplest structure in reach, the best C.
    """
    finite = [r for r in results if np.isfinite(r.mean)]
    if not finite:
        return None
    best = max(finite, key=lambda r: r.mean)
    reach = best.mean - (0.0 if rule == "best" else best.se)
    ranked = slice(None, -1) if rule == "one-se-structure" else slice(None)  # complexity's last entry is C
    return min((r for r in finite if r.mean >= reach - 1e-12),
               key=lambda r: (r.choice.complexity(poolings)[ranked], -r.mean))


def fit_read_out(
    plain: dict[str, np.ndarray], y: np.ndarray, choice: ReadOutChoice, n_classes: int, *, d_model: int,
    recordings: list[Any] | None = None, seed: int = 0,
) -> tuple[Any, _Standardiser]:
    """Return the logistic regression of ``choice`` fitted on every row, and its standardisation."""
    z = read_out_inputs(torch.from_numpy(plain[choice.pooling]), choice.context, choice.scaling, recordings).numpy()
    n_backbone = _backbone_columns(pooled_width(d_model, choice.pooling), plain[choice.pooling].shape[1],
                                   choice.context)
    standardise = _Standardiser(z, n_backbone, choice.backbone_weight)
    lr = _fit_lr(standardise(z), y, class_weights(y, n_classes)[y], choice.c, seed)
    return lr, standardise


def plain_features(z_both: np.ndarray, d_model: int, poolings: tuple[str, ...]) -> dict[str, np.ndarray]:
    """Return the read-out inputs per pooling from the "meanstd" ones ``[mean (D), spread (D), spectral]``."""
    plain = {"meanstd": z_both, "mean": np.concatenate([z_both[:, :d_model], z_both[:, 2 * d_model:]], axis=1)}
    return {p: plain[p] for p in poolings}


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
    scalings: tuple[str, ...] = ("none",),
) -> ProbeResult:
    """Fit ``model``'s probe head on rows ``train_index`` of ``x`` ``(N, C, P, 200)``; return the choice made.

    ``groups`` ``(N,)`` names the subject of every row (inner folds never split a subject).
    ``contexts``: the head's temporal context (windows on each side) is chosen among these by
    the same cross-validation; ``recordings`` ``(N,)`` then says which rows are consecutive
    windows of one recording (rows of a recording in time order). ``scalings``: whether the
    read-out's inputs are robust-scaled per recording, chosen the same way ("recording" only
    where labels vary within a recording). On return the head holds the refitted read-out
    (and the chosen context, pooling and scaling) and the model is in eval mode.
    ``poolings``: the head's pooling of the backbone features is chosen among these too
    (the first is the fallback without cross-validation). Selection: :func:`select_read_out`.
    """
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
    # One forward pass gives both poolings: [mean (D), spread (D), spectral]; "mean" drops the spread.
    z_both = read_out_features(model, x, meta, train_index, batch_size=batch_size, device=device,
                               channel_mask=channel_mask, distrust=distrust, pooling="meanstd")
    d = head.d_model
    plain = plain_features(z_both, d, poolings)
    seq = None if recordings is None else list(np.asarray(recordings)[train_index])
    g = np.asarray(groups)[train_index]
    metric = selection_metric(n_classes)
    notes = class_warnings(y_train, classes)
    with _one_blas_thread():
        sel = select_read_out(plain, y_train, g, classes, d_model=d, recordings=seq, contexts=contexts,
                              scalings=scalings, poolings=poolings, seed=seed)
    if not sel.folds:
        notes.append(f"only {len(np.unique(g))} training subject: nothing to cross-validate over, so the read-out "
                     f"is the fixed fallback (band power alone, C {sel.choice.c:g}, context {sel.choice.context}, "
                     f"scaling {sel.choice.scaling}) and no validation score exists")
    elif sel.score is not None and near_chance(sel.score, metric):
        notes.append(f"cross-validated {metric} {sel.score:.3f} is near chance: the classes may not be "
                     "separable with this montage and these labels")
    choice = sel.choice
    fit_head(head, plain, y_train, choice, n_classes, recordings=seq, seed=seed)
    model.eval()
    bandpower = choose([r for r in sel.results if r.choice.backbone_weight == 0], poolings)
    bandpower_choice = bandpower.choice if bandpower is not None else choice
    bandpower_head = None
    if bandpower_choice.backbone_weight == 0:
        bandpower_head = copy.deepcopy(head)  # when the choice is band power alone, this is the fitted head
        if bandpower_choice != choice:
            fit_head(bandpower_head, plain, y_train, bandpower_choice, n_classes, recordings=seq, seed=seed)
        bandpower_head.eval()
    return ProbeResult(c=choice.c, backbone_weight=choice.backbone_weight, context=choice.context,
                       pooling=choice.pooling, selection_metric=metric, selection_score=sel.score,
                       inner_folds=sel.folds, validation=sel.metrics, seconds=time.perf_counter() - start,
                       warnings=notes, grid=sel.grid, scaling=choice.scaling, bandpower_score=sel.bandpower_score,
                       inner_repeats=sel.repeats, best_score=sel.best_score, standard_error=sel.standard_error,
                       bandpower_head=bandpower_head, lpft_start=_lpft_start(sel), features=plain)


def _lpft_start(sel: Selection) -> ReadOutChoice | None:
    """Return the read-out LP-FT starts from: the chosen one if it reads the backbone, else the best that does."""
    if sel.choice.backbone_weight:
        return sel.choice
    reading = [r for r in sel.results if r.choice.backbone_weight and np.isfinite(r.mean)]
    return max(reading, key=lambda r: r.mean).choice if reading else None


def fit_head(head: nn.Module, plain: dict[str, np.ndarray], y: np.ndarray, choice: ReadOutChoice, n_classes: int,
              *, recordings: list[Any] | None, seed: int) -> None:
    """Give ``head`` the read-out of ``choice`` fitted on every row (context, pooling and scaling set to match)."""
    head.set_read_out(choice.context, choice.pooling, choice.scaling)
    lr, standardise = fit_read_out(plain, y, choice, n_classes, d_model=head.d_model, recordings=recordings, seed=seed)
    _fold_into_linear(head.linear, lr, standardise, n_classes)


def _one_blas_thread() -> Any:
    """Return a context in which BLAS runs on one thread: the selection fits hundreds of small regressions, which
    gain nothing from threads, and OpenBLAS threads spinning on a busy 2-core machine made them 4x slower
    (measured: 117 s vs 26 s for one eegmat-sized selection under load)."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1, user_api="blas")


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
    active = standardise.active
    factor = (standardise.weight / standardise.scale)[active]
    mean = standardise.mean[active]
    for k, cls in enumerate(lr.classes_):
        coef[cls, active] = rows[k] * factor
        bias[cls] = icpt[k] - float(np.dot(rows[k] * factor, mean))
    with torch.no_grad():
        linear.weight.copy_(torch.as_tensor(coef, dtype=linear.weight.dtype))
        linear.bias.copy_(torch.as_tensor(bias, dtype=linear.bias.dtype))


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(float(value), 4)


def probe_summary(result: ProbeResult) -> dict[str, Any]:
    """Return the ``selection`` block of adapter.json for a probe fit (with the band-power reference)."""
    increment = (None if result.selection_score is None or result.bandpower_score is None
                 else result.selection_score - result.bandpower_score)
    repeats = f", drawn {result.inner_repeats} times" if result.inner_repeats > 1 else ""
    return {
        "recipe": "probe",
        "metric": result.selection_metric,
        "score": _rounded(result.selection_score),
        "method": (f"{result.inner_folds}-fold cross-validation over training subjects{repeats}, simplest read-out "
                   "within one standard error of the best, then refit on all"
                   if result.inner_folds else "none (fewer than 2 training subjects): fixed fallback"),
        "C": result.c,
        "backbone_weight": result.backbone_weight,
        "context": result.context,
        "pooling": result.pooling,
        "scaling": result.scaling,
        "best_score": _rounded(result.best_score),
        "standard_error": _rounded(result.standard_error),
        "bandpower_score": _rounded(result.bandpower_score),
        "increment_over_bandpower": _rounded(increment),
        "grid": result.grid,
    }


__all__ = ["CONTEXTS", "ProbeResult", "ReadOutChoice", "Selection", "class_warnings", "fit_head", "fit_probe",
           "fit_read_out",
           "plain_features", "probe_summary", "select_read_out"]
