"""``adapter.json``'s ``metrics`` block as typed, frozen records: what ``adapt`` measured and what it chose.

:class:`AdapterMetrics` is the block (:attr:`~passport_kit.checkpoint.files.AdapterMeta.metrics`): the data a run
trained on, its validation scores (:class:`ClassificationMetrics`), the poor contacts it met, its warnings, what
predict's guards compare recordings with, and the selection record. The selection record says what a training run
chose: a recipe builds it where it selects (the ladder: :func:`passport_kit.onboard.ladder.ladder_record`; the
finetune recipe: the best validation step), the bundle stores it as it is, and :func:`read_selection` reads a stored
block back. What a record says in words is its recipe's (:meth:`passport_kit.onboard.recipes.Recipe.describe`); the
CLI prints those words.

Every record writes only the keys it was built or read with (a key a record of its time did not hold takes its
default when read, and is not written back), so an older block read back is written unchanged; the block keeps a key
written by a newer version (``extra="allow"``). :func:`metrics_schema` is the block's JSON schema (docs/formats.md).

Two kinds of selection record, told apart by the ``ladder`` key:

- :class:`Selection`: one score on validation subjects (the finetune recipe: ``best_step``; the probe's records
  written before the ladder);
- :class:`LadderSelection`: every rung of the ladder (:class:`Rung`), the read-out shipped, its expected score on the
  ladder's folds, and the stager it started from (sleep staging).

Scores are recorded rounded to 4 decimals (:func:`rounded`), None where there is none. This module imports
nothing of the package but the errors: the checkpoint, the ladder, the recipes and the CLI all read it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from pydantic import (BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, field_serializer, field_validator,
                      model_serializer)

from passport_kit.errors import LabelError

#: The metric names a user can pick for early stopping or sweep plots.
METRIC_NAMES = ("accuracy", "balanced_accuracy", "kappa", "macro_f1", "auroc")


def rounded(value: float | None) -> float | None:
    """Return a score as adapter.json records it: 4 decimals, None where there is none or it is not finite."""
    return None if value is None or not np.isfinite(value) else round(float(value), 4)


class _Record(BaseModel):
    """A part of the metrics block: frozen; keys it does not know (a newer writer's) are ignored when read; written
    with the keys it was built or read with."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    @model_serializer(mode="wrap")
    def _as_given(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        out = handler(self)
        given = self.model_fields_set | set(self.model_extra or {})
        return {k: v for k, v in out.items() if k in given}

    def as_dict(self) -> dict[str, Any]:
        """Return the record as adapter.json stores it: the keys it was built or read with, nested blocks as dicts."""
        return self.model_dump()


class _Whole(_Record):
    """A record written with every key (the ladder has always written them all), its scores rounded (:func:`rounded`)
    while the object keeps them as computed, for the rule that reads them."""

    @model_serializer(mode="wrap")
    def _as_given(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return handler(self)


class ClassificationMetrics(BaseModel):
    """Scores of one set of predictions against reference labels (JSON-serialisable;
    :func:`passport_kit.onboard.metrics.classification_metrics` computes them)."""

    model_config = ConfigDict(frozen=True)

    n: int
    accuracy: float
    balanced_accuracy: float
    kappa: float
    macro_f1: float
    per_class_f1: dict[str, float]
    auroc: float | None = None  # two-class tasks only; None when one class is absent
    confusion: list[list[int]]  # rows = reference, columns = prediction, in class order
    classes: list[str]

    def get(self, name: str) -> float:
        """Return the metric called ``name`` (one of :data:`METRIC_NAMES`), NaN when undefined."""
        if name not in METRIC_NAMES:
            raise LabelError(f"unknown metric {name!r}; choose one of {', '.join(METRIC_NAMES)}")
        value = getattr(self, name)
        return float("nan") if value is None else float(value)


class Rung(_Whole):
    """One rung of the ladder: tried or not, taken or not, its best candidate's score against the model below it
    (``baseline``), the paired gain and its standard error, the rung's setting and the reason in words.

    The ladder keeps its scores as computed; they are written rounded (:func:`rounded`), and every key is written.
    """

    model_config = ConfigDict(frozen=True, extra="ignore", validate_by_name=True, validate_by_alias=True,
                              serialize_by_alias=True)

    #: The rung's name (:data:`passport_kit.onboard.rungs.RUNGS`), written as ``rung``.
    name: str = Field(alias="rung")
    tried: bool
    taken: bool
    score: float | None = None
    baseline: float | None = None
    gain: float | None = None
    standard_error: float | None = None
    setting: dict[str, Any] | None = None
    reason: str = ""

    @field_serializer("score", "baseline", "gain", "standard_error")
    def _rounded(self, value: float | None) -> float | None:
        return rounded(value)


class Calibration(_Record):
    """The shipped model's temperature scaling: whether it was applied and why, the temperature, and the inner
    expected calibration error before and after (empty where nothing could be cross-validated)."""

    calibrated: bool | None = None
    reason: str | None = None
    temperature: float | None = None
    ece_before: float | None = None
    ece_after: float | None = None
    bins: int | None = None
    method: str | None = None
    #: The temperature the folds fitted where it was not applied (``temperature`` is then 1).
    fitted_temperature: float | None = None


class ExpectedScore(_Record):
    """The shipped model's expected score on new subjects: its inner cross-validated ``metric``, over ``folds`` folds
    per draw, ``draws`` draws, folds of ``kind`` "subjects" or "blocks" (within one subject's nights)."""

    metric: str | None = None
    score: float | None = None
    folds: int = 0
    draws: int = 0
    kind: str | None = None
    #: A 95 % interval of the score over the folds (t over the folds of a draw, the ladder's standard error;
    #: issue 55), and how many candidates (read-outs at each C, stager options, steps) the shipped model was chosen
    #: from on those folds: the score is optimistic by that selection.
    interval: list[float] | None = None
    candidates: int | None = None


class StagerRecord(_Record):
    """The zero-shot stager a stager-first ladder starts from: its name, the channels it read, its score on the
    ladder's folds and the spec that rebuilds it."""

    prior: str | None = None
    channels: str | None = None
    score: float | None = None
    spec: dict[str, Any] | None = None


class AdapterTraining(_Whole):
    """The decision of the ``auto`` recipe's LP-FT rung (:func:`passport_kit.onboard.lpft.decide`): whether the adapter
    was trained after the read-out and why, its steps of a budget, the paired inner-CV scores, gain and standard
    error, the read-out it started from and the curve of its checks."""

    trained: bool
    reason: str = ""
    steps: int = 0
    budget: int = 0
    folds: int = 0
    probe_score: float | None = None
    lpft_score: float | None = None
    gain: float | None = None
    standard_error: float | None = None
    start: dict[str, Any] | None = None
    curve: list[dict[str, Any]] = Field(default_factory=list)

    @field_serializer("probe_score", "lpft_score", "gain", "standard_error")
    def _rounded(self, value: float | None) -> float | None:
        return rounded(value)


class Selection(_Record):
    """What a run chose and by what: its recipe, the selection ``metric`` and score, how it was selected
    (``method``, in words) and, where training steps were selected on validation subjects, the best one."""

    recipe: str | None = None  # None: written before records named their recipe
    metric: str
    score: float | None = None
    method: str = ""
    best_step: int | None = None

    @property
    def stepped(self) -> bool:
        """Return whether a training step was selected on validation subjects (the finetune recipe)."""
        return self.best_step is not None


class LadderSelection(Selection):
    """The ladder's record (:mod:`passport_kit.onboard.ladder`): every rung, the read-out shipped and how it scored.

    The read-out's fields are :meth:`~passport_kit.onboard.read_out.ReadOutChoice.as_dict`'s, flat in the
    record (``bandpower_weight``, ``offset`` and ``diagonal`` only where the read-out is fitted around the stager
    or leaves band power out); ``stager``, ``stager_score`` and ``increment_over_stager`` only where the base is
    the zero-shot stager; ``adapter_training`` only for the auto recipe (:meth:`~.lpft.AdapterTraining.as_dict`).
    """

    #: The rung whose model ships (the last one taken).
    chosen: str = ""
    C: float | None = None
    backbone_weight: float | None = None
    context: int | None = None
    pooling: str | None = None
    scaling: str | None = None
    prior_weight: float | None = None
    bandpower_weight: float | None = None
    offset: bool | None = None
    diagonal: bool | None = None
    zero_shot: bool = False
    smoothing: bool = False
    calibration: Calibration = Field(default_factory=Calibration)
    expected: ExpectedScore = Field(default_factory=ExpectedScore)
    bandpower_score: float | None = None
    increment_over_bandpower: float | None = None
    #: The base of the ladder ("bandpower" or "stager"; None: written before the stager-first order) and the order.
    base: str | None = None
    order: list[str] = Field(default_factory=list)
    stager: StagerRecord | None = None
    stager_score: float | None = None
    #: The largest difference of any probability between the ladder's fit and the head written, on the training
    #: windows (issue 55; checked below 1e-4 before the bundle is written; None: LP-FT trained the head itself).
    parity: float | None = None
    increment_over_stager: float | None = None
    min_effect: float | None = None
    ladder: list[Rung] = Field(default_factory=list)
    seconds: float | None = None
    adapter_training: AdapterTraining | None = None

    @property
    def taken(self) -> list[str]:
        """Return the names of the rungs taken, in the order climbed."""
        return [r.name for r in self.ladder if r.taken]


class PoorContacts(_Record):
    """How many of the training channel-windows were masked and distrusted (None: that option off)."""

    channel_windows: int | None = None
    masked: int | None = None
    distrusted: int | None = None


class AdapterMetrics(_Record):
    """``adapter.json``'s ``metrics``: what ``adapt`` (or an ``evaluate`` fold) trained on, measured and chose.

    Four blocks keep the form of the module that makes and checks them: ``channel_quality``
    (:func:`~passport_kit.onboard.run.dataset_quality`), ``amplitude``
    (:func:`~passport_kit.signals.amplitude.amplitude_profile`), ``distribution``
    (:func:`~passport_kit.signals.distribution.distribution_profile`, checked on load by
    :mod:`~passport_kit.checkpoint.head_checks`) and ``fingerprints``
    (:func:`~passport_kit.signals.fingerprint.training_fingerprints`).
    """

    model_config = ConfigDict(frozen=True, extra="allow")

    train_subjects: list[str] = Field(default_factory=list, description="The subjects the shipped model was fitted on.")
    validation_subjects: list[str] = Field(
        default_factory=list, description="The subjects held out for early stopping (gradient recipes; empty for the ladder)."
    )
    train_windows: int = Field(0, description="How many labelled windows the model was fitted on.")
    validation_windows: int = Field(0, description="How many windows the validation subjects gave.")
    train_class_counts: dict[str, int] | None = Field(None, description="Training windows per class, in class order.")
    steps: int = Field(0, description="Optimiser steps taken (gradient recipes; 0 for a closed-form read-out).")
    best_step: int | None = Field(None, description="The step whose weights were kept (early stopping).")
    stopped_early: bool = Field(False, description="Whether training stopped before its step budget.")
    seconds: float | None = Field(None, description="Wall time of the fit (volatile: differs between two runs).")
    validation: ClassificationMetrics | None = Field(
        None,
        description="The kept model's scores on the validation subjects (finetune) or out of the ladder's folds (the ladder).",
    )
    test_subjects: list[str] | None = Field(None, description="The subjects an `evaluate` fold held out (its bundles only).")
    channel_quality: dict[str, Any] | None = Field(
        None, description="Per-channel quality of the training recordings: bad channels and the reason each was named."
    )
    poor_contacts: PoorContacts | None = Field(None, description="How many training channel-windows were masked or distrusted for a poor contact.")
    selection: LadderSelection | Selection | None = Field(
        None, description="How the shipped model was chosen: the ladder's rungs, the expected score and its interval."
    )
    warnings: list[str] = Field(default_factory=list, description="The warnings adapt printed, one line each.")
    #: Mappings, read as they are: :mod:`~passport_kit.checkpoint.head_checks` checks them on load, naming what is
    #: wrong (``metrics.distribution.quantiles ...``), where a type here would say less.
    amplitude: Any = Field(None, description="The training amplitude profile: predict's unit and scale check.")
    distribution: Any = Field(None, description="The training feature distribution: predict's sleep-likeness guard.")
    fingerprints: dict[str, Any] | None = Field(
        None, description="Fingerprints of the training recordings: predict says when a night it stages was one the model was fitted on."
    )
    history: list[dict[str, Any]] = Field(
        default_factory=list,
        exclude=True,
        description="The training history (gradient recipes): written to `history.csv`, never to adapter.json.",
    )

    @field_validator("selection", mode="before")
    @classmethod
    def _selection_record(cls, value: Any) -> Any:
        # The ``ladder`` key tells the two records apart (a finetune record would validate as a ladder's too).
        return read_selection(value) if isinstance(value, Mapping) else value


def read_selection(block: Mapping[str, Any] | None) -> Selection | None:
    """Return adapter.json's ``metrics.selection`` block as its record (None: the bundle holds none): a
    :class:`LadderSelection` where it holds a ladder, else a :class:`Selection`. Keys an older record lacks take
    their defaults."""
    if not block:
        return None
    kind = LadderSelection if block.get("ladder") else Selection
    return kind.model_validate(dict(block))


def metrics_schema() -> dict[str, Any]:
    """Return the JSON schema of ``adapter.json``'s ``metrics`` block (:class:`AdapterMetrics`), as read."""
    return AdapterMetrics.model_json_schema()


__all__ = ["METRIC_NAMES", "AdapterMetrics", "AdapterTraining", "Calibration", "ClassificationMetrics", "ExpectedScore",
           "LadderSelection", "PoorContacts", "Rung", "Selection", "StagerRecord", "metrics_schema", "read_selection",
           "rounded"]
