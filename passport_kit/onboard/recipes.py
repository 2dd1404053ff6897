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

from passport_kit.errors import ConfigError
from passport_kit.registry import Registry
from passport_kit.onboard.rungs import rung_labels

if TYPE_CHECKING:  # pragma: no cover - torch: imported where a model is fitted; the options import this module
    from passport_kit.onboard.finetune import FitData, FitResult, FitRun

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
    (:class:`~passport_kit.onboard.finetune.FitData`: signals, labels, channels, poor contacts, each
    row's recording); ``run`` where it runs, what it reports and keeps
    (:class:`~passport_kit.onboard.finetune.FitRun`); ``train_idx`` / ``val_idx`` rows of ``windows``.
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
    """Return-value object of :meth:`Recipe.fit`: the fit, adapter.json's selection block, the warnings and the
    band-power read-out fitted on the same rows (the reference ``evaluate`` scores; None where there is none)."""

    result: FitResult
    selection: dict[str, Any]
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

    def fitted_summary(self, model: Any, selection: dict[str, Any], summary: str) -> str:
        """Return the line that says what was trained (``summary``: the trainable tensors of the policy)."""
        return summary


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
        from passport_kit.onboard.finetune import FitResult
        from passport_kit.onboard.ladder import fit_ladder, ladder_summary
        from passport_kit.onboard.ladder_inputs import ladder_data

        windows, progress, data = job.windows, job.run.progress, job.data
        rows = np.sort(np.concatenate([job.train_idx, job.val_idx]))
        forward = {"batch_size": max(options.batch_size, 64), "device": job.run.device}
        fitted = fit_ladder(model, data, rows,
                            lambda plain, r: ladder_data(options, windows, plain, r, head=model.head), seed=job.seed,
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
        return Fitted(result, self.selection(fitted), fitted.warnings, fitted.bandpower_head)

    def gradient_rung(self, options: Options, model: Any, job: FitJob, rows: np.ndarray) -> Any:
        """Return the ladder's LP-FT rung (a callable of the chosen read-out and its inputs), or None: not offered."""
        return None

    def selection(self, fitted: Any) -> dict[str, Any]:
        """Return adapter.json's selection block of a ladder fit."""
        from passport_kit.onboard.ladder import ladder_summary

        return ladder_summary(fitted, self.name)

    def fitted_summary(self, model: Any, selection: dict[str, Any], summary: str) -> str:
        if (selection.get("adapter_training") or {}).get("trained"):
            return summary
        fitted = sum(p.numel() for p in model.head.parameters())  # the policy's tensors are stored, not trained
        if not selection.get("backbone_weight"):
            # No backbone feature in the model shipped: PEFT's trainable-params line would count a network it does
            # not use (issue 45).
            inputs = ("the sleep stager's probabilities alone" if selection.get("zero_shot") else "band power"
                      + (" and the sleep stager's probabilities" if selection.get("prior_weight") else ""))
            return (f"fitted: the read-out head.linear ({fitted:,} params) on {inputs}; the backbone's features are "
                    "not used by the model shipped (stored with it, as pretrained)")
        return (f"fitted: the read-out head.linear ({fitted:,} params); backbone, experts and mixture adapter as "
                f"pretrained (stored with it: {summary})")


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

    def selection(self, fitted: Any) -> dict[str, Any]:
        from passport_kit.onboard.lpft import not_tried

        summary = super().selection(fitted)
        decision = fitted.result.lpft  # the LP-FT rung's decision, or why it was not tried
        lpft_rung = next(r for r in fitted.result.rungs if r.name == "lpft")
        summary["adapter_training"] = (decision if decision is not None else not_tried(lpft_rung.reason)).as_dict()
        return summary


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
        from passport_kit.onboard.finetune import fit, near_chance, selection_metric
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
        selection = {"recipe": self.name, "metric": metric,
                     "score": None if result.best_score is None else round(result.best_score, 4),
                     "method": f"best of every evaluation on {n_val} validation subject(s)",
                     "best_step": result.best_step}
        return Fitted(result, selection, notes)

    def recorded_head_lr(self, options: Options, seed: int) -> float | None:
        return options.settings(seed).resolved_head_lr


#: How each rung of the ladder is named to a user (adapt's ladder line, the demo's rows); a rung not here is named
#: as adapter.json records it.
RUNG_NAMES: dict[str, str] = rung_labels()


def shipped_read_out(selection: dict[str, Any]) -> str:
    """Return what the model a bundle ships is made of, from adapter.json's ``metrics.selection``: the ladder's taken
    rungs in order ('band power + sleep prior + night smoothing'), else its chosen rung; '' without a record."""
    taken = [r["rung"] for r in selection.get("ladder") or [] if r.get("taken")]
    if not taken:
        chosen = selection.get("chosen") or ""
        return RUNG_NAMES.get(chosen, chosen).lstrip("+ ")
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


__all__ = ["PROBE_LAYER", "RECIPES", "AutoRecipe", "FinetuneRecipe", "FitJob", "Fitted", "ProbeRecipe", "Recipe", "default_recipe",
           "get_recipe", "gradient_options_given", "recipe_names"]
