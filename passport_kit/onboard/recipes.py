"""The training recipes, one class each, registered by name: how ``adapt`` and ``evaluate`` fit a model.

A recipe owns the options it takes (and the words that refuse the others), its head kind
(:class:`~passport_kit.model.heads.Head`), its fit step and what it records in adapter.json.
Everything else asks the registry (:func:`get_recipe`) instead of comparing the recipe's name,
so a new recipe is one subclass here (and its test)::

    class MyRecipe(Recipe):
        name = "mine"
        help = "what it does, for --help"
        head = "probe"
        def fit(self, options, model, job): ...

``probe`` fits the ladder's read-out (:mod:`passport_kit.onboard.ladder`); ``auto`` (the default)
adds the ladder's gradient rung, adapter training from the read-out (LP-FT); ``finetune`` is the
paper's gradient recipe (:func:`passport_kit.onboard.finetune.fit`). This module imports no torch
at import time: the CLI reads the names and help when it starts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from passport_kit.checkpoint.adapter_metrics import ClassificationMetrics, LadderSelection, Selection
from passport_kit.errors import ConfigError
from passport_kit.registry import Registry
from passport_kit.onboard.rungs import rung_labels

if TYPE_CHECKING:  # pragma: no cover - torch: imported where a model is fitted; the options import this module
    from passport_kit.onboard.fitting import FitData, FitResult, FitRun
    from passport_kit.onboard.ladder_inputs import LadderData

#: The options a recipe reads: :class:`passport_kit.onboard.recipe.RecipeOptions` (not imported: that module validates
#: its ``recipe`` field against this registry).
Options = Any

#: The backbone layer the probe reads by default: model.heads.PROBE_LAYER (kept equal by a test: that module imports
#: torch, this one must not).
PROBE_LAYER = 0


@dataclass(frozen=True)
class FitJob:
    """What one fit reads besides its options and model: the windows, the rows, and how to run.

    ``windows`` a :class:`~passport_kit.signals.WindowSet`; ``data`` its rows as a fit reads them
    (:class:`~passport_kit.onboard.fitting.FitData`: signals, labels, channels, poor contacts, each
    row's recording); ``run`` where it runs, what it reports and keeps
    (:class:`~passport_kit.onboard.fitting.FitRun`); ``train_idx`` / ``val_idx`` rows of ``windows``.
    """

    windows: Any
    data: FitData
    run: FitRun
    train_idx: np.ndarray
    val_idx: np.ndarray
    seed: int

    @property
    def classes(self) -> list[str]:
        """Return the class names."""
        return list(self.windows.classes)


@dataclass
class Fitted:
    """Return-value object of :meth:`Recipe.fit`: the fit, adapter.json's selection record
    (:class:`~passport_kit.checkpoint.adapter_metrics.Selection`), the warnings and the band-power read-out fitted on
    the same rows (the reference ``evaluate`` scores; None where there is none)."""

    result: FitResult
    selection: Selection
    warnings: list[str]
    bandpower_head: Any = None


#: The recipe classes by name, filled by subclassing :class:`Recipe`: the default (``auto``) first, then in the order
#: defined; an unknown name is a ConfigError naming them.
RECIPES: Registry[type[Recipe]] = Registry("recipe", unknown=ConfigError, default="auto")


class Recipe:
    """Base of every recipe; a subclass that sets ``name`` is registered under it (:data:`RECIPES`)."""

    #: The value of ``--recipe`` / ``recipe:`` that names it.
    name: ClassVar[str] = ""
    #: What it does, in one sentence (lower case, no final period): the one source of every text that describes it,
    #: ``adapt``/``evaluate --recipe``'s help (after "name: ") and RecipeOptions.recipe's description, so that none
    #: lags behind the recipe (issue 49: ``--help`` described ``auto`` two versions late). Change it with the recipe.
    help: ClassVar[str] = ""
    #: The head it fits (:data:`passport_kit.model.heads.HeadKind`).
    head: ClassVar[str] = "probe"
    #: The gradient options (:attr:`FinetuneRecipe.only`) it acts on; the others given with it are refused
    #: (:meth:`refuse`).
    takes: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("name"):
            RECIPES.add(cls.name, cls)

    # -- options ---------------------------------------------------------------------------------------------------
    def refuse(self, data: dict[str, Any], given: list[str]) -> str | None:
        """Return why ``data`` (the options as given) does not suit this recipe, or None; ``given``: the gradient
        options set in it."""
        return None

    def validation_fraction(self, options: Options) -> float | None:
        """Return the share of subjects held out to select the training's best state (None: the recipe
        cross-validates inside the training subjects instead)."""
        return None

    def chosen_by(self, options: Options) -> list[str]:
        """Return the options that chose this recipe when none was named (for the line that names the recipe)."""
        return []

    # -- the model -------------------------------------------------------------------------------------------------
    def head_options(self, *, n_channels: int | None, dropout: float, probe_layer: int,
                     bands: tuple[tuple[float, float], ...]) -> dict[str, Any]:
        """Return the head's keywords for :class:`~passport_kit.model.Classifier` (``kind`` among them)."""
        raise NotImplementedError

    def fit(self, options: Options, model: Any, job: FitJob) -> Fitted:
        """Return the fit of ``model`` on ``job``'s rows (the head, and what the options train)."""
        raise NotImplementedError

    # -- the record ------------------------------------------------------------------------------------------------
    def recorded_head_lr(self, options: Options, seed: int) -> float | None:
        """Return the head learning rate adapter.json records (the probe has none: unset stays unset)."""
        return options.head_lr

    def fitted_summary(self, model: Any, selection: Selection, summary: str) -> str:
        """Return the line that says what was trained (``summary``: the trainable tensors of the policy)."""
        return summary

    def describe(self, record: Selection, *, validation: ClassificationMetrics | None = None,
                 verbose: bool = False) -> list[str]:
        """Return what adapt says of how ``record``'s model was selected, a line each: here, for a record of one
        validation score, its metric, score and method, then the kept model's scores.

        ``validation``: adapter.json's ``metrics.validation`` (the kept model's scores); ``verbose``: every step of
        the selection too, where a recipe records steps (the ladder's rungs).
        """
        score = "n/a" if record.score is None else f"{record.score:.3f}"
        lines = [f"selected by {record.metric} {score}: {record.method}"]
        if validation is not None:
            v = validation
            auroc = f"AUROC {v.auroc:.3f}  " if v.auroc is not None else ""
            lines.append(f"validation: {auroc}kappa {v.kappa:.3f}  balanced accuracy {v.balanced_accuracy:.3f}  "
                         f"macro-F1 {v.macro_f1:.3f}")
        return lines


class ProbeRecipe(Recipe):
    """``probe``: the ladder without its gradient rung: read-outs fitted by a solver, chosen by cross-validation."""

    name = "probe"
    help = "the same ladder without its gradient rung (LP-FT): read-outs fitted by a solver, no gradient step"

    def refuse(self, data: dict[str, Any], given: list[str]) -> str | None:
        if given:
            return (f"recipe '{self.name}' ignores {', '.join(given)} (they only apply to gradient training); drop "
                    f"them, or pass --recipe finetune, or --recipe auto for {', '.join(AutoRecipe.takes[:-1])} and "
                    f"{AutoRecipe.takes[-1]}")
        return None

    def head_options(self, *, n_channels: int | None, dropout: float, probe_layer: int,
                     bands: tuple[tuple[float, float], ...]) -> dict[str, Any]:
        return {"kind": "probe", "n_channels": n_channels, "layer": probe_layer, "bands": bands}

    def fit(self, options: Options, model: Any, job: FitJob) -> Fitted:
        from functools import partial

        from passport_kit.onboard.fitting import FitResult
        from passport_kit.onboard.ladder import fit_ladder

        progress, data = job.run.progress, job.data
        rows = np.sort(np.concatenate([job.train_idx, job.val_idx]))
        forward = {"batch_size": max(options.batch_size, 64), "device": job.run.device}
        fitted = fit_ladder(model, data, rows, partial(self.ladder_inputs, options, job, model), seed=job.seed,
                            forward=forward, lpft=self.gradient_rung(options, model, job, rows),
                            min_effect=options.min_effect, progress=None if progress is None else (
                                lambda rung, step, total: progress(step, total, {"rung": rung})))
        if progress is not None:
            total = len(fitted.result.order)
            progress(total, total, {} if fitted.result.expected is None else {"val": fitted.result.expected})
        decision = fitted.result.lpft
        steps = decision.steps if decision is not None and decision.trained else 0
        result = FitResult(best_step=steps, steps=steps, best_score=fitted.result.expected,
                           validation=fitted.validation, seconds=fitted.seconds)
        return Fitted(result, self.record(fitted), fitted.warnings, fitted.bandpower_head)

    def ladder_inputs(self, options: Options, job: FitJob, model: Any, plain: dict[str, np.ndarray],
                      rows: np.ndarray) -> LadderData:
        """Return what the ladder reads for ``rows`` of ``job``'s windows (:class:`~.ladder_inputs.LadderData`):
        ``plain``, the rows' read-out inputs per pooling, with the task's contexts, scalings and poolings and, for
        sleep staging, the stager's options (:func:`~.ladder_inputs.ladder_data`). A recipe that offers the ladder
        other inputs overrides this."""
        from passport_kit.onboard.ladder_inputs import ladder_data

        return ladder_data(options, job.windows, plain, rows, head=model.head)

    def gradient_rung(self, options: Options, model: Any, job: FitJob, rows: np.ndarray) -> Any:
        """Return the ladder's LP-FT rung (a callable of the chosen read-out and its inputs), or None: not offered."""
        return None

    def record(self, fitted: Any) -> LadderSelection:
        """Return the selection record of a ladder fit (adapter.json's ``metrics.selection``)."""
        from passport_kit.onboard.ladder import ladder_record

        return ladder_record(fitted, self.name)

    def fitted_summary(self, model: Any, selection: Selection, summary: str) -> str:
        trained = selection.adapter_training if isinstance(selection, LadderSelection) else None
        if not isinstance(selection, LadderSelection) or (trained is not None and trained.trained):
            return summary
        fitted = sum(p.numel() for p in model.head.parameters())  # the policy's tensors are stored, not trained
        if not selection.backbone_weight:
            # No backbone feature in the model shipped: PEFT's trainable-params line would count a network it does
            # not use (issue 45).
            inputs = ("the sleep stager's probabilities alone" if selection.zero_shot else "band power"
                      + (" and the sleep stager's probabilities" if selection.prior_weight else ""))
            return (f"fitted: the read-out head.linear ({fitted:,} params) on {inputs}; the backbone's features are "
                    "not used by the model shipped (stored with it, as pretrained)")
        return (f"fitted: the read-out head.linear ({fitted:,} params); backbone, experts and mixture adapter as "
                f"pretrained (stored with it: {summary})")

    def describe(self, record: Selection, *, validation: ClassificationMetrics | None = None,
                 verbose: bool = False) -> list[str]:
        """Return the ladder's account (:meth:`ladder_lines`, then :meth:`stager_lines`); a probe's record written
        before the ladder (one validation score) in the base's words."""
        if not isinstance(record, LadderSelection):
            return super().describe(record, validation=validation, verbose=verbose)
        return self.ladder_lines(record, verbose=verbose, validation=validation) + self.stager_lines(record)

    def ladder_lines(self, record: LadderSelection, *, verbose: bool = False,
                     validation: ClassificationMetrics | None = None) -> list[str]:
        """Return adapt's account of the ladder: which rungs were taken, and the expected scores of the model it ships.

        With ``verbose``, one line per rung with its score, gain, standard error and reason, and the calibration.
        ``validation``: the shipped model's out-of-fold decision scores (adapter.json's ``metrics.validation``):
        its balanced accuracy and kappa stand next to the ranking metric, as ``evaluate`` reports them.
        """
        metric, rungs = record.metric, record.ladder
        fmt = (lambda v: "n/a" if v is None else f"{v:.3f}")
        # LP-FT is scored on its own folds against the read-out it starts from: its gain, not its score, compares.
        steps = "; ".join(f"{RUNG_NAMES.get(r.name, r.name)} "
                          + (f"{r.gain:+.3f}" if r.name == "lpft" and r.gain is not None else fmt(r.score))
                          + ("" if i == 0 else " taken" if r.taken else " not taken")
                          for i, r in enumerate(rungs) if r.tried)
        lines = [f"ladder ({metric}, {record.method.split(';')[0]}): {steps}"]
        if verbose:
            lines += self._rung_lines(record)
        shipped = RUNG_NAMES.get(record.chosen, record.chosen).lstrip("+ ")
        expected = record.expected
        if expected.score is None:
            lines.append("expected on new subjects: unknown (nothing to cross-validate over); the model shipped: "
                         f"{shipped}")
            return lines
        kind = "blocked folds within the training night(s)" if expected.kind == "blocks" else "folds"
        caveat = ("; with so few folds the score is a rough guide" if expected.folds < 3 else "")
        lines.append(f"expected on new subjects: {metric} {expected.score:.3f}{decision_text(metric, validation)} "
                     f"(cross-validated, {expected.folds} {kind}; the model shipped: {shipped}{caveat})")
        if expected.interval is not None or expected.candidates:
            spread = ("" if expected.interval is None else
                      f"95 % interval over the folds {expected.interval[0]:.3f} to {expected.interval[1]:.3f}; ")
            chosen = (f"the best of {expected.candidates} candidates scored on the same folds, so the score is "
                      "optimistic by that choice" if expected.candidates else "")
            lines.append(f"how sure: {spread}{chosen}".rstrip("; "))
        chance = near_chance_note(None if validation is None else validation.kappa)
        if chance:
            lines.append(f"warning: {chance}")
        if record.bandpower_score is not None and record.chosen != "bandpower":
            lines.append(f"band power alone (the textbook, same folds): {metric} {record.bandpower_score:.3f}")
        return lines

    @staticmethod
    def _rung_lines(record: LadderSelection) -> list[str]:
        """Return --verbose's lines of the ladder: each rung's score, whether it was taken and why; the calibration."""
        lines = [f"  {r.name}{'' if r.score is None else f' {r.score:.3f}'}: {'taken' if r.taken else 'not taken'}: "
                 f"{r.reason}" for r in record.ladder]
        cal = record.calibration
        if cal.calibrated:
            lines.append(f"  calibration: temperature {cal.temperature:g}; inner expected calibration error "
                         f"{cal.ece_before:.3f} before, {cal.ece_after:.3f} after")
        return lines

    def stager_lines(self, record: LadderSelection) -> list[str]:
        """Return adapt's account of a stager-first ladder (sleep): the stager's zero-shot score on your nights beside
        the shipped model's, what it read, and in plain words whether your labels improved on it ([] for another
        base)."""
        stager = record.stager
        if record.base != "stager" or stager is None or stager.score is None:
            return []
        metric, name = record.metric, str(stager.prior or "the stager").upper().replace("+", " + ")
        taken = record.taken
        core = next((r for r in reversed(taken) if r in _STAGER_SHIPPED), "stager")
        extra = ([] if core == "textbook" else  # the textbook path replaced what the climb from the stager added
                 [RUNG_NAMES[r].lstrip("+ ") for r in taken if r not in _STAGER_SHIPPED and r in RUNG_NAMES])
        shipped = _STAGER_SHIPPED[core].format(name=name) + (f", with {', '.join(extra)}" if extra else "")
        read = f"sleep stager {name} on {stager.channels or 'its channel'}"
        lines = [f"{read}, zero-shot on your nights (same folds): {metric} {stager.score:.3f}; the model shipped: "
                 f"{record.score:.3f}" if record.score is not None else f"{read}: {metric} {stager.score:.3f}"]
        gain = record.increment_over_stager
        if core == "stager" and not extra:
            lines.append(f"your nights did not improve on {name}: shipped {shipped}")
        elif core == "recalibrated" and not extra and gain is not None:
            lines.append(f"your nights did not improve on {name} beyond recalibrating it ({gain:+.3f} {metric}): "
                         f"shipped {shipped}")
        elif core == "textbook":
            path = next((r.setting or {} for r in record.ladder if r.name == "textbook"), {}).get("path", "band power")
            lines.append(f"your nights showed the textbook path beats the climb from {name} here"
                         + (f" ({gain:+.3f} {metric} over {name} alone)" if gain is not None else "")
                         + f": shipped {shipped} ({path.replace('->', '→')})")
        elif core == "bandpower":
            lines.append(f"your nights showed band power beats {name} here ({gain:+.3f} {metric}; a channel it cannot "
                         f"read?): shipped {shipped}" if gain is not None else f"shipped {shipped}")
        elif gain is not None:
            lines.append(f"your nights improved on {name} by {gain:+.3f} {metric}: shipped {shipped}")
        return lines


#: What a stager-first ladder shipped, in words (issue 43), by the last rung taken.
_STAGER_SHIPPED = {"stager": "{name} as it is", "recalibrated": "{name}, recalibrated on your nights",
                   "stacked": "{name} with band power, fitted around its output", "bandpower": "band power alone",
                   "textbook": "the model the textbook-first order climbs to"}


class AutoRecipe(ProbeRecipe):
    """``auto`` (the default): the ladder (:mod:`passport_kit.onboard.ladder`) with its gradient rung, LP-FT."""

    name = "auto"
    help = ("a ladder that starts from the textbook band-power classifier — for sleep staging, from a pretrained "
            "sleep stager (YASA built in; --prior) — and climbs to richer models (context, the frozen model's "
            "features, LP-FT: gradient training of its mixture adapter) only where cross-validation over your "
            "subjects shows a clear paired gain")
    #: The gradient options that act on its adapter-training stage (LP-FT): its rates, its step budget and what it
    #: trains.
    takes = ("lr", "head_lr", "max_steps", "train")

    def refuse(self, data: dict[str, Any], given: list[str]) -> str | None:
        refused = [k for k in given if k not in self.takes]
        if refused:
            return (f"recipe '{self.name}' ignores {', '.join(refused)} (its adapter training takes only "
                    f"{', '.join(self.takes)}); drop them or pass --recipe finetune")
        return None

    def gradient_rung(self, options: Options, model: Any, job: FitJob, rows: np.ndarray) -> Any:
        return lambda choice, plain: self.adapter_training(options, model, job, rows, choice, plain)

    def adapter_training(self, options: Options, model: Any, job: FitJob, rows: np.ndarray, start: Any,
                         plain: dict[str, np.ndarray]) -> Any:
        """Return the ladder's LP-FT rung (:mod:`passport_kit.onboard.lpft`) from read-out ``start`` (the backbone
        rung's, which the ladder took); when it pays, train ``model``'s adapter and read-out from it on ``rows``.

        ``plain``: the read-out inputs of ``rows`` per pooling. ``--lr``, ``--head-lr`` and ``--max-steps`` act on
        this stage (its rates and step budget)."""
        from dataclasses import replace

        from passport_kit.onboard.lpft import decide, lpft_settings, not_tried, step_budget
        from passport_kit.onboard.lpft import train as lpft_train

        windows = job.windows
        trainable = [n for n, p in model.named_parameters() if p.requires_grad and not n.startswith("head.")]
        if not trainable:
            return not_tried(f"the policy '{options.train}' trains no adapter tensor")
        if len(np.unique(np.asarray(windows.subject)[rows])) < 2:
            return not_tried("fewer than two training subjects: nothing to cross-validate adapter training over")
        steps = options.max_steps or step_budget(len(rows), options.batch_size)
        settings = lpft_settings(steps=steps, batch_size=options.batch_size, lr=options.lr, head_lr=options.head_lr,
                                 seed=job.seed)
        data = replace(job.data, sequence=np.asarray(windows.recording))  # a read-out with context reads whole runs
        decision = decide(model, data, rows, windows.subject, chosen=start, start=start, plain=plain,
                          settings=settings, run=job.run, min_effect=options.min_effect)
        if decision.trained:
            lpft_train(model, data, rows, start=start, plain=plain,
                       settings=settings.model_copy(update={"max_steps": decision.steps}), seed=job.seed, run=job.run)
        return decision

    def record(self, fitted: Any) -> LadderSelection:
        from passport_kit.onboard.lpft import not_tried

        decision = fitted.result.lpft  # the LP-FT rung's decision, or why it was not tried
        lpft_rung = next(r for r in fitted.result.rungs if r.name == "lpft")
        training = decision if decision is not None else not_tried(lpft_rung.reason)
        return super().record(fitted).model_copy(update={"adapter_training": training})


class FinetuneRecipe(Recipe):
    """``finetune``: the paper's recipe, gradient steps on the adapter and a fresh MLP head, early stopping on
    validation subjects."""

    name = "finetune"
    help = ("the paper's recipe (AdamW on the adapter and a fresh MLP head, early stopping on validation "
            "subjects)")
    head = "mlp"
    #: The options only gradient training uses, with the values that leave them unset: the probe fits a read-out by a
    #: solver and cross-validation, so a step budget, learning rates, epochs, early stopping, a class sampler,
    #: dropout, a validation share or training more than the head would be ignored by it (issue 27). ``train``: the
    #: probe fits the head alone (``head``), and ``adapter``, the default, is kept as pretrained.
    only: ClassVar[dict[str, tuple[Any, ...]]] = {
        "max_steps": (None,), "eval_every": (None,), "corrupt_prob": (0.0,), "quality_gate": (False,),
        "channel_dropout": (0.0,), "train": ("adapter", "head"), "epochs": (50,), "lr": (1e-4,), "head_lr": (None,),
        "patience": (5,), "balance": ("weights",), "dropout": (0.1,), "validation_fraction": (0.2,),
    }
    takes = tuple(only)

    def refuse(self, data: dict[str, Any], given: list[str]) -> str | None:
        if data.get("context") is not None:
            return "context applies to recipe 'probe' only; drop it or drop the finetune options"
        for key, default in (("probe_layer", PROBE_LAYER), ("probe_pooling", "auto")):
            if data.get(key, default) != default:
                return f"{key} applies to recipe 'probe' only; drop it or drop the finetune options"
        return None

    def validation_fraction(self, options: Options) -> float | None:
        return options.validation_fraction

    def chosen_by(self, options: Options) -> list[str]:
        return gradient_options_given(options)

    def head_options(self, *, n_channels: int | None, dropout: float, probe_layer: int,
                     bands: tuple[tuple[float, float], ...]) -> dict[str, Any]:
        return {"kind": "mlp", "dropout": dropout}

    def fit(self, options: Options, model: Any, job: FitJob) -> Fitted:
        from passport_kit.onboard.criteria import near_chance, selection_metric
        from passport_kit.onboard.finetune import fit
        from passport_kit.onboard.probe import class_warnings
        from passport_kit.onboard.splits import unique_subjects

        windows, val_idx = job.windows, job.val_idx
        result = fit(model, job.data, options.settings(job.seed), train_index=job.train_idx, val_index=val_idx,
                     run=job.run)
        metric = selection_metric(len(job.classes))
        n_val = len(unique_subjects(windows.subject[val_idx])) if len(val_idx) else 0
        notes = class_warnings(np.asarray(windows.y)[job.train_idx], job.classes)
        if n_val < 2:
            notes.append(f"{n_val} validation subject(s): the kept state was chosen on "
                         f"{len(val_idx)} windows of one person or none; its score says little")
        if result.best_score is not None and near_chance(result.best_score, metric):
            notes.append(f"validation {metric} {result.best_score:.3f} is near chance")
        record = Selection(recipe=self.name, metric=metric,
                           score=None if result.best_score is None else round(result.best_score, 4),
                           method=f"best of every evaluation on {n_val} validation subject(s)",
                           best_step=result.best_step)
        return Fitted(result, record, notes)

    def recorded_head_lr(self, options: Options, seed: int) -> float | None:
        return options.settings(seed).resolved_head_lr


#: Decisions with a kappa under this agree with the labels only slightly (Landis & Koch's "slight": 0-0.20).
NEAR_CHANCE_KAPPA = 0.2


def decision_text(metric: str, validation: ClassificationMetrics | None) -> str:
    """Return ``', balanced accuracy 0.600, kappa 0.159 for its decisions'`` beside a ranking ``metric`` (AUROC), or
    the decision metric beside kappa; '' without scores."""
    if validation is None:
        return ""
    bacc = validation.balanced_accuracy
    if metric == "kappa":
        return f", balanced accuracy {bacc:.3f}"
    return f" to rank windows; its decisions: balanced accuracy {bacc:.3f}, kappa {validation.kappa:.3f}"


def near_chance_note(kappa: float | None) -> str | None:
    """Return the warning that the shipped model's class decisions (cross-validated ``kappa``) are near chance, or
    None."""
    if kappa is None or kappa >= NEAR_CHANCE_KAPPA:
        return None
    return (f"the model's class decisions are near chance (cross-validated kappa {kappa:.3f}, under "
            f"{NEAR_CHANCE_KAPPA:g}): most windows' classes are barely better than a guess; evaluate --protocol "
            "loso shows them per subject")


def describe_selection(record: Selection, *, validation: ClassificationMetrics | None = None,
                       verbose: bool = False) -> list[str]:
    """Return ``record`` in its recipe's words (:meth:`Recipe.describe`). A record of a recipe not registered here,
    or written before records named their recipe, is told by its kind: the ladder's words, else one score's."""
    name = record.recipe if record.recipe in recipe_names() else (
        ProbeRecipe.name if isinstance(record, LadderSelection) else FinetuneRecipe.name)
    return get_recipe(name).describe(record, validation=validation, verbose=verbose)


#: How each rung of the ladder is named to a user (adapt's ladder line, the demo's rows); a rung not here is named
#: as adapter.json records it.
RUNG_NAMES: dict[str, str] = rung_labels()


def shipped_read_out(selection: Selection | None) -> str:
    """Return what the model a bundle ships is made of, from its selection record (adapter.json's
    ``metrics.selection``): the ladder's taken rungs in order ('band power + sleep prior + night smoothing'), else its
    chosen rung; '' without a ladder's record."""
    if not isinstance(selection, LadderSelection):
        return ""
    taken = selection.taken
    if "textbook" in taken:  # the textbook-first order's model replaced the climb from the stager (issue 55)
        path = next((r.setting or {} for r in selection.ladder if r.name == "textbook"), {}).get("path") or ""
        words = [RUNG_NAMES.get(r, r) for r in path.split(" -> ") if r]
        return (" ".join([words[0].lstrip("+ ")] + [w if w.startswith("+") else f"+ {w}" for w in words[1:]])
                + " (the textbook-first order's model)") if words else RUNG_NAMES["textbook"]
    if not taken:
        return RUNG_NAMES.get(selection.chosen, selection.chosen).lstrip("+ ")
    words = [RUNG_NAMES.get(r, r) for r in taken]
    return " ".join([words[0].lstrip("+ ")] + [w if w.startswith("+") else f"+ {w}" for w in words[1:]])


def gradient_options_given(options: Any) -> list[str]:
    """Return the names of the gradient-only options (:attr:`FinetuneRecipe.only`) set in ``options`` (a mapping or
    RecipeOptions), in their order.

    Example: ``gradient_options_given({"lr": 0.01, "train": "full"}) == ["train", "lr"]``.
    """
    get = options.get if isinstance(options, dict) else lambda k, d: getattr(options, k, d)
    return [k for k, unset in FinetuneRecipe.only.items() if get(k, unset[0]) not in unset]


def default_recipe(given: list[str]) -> str:
    """Return the recipe meant when none is named: gradient training where a gradient-only option is ``given``."""
    return FinetuneRecipe.name if given else AutoRecipe.name


def recipe_names() -> tuple[str, ...]:
    """Return the registered recipes' names, the default first, then in the order they were defined."""
    return RECIPES.names()


def get_recipe(name: str) -> Recipe:
    """Return the recipe registered as ``name`` (ConfigError naming the recipes for another)."""
    return RECIPES.lookup(name)()


__all__ = ["NEAR_CHANCE_KAPPA", "PROBE_LAYER", "RECIPES", "AutoRecipe", "FinetuneRecipe", "FitJob", "Fitted",
           "ProbeRecipe", "Recipe", "decision_text", "default_recipe", "describe_selection", "get_recipe",
           "gradient_options_given", "near_chance_note", "recipe_names"]
