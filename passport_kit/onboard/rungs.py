"""The ladder's rungs as registered objects, and the order each task climbs them (issue 43).

A rung says when it applies (:meth:`LadderRung.skip`), which candidates it scores against the
model that stays so far (:meth:`LadderRung.candidates`), and what it records; the ladder
(:mod:`passport_kit.onboard.ladder`) scores candidates, applies the paired rule and keeps the
record. Which rungs a task climbs, in which order, is a declared list (:func:`rung_order`):

- **stager first** (sleep staging whose classes are the AASM stages, with a stager that can read a
  channel of the montage): the base is the zero-shot stager (the best of its channel choices and,
  where several stagers are installed, of each and their average). A stager trained on thousands
  of nights needs no proof from the user's few nights; everything else — band power alone
  included — must beat it by the paired rule to replace it;
- **textbook first** (every other task): the base is band power + logistic regression.

A new rung is a subclass with a ``name`` (registered on definition) and a place in an order.
Rungs build on the *template*: the read-out of the model that stays (or, above the zero-shot
stager, the stager as an offset), so "stager first" is a list, not a branch.

A rung sees the ladder through :class:`LadderView` (its inputs, its rule, the scoring of candidates on its folds)
and tells it two things only: which candidate it keeps (:meth:`LadderView.keep`) and which stager option it reads
(:meth:`LadderView.use_stager`). What it records is a :class:`~passport_kit.checkpoint.adapter_metrics.Rung`, the
record adapter.json stores.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import numpy as np

from passport_kit.checkpoint.adapter_metrics import Rung
from passport_kit.onboard.read_out import ReadOutChoice
from passport_kit.registry import Registry

if TYPE_CHECKING:  # pragma: no cover - the ladder's inputs import the model (torch); the recipes import this module
    from passport_kit.onboard.ladder_inputs import LadderData

#: Weights of the backbone block the backbone rung tries (a smaller weight is a stronger penalty on it).
BACKBONE_WEIGHTS = (0.1, 0.3)
#: Weights of the stacked prior block the prior rung tries (textbook-first order).
PRIOR_WEIGHTS = (1.0, 3.0, 10.0)
#: The read-out above a zero-shot stager: the stager's log-probabilities as the offset and as inputs.
STAGER_TEMPLATE = ReadOutChoice(1.0, prior_weight=1.0, bandpower_weight=0.0, offset=True)


@dataclass
class Scored:
    """One candidate scored on the ladder's folds: per-fold scores (every draw), out-of-fold probabilities per draw."""

    name: str
    choice: ReadOutChoice | None  # None: the zero-shot prior (no fitting)
    scores: np.ndarray
    oof: list[np.ndarray]
    grid: list[dict[str, Any]] = field(default_factory=list)
    #: The rung's own setting as adapter.json records it (the read-out's, or what the step adds).
    setting: dict[str, Any] = field(default_factory=dict)
    #: Smoothing applied on top of ``choice`` (or the zero-shot prior), with the emission prior it divides by.
    smoothed: bool = False

    @property
    def mean(self) -> float:
        finite = self.scores[np.isfinite(self.scores)]
        return float(finite.mean()) if len(finite) else float("nan")

    @property
    def natural_balance(self) -> bool:
        """Return whether the probabilities carry the training class balance (the stager, and read-outs fitted
        around it), rather than balanced class weights' uniform one."""
        return self.choice is None or self.choice.offset


@dataclass
class Climb:
    """Where a climb stands: the model that stays, the read-out later rungs build on, the record so far."""

    incumbent: Scored
    template: ReadOutChoice
    rungs: list[Rung]
    lpft: Any = None  # the adapter-training step offered by the recipe (None: not offered)
    decision: Any = None  # what that step decided

    def taken(self, name: str) -> bool:
        """Return whether rung ``name`` was taken."""
        return any(r.name == name and r.taken for r in self.rungs)


class LadderView(Protocol):
    """What a rung sees of the ladder climbing (:class:`~passport_kit.onboard.ladder.Ladder`): its inputs and rule,
    the scoring of candidates on its folds, and the two things a rung tells it (:meth:`keep`, :meth:`use_stager`)."""

    #: The task's inputs: rows, classes, contexts, scalings, poolings, the stager's options.
    data: LadderData
    #: The paired rule: a gain above ``se_multiple`` standard errors and ``min_effect`` takes a rung.
    se_multiple: float
    min_effect: float

    @property
    def holds_base(self) -> bool:
        """Return whether nothing may replace the base (a stager-first ladder on folds within one night)."""
        ...

    def score(self, name: str, choice: ReadOutChoice) -> Scored:
        """Return read-out ``choice`` scored on the folds at its best C."""
        ...

    def zero_shot(self, option: int | None = None) -> Scored:
        """Return the stager alone (option ``option``; None: the one in use) scored on the folds."""
        ...

    def smoothed(self, base: Scored) -> Scored:
        """Return ``base`` with each test night smoothed."""
        ...

    def textbook_path(self) -> Scored:
        """Return the textbook-first order's final model scored on the same folds."""
        ...

    def gain(self, challenger: Scored, incumbent: Scored) -> tuple[float, float, int]:
        """Return the paired gain of ``challenger`` over ``incumbent``: mean, standard error, folds."""
        ...

    def clears(self, gain: float, se: float) -> bool:
        """Return whether a paired gain takes a rung."""
        ...

    def step(self, name: str, incumbent: Scored, variants: list[Scored], rungs: list[Rung]) -> Scored:
        """Record rung ``name`` (its best variant against ``incumbent``) in ``rungs``; return the model that stays."""
        ...

    def candidate(self, name: str) -> Scored | None:
        """Return rung ``name``'s best candidate so far (None: not scored)."""
        ...

    def keep(self, name: str, scored: Scored) -> None:
        """Keep ``scored`` as rung ``name``'s best candidate (the benchmarks score each on outer folds)."""
        ...

    def use_stager(self, option: int) -> None:
        """Read stager option ``option`` from now on."""
        ...


#: The rung classes by name, filled by subclassing :class:`LadderRung` (the orders below name them).
RUNGS: Registry[type[LadderRung]] = Registry("ladder rung")


class LadderRung:
    """One rung (subclass, set ``name`` and ``label``, implement :meth:`candidates`; :meth:`skip` when it may not
    apply). ``ladder`` is what the rung sees of the ladder climbing (:class:`LadderView`)."""

    name: ClassVar[str] = ""
    #: How adapt names the rung in its output.
    label: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("name"):
            RUNGS.add(cls.name, cls)

    def skip(self, ladder: LadderView, climb: Climb) -> str | None:
        """Return why this rung is not tried here, None when it is."""
        return None

    def candidates(self, ladder: LadderView, climb: Climb) -> list[Scored]:
        """Return the rung's candidates scored on the ladder's folds (the best one challenges the incumbent)."""
        raise NotImplementedError

    def run(self, ladder: LadderView, climb: Climb) -> None:
        """Try the rung (:meth:`attempt`), or record why it is skipped (:meth:`skip`)."""
        reason = self.skip(ladder, climb)
        if reason is not None:
            climb.rungs.append(Rung(name=self.name, tried=False, taken=False, reason=reason))
            return
        self.attempt(ladder, climb)

    def attempt(self, ladder: LadderView, climb: Climb) -> None:
        """Record the rung and, when its best candidate clears the paired rule, make it the incumbent."""
        climb.incumbent = ladder.step(self.name, climb.incumbent, self.candidates(ladder, climb), climb.rungs)
        if climb.incumbent.choice is not None:
            climb.template = climb.incumbent.choice


def with_band_power(template: ReadOutChoice) -> list[ReadOutChoice]:
    """Return the read-outs a rung builds on: the template and, where it reads no band power (the stager,
    recalibrated), the template with band power too. A ladder climbs one rung at a time: band power that could
    not beat the stager alone on a few folds may still pay together with context (simulated ear-EEG, 3 training
    subjects: without it the shipped model read the stager's context and no band power)."""
    if template.bandpower_weight:
        return [template]
    return [template, dataclasses.replace(template, bandpower_weight=1.0, diagonal=False)]


def get_rung(name: str) -> LadderRung:
    """Return the registered rung ``name``."""
    return RUNGS[name]()


def rung_labels() -> dict[str, str]:
    """Return how adapt names every registered rung (``{"bandpower": "band power", ...}``)."""
    return {name: cls.label or name for name, cls in RUNGS.items()}


def rung_label(name: str) -> str:
    """Return how adapt prints rung ``name`` (its own name for one it does not know)."""
    cls = RUNGS.get(name)
    return cls.label if cls is not None and cls.label else name


#: The orders (module docstring). The base is the first rung. The stager-first order ends with the textbook-first
#: order's final model as one more challenger (``textbook``, issue 55): neither order loses what the other finds.
TEXTBOOK_FIRST = ("bandpower", "context", "prior", "zero-shot", "backbone", "lpft", "smoothing")
STAGER_FIRST = ("stager", "recalibrated", "bandpower", "stacked", "context", "backbone", "lpft", "smoothing",
                "textbook")


def rung_order(data: LadderData) -> tuple[str, ...]:
    """Return the rungs ``data`` (a :class:`~passport_kit.onboard.ladder.LadderData`) climbs, base first."""
    if stager_applies(data):
        return STAGER_FIRST
    return TEXTBOOK_FIRST


def stager_applies(data: LadderData) -> bool:
    """Return whether a stager is the base: sleep staging, classes that are the AASM stages, a prior computed, and
    the stager-first order not switched off (the ablation)."""
    return bool(data.sleep and data.stager_first and data.prior_stages is not None and data.stager_options)


# -- the bases ------------------------------------------------------------------------------------------------
class BandPowerRung(LadderRung):
    """The textbook: log absolute and relative band power, standardised, balanced logistic regression. The base
    where no stager applies; above a stager, a challenger like any other."""

    name = "bandpower"
    label = "band power"

    def candidates(self, ladder: LadderView, climb: Climb) -> list[Scored]:
        return [ladder.score("bandpower", ReadOutChoice(1.0))]

    def run(self, ladder: LadderView, climb: Climb) -> None:
        if climb.rungs:  # above a stager: it must beat the incumbent
            super().run(ladder, climb)
            return
        base = self.candidates(ladder, climb)[0]
        ladder.keep("bandpower", base)
        climb.rungs.append(Rung(name="bandpower", tried=True, taken=True, reason="the textbook: the base of the ladder",
                                score=base.mean, setting=base.setting))
        climb.incumbent, climb.template = base, base.choice


class StagerRung(LadderRung):
    """The zero-shot stager, no fitting, scored on the same folds: the base of the stager-first order.

    Its options (channel choices; each stager and their average) come in the order the positions and the
    installed stagers suggest, the first the default (the channel nearest a central site; with several stagers,
    their average). Another option replaces the default only by the paired rule, as any rung: choosing among
    stagers on a night or two is noise (DREAMS, one training night per fold: the best option on the training
    night scored 0.305 on the other, the default average 0.471).
    """

    name = "stager"
    label = "sleep stager (zero-shot)"

    def candidates(self, ladder: LadderView, climb: Climb) -> list[Scored]:
        return [ladder.zero_shot(option) for option in range(len(ladder.data.stager_options))]

    def run(self, ladder: LadderView, climb: Climb) -> None:
        options = self.candidates(ladder, climb)
        chosen, why = 0, ("the base: a stager trained on thousands of nights needs no proof from your nights; every "
                          "rung above must beat it by the paired rule")
        if len(options) > 1:
            rest = range(1, len(options))
            best = max(rest, key=lambda i: options[i].mean if np.isfinite(options[i].mean) else -np.inf)
            gain, se, _ = ladder.gain(options[best], options[0])
            clears = ladder.clears(gain, se)
            chosen = best if clears else 0
            what = options[best].setting
            why += (f"; of {len(options)} options (channels, stagers) the default ({_option(options[0].setting)}) "
                    + (f"gave way to {_option(what)}: gains {gain:+.3f} (SE {se:.3f})" if clears else
                       f"stays: the best other, {_option(what)}, gains {gain:+.3f} (SE {se:.3f})"))
        ladder.use_stager(chosen)
        base = dataclasses.replace(options[chosen], name="stager")
        ladder.keep("stager", base)
        ladder.keep("zero-shot", base)
        tried = [{**o.setting, "score": None if not np.isfinite(o.mean) else round(o.mean, 4)} for o in options]
        climb.rungs.append(Rung(name="stager", tried=True, taken=True, reason=why, score=base.mean,
                                setting={**base.setting, "options": tried}))
        climb.incumbent, climb.template = base, STAGER_TEMPLATE


def _option(setting: dict[str, Any]) -> str:
    """Return a stager option as the ladder's reasons name it (``yasa on EEG C3-A2``)."""
    return f"{setting.get('prior')} on {setting.get('channels')}"


# -- rungs above the stager -------------------------------------------------------------------------------------
class RecalibratedRung(LadderRung):
    """The stager re-fitted on the labels: per-class scale and bias of its own log-probabilities, shrunk toward
    its output (strength by inner CV)."""

    name = "recalibrated"
    label = "recalibrated stager"

    def candidates(self, ladder: LadderView, climb: Climb) -> list[Scored]:
        return [ladder.score("recalibrated", dataclasses.replace(STAGER_TEMPLATE, diagonal=True))]


class StackedRung(LadderRung):
    """Band power stacked on the stager: a read-out of band power (and the stager's log-probabilities) fitted
    around the stager's output, shrunk toward it."""

    name = "stacked"
    label = "+ band power over the stager"

    def candidates(self, ladder: LadderView, climb: Climb) -> list[Scored]:
        return [ladder.score("stacked", dataclasses.replace(STAGER_TEMPLATE, bandpower_weight=1.0, prior_weight=w))
                for w in (0.0, 1.0)]


# -- rungs of both orders ---------------------------------------------------------------------------------------
class ContextRung(LadderRung):
    """Sleep: the running mean of the template's inputs over neighbouring epochs; per-night robust scaling."""

    name = "context"
    label = "+ context"

    def skip(self, ladder: LadderView, climb: Climb) -> str | None:
        d = ladder.data
        if d.fixed_context and any(d.contexts):
            return None
        if not d.sleep:
            return "not a sleep-staging task"
        return None if self._variants(d) else "context fixed by --context 0"

    @staticmethod
    def _variants(d: LadderData) -> list[tuple[int, str]]:
        return [(k, s) for k in d.contexts for s in d.scalings if (k, s) != (0, "none")]

    def attempt(self, ladder: LadderView, climb: Climb) -> None:
        d = ladder.data
        if d.fixed_context and any(d.contexts):  # the user's --context: taken as given, its gain recorded
            before = climb.incumbent
            chosen = ladder.score("context", self._on(climb.template, d.contexts[0], climb.template.scaling))
            gain, se, _ = ladder.gain(chosen, before)
            climb.rungs.append(Rung(name="context", tried=True, taken=True,
                                    reason=f"fixed by --context {d.contexts[0]}",
                                    score=chosen.mean, baseline=before.mean, gain=gain, standard_error=se,
                                    setting=chosen.setting))
            climb.incumbent, climb.template = chosen, chosen.choice
            return
        super().attempt(ladder, climb)

    def candidates(self, ladder: LadderView, climb: Climb) -> list[Scored]:
        return [ladder.score("context", self._on(t, k, s)) for t in with_band_power(climb.template)
                for k, s in self._variants(ladder.data)]

    @staticmethod
    def _on(template: ReadOutChoice, context: int, scaling: str) -> ReadOutChoice:
        return dataclasses.replace(template, c=1.0, context=context, scaling=scaling, diagonal=False)


class PriorRung(LadderRung):
    """Textbook-first order: a pretrained stager's log-probabilities stacked as a block of the read-out."""

    name = "prior"
    label = "+ sleep prior"

    def skip(self, ladder: LadderView, climb: Climb) -> str | None:
        return None if ladder.data.prior is not None else ladder.data.prior_reason

    def candidates(self, ladder: LadderView, climb: Climb) -> list[Scored]:
        f = climb.template
        return [ladder.score("prior", ReadOutChoice(1.0, 0.0, f.context, f.pooling, f.scaling, w))
                for w in PRIOR_WEIGHTS]


class ZeroShotRung(LadderRung):
    """Textbook-first order: the stager alone, no fitting (classes that are the AASM stages only)."""

    name = "zero-shot"
    label = "sleep prior alone"

    def skip(self, ladder: LadderView, climb: Climb) -> str | None:
        d = ladder.data
        if d.prior is None:
            return d.prior_reason
        if d.prior_stages is None:
            return f"the classes {d.classes} are not the five AASM stages the prior scores"
        return None

    def candidates(self, ladder: LadderView, climb: Climb) -> list[Scored]:
        return [ladder.zero_shot()]


class BackboneRung(LadderRung):
    """The frozen model's pooled features as a block of the template's read-out."""

    name = "backbone"
    label = "+ backbone"

    def skip(self, ladder: LadderView, climb: Climb) -> str | None:
        return None if ladder.data.backbone else "the read-out reads no backbone block here"

    def candidates(self, ladder: LadderView, climb: Climb) -> list[Scored]:
        return [ladder.score("backbone", dataclasses.replace(f, c=1.0, backbone_weight=w, pooling=p, diagonal=False))
                for f in with_band_power(climb.template) for w in BACKBONE_WEIGHTS for p in ladder.data.poolings]


class LpftRung(LadderRung):
    """Gradient training of the mixture adapter from the backbone read-out (LP-FT): only where that rung was
    taken, never from a read-out the ladder rejected."""

    name = "lpft"
    label = "+ LP-FT"

    def skip(self, ladder: LadderView, climb: Climb) -> str | None:
        if not climb.taken("backbone"):
            return "the backbone rung was not taken: no adapter training from a read-out the ladder rejected"
        if climb.lpft is None:
            return "not part of this recipe (probe)"
        f = climb.incumbent.choice
        if f is None or f.reads_prior or f.scaling != "none":
            return ("the read-out stacks the sleep prior or scales per night, which a training batch cannot carry "
                    "whole")
        return None

    def attempt(self, ladder: LadderView, climb: Climb) -> None:
        decision = climb.decision = climb.lpft(climb.incumbent.choice)
        if decision is None or decision.probe_score is None:
            climb.rungs.append(Rung(name="lpft", tried=False, taken=False,
                                    reason=getattr(decision, "reason", "not offered")))
            return
        climb.rungs.append(Rung(name="lpft", tried=True, taken=bool(decision.trained), reason=decision.reason,
                                score=decision.lpft_score, baseline=decision.probe_score, gain=decision.gain,
                                standard_error=decision.standard_error,
                                setting={"steps": decision.steps, "budget": decision.budget, "folds": decision.folds}))


class SmoothingRung(LadderRung):
    """Sleep: an HMM pass over each night (transitions counted on the training folds)."""

    name = "smoothing"
    label = "+ night smoothing"

    def skip(self, ladder: LadderView, climb: Climb) -> str | None:
        if not ladder.data.sleep:
            return "not a sleep-staging task"
        if climb.taken("lpft"):
            return "LP-FT's inner folds keep scores, not the probabilities smoothing needs"
        return None

    def candidates(self, ladder: LadderView, climb: Climb) -> list[Scored]:
        return [ladder.smoothed(climb.incumbent)]


class TextbookPathRung(LadderRung):
    """Stager-first order, last: the model the textbook-first order climbs to (band power, then context, the stager
    as a block, the stager alone, the backbone, smoothing; no LP-FT) on the same folds, as one challenger by the same
    paired rule (issue 55). Climbing from a stager that reads the device poorly, recalibration and band power
    around it were taken and the textbook path's context-on-band-power read-out was never compared whole: the
    demo's ear-EEG night shipped kappa 0.777 where the textbook-first order shipped 0.888."""

    name = "textbook"
    label = "the textbook path's model"

    def skip(self, ladder: LadderView, climb: Climb) -> str | None:
        if climb.taken("lpft"):
            return "LP-FT trained the model that stays: its own folds keep scores the textbook path cannot pair with"
        return None

    def candidates(self, ladder: LadderView, climb: Climb) -> list[Scored]:
        return [ladder.textbook_path()]

    def attempt(self, ladder: LadderView, climb: Climb) -> None:
        """Take the textbook path's model where it leaves the stager by the paired rule (the burden every rung
        carries) and scores above the model the climb from the stager reached. Between two models that each left
        the stager by that rule, neither is the base: the better inner score ships, so neither order loses what the
        other finds (where the climb never left the stager, this is the paired rule against it)."""
        challenger = self.candidates(ladder, climb)[0]
        ladder.keep(self.name, challenger)
        stager, incumbent = ladder.candidate("stager") or climb.incumbent, climb.incumbent
        base_gain, base_se, _ = ladder.gain(challenger, stager)
        gain, se, _ = ladder.gain(challenger, incumbent)
        leaves = ladder.clears(base_gain, base_se)
        taken = bool(leaves and np.isfinite(gain) and gain > 0)
        if ladder.holds_base:
            reason = ("folds within the one training night(s) cannot show that a model carries to new nights better "
                      "than the stager; the stager stays")
        elif not leaves:
            reason = (f"gains {base_gain:+.3f} (SE {base_se:.3f}) over the stager: not above {ladder.se_multiple:g} "
                      f"standard errors and {ladder.min_effect:g}")
        else:
            reason = (f"gains {base_gain:+.3f} (SE {base_se:.3f}) over the stager, above {ladder.se_multiple:g} "
                      f"standard errors and {ladder.min_effect:g}, and {gain:+.3f} (SE {se:.3f}) over "
                      f"{incumbent.name}: " + ("the better of the two orders' models" if taken else
                                               f"{incumbent.name} stays, the better of the two orders' models"))
        climb.rungs.append(Rung(name=self.name, tried=True, taken=taken, reason=reason, score=challenger.mean,
                                baseline=incumbent.mean, gain=gain, standard_error=se, setting=challenger.setting))
        if taken:
            climb.incumbent = challenger
            if challenger.choice is not None:
                climb.template = challenger.choice


__all__ = ["BACKBONE_WEIGHTS", "PRIOR_WEIGHTS", "RUNGS", "STAGER_FIRST", "STAGER_TEMPLATE", "TEXTBOOK_FIRST", "Climb",
           "LadderRung", "LadderView", "Rung", "Scored", "get_rung", "rung_label", "rung_labels", "rung_order",
           "stager_applies"]
