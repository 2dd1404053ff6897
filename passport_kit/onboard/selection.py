"""What a training run chose, as adapter.json's ``metrics.selection`` stores it: one typed, frozen record.

A recipe builds its record where it selects (the ladder: :func:`passport_kit.onboard.ladder.ladder_record`; the
finetune recipe: the best validation step), the bundle stores :meth:`Selection.as_dict`, and :func:`read_selection`
reads a stored block back, older ones too: a key a record of its time did not hold takes its default, and a record
writes only the keys it was given, so a block read back is written unchanged. What a record says in words is its
recipe's (:meth:`passport_kit.onboard.recipes.Recipe.describe`); the CLI prints those words.

Two kinds, told apart by the ``ladder`` key:

- :class:`Selection`: one score on validation subjects (the finetune recipe: ``best_step``; the probe's records
  written before the ladder);
- :class:`LadderSelection`: every rung of the ladder, the read-out shipped, its expected score on the ladder's
  folds, and the stager it started from (sleep staging).

Scores are recorded rounded to 4 decimals (:func:`passport_kit.onboard.rungs.rounded`), None where there is none.
This module imports nothing of the package: the ladder, the recipes and the CLI all read it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _Record(BaseModel):
    """A part of the selection record: frozen; keys it does not know (a newer writer's) are ignored when read."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    def as_dict(self) -> dict[str, Any]:
        """Return the record as adapter.json stores it: the keys it was built or read with, nested blocks as dicts."""
        return self.model_dump(exclude_unset=True)


class RungRecord(_Record):
    """One rung of the ladder: tried or not, taken or not, its best candidate's score against the model below it
    (``baseline``), the paired gain and its standard error, the rung's setting and the reason in words."""

    rung: str
    tried: bool
    taken: bool
    score: float | None = None
    baseline: float | None = None
    gain: float | None = None
    standard_error: float | None = None
    setting: dict[str, Any] | None = None
    reason: str = ""


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
    ladder: list[RungRecord] = Field(default_factory=list)
    seconds: float | None = None
    adapter_training: dict[str, Any] | None = None

    @property
    def taken(self) -> list[str]:
        """Return the names of the rungs taken, in the order climbed."""
        return [r.rung for r in self.ladder if r.taken]


def read_selection(block: Mapping[str, Any] | None) -> Selection | None:
    """Return adapter.json's ``metrics.selection`` block as its record (None: the bundle holds none): a
    :class:`LadderSelection` where it holds a ladder, else a :class:`Selection`. Keys an older record lacks take
    their defaults."""
    if not block:
        return None
    kind = LadderSelection if block.get("ladder") else Selection
    return kind.model_validate(dict(block))


__all__ = ["Calibration", "ExpectedScore", "LadderSelection", "RungRecord", "Selection", "StagerRecord",
           "read_selection"]
