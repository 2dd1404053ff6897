"""The ladder: start from the textbook band-power classifier and climb only where the user's own data says it pays.

Issue 33. Every rung is a read-out (:mod:`passport_kit.onboard.probe`) or a step after it,
scored by the same inner cross-validation over the training subjects (grouped folds, drawn
several times; with one training subject, blocked folds within each night, and the record says
so). In order of what they add:

============  ==========================================================================================
rung          what it adds (each candidate's own C, weights and variants chosen by best inner score)
============  ==========================================================================================
bandpower     the textbook: log absolute and relative band power per channel, StandardScaler +
              balanced logistic regression, C by the best inner score (``LogisticRegressionCV``'s rule)
context       (sleep) the running mean of the inputs over ±2 or ±7 epochs; per-night robust scaling
prior         (sleep) a pretrained stager's log-probabilities (YASA built in) as a block, its weight
              against band power chosen by inner CV
zero-shot     (sleep) the stager alone, no fitting: its probabilities mapped onto the classes
backbone      the frozen model's pooled features as a block (weight 0.1 or 0.3, pooling mean or mean+spread)
lpft          gradient training of the mixture adapter from that read-out (LP-FT, :mod:`.lpft`); tried only
              when the backbone rung was taken, never from a read-out the ladder rejected
smoothing     (sleep) an HMM pass over each night (transitions counted on the training folds)
============  ==========================================================================================

A step replaces the model below it only if its paired inner-CV gain (same folds) exceeds both twice its
standard error (:data:`SE_MULTIPLE`) and a minimum effect (:data:`MIN_EFFECT`: 0.01 AUROC, 0.02 kappa). So the chosen
model's inner score is never below band power's, and where nothing pays the product *is* the
textbook. Then the shipped model's probabilities are calibrated by a temperature fitted on its
out-of-fold predictions (the inner expected calibration error before and after is recorded).

``adapter.json`` ``metrics.selection`` (:func:`ladder_record`, a
:class:`~passport_kit.checkpoint.adapter_metrics.LadderSelection`) records every rung: tried or not, taken or not, the
challenger's and the incumbent's scores, the gain, its standard error and the reason.

The standard error of a paired gain is the standard deviation of the per-fold differences over
every draw divided by √(folds per draw): repeated draws reuse the same subjects, so dividing by
√(all folds) would claim more certainty than the data hold.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from passport_kit.checkpoint.adapter_metrics import Calibration, ExpectedScore, LadderSelection, rounded
from passport_kit.errors import DataError
from passport_kit.onboard.criteria import MIN_EFFECT, SE_MULTIPLE, near_chance, selection_metric
from passport_kit.onboard.fitting import FitData
from passport_kit.onboard.ladder_inputs import POOLINGS, LadderData
from passport_kit.onboard.metrics import ClassificationMetrics, classification_metrics
from passport_kit.onboard.offset import OFFSET_C_GRID
from passport_kit.onboard.parity import check_parity, fitted_probabilities, head_probabilities
from passport_kit.onboard.probe import (MAX_INNER_FOLDS, ReadOutChoice, Standardiser, balanced_weights, class_proba,
                                        class_warnings, column_weights, fit_head, fit_lr, offset_inputs,
                                        one_blas_thread, plain_features, read_out_matrix, repeated_group_folds)
from passport_kit.onboard.rungs import (BACKBONE_WEIGHTS, PRIOR_WEIGHTS, STAGER_FIRST, TEXTBOOK_FIRST, Climb, Rung,
                                        Scored, get_rung, rung_order, stager_applies)

#: Inverse L2 strengths every read-out is scored at (its best is kept, as ``LogisticRegressionCV`` does).
C_GRID = (0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0)
#: What "best" means for C: the mean inner log-loss (``LogisticRegressionCV``'s default from scikit-learn 1.11), or
#: the task metric (AUROC, kappa) as before: see docs/RESULTS.md § The ladder.
C_BY = "metric"
#: (``MIN_EFFECT``: the smallest paired inner-CV gain a step up must show besides its standard error; LP-FT's too.
#: ``BACKBONE_WEIGHTS``, ``PRIOR_WEIGHTS``: the blocks' weights the rungs try, :mod:`.rungs`; the rule's constants,
#: ``MIN_EFFECT`` and ``SE_MULTIPLE``, :mod:`.criteria`.)
#: How many times the grouped folds are drawn (one draw above REPEAT_MAX_WINDOWS windows).
INNER_REPEATS = 3
REPEAT_MAX_WINDOWS = 4000
#: Blocked folds within each night when there is one training subject.
NIGHT_BLOCKS = 5
#: The read-out used where no cross-validation is possible: the textbook with scikit-learn's default C.
FALLBACK = ReadOutChoice(1.0)


@dataclass
class Folds:
    """The inner folds: ``draws`` of ``(fit rows, test rows)`` (positions into the ladder's rows)."""

    draws: list[list[tuple[np.ndarray, np.ndarray]]]
    kind: str  # "subjects" or "blocks"

    @property
    def per_draw(self) -> int:
        return len(self.draws[0]) if self.draws else 0

    def describe(self) -> str:
        """Return how the folds were made, as adapt prints it."""
        repeats = f", drawn {len(self.draws)} times" if len(self.draws) > 1 else ""
        if self.kind == "blocks":
            return (f"{self.per_draw} blocked folds within the night(s) of the one training subject (no other subject "
                    "to cross-validate over: the score says how well the night's own epochs are told apart)")
        return f"{self.per_draw}-fold cross-validation over training subjects{repeats}"


def inner_folds(groups: np.ndarray, recordings: np.ndarray, *, seed: int, repeats: int | None = None) -> Folds | None:
    """Return the ladder's folds: grouped by subject (repeated), else blocked within each night; None if neither fits."""
    groups = np.asarray(groups)
    n_groups = len(np.unique(groups))
    if n_groups >= 2:
        folds = min(MAX_INNER_FOLDS, n_groups)
        if repeats is None:
            repeats = INNER_REPEATS if len(groups) <= REPEAT_MAX_WINDOWS else 1
        repeats = repeats if n_groups > folds else 1  # leave-one-group-out is the same on every draw
        return Folds(repeated_group_folds(groups, folds, repeats, seed), "subjects")
    rec = np.asarray(recordings)
    block = np.zeros(len(rec), dtype=np.int64)
    for name in np.unique(rec):
        where = np.flatnonzero(rec == name)
        block[where] = np.minimum(np.arange(len(where)) * NIGHT_BLOCKS // max(len(where), 1), NIGHT_BLOCKS - 1)
    present = np.unique(block)
    if len(present) < 2 or len(rec) < 2 * NIGHT_BLOCKS:
        return None
    rows = np.arange(len(rec))
    return Folds([[(rows[block != b], rows[block == b]) for b in present]], "blocks")


def weighted_log_loss(y: np.ndarray, proba: np.ndarray, weight: np.ndarray) -> float:
    """Return the mean negative log-likelihood of ``y`` under ``proba``, each row weighted as the fit weighs it."""
    p = np.clip(proba[np.arange(len(y)), y], 1e-12, 1.0)
    return float(np.sum(-np.log(p) * weight) / np.sum(weight))


def fold_score(y: np.ndarray, proba: np.ndarray, metric: str) -> float:
    """Return kappa of the arg-max, or AUROC of class 1 (NaN when a fold holds one class), of ``proba`` against ``y``."""
    from sklearn.metrics import roc_auc_score

    if metric == "auroc":
        if len(np.unique(y)) < 2:
            return float("nan")
        return float(roc_auc_score(y, proba[:, 1]))
    return kappa(y, proba.argmax(1), proba.shape[1])


def kappa(y: np.ndarray, pred: np.ndarray, k: int) -> float:
    """Return Cohen's kappa of ``pred`` against ``y`` over classes ``0..k-1`` (NaN where chance agreement is 1).

    scikit-learn's ``cohen_kappa_score`` gives the same value (tested), but validates its inputs on every
    call: 8 ms each, half the ladder's time with the offset read-outs' thousand fold scores.
    """
    cm = np.bincount(np.asarray(y, dtype=np.int64) * k + np.asarray(pred, dtype=np.int64),
                     minlength=k * k).reshape(k, k).astype(np.float64)
    n = cm.sum()
    if n == 0:
        return float("nan")
    observed = np.trace(cm) / n
    chance = float(cm.sum(axis=0) @ cm.sum(axis=1)) / (n * n)
    if chance >= 1.0:
        return float("nan")
    return float(1.0 - (1.0 - observed) / (1.0 - chance))


def paired_gain(challenger: np.ndarray, incumbent: np.ndarray, per_draw: int) -> tuple[float, float, int]:
    """Return ``(mean gain, its standard error, folds)`` of paired per-fold scores (module docstring's SE)."""
    both = np.isfinite(challenger) & np.isfinite(incumbent)
    d = np.asarray(challenger)[both] - np.asarray(incumbent)[both]
    if len(d) == 0:
        return float("nan"), float("nan"), 0
    se = float(np.std(d, ddof=1) / math.sqrt(max(1, min(per_draw, len(d))))) if len(d) > 1 else float("inf")
    return float(d.mean()), se, len(d)


@dataclass
class LadderResult:
    """What the ladder found: its rungs, the model it ships, its expected score and calibration."""

    metric: str
    rungs: list[Rung]
    chosen: Scored | None
    bandpower: Scored | None
    folds: Folds | None
    expected: float | None
    smoothing: dict[str, Any] | None = None
    temperature: float = 1.0
    calibration: dict[str, Any] = field(default_factory=dict)
    lpft: Any = None
    seconds: float = 0.0
    min_effect: float = 0.0
    #: The base of the ladder (band power, or the zero-shot stager) and the order climbed.
    base: Scored | None = None
    order: tuple[str, ...] = TEXTBOOK_FIRST
    #: The spec of the stager option the read-out reads, when it reads one.
    stager_choice: dict[str, Any] | None = None
    #: How many candidates the shipped model was chosen from (:attr:`Ladder.n_candidates`).
    candidates: int = 0

    @property
    def chosen_rung(self) -> str:
        """Return the name of the rung whose model ships (the last one taken)."""
        taken = [r.name for r in self.rungs if r.taken]
        return taken[-1] if taken else "bandpower"

    @property
    def fitted(self) -> ReadOutChoice:
        """Return the read-out fitted into the head (the zero-shot prior's: an identity on the prior block)."""
        if self.chosen is None:
            return FALLBACK
        return self.chosen.choice or ReadOutChoice(1.0, prior_weight=1.0)

    @property
    def stager(self) -> Scored | None:
        """Return the zero-shot stager as scored on the ladder's folds (the base of the stager-first order)."""
        return self.base if self.base is not None and self.base.choice is None else None


class Ladder:
    """Scores read-outs on one set of inner folds and climbs (module docstring); :meth:`climb` runs it."""

    def __init__(self, data: LadderData, *, seed: int = 0, repeats: int | None = None,
                 min_effect: float | None = None, progress: Callable[[str, int, int], None] | None = None,
                 se_multiple: float = SE_MULTIPLE, c_by: str = C_BY) -> None:
        self.data = data
        self.metric = selection_metric(len(data.classes))
        self.min_effect = MIN_EFFECT[self.metric] if min_effect is None else float(min_effect)
        #: How many standard errors a paired gain must exceed (the ablation varies it).
        self.se_multiple = float(se_multiple)
        #: How a candidate's C is chosen: its mean inner log-loss ("log_loss") or its task metric ("metric").
        self.c_by = c_by
        self.seed = seed
        self.y = np.asarray(data.y, dtype=np.int64)
        self.rec = list(np.asarray(data.recordings))
        self.folds = inner_folds(data.groups, data.recordings, seed=seed, repeats=repeats)
        self.weights = balanced_weights(self.y, len(data.classes))
        #: ``progress(rung, step, total)``: called as each candidate is scored (step: the rung's place in the order).
        self._progress = progress
        self._at = (0, len(TEXTBOOK_FIRST))
        #: Each tried rung's best candidate (the benchmarks score every rung on outer folds).
        self.candidates: dict[str, Scored] = {}
        self._memo: dict[tuple[ReadOutChoice, int], Scored] = {}
        #: How many candidates were scored on the folds (each read-out at each C, each stager option, each step):
        #: what the shipped model was chosen from (issue 55: its inner score is optimistic by that selection).
        self.n_candidates = 0
        #: What the progress line says a candidate is scored within ("textbook path: " during :meth:`textbook_path`).
        self._within = ""
        #: The stager option the read-outs read (the stager rung picks it; the first by default).
        self.option = 0
        #: Its spec and log-probabilities (LadderData's __post_init__ lists a lone prior as the one option).
        self.stager_choice, self.prior = data.stager_options[0] if data.stager_options else (data.stager_choice, None)
        self.stages = data.prior_stages

    @property
    def bandpower(self) -> Scored | None:
        """Return the band-power rung's candidate (the reference evaluate scores), wherever in the order it sits."""
        return self.candidates.get("bandpower")

    def candidate(self, name: str) -> Scored | None:
        """Return rung ``name``'s best candidate so far (None: not scored)."""
        return self.candidates.get(name)

    def keep(self, name: str, scored: Scored) -> None:
        """Keep ``scored`` as rung ``name``'s best candidate (:attr:`candidates`)."""
        self.candidates[name] = scored

    def use_stager(self, option: int) -> None:
        """Read stager option ``option`` from now on (its log-probabilities as the prior block and offset)."""
        self.option = option
        self.stager_choice, self.prior = self.data.stager_options[option]

    # -- scoring ----------------------------------------------------------------------------------------------
    def score(self, name: str, choice: ReadOutChoice) -> Scored:
        """Return ``choice`` scored at every C of :data:`C_GRID`, keeping the C with the best mean inner score."""
        assert self.folds is not None
        key = (choice, self.option if choice.reads_prior else -1)
        if key in self._memo:  # a second climb (another minimum effect) reuses what was scored
            return dataclasses.replace(self._memo[key], name=name)
        if self._progress is not None:
            self._progress(self._within + name, *self._at)
        self.n_candidates += len(OFFSET_C_GRID if choice.offset else C_GRID)
        if choice.offset:
            self._memo[key] = self._score_offset(name, choice)
            return self._memo[key]
        d = self.data
        z = read_out_matrix(d.plain, choice, self.prior, self.rec)
        n_backbone = d.d_model * (2 if choice.pooling == "meanstd" else 1)
        weight = column_weights(choice, z, n_backbone, d.plain[choice.pooling].shape[1])
        k = len(d.classes)

        def fit_predict(z_fit: np.ndarray, fit_rows: np.ndarray, z_test: np.ndarray, test_rows: np.ndarray,
                        c: float, warm: Any) -> tuple[Any, np.ndarray]:
            lr = fit_lr(z_fit, self.y[fit_rows], self.weights[fit_rows], c, self.seed, warm)
            return (lr if hasattr(lr, "coef_") else None), class_proba(lr, z_test, k)

        return self._cross_validate(name, choice, (z, weight), C_GRID, fit_predict, self.weights)

    def _cross_validate(self, name: str, choice: ReadOutChoice, inputs: tuple[np.ndarray, np.ndarray],
                        grid_c: tuple[float, ...], fit_predict: Callable[..., tuple[Any, np.ndarray]],
                        loss_weight: np.ndarray) -> Scored:
        """Return ``choice`` scored at every C of ``grid_c`` on the ladder's folds, the best kept (:meth:`_best_c`).

        ``inputs``: the read-out's matrix ``(N, F)`` and its column weights (each fold standardised on its fit rows);
        ``fit_predict(z_fit, fit_rows, z_test, test_rows, c, warm)``: the fold's fit at ``c`` (the next C's warm
        start: C ascends, each fit starting from the previous one) and its test rows' ``(n, K)`` probabilities;
        ``loss_weight`` ``(N,)``: each row's weight in the log-loss, as the fit weighs it.
        """
        assert self.folds is not None
        z, weight = inputs
        k = len(self.data.classes)
        per_c: dict[float, list[float]] = {c: [] for c in grid_c}
        loss: dict[float, list[float]] = {c: [] for c in grid_c}
        oof = {c: [np.zeros((len(z), k)) for _ in self.folds.draws] for c in grid_c}
        for r, draw in enumerate(self.folds.draws):
            for fit_rows, test_rows in draw:
                standardise = Standardiser(z[fit_rows], weight)
                z_fit, z_test = standardise(z[fit_rows]), standardise(z[test_rows])
                warm = None
                for c in grid_c:
                    warm, proba = fit_predict(z_fit, fit_rows, z_test, test_rows, c, warm)
                    oof[c][r][test_rows] = proba
                    per_c[c].append(fold_score(self.y[test_rows], proba, self.metric))
                    loss[c].append(weighted_log_loss(self.y[test_rows], proba, loss_weight[test_rows]))
        return self._best_c(name, choice, per_c, loss, oof, grid_c)

    def _best_c(self, name: str, choice: ReadOutChoice, per_c: dict[float, list[float]],
                loss: dict[float, list[float]], oof: dict[float, list[np.ndarray]], grid_c: tuple[float, ...]) -> Scored:
        """Return ``choice`` at the C of ``grid_c`` with the best mean inner score (or log-loss, ``c_by``)."""
        means = {c: float(np.nanmean(v)) if np.isfinite(v).any() else float("nan")
                 for c, v in ((c, np.asarray(s)) for c, s in per_c.items())}
        losses = {c: float(np.mean(v)) for c, v in loss.items()}
        if self.c_by == "log_loss":  # LogisticRegressionCV's coming default: a proper score, calibrated read-outs
            best = min(grid_c, key=lambda c: losses[c])
        else:
            finite = [c for c in grid_c if np.isfinite(means[c])]
            best = max(finite, key=lambda c: means[c]) if finite else 1.0
        grid = [{"C": c, self.metric: None if not np.isfinite(means[c]) else round(means[c], 4),
                 "log_loss": round(losses[c], 4)} for c in grid_c]
        chosen = choice.with_c(best)
        return Scored(name, chosen, np.asarray(per_c[best], dtype=np.float64), oof[best], grid, chosen.as_dict())

    def _score_offset(self, name: str, choice: ReadOutChoice) -> Scored:
        """Return an offset read-out (fitted around the stager, :mod:`.offset`) scored at every strength of
        :data:`~passport_kit.onboard.offset.OFFSET_C_GRID`, rows unweighted, keeping the best."""
        from passport_kit.onboard.offset import fit_offset

        assert self.folds is not None and self.prior is not None and self.stages is not None
        z, weight, offset, mask = offset_inputs(self.data.plain, choice, self.prior, self.stages, self.rec,
                                                self.data.d_model)

        def fit_predict(z_fit: np.ndarray, fit_rows: np.ndarray, z_test: np.ndarray, test_rows: np.ndarray,
                        c: float, warm: Any) -> tuple[Any, np.ndarray]:
            fitted = fit_offset(z_fit, self.y[fit_rows], offset[fit_rows], c, mask=mask, warm=warm)
            return fitted, fitted.predict_proba(z_test, offset[test_rows])

        return self._cross_validate(name, choice, (z, weight), OFFSET_C_GRID, fit_predict, np.ones(len(z)))

    def zero_shot(self, option: int | None = None) -> Scored:
        """Return the stager alone (option ``option``; None: the one in use), unfitted, scored on the same test folds
        (its probabilities mapped onto the classes)."""
        spec, prior = (self.stager_choice, self.prior) if option is None else self.data.stager_options[option]
        assert self.folds is not None and prior is not None and self.stages is not None
        self.n_candidates += 1
        proba = zero_shot_proba(prior, self.stages)
        scores = [fold_score(self.y[test], proba[test], self.metric) for draw in self.folds.draws for _, test in draw]
        return Scored("zero-shot", None, np.asarray(scores), [proba for _ in self.folds.draws],
                      setting={"prior": (spec or {}).get("name"), **_channels(spec)})

    def smoothed(self, base: Scored) -> Scored:
        """Return ``base`` with each test night smoothed by transitions counted on its fold's training rows."""
        from passport_kit.model.night import smooth, transition_counts, transition_matrix

        assert self.folds is not None
        self.n_candidates += 1
        k = len(self.data.classes)
        scores, oof = [], []
        for r, draw in enumerate(self.folds.draws):
            out = np.zeros_like(base.oof[r])
            for fit_rows, test_rows in draw:
                a = transition_matrix(transition_counts(self.y[fit_rows], [self.rec[i] for i in fit_rows], k))
                prior = emission_prior(base, base.oof[r][fit_rows], k)
                out[test_rows] = smooth(base.oof[r][test_rows], a, prior, [self.rec[i] for i in test_rows])
                scores.append(fold_score(self.y[test_rows], out[test_rows], self.metric))
            oof.append(out)
        return Scored("smoothing", base.choice, np.asarray(scores), oof, setting={"over": base.name}, smoothed=True)

    def textbook_path(self) -> Scored:
        """Return the final model of the textbook-first order climbed on the same folds (no LP-FT), named
        ``textbook``, its setting naming the rungs it took; the ladder's record of each rung's best candidate is
        left as the main climb made it."""
        saved = dict(self.candidates), self._at
        sub = Climb(incumbent=None, template=FALLBACK, rungs=[], lpft=None)  # type: ignore[arg-type]
        self._within = "the textbook path: "
        try:
            for name in TEXTBOOK_FIRST:
                get_rung(name).run(self, sub)
        finally:
            self.candidates, self._at = saved
            self._within = ""
        path = " -> ".join(r.name for r in sub.rungs if r.taken)
        base = sub.incumbent
        setting = {"path": path, **(base.choice.as_dict() if base.choice is not None else base.setting)}
        return dataclasses.replace(base, name="textbook", setting=setting)

    # -- climbing -----------------------------------------------------------------------------------------------
    def gain(self, challenger: Scored, incumbent: Scored) -> tuple[float, float, int]:
        """Return :func:`paired_gain` of ``challenger`` over ``incumbent`` on the ladder's folds."""
        return paired_gain(challenger.scores, incumbent.scores, self.folds.per_draw if self.folds else 1)

    def step(self, name: str, incumbent: Scored, variants: list[Scored], rungs: list[Rung]) -> Scored:
        """Record rung ``name`` (its best variant against ``incumbent``) and return the model that stays."""
        best = max(variants, key=lambda s: s.mean if np.isfinite(s.mean) else -np.inf)
        self.keep(name, best)
        gain, se, _ = self.gain(best, incumbent)
        bar = self.se_multiple * se
        taken = self.clears(gain, se)
        times = "" if self.se_multiple == 1 else f"{self.se_multiple:g} x "
        if self.holds_base and np.isfinite(gain):
            reason = (f"gains {gain:+.3f} (SE {se:.3f}) over {incumbent.name} within the one training night(s): "
                      "folds within a night cannot show that a model carries to new nights better than a stager "
                      "trained on thousands of them; the stager stays")
        elif taken:
            reason = (f"gains {gain:+.3f} (SE {se:.3f}) over {incumbent.name}: above {times}its standard error and "
                      f"{self.min_effect:g}")
        elif not np.isfinite(gain):
            reason = "no fold scored both"
        else:
            reason = (f"gains {gain:+.3f} (SE {se:.3f}) over {incumbent.name}: not above "
                      + (f"{times}its standard error" if gain <= bar else f"the minimum effect {self.min_effect:g}"))
        rungs.append(Rung(name=name, tried=True, taken=taken, reason=reason, score=best.mean, baseline=incumbent.mean,
                          gain=gain, standard_error=se, setting=best.setting))
        return best if taken else incumbent

    def clears(self, gain: float, se: float) -> bool:
        """Return whether a paired gain takes a rung: above :attr:`se_multiple` standard errors and the minimum
        effect, and not on folds that cannot show it (:attr:`holds_base`)."""
        return bool(not self.holds_base and np.isfinite(gain) and gain > self.se_multiple * se
                    and gain >= self.min_effect)

    @property
    def holds_base(self) -> bool:
        """Return whether nothing may replace the base: a stager-first ladder whose folds are blocks within one
        training subject's night(s). Those folds say how well that night's own epochs are told apart, not how a
        model carries to a new night (on DREAMS, one training night per fold, GSSC installed: a rung taken on
        them shipped 0.414 where the stager alone scored 0.471)."""
        return bool(stager_applies(self.data) and self.folds is not None and self.folds.kind == "blocks")

    def climb(self, lpft: Callable[[ReadOutChoice], Any] | None = None) -> LadderResult:
        """Return the ladder's result: every rung of the task's order (:func:`~.rungs.rung_order`) tried in turn,
        the model that ships, its calibration.

        ``lpft(read_out)``: the adapter-training step (``onboard.lpft.decide`` and training on every row),
        called only when the backbone rung was taken; returns an ``AdapterTraining`` (None: not offered).
        """
        start = time.perf_counter()
        order = rung_order(self.data)
        if self.folds is None and stager_applies(self.data):  # nothing to score: the stager needs no proof
            stager = Scored("stager", None, np.array([]), [], setting={"prior": (self.stager_choice or {}).get("name"),
                                                                        **_channels(self.stager_choice)})
            rungs = [Rung(name="stager", tried=False, taken=True, reason="too few windows to cross-validate: the stager "
                          "as it is, on the channels the electrode positions pick", setting=stager.setting)]
            return LadderResult(self.metric, rungs, stager, None, None, None, min_effect=self.min_effect,
                                base=stager, order=order, stager_choice=self.stager_choice,
                                seconds=time.perf_counter() - start)
        if self.folds is None:
            rungs = [Rung(name="bandpower", tried=False, taken=True, reason="too few windows to cross-validate: the "
                          f"textbook read-out with C {FALLBACK.c:g} (scikit-learn's default)",
                          setting=FALLBACK.as_dict())]
            return LadderResult(self.metric, rungs, None, None, None, None, min_effect=self.min_effect,
                                seconds=time.perf_counter() - start)
        climb = Climb(incumbent=None, template=FALLBACK, rungs=[], lpft=lpft)  # type: ignore[arg-type]
        with one_blas_thread():
            for step, name in enumerate(order):
                self._at = (step, len(order))
                get_rung(name).run(self, climb)
                if len(climb.rungs) == 1:
                    base = climb.incumbent
        incumbent, decision = climb.incumbent, climb.decision
        lpft_taken = climb.taken("lpft")
        reads_prior = incumbent.choice is None or incumbent.choice.reads_prior
        result = LadderResult(self.metric, climb.rungs, incumbent, self.bandpower, self.folds,
                              decision.lpft_score if lpft_taken else incumbent.mean, lpft=decision,
                              min_effect=self.min_effect, base=base, order=order,
                              stager_choice=self.stager_choice if reads_prior else None)
        result.candidates = self.n_candidates
        if incumbent.smoothed:
            result.smoothing = self._smoothing_spec(incumbent)
        if lpft_taken:
            result.calibration = {"calibrated": False, "reason": "LP-FT's inner folds keep scores, not probabilities"}
        else:
            result.temperature, result.calibration = self._calibrate(incumbent)
        result.seconds = time.perf_counter() - start
        return result

    def _smoothing_spec(self, chosen: Scored) -> dict[str, Any]:
        from passport_kit.model.night import transition_counts, transition_matrix

        k = len(self.data.classes)
        a = transition_matrix(transition_counts(self.y, self.rec, k))
        prior = emission_prior(chosen, chosen.oof[0], k)
        return {"transitions": a.round(6).tolist(), "emission_prior": np.asarray(prior).round(6).tolist()}

    def _calibrate(self, chosen: Scored) -> tuple[float, dict[str, Any]]:
        """Return the temperature fitted on ``chosen``'s out-of-fold predictions (first draw) and the record of its
        inner expected calibration error before and after (after: each fold tempered by the others' fit)."""
        from passport_kit.model.night import expected_calibration_error, fit_temperature, temper

        assert self.folds is not None
        oof, draw = chosen.oof[0], self.folds.draws[0]
        tested = np.concatenate([t for _, t in draw])
        before = expected_calibration_error(oof[tested], self.y[tested])
        crossed = np.zeros_like(oof)
        for _, test in draw:
            others = np.setdiff1d(tested, test)
            crossed[test] = temper(oof[test], fit_temperature(oof[others], self.y[others]))
        after = expected_calibration_error(crossed[tested], self.y[tested])
        t = fit_temperature(oof[tested], self.y[tested])
        record = {"temperature": round(t, 4), "ece_before": round(before, 4), "ece_after": round(after, 4),
                  "bins": 10, "method": "temperature scaling on the shipped model's out-of-fold predictions; 'after' "
                                        "tempers each fold by a temperature fitted on the other folds"}
        if not after < before:  # a temperature that does not carry over between folds is not applied
            return 1.0, {"calibrated": False, "reason": "a temperature fitted on other folds did not lower the "
                         "expected calibration error of the held-out fold", **record, "temperature": 1.0,
                         "fitted_temperature": round(t, 4)}
        return t, {"calibrated": True, **record}


def _channels(spec: dict[str, Any] | None) -> dict[str, Any]:
    """Return what a stager option reads, as the ladder's record names it (``{"channels": "EEG C3-A2"}``)."""
    if not spec or "eeg" not in spec:
        return {}
    from passport_kit.sleep import StagerChoice

    return {"channels": StagerChoice.from_dict(spec).channels()}


def zero_shot_proba(prior: np.ndarray, stages: list[int]) -> np.ndarray:
    """Return ``(N, K)`` class probabilities of a prior's log-probabilities ``(N, 5)``: the classes' stages,
    renormalised."""
    p = np.exp(np.asarray(prior, dtype=np.float64)[:, stages])
    return p / p.sum(axis=1, keepdims=True)


def emission_prior(scored: Scored, oof_fit: np.ndarray, k: int) -> np.ndarray:
    """Return the class prior ``scored``'s probabilities carry: uniform for a read-out fitted with balanced class
    weights; for the zero-shot prior (trained on other nights' stage mix) and read-outs fitted around it (rows
    unweighted), its mean prediction on the fit rows."""
    if scored.natural_balance:
        return np.maximum(np.asarray(oof_fit).mean(axis=0), 1e-6)
    return np.full(k, 1.0 / k)


def set_zero_shot(head: Any, stages: list[int], stager_choice: dict[str, Any], n_prior: int) -> None:
    """Give ``head`` the zero-shot read-out: logits = the prior's log-probabilities of the classes' stages."""
    import torch

    head.set_read_out(0, head.pooling, "none", prior=stager_choice, n_prior=n_prior)
    weight = torch.zeros_like(head.linear.weight)
    start = weight.shape[1] - n_prior
    for cls, stage in enumerate(stages):
        weight[cls, start + stage] = 1.0
    with torch.no_grad():
        head.linear.weight.copy_(weight)
        head.linear.bias.zero_()


@dataclass
class LadderFit:
    """Return-value object of :func:`fit_ladder`: the ladder's result, the head's fitted read-out, warnings."""

    result: LadderResult
    warnings: list[str]
    bandpower_head: Any
    features: dict[str, np.ndarray]
    validation: ClassificationMetrics | None
    seconds: float
    #: The largest probability difference between the fit and the head that ships, on the training windows (None:
    #: LP-FT trained the head itself, so there is no separate fit to compare with).
    parity: float | None = None

    @property
    def choice(self) -> ReadOutChoice:
        return self.result.fitted


def fit_ladder(model: Any, windows: FitData, rows: np.ndarray,
               data: Callable[[dict[str, np.ndarray], np.ndarray], LadderData], *, seed: int = 0,
               forward: dict[str, Any] | None = None, lpft: Callable[[ReadOutChoice, dict[str, np.ndarray]], Any] | None = None,
               progress: Callable[[str, int, int], None] | None = None, min_effect: float | None = None) -> LadderFit:
    """Return the ladder fitted on rows ``rows`` of ``windows``; ``model.head`` holds the model it ships.

    ``windows``: the windows ``(N, C, P, 200)``, labels, channels and class names (its poor contacts are
    read as the fit reads them); ``data(plain, rows)`` builds the :class:`LadderData` from the rows'
    read-out inputs (the prior, the task's contexts and scalings are the caller's); ``forward``: the other
    keywords of :func:`~passport_kit.engine.forward.read_out_features` (batch_size, device);
    ``lpft(read_out, plain)``: the adapter-training step (None: the probe recipe). The head ends with the
    chosen read-out (or LP-FT's trained one), its smoothing and temperature; ``bandpower_head`` is a copy
    holding the band-power rung fitted on the same rows (the reference ``evaluate`` scores).
    """
    from passport_kit.engine.forward import read_out_features

    start = time.perf_counter()
    classes = windows.classes
    rows = np.asarray(rows, dtype=np.int64)
    y_rows = windows.y[rows]
    if len(rows) == 0 or (y_rows < 0).any():
        raise DataError("no labeled training windows; check the labels and the training subjects")
    if len(np.unique(y_rows)) < 2:
        raise DataError(f"the training windows hold one class only ({classes[y_rows[0]]}); "
                        "adapt needs at least two classes")
    head = model.head
    z_both = read_out_features(model, windows.x, windows.meta, rows, pooling="meanstd",
                               channel_mask=windows.channel_mask, distrust=windows.distrust, **(forward or {}))
    plain = plain_features(z_both, head.d_model, POOLINGS)
    ladder_data = data(plain, rows)
    ladder = Ladder(ladder_data, seed=seed, progress=progress, min_effect=min_effect)
    result = ladder.climb(None if lpft is None else (lambda choice: lpft(choice, plain)))
    notes = class_warnings(y_rows, classes)
    seq = list(np.asarray(ladder_data.recordings))
    prior, stager_choice = ladder.prior, ladder.stager_choice  # the stager option the ladder chose
    n_prior = 0 if prior is None else prior.shape[1]
    lpft_trained = result.lpft is not None and bool(getattr(result.lpft, "trained", False))
    chosen = result.chosen
    if result.folds is None and result.stager is not None:
        notes.append(f"only {len(y_rows)} training windows: nothing to cross-validate over, so the model is the sleep "
                     "stager as it is and no validation score exists")
    elif result.folds is None:
        notes.append(f"only {len(y_rows)} training windows: nothing to cross-validate over, so the read-out is the "
                     f"textbook band-power classifier (C {FALLBACK.c:g}) and no validation score exists")
    elif result.expected is not None and near_chance(result.expected, result.metric):
        notes.append(f"cross-validated {result.metric} {result.expected:.3f} is near chance: the classes may not be "
                     "separable with this montage and these labels")
    parity = None
    if not lpft_trained:  # LP-FT's step trained the head and adapter itself
        if chosen is not None and chosen.choice is None:
            set_zero_shot(head, ladder_data.prior_stages or [], stager_choice or {}, n_prior)
            fit_proba = zero_shot_proba(prior, ladder_data.prior_stages or [])
        else:
            fit_proba = fit_head(head, plain, y_rows, result.fitted, len(classes), recordings=seq, seed=seed,
                                 prior=prior, stager_choice=stager_choice, stages=ladder_data.prior_stages)
        head.smoothing = result.smoothing
        head.temperature = float(result.temperature)
        model.eval()
        # Issue 55: what ships must be what was scored - the head run as predict runs it, against the fit.
        parity = check_parity(fitted_probabilities(fit_proba, result.smoothing, result.temperature, seq),
                              head_probabilities(model, windows, rows, seq, prior, forward), result.chosen_rung)
    model.eval()
    bandpower_head = copy.deepcopy(head)
    band = result.bandpower.choice if result.bandpower is not None else FALLBACK
    fit_head(bandpower_head, plain, y_rows, band, len(classes), recordings=seq, seed=seed)
    bandpower_head.eval()
    validation = None
    if chosen is not None and not lpft_trained:
        proba = chosen.oof[0]
        validation = classification_metrics(y_rows, proba.argmax(1), classes, proba)
    return LadderFit(result, notes, bandpower_head, plain, validation, time.perf_counter() - start, parity)


def fit_probe(model: Any, windows: FitData, rows: np.ndarray, groups: np.ndarray, *, seed: int = 0, lpft: Any = None,
              forward: dict[str, Any] | None = None, **task: Any) -> LadderFit:
    """Return :func:`fit_ladder` without a sleep prior: the read-out ladder on ``rows`` of ``windows`` (benchmarks,
    notebooks). ``groups`` ``(N,)``: each row's subject; each row's recording is ``windows.sequence`` (None: its
    group); ``forward``: :func:`fit_ladder`'s; ``task``: :class:`LadderData`'s task settings (``sleep``,
    ``contexts``, ``scalings``, ``poolings``) and ``min_effect``."""
    rec = np.asarray(windows.sequence if windows.sequence is not None else groups)
    min_effect = task.pop("min_effect", None)
    task = {"poolings": POOLINGS, **task}

    def data(plain: dict[str, np.ndarray], r: np.ndarray) -> LadderData:
        return LadderData(plain=plain, y=windows.y[r], groups=np.asarray(groups)[r], recordings=rec[r],
                          classes=list(windows.classes), d_model=model.head.d_model, prior_reason="no prior offered "
                          "(fit_probe)", **task)

    return fit_ladder(model, windows, rows, data, seed=seed, forward=forward, lpft=lpft, min_effect=min_effect)


def ladder_record(fit: LadderFit, recipe: str) -> LadderSelection:
    """Return the ladder's selection record (adapter.json's ``metrics.selection``): its rungs, the shipped model and
    its expected score, the base it climbed from."""
    res = fit.result
    r = rounded
    band = res.bandpower.mean if res.bandpower is not None else None
    folds = res.folds.per_draw if res.folds else 0
    return LadderSelection(
        recipe=recipe,
        metric=res.metric,
        score=r(res.expected),
        chosen=res.chosen_rung,
        method=(res.folds.describe() + f"; a rung replaces the one below only on a paired gain above "
                f"{SE_MULTIPLE:g} standard errors and {res.min_effect:g} {res.metric}, then refit on all"
                if res.folds else
                "none (too few windows): the textbook fallback"),
        **res.fitted.as_dict(),
        zero_shot=bool(res.chosen is not None and res.chosen.choice is None),
        smoothing=res.smoothing is not None,
        calibration=Calibration(**res.calibration),
        expected=ExpectedScore(metric=res.metric, score=r(res.expected), folds=folds,
                               draws=len(res.folds.draws) if res.folds else 0,
                               kind=res.folds.kind if res.folds else None, interval=expected_interval(res),
                               candidates=res.candidates or None),
        bandpower_score=r(band),
        increment_over_bandpower=r(None if band is None or res.expected is None else res.expected - band),
        **stager_summary(res),
        min_effect=res.min_effect,
        **({} if getattr(fit, "parity", None) is None else {"parity": float(f"{fit.parity:.3g}")}),
        ladder=list(res.rungs),
        seconds=round(res.seconds, 2),
    )


def expected_interval(res: LadderResult) -> list[float] | None:
    """Return a 95 % interval of the shipped model's inner score: its mean over every fold ± t(0.975, k - 1) times the
    ladder's standard error (the per-fold spread over √k, k the folds of one draw: repeated draws reuse the same
    subjects). None where there is no per-fold score (no folds, or LP-FT's own folds)."""
    from scipy.stats import t

    if res.chosen is None or res.folds is None or res.expected is None or (res.lpft is not None and
                                                                          getattr(res.lpft, "trained", False)):
        return None
    scores = np.asarray(res.chosen.scores, dtype=np.float64)
    scores = scores[np.isfinite(scores)]
    k = min(res.folds.per_draw, len(scores))
    if k < 2:
        return None
    half = float(t.ppf(0.975, k - 1) * np.std(scores, ddof=1) / math.sqrt(k))
    low = 0.0 if res.metric == "auroc" else -1.0  # within the metric's own range
    return [round(max(low, float(res.expected) - half), 4), round(min(1.0, float(res.expected) + half), 4)]


def stager_summary(res: LadderResult) -> dict[str, Any]:
    """Return the selection block's account of the base: its name, the order climbed and, where the base is the
    zero-shot stager, its score on the same folds, what it read and the shipped model's increment over it."""
    out: dict[str, Any] = {"base": res.order[0] if res.folds or res.stager is not None else "bandpower",
                           "order": list(res.order)}
    stager = res.stager
    if stager is None:
        return out
    r = rounded
    setting = next((x.setting for x in res.rungs if x.name == "stager"), None) or {}
    out["stager"] = {"prior": setting.get("prior"), "channels": setting.get("channels"), "score": r(stager.mean),
                     "spec": res.stager_choice}
    out["stager_score"] = r(stager.mean)
    out["increment_over_stager"] = r(None if res.expected is None else res.expected - stager.mean)
    return out


__all__ = ["BACKBONE_WEIGHTS", "C_GRID", "FALLBACK", "Folds", "Ladder", "LadderFit", "LadderResult",
           "PRIOR_WEIGHTS", "Rung", "Scored", "fit_ladder", "fit_probe", "fold_score", "inner_folds",
           "ladder_record", "paired_gain", "set_zero_shot", "stager_summary", "zero_shot_proba", "STAGER_FIRST"]
