"""One method's validation numbers over scored nights: epoch by epoch per night and pooled, and the discrepancy.

A :class:`Night` holds the reference scorer's and the device's stage per epoch on one grid. :func:`night_numbers`
gives a night's epoch-by-epoch agreement (:mod:`~passport_kit.validation.epochs`) and its sleep measures by device
and by reference with their difference; :func:`method_report` adds the pooled agreement, the per-night spread (the
per-night kappa's mean, SD and range) and the group discrepancy of each measure
(:func:`~passport_kit.validation.discrepancy.bland_altman`).

The sleep measures are the ``Hypnogram``'s (:meth:`passport_kit.inference.hypnogram.Hypnogram.sleep_statistics`:
AASM definitions, REM latency from sleep onset), computed on the epochs both sides scored: an epoch the scorer left
unscored (or the device did not stage) is UNS on both sides, so the two hypnograms cover the same time.

A night shorter than :data:`MIN_HOURS` keeps its epoch-by-epoch numbers; its discrepancy is withheld with the
reason (TST, SE, latencies of a nap-length recording are not a night's) and it is left out of the group.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, model_validator

from passport_kit.inference.hypnogram import Hypnogram, is_sleep_staging, normalize_stage
from passport_kit.validation.discrepancy import MIN_NIGHTS, bland_altman
from passport_kit.validation.epochs import STAGE_METRICS, epoch_agreement, night_spread

#: The sleep measures compared night by night (keys of ``Hypnogram.sleep_statistics``), and their units.
MEASURES: dict[str, str] = {"TST": "min", "SE": "%", "SOL": "min", "WASO": "min", "REM_latency": "min",
                            "W_min": "min", "N1_min": "min", "N2_min": "min", "N3_min": "min", "REM_min": "min"}
#: Shortest night (hours) whose sleep measures are compared (predict's MIN_NIGHT_HOURS says the same of its
#: statistics).
MIN_HOURS = 2.0


class Night(BaseModel):
    """One scored night: the reference's and the device's class index per epoch ``(N,)`` (-1: no stage)."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    name: str
    reference: np.ndarray
    device: np.ndarray
    epoch_seconds: float = 30.0

    @model_validator(mode="after")
    def _same_epochs(self) -> Night:
        """Refuse a night whose two stagings are of different lengths (they must share one epoch grid)."""
        if np.shape(self.reference) != np.shape(self.device) or np.ndim(self.reference) != 1:
            raise ValueError(f"night {self.name!r}: reference {np.shape(self.reference)} and device "
                             f"{np.shape(self.device)} must be (N,) arrays on one epoch grid")
        return self

    @property
    def hours(self) -> float:
        """Return the night's length in hours (every epoch of the grid counted)."""
        return len(self.reference) * self.epoch_seconds / 3600.0


def epoch_grid(onset_s: np.ndarray, values: np.ndarray, epoch_seconds: float) -> np.ndarray:
    """Return ``values`` ``(N,)`` placed on a gap-free epoch grid from the first onset (-1 in the gaps).

    ``onset_s`` ``(N,)``: each value's epoch onset in seconds (a night's windows, some dropped as unusable).
    """
    onset_s = np.asarray(onset_s, dtype=float)
    if not onset_s.size:
        return np.zeros(0, dtype=np.int64)
    index = np.rint((onset_s - onset_s.min()) / epoch_seconds).astype(np.int64)
    grid = np.full(int(index.max()) + 1, -1, dtype=np.int64)
    grid[index] = np.asarray(values, dtype=np.int64)
    return grid


def sleep_measures(codes: np.ndarray, classes: Sequence[str], epoch_seconds: float) -> dict[str, float | None]:
    """Return :data:`MEASURES` of a night's class indices ``codes`` ``(N,)`` (-1: UNS), by ``Hypnogram``."""
    names = [normalize_stage(c) for c in classes]
    stats = Hypnogram([names[k] if k >= 0 else "UNS" for k in np.asarray(codes)],
                      epoch_seconds=epoch_seconds).sleep_statistics()
    return {m: stats[m] for m in MEASURES}


def night_numbers(night: Night, classes: Sequence[str]) -> dict[str, Any]:
    """Return a night's ``epoch_by_epoch`` agreement and its ``discrepancy`` per measure (or why it is withheld).

    ``discrepancy``: ``{measure: {"device", "reference", "difference"}}`` (device − reference; None where the
    measure is undefined on a side, e.g. REM latency of a night without REM); None, with
    ``discrepancy_withheld`` saying why, for a night under :data:`MIN_HOURS`.
    """
    ref, dev = np.asarray(night.reference), np.asarray(night.device)
    out: dict[str, Any] = {"night": night.name, "hours": night.hours,
                           "epoch_by_epoch": epoch_agreement(ref, dev, classes)}
    if night.hours < MIN_HOURS:
        out["discrepancy"] = None
        out["discrepancy_withheld"] = (f"the recording is {60 * night.hours:.0f} min long; sleep measures (TST, SE, "
                                       f"latencies, WASO) are compared on nights of {MIN_HOURS:g} h or more")
        return out
    scored = (ref >= 0) & (dev >= 0)
    by = {side: sleep_measures(np.where(scored, codes, -1), classes, night.epoch_seconds)
          for side, codes in (("device", dev), ("reference", ref))}
    out["discrepancy"] = {m: {"device": by["device"][m], "reference": by["reference"][m],
                              "difference": None if by["device"][m] is None or by["reference"][m] is None
                              else by["device"][m] - by["reference"][m]} for m in MEASURES}
    out["discrepancy_withheld"] = None
    return out


def scored_night(name: str, onset_s: np.ndarray, reference: np.ndarray, device: np.ndarray, classes: Sequence[str],
                 epoch_seconds: float) -> dict[str, Any]:
    """Return :func:`night_numbers` of one recording staged by a device and scored by a scorer (``predict --labels``).

    ``onset_s``, ``reference``, ``device``: ``(N,)`` each window's onset (s) and class index by each side (-1: none).
    """
    night = Night(name=name, reference=epoch_grid(onset_s, reference, epoch_seconds),
                  device=epoch_grid(onset_s, device, epoch_seconds), epoch_seconds=epoch_seconds)
    return night_numbers(night, classes)


def _spread(nights: list[dict[str, Any]], classes: Sequence[str]) -> dict[str, Any]:
    """Return the per-night spread (n, mean, SD, range) of accuracy, kappa, PABAK and each stage's numbers."""
    agreements = [n["epoch_by_epoch"] for n in nights]
    out: dict[str, Any] = {k: night_spread([a[k] for a in agreements]) for k in ("kappa", "accuracy", "pabak")}
    out["stages"] = {s: {m: night_spread([a["stages"][s][m] for a in agreements]) for m in STAGE_METRICS}
                     for s in classes}
    return out


def group_discrepancy(nights: list[dict[str, Any]]) -> dict[str, Any]:
    """Return each measure's :func:`bland_altman` over the nights that have it, or ``{"withheld": why}``."""
    out: dict[str, Any] = {}
    for measure in MEASURES:
        pairs = [(n["discrepancy"][measure]["device"], n["discrepancy"][measure]["reference"]) for n in nights
                 if n["discrepancy"] is not None and n["discrepancy"][measure]["difference"] is not None]
        if len(pairs) < MIN_NIGHTS:
            out[measure] = {"n": len(pairs), "withheld": f"{len(pairs)} night(s) of {MIN_HOURS:g} h or more have "
                            f"{measure} on both sides; a group discrepancy needs {MIN_NIGHTS}"}
            continue
        device, reference = zip(*pairs)
        out[measure] = bland_altman(device, reference)
    return out


def method_report(method: str, nights: Sequence[Night], classes: Sequence[str]) -> dict[str, Any]:
    """Return one method's validation numbers: per night, pooled, per-night spread and group discrepancy.

    ``nights``: the held-out nights, the method's staging as ``device``; ``classes``: the stage name of each class
    index (sleep stages). JSON-ready: every array is a list.
    """
    per_night = [night_numbers(n, classes) for n in nights]
    pooled = epoch_agreement(np.concatenate([n.reference for n in nights]) if nights else np.zeros(0),
                             np.concatenate([n.device for n in nights]) if nights else np.zeros(0), classes)
    return {"method": method, "classes": list(classes), "nights": per_night, "pooled": pooled,
            "per_night_spread": _spread(per_night, classes), "discrepancy": group_discrepancy(per_night),
            "units": dict(MEASURES)}


__all__ = ["MEASURES", "MIN_HOURS", "Night", "epoch_grid", "group_discrepancy", "is_sleep_staging", "method_report",
           "night_numbers", "scored_night", "sleep_measures"]
