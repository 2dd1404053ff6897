"""The held-out nights ``evaluate`` stages, collected per method for the device validation report (issue 44).

Every fold of a sleep-staging evaluation stages its test nights with a model fitted without them; :class:`HeldOutNights`
keeps each method's staging of each night (the first seed, the largest training set: one staging per night and
method), the dataset's labels as the reference, and the zero-shot sleep stager's staging of the same nights (the
ladder's base: what a team would have without training anything). :meth:`HeldOutNights.write` hands them to
:mod:`passport_kit.validation`, which writes the report.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from passport_kit.validation import Night, epoch_grid, method_report, write_validation
from passport_kit.validation.nights import is_sleep_staging


class HeldOutNights:
    """Each method's staging of each held-out night, with the reference labels (a sleep-staging evaluation only)."""

    def __init__(self, classes: Sequence[str], *, window_seconds: float, task: str | None) -> None:
        self.classes = list(classes)
        self.window_seconds = float(window_seconds)
        # Sleep measures need sleep stages; a classification task (eegmat) gets no report.
        self.active = task in (None, "sleep-staging") and is_sleep_staging(self.classes)
        self._nights: dict[str, dict[str, Night]] = defaultdict(dict)

    def add(self, method: str, windows: Any, test_idx: np.ndarray, pred: np.ndarray) -> None:
        """Keep ``method``'s staging ``pred`` ``(len(test_idx),)`` of the test windows ``test_idx``, night by night."""
        if not self.active:
            return
        recordings = np.asarray(windows.recording)[test_idx]
        for recording in np.unique(recordings):
            rows = recordings == recording
            onsets = np.asarray(windows.onset_s)[test_idx][rows]
            self._nights[method][str(recording)] = Night(
                name=Path(str(recording)).name, epoch_seconds=self.window_seconds,
                reference=epoch_grid(onsets, np.asarray(windows.y)[test_idx][rows], self.window_seconds),
                device=epoch_grid(onsets, pred[rows], self.window_seconds))

    def add_zero_shot(self, windows: Any, test_idx: np.ndarray, prior: str | None) -> None:
        """Keep each zero-shot stager ``prior`` names ('auto': those that run here, and their average where several
        do) staging the test windows as ``predict --zero-shot`` would: the channel nearest a central site, no labels."""
        if not self.active:
            return
        from passport_kit.onboard.ladder_inputs import dataset_prior, stager_names
        from passport_kit.sleep import classes_to_stages
        from passport_kit.sleep.priors import ENSEMBLE_SEPARATOR

        stages = classes_to_stages(self.classes)
        names = stager_names(prior)
        for name in names + ([ENSEMBLE_SEPARATOR.join(names)] if len(names) > 1 else []):
            log_proba, _, _ = dataset_prior(windows, name)
            if log_proba is None or stages is None:
                continue
            # The stager's most likely stage among the task's classes (its columns in the classes' order).
            self.add(f"zero-shot {name}", windows, test_idx, log_proba[test_idx][:, stages].argmax(1))

    def write(self, folder: Path, *, context: str) -> dict[str, Path]:
        """Return the files of the validation report of every method written into ``folder`` (none if inactive)."""
        if not self.active or not self._nights:
            return {}
        reports = [method_report(method, list(nights.values()), self.classes)
                   for method, nights in self._nights.items()]
        return write_validation(folder, reports, context=context)


__all__ = ["HeldOutNights"]
