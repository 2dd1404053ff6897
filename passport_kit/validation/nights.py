"""One method's validation numbers over scored nights: epoch by epoch per night and pooled, and the discrepancy.

A :class:`Night` holds the reference scorer's and the device's stage per epoch on one grid. :func:`night_numbers`
gives a night's epoch-by-epoch agreement (:mod:`~passport_kit.validation.epochs`) and its sleep measures by device
and by reference with their difference; :func:`method_report` adds the pooled agreement, the per-night spread (the
per-night kappa's mean, SD and range) and the group discrepancy of each measure
(:func:`~passport_kit.validation.discrepancy.bland_altman`).

The sleep measures are the ``Hypnogram``'s (:meth:`passport_kit.sleep.hypnogram.Hypnogram.sleep_statistics`:
AASM definitions, REM latency from sleep onset), computed on the epochs both sides scored: an epoch the scorer left
unscored (or the device did not stage) is UNS on both sides, so the two hypnograms cover the same time.

A record shorter than :data:`MIN_HOURS` keeps its epoch-by-epoch numbers and its minutes per stage (Menghini's
framework compares them on any record); its TST, SE, latencies and WASO are withheld with the reason (those of a
nap-length recording are not a night's) and it is left out of their group.

A night may carry ``groups`` (a dataset column: sex, age group, site); :func:`method_report` then adds the agreement
of each subgroup.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, model_validator

from passport_kit.sleep.hypnogram import Hypnogram, is_sleep_staging, normalize_stage
from passport_kit.validation.discrepancy import MIN_NIGHTS, bland_altman, discrepancies
from passport_kit.validation.epochs import STAGE_METRICS, epoch_agreement, night_spread

#: The sleep measures compared night by night (keys of ``Hypnogram.sleep_statistics``), and their units.
MEASURES: dict[str, str] = {"TST": "min", "SE": "%", "SOL": "min", "WASO": "min", "REM_latency": "min",
                            "W_min": "min", "N1_min": "min", "N2_min": "min", "N3_min": "min", "REM_min": "min"}
#: What a reader calls each measure (tables and figures show these, the JSON and CSV keep the keys).
MEASURE_NAMES: dict[str, str] = {"TST": "Total sleep time", "SE": "Sleep efficiency", "SOL": "Sleep onset latency",
                                 "WASO": "Wake after sleep onset", "REM_latency": "REM latency",
                                 "W_min": "Wake", "N1_min": "N1", "N2_min": "N2", "N3_min": "N3", "REM_min": "REM"}
#: The measures of a whole night: withheld on records under :data:`MIN_HOURS`; the others (minutes per stage) are
#: compared on any record.
NIGHT_MEASURES: tuple[str, ...] = ("TST", "SE", "SOL", "WASO", "REM_latency")


def measure_label(measure: str) -> str:
    """Return a measure as a reader names it: 'Total sleep time (TST, min)', 'REM latency (min)', 'N2 (min)'."""
    unit = MEASURES[measure]
    abbreviation = f"{measure}, " if measure.isupper() else ""  # the field's abbreviations, never a code key
    return f"{MEASURE_NAMES[measure]} ({abbreviation}{unit})"

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
    #: The night's subgroups, by dataset column (``{"sex": "F", "site": "A"}``): agreement is also given per group.
    groups: dict[str, str] = {}

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


def stage_string(codes: np.ndarray) -> str:
    """Return class indices ``(N,)`` as one character each ('0'-'9', '.' for -1): ``[0, 0, 2, -1] → '002.'``."""
    if np.size(codes) and int(np.max(codes)) > 9:
        raise ValueError(f"a stage string holds class indices 0-9; got {int(np.max(codes))} (sleep stages are 5)")
    return "".join("." if k < 0 else str(int(k)) for k in np.asarray(codes))


def stage_codes(text: str) -> np.ndarray:
    """Return :func:`stage_string`'s class indices ``(N,)`` back (-1 for '.')."""
    return np.array([-1 if c == "." else int(c) for c in text], dtype=np.int64)


def sleep_measures(codes: np.ndarray, classes: Sequence[str], epoch_seconds: float) -> dict[str, float | None]:
    """Return :data:`MEASURES` of a night's class indices ``codes`` ``(N,)`` (-1: UNS), by ``Hypnogram``."""
    names = [normalize_stage(c) for c in classes]
    stats = Hypnogram([names[k] if k >= 0 else "UNS" for k in np.asarray(codes)],
                      epoch_seconds=epoch_seconds).sleep_statistics()
    return {m: stats[m] for m in MEASURES}


def night_numbers(night: Night, classes: Sequence[str]) -> dict[str, Any]:
    """Return a night's ``epoch_by_epoch`` agreement and its ``discrepancy`` per measure (or why some are withheld).

    ``stages``: each side's class index per epoch (:func:`stage_string`: the hypnograms); ``discrepancy``:
    ``{measure: {"device", "reference", "difference"}}`` (device − reference; None where the
    measure is undefined on a side, e.g. REM latency of a night without REM). On a record under :data:`MIN_HOURS`
    only the minutes per stage are given, and ``discrepancy_withheld`` says why the others are not.
    """
    ref, dev = np.asarray(night.reference), np.asarray(night.device)
    out: dict[str, Any] = {"night": night.name, "hours": night.hours, "groups": dict(night.groups),
                           "epoch_seconds": night.epoch_seconds, "epoch_by_epoch": epoch_agreement(ref, dev, classes),
                           # Each side's class index per epoch as one string ('.': none), the night's hypnograms
                           # in the report; a string keeps validation.json small (one line per night, not per epoch).
                           "stages": {"reference": stage_string(ref), "device": stage_string(dev)}}
    scored = (ref >= 0) & (dev >= 0)
    by = {side: sleep_measures(np.where(scored, codes, -1), classes, night.epoch_seconds)
          for side, codes in (("device", dev), ("reference", ref))}
    short = night.hours < MIN_HOURS
    out["discrepancy"] = {m: {"device": by["device"][m], "reference": by["reference"][m],
                              "difference": None if by["device"][m] is None or by["reference"][m] is None
                              else by["device"][m] - by["reference"][m]}
                          for m in MEASURES if not (short and m in NIGHT_MEASURES)}
    out["discrepancy_withheld"] = (f"the recording is {60 * night.hours:.0f} min long; {', '.join(NIGHT_MEASURES)} "
                                   f"are compared on nights of {MIN_HOURS:g} h or more (minutes per stage are "
                                   "compared)") if short else None
    return out


def scored_night(name: str, onset_s: np.ndarray, reference: np.ndarray, device: np.ndarray, classes: Sequence[str],
                 epoch_seconds: float) -> dict[str, Any]:
    """Return :func:`night_numbers` of one recording staged by a device and scored by a scorer (``predict --labels``).

    ``onset_s``, ``reference``, ``device``: ``(N,)`` each window's onset (s) and class index by each side (-1: none).
    """
    night = Night(name=name, reference=epoch_grid(onset_s, reference, epoch_seconds),
                  device=epoch_grid(onset_s, device, epoch_seconds), epoch_seconds=epoch_seconds)
    numbers = night_numbers(night, classes)
    numbers.pop("stages")  # predict draws the night's hypnograms itself; its summary keeps the numbers only
    return numbers


def _spread(nights: list[dict[str, Any]], classes: Sequence[str]) -> dict[str, Any]:
    """Return the per-night spread (n, mean, SD, range) of accuracy, kappa, PABAK and each stage's numbers."""
    agreements = [n["epoch_by_epoch"] for n in nights]
    out: dict[str, Any] = {k: night_spread([a[k] for a in agreements]) for k in ("kappa", "accuracy", "pabak")}
    out["stages"] = {s: {m: night_spread([a["stages"][s][m] for a in agreements]) for m in STAGE_METRICS}
                     for s in classes}
    return out


def _pairs(nights: list[dict[str, Any]], measure: str) -> list[tuple[float, float]]:
    """Return (device, reference) of ``measure`` on every night that has it on both sides."""
    return [(n["discrepancy"][measure]["device"], n["discrepancy"][measure]["reference"]) for n in nights
            if measure in n["discrepancy"] and n["discrepancy"][measure]["difference"] is not None]


def group_discrepancy(nights: list[dict[str, Any]]) -> dict[str, Any]:
    """Return each measure's group discrepancy (:func:`~passport_kit.validation.discrepancy.discrepancies`) over the
    nights that have it, or ``{"n", "withheld": why}``."""
    pairs = {m: _pairs(nights, m) for m in MEASURES}
    enough = {m: p for m, p in pairs.items() if len(p) >= MIN_NIGHTS}
    found = discrepancies({m: [d for d, _ in p] for m, p in enough.items()},
                          {m: [r for _, r in p] for m, p in enough.items()}) if enough else {}
    where = {m: f"nights of {MIN_HOURS:g} h or more" if m in NIGHT_MEASURES else "records" for m in MEASURES}
    return {m: found[m] if m in found else {
        "n": len(p), "withheld": f"{len(p)} {where[m]} have {m} on both sides; a group discrepancy needs {MIN_NIGHTS}"}
        for m, p in pairs.items()}


def _subgroup(nights: list[dict[str, Any]], classes: Sequence[str], grid: dict[str, Night]) -> dict[str, Any]:
    """Return one subgroup's numbers: nights, pooled agreement, per-night kappa and the TST discrepancy."""
    pooled = epoch_agreement(np.concatenate([grid[n["night"]].reference for n in nights]),
                             np.concatenate([grid[n["night"]].device for n in nights]), classes)
    tst = _pairs(nights, "TST")
    return {"nights": len(nights), "epochs": pooled["epochs"], "accuracy": pooled["accuracy"], "kappa": pooled["kappa"],
            "pabak": pooled["pabak"], "per_night_kappa": night_spread([n["epoch_by_epoch"]["kappa"] for n in nights]),
            "TST": bland_altman(*zip(*tst)) if len(tst) >= MIN_NIGHTS else {"n": len(tst), "withheld": (
                f"{len(tst)} nights of {MIN_HOURS:g} h or more; a group discrepancy needs {MIN_NIGHTS}")}}


def subgroups(per_night: list[dict[str, Any]], nights: Sequence[Night], classes: Sequence[str]) -> dict[str, Any]:
    """Return ``{column: {value: numbers}}`` for every dataset column the nights carry (empty when none does)."""
    grid = {n.name: n for n in nights}
    columns = sorted({c for n in nights for c in n.groups})
    return {c: {v: _subgroup([n for n in per_night if n["groups"].get(c) == v], classes, grid)
                for v in sorted({n.groups[c] for n in nights if c in n.groups})} for c in columns}


def method_report(method: str, nights: Sequence[Night], classes: Sequence[str], *,
                  shipped: str | None = None) -> dict[str, Any]:
    """Return one method's validation numbers: per night, pooled, per-night spread, group discrepancy, subgroups.

    ``nights``: the held-out nights, the method's staging as ``device``; ``classes``: the stage name of each class
    index (sleep stages); ``shipped``: what the method shipped, in words (``band power (12/12 folds)``), shown beside
    its name. JSON-ready: every array is a list.
    """
    per_night = [night_numbers(n, classes) for n in nights]
    pooled = epoch_agreement(np.concatenate([n.reference for n in nights]) if nights else np.zeros(0),
                             np.concatenate([n.device for n in nights]) if nights else np.zeros(0), classes)
    return {"method": method, "shipped": shipped, "classes": list(classes), "nights": per_night, "pooled": pooled,
            "per_night_spread": _spread(per_night, classes), "discrepancy": group_discrepancy(per_night),
            "subgroups": subgroups(per_night, nights, classes), "units": dict(MEASURES)}


__all__ = ["MEASURES", "MEASURE_NAMES", "MIN_HOURS", "NIGHT_MEASURES", "Night", "epoch_grid", "group_discrepancy",
           "is_sleep_staging", "measure_label", "method_report", "night_numbers", "scored_night", "sleep_measures",
           "stage_codes", "stage_string", "subgroups"]
