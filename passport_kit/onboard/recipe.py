"""The options every training run shares (``adapt``, ``evaluate``): what is trained, how, on what signal.

:class:`RecipeOptions` is a frozen pydantic model: the CLI fills it from its options, a notebook
from keywords, ``adapt --config run.yaml`` from a file (:mod:`passport_kit.onboard.run_file`);
:func:`parse_options` turns a validation error into one line a user can act on.

Each field's type, default and description are the one source of the matching ``adapt`` and
``evaluate`` option: the CLI generates those options from the fields
(``cli/onboard.py::_recipe_options``), so a description is written to read both as API
documentation and as ``--help`` text (lower case, no final period; ``None: ...`` says what
None means). This module imports no torch: the CLI builds its options from it at startup.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from passport_kit.contacts import DEFAULT_DISTRUST, DEFAULT_UNCORRELATED, ContactPolicy
from passport_kit.errors import ConfigError, validation_problem
from passport_kit.onboard.criteria import selection_metric
from passport_kit.onboard.recipes import (PROBE_LAYER, RECIPES, AutoRecipe, FinetuneRecipe, default_recipe,
                                          get_recipe, gradient_options_given, recipe_names)
from passport_kit.sleep.priors import stager_help

if TYPE_CHECKING:  # pragma: no cover - torch: imported where the settings are made
    from passport_kit.onboard.finetune import FinetuneSettings

_Options = TypeVar("_Options", bound=BaseModel)
#: How ``adapt`` trains: the name of a registered recipe (:mod:`passport_kit.onboard.recipes`, docs/onboarding.md
#: § Recipes): ``auto`` (the default), ``probe`` or ``finetune``.
Recipe = str
#: What gradient training trains and how it meets skewed classes: the values of onboard.fitting's TrainPolicy and
#: Balance (the same Literals, kept equal by a test: fitting imports torch, this module must not).
TrainPolicy = Literal["adapter", "head", "full"]
Balance = Literal["weights", "sampler", "none"]
#: Options only the ``finetune`` recipe uses, with the values that leave them unset (the recipe's own words there).
FINETUNE_ONLY: dict[str, tuple[Any, ...]] = FinetuneRecipe.only
#: The gradient options that act on the ``auto`` recipe's adapter-training stage (LP-FT). The other FINETUNE_ONLY
#: options are refused with ``--recipe auto``.
AUTO_ACTS = AutoRecipe.takes
ProgressFn = Callable[[int, int, dict[str, Any]], None]


class RecipeOptions(ContactPolicy):
    """Options shared by ``adapt`` and ``evaluate``: what is trained, how, on what signal, and the contact policy.

    The contact options (``mask_bad_channels``, ``distrust_bad_channels``,
    ``mask_uncorrelated_channels``, ``quality_gate``) are the fields of
    :class:`~passport_kit.contacts.ContactPolicy`, declared there once.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    recipe: Recipe = Field("auto", description="how the model is trained: "
                           + "; ".join(f"'{name}': {get_recipe(name).help}" for name in recipe_names())
                           + ". Not given: 'finetune' when an option only it uses is set (FINETUNE_ONLY), else "
                           "'auto'")
    context: int | None = Field(None, ge=0, le=20, description="probe recipe: sleep epochs of temporal context on "
                                "each side that the read-out also sees (default: chosen by cross-validation among 0 "
                                "and 2 for sleep staging, 0 otherwise)")
    probe_layer: int = Field(PROBE_LAYER, ge=0, description="probe recipe: the backbone layer the read-out reads: 0 = "
                             "the patch and channel embedding, before any criss-cross layer (default), the "
                             "backbone's layer count = its output")
    probe_pooling: Literal["auto", "mean", "meanstd"] = Field("auto", description="probe recipe: pool the backbone "
                                                              "features by their mean, or mean and spread over the "
                                                              "window's patches; auto: chosen by cross-validation")
    prior: str = Field("auto", description="sleep staging: the pretrained sleep stager the ladder starts from "
                       "(zero-shot, then adapted to your nights), or 'none' (band power first); 'auto': every stager "
                       "that runs here and their average, chosen by your nights' scores; the stagers: "
                       + stager_help(quote="'"))
    prior_channels: str | None = Field(None, description="sleep staging: the montage channels the stager reads, "
                                       "EEG[-REF][,EOG[-REF]] (e.g. ELA-ERA: a derivation); default: chosen among "
                                       "a few by electrode positions and the stager's score on your nights")
    min_effect: float | None = Field(None, ge=0, description="the smallest paired inner-CV gain a rung of the ladder "
                                     "must show to replace the one below (besides its standard error); default 0.01 "
                                     "AUROC, 0.02 kappa")
    train: TrainPolicy = Field("adapter", description="what to train: adapter (mixture adapter + head, the paper's "
                               "recipe), head, or full")
    validation_fraction: float = Field(0.2, gt=0, lt=1)
    max_steps: int | None = Field(None, gt=0, description="fixed step budget of each training run (no early stopping)")
    epochs: int = Field(50, gt=0, description="epochs without a step budget (early stopping on val kappa)")
    batch_size: int = Field(64, gt=0, description="windows per batch")
    lr: float = Field(1e-4, gt=0, description="learning rate of the adapter (backbone-side tensors)")
    head_lr: float | None = Field(None, gt=0, description="head learning rate (default 1e-3*sqrt(B/256))")
    patience: int = Field(5, ge=1, description="evaluations without improvement before stopping")
    eval_every: int | None = Field(None, gt=0)
    balance: Balance = Field("weights", description="skewed classes: weights, sampler or none")
    dropout: float = Field(0.1, ge=0, lt=1)
    instance_norm: bool | None = Field(None, description="per-window normalisation (default: the checkpoint's)")
    notch_freq: float | None = Field(50.0, gt=0, description="mains frequency to notch in Hz (50, 60); None: no notch")
    skip_flagged: bool = True
    corrupt_prob: float = Field(0.0, ge=0, le=1, description="share of training windows (0-1) in which random "
                                "channels are replaced by synthetic faults (noise, drift, flat, line); 0 = the "
                                "paper's recipe")
    channel_dropout: float = Field(0.0, ge=0, le=1, description="share of training windows (0-1) in which 1 to a "
                                   "quarter of the channels are replaced by the mask token, so masking a bad channel "
                                   "later is nothing new to the model")
    device: str = Field("auto", description="device: auto, cpu or cuda")
    precision: str = Field("auto", description="precision: auto, fp32 or bf16 (auto: bf16 where the hardware runs it "
                           "fast)")
    threads: int | None = Field(None, gt=0, description="CPU threads")

    @model_validator(mode="before")
    @classmethod
    def _resolve_recipe(cls, data: Any) -> Any:
        # Gradient-only options say which recipe is meant; given with a recipe that ignores them they are a mistake.
        if not isinstance(data, dict):
            return data
        given = gradient_options_given(data)
        if data.get("recipe") is None:
            data = {**data, "recipe": default_recipe(given)}
        if data["recipe"] in recipe_names():  # another name: the field's own check says so
            problem = get_recipe(data["recipe"]).refuse(data, given)
            if problem:
                raise ValueError(problem)
        return data

    @field_validator("recipe")
    @classmethod
    def _known_recipe(cls, value: str) -> str:
        if value not in recipe_names():
            raise ValueError(RECIPES.unknown_message(value))
        return value

    @model_validator(mode="after")
    def _prior_channels_need_a_prior(self) -> RecipeOptions:
        # Issue 57: with --prior none the stager's channels were silently ignored.
        if self.prior_channels is not None and self.prior == "none":
            raise ValueError("--prior-channels names the channels a sleep stager reads, and --prior none reads none: "
                             "drop one of them")
        return self

    def check_prior_channels(self, montage: Any) -> None:
        """Return None when ``prior_channels`` is unset or names channels of ``montage`` a stager can read; else raise
        the one-line error of :func:`~passport_kit.sleep.parse_prior_channels` - before any recording is read (issue
        57: a name the montage lacks was refused after 26-40 s of reading)."""
        if self.prior_channels is not None:
            from passport_kit.sleep import parse_prior_channels

            parse_prior_channels(self.prior_channels, list(montage.ch_names), list(montage.kinds))

    @field_validator("prior")
    @classmethod
    def _known_prior(cls, value: str) -> str:
        # Here, with the other options (issue 46): `adapt --prior os` was refused only after loading all the data.
        from passport_kit.onboard.ladder_inputs import stager_names

        stager_names(value)  # a one-line ConfigError for a stager unknown or unable to run here
        return value

    def settings(self, seed: int) -> FinetuneSettings:
        """Return the optimisation settings of one training run with ``seed``."""
        from passport_kit.onboard.finetune import FinetuneSettings

        return FinetuneSettings(
            batch_size=self.batch_size, lr=self.lr, head_lr=self.head_lr, epochs=self.epochs,
            max_steps=self.max_steps, eval_every=self.eval_every, patience=self.patience,
            balance=self.balance, corrupt_prob=self.corrupt_prob, quality_gate=self.quality_gate,
            drop_prob=self.channel_dropout, seed=seed,
        )


def naming_metric(progress: ProgressFn | None, n_classes: int) -> ProgressFn | None:
    """Return ``progress`` with the selection metric's name added to every ``info`` (``"metric": "kappa"``).

    A progress line then says ``val kappa 0.714`` instead of an unnamed ``val 0.714``.
    """
    if progress is None:
        return None
    metric = selection_metric(n_classes)
    return lambda step, total, info: progress(step, total, {**info, "metric": metric})


#: Fields whose command-line option has another name than ``--<field with - for _>``.
OPTION_FLAGS: dict[str, str] = {"notch_freq": "--notch"}


def option_flag(field: str) -> str:
    """Return the command-line spelling of option ``field`` (``batch_size`` -> ``--batch-size``)."""
    return OPTION_FLAGS.get(field, "--" + field.replace("_", "-"))


def parse_options(model: type[_Options], command: str, config: _Options | None, options: dict[str, Any]) -> _Options:
    """Return ``model`` built from ``config`` updated with ``options``; ConfigError if invalid."""
    try:
        return model(**({**config.model_dump(), **options} if config is not None else options))
    except ValidationError as exc:
        where, message = validation_problem(exc)
        if not where:  # a rule between options (a recipe and an option it does not take)
            raise ConfigError(f"invalid {command} options: {message}") from None
        # The option as the command line spells it, and as the Python keyword (issue 45: 'batch_size' alone).
        named = f"{option_flag(where)} ({where})" if where in model.model_fields else where
        raise ConfigError(f"invalid {command} option {named}: {message}; fix it and retry") from None


__all__ = ["AUTO_ACTS", "DEFAULT_DISTRUST", "DEFAULT_UNCORRELATED", "FINETUNE_ONLY", "PROBE_LAYER", "Balance",
           "ProgressFn", "Recipe", "RecipeOptions", "TrainPolicy", "gradient_options_given", "naming_metric",
           "parse_options"]
