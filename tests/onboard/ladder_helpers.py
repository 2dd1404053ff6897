"""Shared by the ladder's tests: the ladder fitted on windows the way ``adapt`` fits it (no prior, no sleep)."""

from __future__ import annotations

from typing import Any

import numpy as np

from passport_kit.onboard.fitting import FitData
from passport_kit.onboard.ladder import LadderFit, fit_ladder
from passport_kit.onboard.ladder_inputs import LadderData


def stage_runs(rng: np.random.Generator, n_nights: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Return labels ``(n_nights * n,)`` of 5 stages in runs (a change with probability 0.1 per epoch) and each
    epoch's night."""
    ys, recs = [], []
    for night in range(n_nights):
        stage, seq = 0, []
        for _ in range(n):
            if rng.random() < 0.1:
                stage = int(rng.integers(0, 5))
            seq.append(stage)
        ys += seq
        recs += [f"n{night}"] * n
    return np.asarray(ys), np.asarray(recs)


def fit_read_out_ladder(model: Any, x: np.ndarray, y: np.ndarray, meta: Any, classes: list[str], rows: np.ndarray,
                        groups: np.ndarray, *, recordings: np.ndarray | None = None, lpft: Any = None,
                        **options: Any) -> LadderFit:
    """Return :func:`fit_ladder` on ``rows`` with a classification task's ladder data (``options``: LadderData's)."""
    rec = np.asarray(recordings if recordings is not None else groups)

    def data(plain: dict[str, np.ndarray], r: np.ndarray) -> LadderData:
        return LadderData(plain=plain, y=np.asarray(y)[r], groups=np.asarray(groups)[r], recordings=rec[r],
                          classes=classes, d_model=model.head.d_model, **options)

    return fit_ladder(model, FitData(x, y, meta, classes), rows, data, lpft=lpft)
