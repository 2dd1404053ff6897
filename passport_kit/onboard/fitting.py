"""What one fit reads, where it runs and what it gives back, and the words every fit shares.

The ladder's read-outs (:mod:`passport_kit.onboard.probe`), LP-FT (:mod:`passport_kit.onboard.lpft`), the
gradient training loop (:mod:`passport_kit.onboard.finetune`) and the recipes that call them
(:mod:`passport_kit.onboard.recipes`) speak of the same things: the windows and labels of a fit
(:class:`FitData`), where it runs and what it reports (:class:`FitRun`), its outcome (:class:`FitResult`),
what gradient training trains (:data:`TrainPolicy`) and how skewed classes are met (:data:`Balance`,
:func:`class_weights`). They live here, below all of them: the ladder, whose read-outs a solver fits, and the
recipes that only name a fit's data need not import the gradient loop to speak of it. How a model is chosen
(the selection metric, the rule a step up must clear) is :mod:`passport_kit.onboard.criteria`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch

from passport_kit.model.meta import ChannelMeta
from passport_kit.onboard.metrics import ClassificationMetrics
from passport_kit.runtime import Precision

#: What gradient training trains (the freezing policy, :func:`passport_kit.model.apply_policy`) and how it meets
#: skewed classes: a weighted loss, class-balanced sampling, or neither.
TrainPolicy = Literal["adapter", "head", "full"]
Balance = Literal["weights", "sampler", "none"]


@dataclass
class FitResult:
    """Outcome of one training run: best step, its validation metrics and the history."""

    best_step: int
    steps: int
    best_score: float | None
    validation: ClassificationMetrics | None
    history: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    stopped_early: bool = False


@dataclass(frozen=True)
class FitData:
    """The windows one fit reads, row by row: signals, labels, and what is known about each window's channels.

    Parameters
    ----------
    x : np.ndarray, shape (N, C, P, 200)
        Windows (a read-only memmap is fine: batches are read from it one at a time, so a
        dataset larger than memory is never copied whole).
    y : np.ndarray, shape (N,)
        Class indices (-1 = unlabeled; such windows must not be among the training rows); kept as int64.
    meta : ChannelMeta
        The channels of ``x``'s channel axis.
    classes : list[str]
        The class names, in index order.
    channel_mask : np.ndarray, shape (N, C) bool, optional
        Channels to replace by the mask token in each row of ``x``, in training and validation
        alike (the channels ``predict --mask-bad-channels`` would mask), so the model is trained
        the way it will be used.
    distrust : np.ndarray, shape (N, C) bool, optional
        Channels that keep their signal but not their say over their own channel code (expert
        kinds; ``predict --distrust-bad-channels``), in training and validation alike.
    sequence : np.ndarray, shape (N,), optional
        The recording of every row: each batch is then a run of consecutive windows of one recording
        (chunks of ``batch_size``, in a seeded order per epoch), as a probe head with temporal context
        reads them (LP-FT, :mod:`passport_kit.onboard.lpft`). None: windows drawn across recordings.
    """

    x: np.ndarray
    y: np.ndarray
    meta: ChannelMeta
    classes: list[str]
    channel_mask: np.ndarray | None = None
    distrust: np.ndarray | None = None
    sequence: np.ndarray | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "y", np.asarray(self.y, dtype=np.int64))


@dataclass(frozen=True)
class FitRun:
    """Where one fit runs and what it reports and keeps on the way (none of it is the recipe).

    ``state_path``: resumable training state, written at every evaluation; an existing file whose
    ``run_config`` equals this run's is resumed. ``progress(step, total_steps, info)`` is called after
    every step (progress bars, logs).
    """

    device: torch.device | None = None
    precision: Precision = "fp32"
    state_path: Path | None = None
    run_config: dict[str, Any] | None = None
    progress: Callable[[int, int, dict[str, Any]], None] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "device", self.device or torch.device("cpu"))  # None: the CPU


#: The largest class weight (issue 18: an uncapped 28x on a 5-window class turned most N2 and N3
#: epochs of a real night into that class).
MAX_CLASS_WEIGHT = 5.0


def class_weights(y: np.ndarray, n_classes: int, cap: float = MAX_CLASS_WEIGHT) -> np.ndarray:
    """Return inverse-frequency weights n / (k · count_c) capped at ``cap``, 0 for classes absent from ``y``."""
    counts = np.bincount(y[y >= 0], minlength=n_classes).astype(np.float64)
    present = counts > 0
    weights = np.zeros(n_classes)
    weights[present] = np.minimum(counts[present].sum() / (present.sum() * counts[present]), cap)
    return weights


__all__ = ["MAX_CLASS_WEIGHT", "Balance", "FitData", "FitResult", "FitRun", "TrainPolicy", "class_weights"]
