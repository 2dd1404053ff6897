"""Poor electrode contacts: one frozen :class:`ContactPolicy`, and the rule that turns quality scores into masks.

A loose ear-EEG plug or a lifted dry electrode shows in the raw recording's per-window channel
quality (:mod:`passport_kit.signals.quality`). What a run does about it is one policy, the same
in training (``adapt``, ``evaluate``) and at predict time:

- ``mask_bad_channels``: a channel scoring below this in a window is replaced by the mask token;
- ``mask_uncorrelated_channels``: also masked where its 1-40 Hz neighbour correlation is below
  this (its signal is noise, not a weak contact);
- ``distrust_bad_channels``: expert kinds keep the channel's signal, but its expert mixture reads
  the nearest good channel's activity instead of its own;
- ``quality_gate``: expert kinds gate each channel's code toward a learned noise expert by its
  score (:mod:`passport_kit.model.quality_gate`; the scores arrive with each batch).

``adapt`` stores its policy in the bundle (``adapter.json`` → ``training``: the run's
``AdaptConfig``, of which the policy is a part); ``predict`` uses it unless told otherwise
(:meth:`ContactPolicy.of_bundle`, :meth:`ContactPolicy.given`). The CLI options of ``adapt``,
``evaluate`` and ``predict`` are generated from the fields below. This module reads no files
and imports no torch: the CLI builds its options from it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:  # pragma: no cover - numpy is imported where the masks are made: the CLI imports this at startup
    import numpy as np

from passport_kit.errors import CheckpointError, ConfigError

#: Default ``distrust_bad_channels``: the quality score under which a channel counts as bad.
#: On by default (issue 8, docs/RESULTS.md § Robustness): it changes nothing where no channel is
#: flagged, and it kept Device Passport level with or ahead of ACPE on subjects with poor contacts.
DEFAULT_DISTRUST = 0.5
#: Default ``mask_uncorrelated_channels``: the 1–40 Hz neighbour correlation under which a
#: channel is noise rather than a weak contact (where the quality score's neighbour-correlation
#: sub-score reaches 0: ``QualityThresholds.min_corr - corr_width``). Chosen in session 5 (see
#: docs/RESULTS.md): with distrust it kept Device Passport level with or ahead of ACPE on
#: subjects with poor contacts on both robustness benchmarks, and changed nothing on clean data.
DEFAULT_UNCORRELATED = 0.2
#: The thresholds of a policy, each in (0, 1) or None (off).
THRESHOLDS = ("mask_bad_channels", "distrust_bad_channels", "mask_uncorrelated_channels")
#: What each threshold is, for the one-line error a value outside (0, 1) gives.
_WHAT = {"mask_bad_channels": "a quality score", "distrust_bad_channels": "a quality score",
         "mask_uncorrelated_channels": "a correlation"}
_HINT = {"mask_bad_channels": "0.5 is the score at which a channel counts as bad",
         "distrust_bad_channels": "0.5 is the score at which a channel counts as bad",
         "mask_uncorrelated_channels": "e.g. 0.2 (a channel sharing less with its neighbours is noise)"}


class ContactPolicy(BaseModel):
    """How poor electrode contacts are handled, in training and at predict time (frozen; module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    mask_bad_channels: float | None = Field(None, gt=0, lt=1, description="mask channels whose raw quality score is "
                                            "below this in a window, in training and at predict time; None: never")
    distrust_bad_channels: float | None = Field(DEFAULT_DISTRUST, gt=0, lt=1, description="expert kinds: channels "
                                                "whose raw quality score is below this in a window keep their "
                                                "signal, but their expert mixture reads the nearest good channel's "
                                                "activity instead of their own, in training and at predict time; "
                                                "None: never (the paper's recipe)")
    mask_uncorrelated_channels: float | None = Field(DEFAULT_UNCORRELATED, gt=0, lt=1, description="also mask a "
                                                     "channel in the windows where its 1-40 Hz correlation with its "
                                                     "neighbours is below this (its signal is noise), in training "
                                                     "and at predict time; None: never")
    quality_gate: bool = Field(False, description="expert kinds: gate each channel's code toward a learned noise "
                               "expert by its quality score")

    @property
    def scores_needed(self) -> bool:
        """Return whether any threshold is on, so the raw recordings must be scored."""
        return any(getattr(self, k) is not None for k in THRESHOLDS)

    @classmethod
    def of_bundle(cls, training: Mapping[str, Any], *, adapter: str | Path) -> ContactPolicy:
        """Return the policy an adapter was trained with, from ``adapter.json``'s ``training`` block.

        A threshold absent there (bundles older than it) is off; a stored value outside (0, 1)
        is a :class:`~passport_kit.errors.CheckpointError` naming the bundle and the key.
        """
        values: dict[str, Any] = {}
        for key in THRESHOLDS:
            stored = training.get(key)
            if stored is not None and not (isinstance(stored, (int, float)) and not isinstance(stored, bool)
                                           and 0.0 < stored < 1.0):
                raise CheckpointError(f"adapter.json in '{adapter}' has training.{key} = {stored!r}, not a value "
                                      f"in (0, 1); re-run adapt, or pass --{key.replace('_', '-')} explicitly")
            values[key] = None if stored is None else float(stored)
        return cls(**values, quality_gate=bool(training.get("quality_gate", False)))

    def given(self, **options: float | None | Literal["bundle"]) -> ContactPolicy:
        """Return this policy with every threshold in ``options`` that is not ``"bundle"`` replacing its own.

        ``None`` turns a threshold off; a value outside (0, 1) is a one-line
        :class:`~passport_kit.errors.ConfigError` naming its option.
        """
        changes = {}
        for key, value in options.items():
            if value == "bundle":
                continue
            check_threshold(key, value)
            changes[key] = None if value is None else float(value)
        return self.model_copy(update=changes)

    def for_model(self, reads_activity: bool) -> Self:
        """Return the policy a model applies: no distrust where its channel codes do not read channel activity.

        Distrust swaps the activity a channel's expert mixture reads; position kinds
        (``ChannelEmbedding.reads_activity`` False) read none, so for them it is off: the one
        place this rule is written, for adapt, evaluate and predict.
        """
        return self if reads_activity else self.model_copy(update={"distrust_bad_channels": None})

    def masks(self, quality: Any, onsets_s: np.ndarray,
              window_seconds: float) -> tuple[np.ndarray | None, np.ndarray | None]:
        """Return the ``(N, C)`` channels to mask and to distrust in windows at ``onsets_s`` (None: off).

        ``quality`` is the raw recording's ChannelQuality (:func:`channel_masks`).
        """
        return channel_masks(quality, onsets_s, window_seconds, mask_below=self.mask_bad_channels,
                             distrust_below=self.distrust_bad_channels, mask_uncorrelated=self.mask_uncorrelated_channels)


def check_threshold(key: str, value: float | None) -> None:
    """Raise a one-line ConfigError naming option ``--<key>`` unless ``value`` is None or in (0, 1)."""
    if value is not None and not 0.0 < float(value) < 1.0:
        raise ConfigError(f"--{key.replace('_', '-')} takes {_WHAT[key]} between 0 and 1 (exclusive), got "
                          f"{float(value):g}; {_HINT[key]}")


def channel_masks(quality: Any, onsets_s: np.ndarray, window_seconds: float, *, mask_below: float | None = None,
                  distrust_below: float | None = None,
                  mask_uncorrelated: float | None = None) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Return the ``(N, C)`` channels to mask and to distrust in each predicted window (None: option off).

    ``quality`` is the raw recording's :class:`~passport_kit.signals.quality.ChannelQuality`.
    Masked: quality score below ``mask_below``, or 1–40 Hz neighbour correlation below
    ``mask_uncorrelated`` where that correlation is scored (never for a bipolar channel or one
    without near neighbours: ``ChannelQuality.window_neighbour_corr``); a window in
    which every channel would be masked is left as it is. Distrusted: score below
    ``distrust_below``. This is the one rule of training (``adapt``) and ``predict``.
    """
    import numpy as np

    masked = None
    if mask_below is not None:
        masked = quality_mask(quality.window_score, onsets_s, window_seconds, mask_below)
    if mask_uncorrelated is not None:
        corr = np.nan_to_num(quality.window_neighbour_corr, nan=1.0)
        lonely = quality_mask(corr, onsets_s, window_seconds, mask_uncorrelated)
        masked = lonely if masked is None else masked | lonely
        masked[masked.all(axis=1)] = False
    distrusted = None
    if distrust_below is not None:
        distrusted = quality_mask(quality.window_score, onsets_s, window_seconds, distrust_below)
    return masked, distrusted


def quality_mask(window_score: np.ndarray, onsets_s: np.ndarray, window_seconds: float,
                 threshold: float) -> np.ndarray:
    """Return ``(N, C)`` bool: the channels to mask in each predicted window (score below ``threshold``).

    ``window_score`` ``(Nq, C)`` are the quality windows of the raw recording, which start at
    its first sample as the predicted windows do; ``onsets_s`` ``(N,)`` places each predicted
    window on that grid. A window whose channels are all below the threshold is not masked:
    with every channel masked the model would see no signal at all.
    """
    import numpy as np

    slots = np.round(np.asarray(onsets_s, dtype=np.float64) / window_seconds).astype(np.int64)
    mask = np.zeros((len(slots), window_score.shape[1]), dtype=bool)
    inside = (slots >= 0) & (slots < window_score.shape[0])
    mask[inside] = window_score[slots[inside]] < threshold
    mask[mask.all(axis=1)] = False
    return mask


__all__ = ["DEFAULT_DISTRUST", "DEFAULT_UNCORRELATED", "THRESHOLDS", "ContactPolicy", "channel_masks",
           "check_threshold", "quality_mask"]
