"""The held-out nights ``evaluate`` stages, collected per method for the device validation report (issue 44).

Every fold of a sleep-staging evaluation stages its test nights with a model fitted without them; :class:`HeldOutNights`
keeps each method's staging of each night (the first seed, the largest training set: one staging per night and
method), what each fold's model shipped (the report names a method 'passport-small-mlp → band power (12/12 folds)'),
the dataset's labels as the reference, and the zero-shot sleep stager's staging of the same nights (the ladder's
base: what a team would have without training anything; ``evaluate`` scores it as a method of its own). :meth:`HeldOutNights.write` hands them to
:mod:`passport_kit.validation`, which writes the report.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from passport_kit.validation import Night, epoch_grid, method_report, write_validation
from passport_kit.validation.nights import is_sleep_staging


class HeldOutNights:
    """Each method's staging of each held-out night, with the reference labels (a sleep-staging evaluation only)."""

    def __init__(self, classes: Sequence[str], *, window_seconds: float, task: str | None,
                 groups: dict[str, dict[str, str]] | None = None) -> None:
        self.classes = list(classes)
        #: Each recording's subgroups (dataset.yaml's ``groups:``), by the recording's file as the windows name it.
        self.groups = groups or {}
        self.window_seconds = float(window_seconds)
        # Sleep measures need sleep stages; a classification task (eegmat) gets no report.
        self.active = task in (None, "sleep-staging") and is_sleep_staging(self.classes)
        self._nights: dict[str, dict[str, Night]] = defaultdict(dict)
        #: What each method shipped in each fold ('band power + sleep prior'), counted: the report names a method by it.
        self._shipped: dict[str, Counter[str]] = defaultdict(Counter)

    def add(self, method: str, windows: Any, test_idx: np.ndarray, pred: np.ndarray, *, shipped: str = "") -> None:
        """Keep ``method``'s staging ``pred`` ``(len(test_idx),)`` of the test windows ``test_idx``, night by night;
        ``shipped``: what the fold's model is made of (:func:`~passport_kit.onboard.recipes.shipped_read_out`)."""
        if not self.active:
            return
        if shipped:
            self._shipped[method][shipped] += 1
        recordings = np.asarray(windows.recording)[test_idx]
        for recording in np.unique(recordings):
            rows = recordings == recording
            onsets = np.asarray(windows.onset_s)[test_idx][rows]
            self._nights[method][str(recording)] = Night(
                name=Path(str(recording)).name, epoch_seconds=self.window_seconds,
                groups=self.groups.get(str(recording), {}),
                reference=epoch_grid(onsets, np.asarray(windows.y)[test_idx][rows], self.window_seconds),
                device=epoch_grid(onsets, pred[rows], self.window_seconds))

    def zero_shot(self, windows: Any, test_idx: np.ndarray, prior: str | None) -> dict[str, np.ndarray]:
        """Return each zero-shot stager ``prior`` names ('auto': those that run here, and their average where several
        do) as ``{"zero-shot <name>": probabilities (len(test_idx), classes)}``, staging the test windows as
        ``predict --zero-shot`` would: the channel nearest a central site, no labels (none for a classification)."""
        if not self.active:
            return {}
        from passport_kit.onboard.ladder_inputs import dataset_prior, stager_names
        from passport_kit.sleep import classes_to_stages
        from passport_kit.sleep.priors import ENSEMBLE_SEPARATOR

        stages = classes_to_stages(self.classes)
        names = stager_names(prior)
        out = {}
        for name in names + ([ENSEMBLE_SEPARATOR.join(names)] if len(names) > 1 else []):
            log_proba, _, _ = dataset_prior(windows, name)
            if log_proba is None or stages is None:
                continue
            # The stager's probabilities of the task's classes (its columns in the classes' order), renormalised.
            proba = np.exp(log_proba[test_idx][:, stages])
            out[f"zero-shot {name}"] = proba / proba.sum(axis=1, keepdims=True)
        return out

    def shipped(self, method: str) -> str:
        """Return what ``method`` shipped, fold by fold: 'band power (12/12 folds)', '' where nothing was recorded."""
        counts = self._shipped.get(method)
        if not counts:
            return ""
        total = sum(counts.values())
        return ", ".join(f"{what} ({n}/{total} folds)" for what, n in counts.most_common())

    def write(self, folder: Path, *, context: str) -> dict[str, Path]:
        """Return the files of the validation report of every method written into ``folder`` (none if inactive)."""
        if not self.active or not self._nights:
            return {}
        reports = [method_report(method, list(nights.values()), self.classes, shipped=self.shipped(method) or None)
                   for method, nights in self._nights.items()]
        return write_validation(folder, reports, context=context)


__all__ = ["HeldOutNights"]
