"""predict's options, one model per concern: how each recording is read, what is written, the contact thresholds,
how the model runs, and a scorer's labels to compare with.

Each is checked when it is built, so a bad value is one line before any file is read. The
CLI's options (``cli/onboard.py``) and the keywords of :func:`passport_kit.predict`
(:mod:`passport_kit.inference.keywords`, whose signature is generated from these fields) put
their values here; the workflow (:func:`passport_kit.inference.predict.predict`) takes the
objects. No torch: a notebook or the CLI builds its options without loading a model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from passport_kit.contacts import THRESHOLDS, ContactPolicy, check_threshold
from passport_kit.errors import ConfigError
from passport_kit.reports import PLOT_FORMATS

if TYPE_CHECKING:  # pragma: no cover - the labels arrive as an array, made where they are read
    import numpy as np


class ReadOptions(BaseModel):
    """How predict reads each recording: channel names, header corrections, band and the amplitude check."""

    model_config = ConfigDict(frozen=True)

    h_freq: float | None = Field(None, description="Band-pass top in Hz instead of the bundle's (the one adapt "
                                 "trained with); without it, a recording sampled too slowly for that top gets one "
                                 "below its Nyquist frequency, with a warning (each summary's preprocessing says the "
                                 "band used).")
    amplitude_check: bool = Field(True, description="Refuse recordings whose channels are all flat or whose 1-40 Hz "
                                  "amplitude is 30x off the adapter's training data (a unit error in the header), "
                                  "and withhold the statistics of recordings unlike its training data.")
    renames: dict[str, str] | None = Field(None, description="Montage channel -> its name in the recordings, for a "
                                           "channel whose name neither the montage nor its aliases know (on the "
                                           "command line once per channel).")
    sfreq: float | None = Field(None, description="Sampling rate in Hz of recordings whose format stores none "
                                "(DREAMS text, CSV without timestamps); checked against the file's where it has one.")
    units: str | None = Field(None, description="Unit of the recordings' numbers where the header is wrong or "
                              "unknown to MNE: uV, mV, V or nV (EDF/BDF, text, CSV, arrays).")
    scale: float | None = Field(None, description="A factor for every sample after reading (any format).")


class OutputOptions(BaseModel):
    """What predict writes besides the reports every recording gets, and what it does with folders ``out`` holds."""

    model_config = ConfigDict(frozen=True)

    edf_annotations: bool = Field(False, description="Also write <stem>_annotations.edf: the predictions as an "
                                  "annotation-only EDF+ that opens next to the recording in EDFbrowser.")
    overwrite: bool = Field(False, description="Replace the output folders of recordings the output folder already "
                            "holds predictions for (default: refuse them, before any work).")
    resume: bool = Field(False, description="Keep the recordings the output folder already holds finished "
                         "predictions for (an interrupted run) and predict only the others; either way, what a killed "
                         "run left half-written is removed first.")
    plot_format: Literal["png", "svg", "pdf"] = Field("png", description="Format of the hypnogram plot "
                                                      "(<stem>_hypnogram.<format>); svg and pdf are vector graphics.")

    @field_validator("plot_format", mode="before")
    @classmethod
    def _known_format(cls, value: Any) -> Any:
        # A ConfigError is not a ValueError, so pydantic passes it on as is: the option's one line.
        if value not in PLOT_FORMATS:
            raise ConfigError(f"plot_format (--plot-format) must be one of {', '.join(PLOT_FORMATS)}, "
                              f"got {value!r}")
        return value


def _bundle_or(key: str) -> str:
    """Return the description of predict's contact threshold ``key``: ContactPolicy's, and its 'bundle' default."""
    text = str(ContactPolicy.model_fields[key].description)
    return f"{text[0].upper()}{text[1:]}. 'bundle' (default): the value adapt trained with (training in adapter.json)."


class ContactOptions(BaseModel):
    """Predict's contact thresholds (:class:`~passport_kit.contacts.ContactPolicy`'s), each a value in (0, 1), None
    (off), or ``"bundle"``: the one the adapter was trained with (``training`` in its adapter.json)."""

    model_config = ConfigDict(frozen=True)

    mask_bad_channels: float | None | Literal["bundle"] = Field("bundle", description=_bundle_or(
        "mask_bad_channels"))
    distrust_bad_channels: float | None | Literal["bundle"] = Field("bundle", description=_bundle_or(
        "distrust_bad_channels"))
    mask_uncorrelated_channels: float | None | Literal["bundle"] = Field("bundle", description=_bundle_or(
        "mask_uncorrelated_channels"))

    @model_validator(mode="after")
    def _in_range(self) -> ContactOptions:
        # A bad option fails when it is given, not after the bundle is loaded (ConfigError passes pydantic as is).
        for key in THRESHOLDS:
            if getattr(self, key) != "bundle":
                check_threshold(key, getattr(self, key))
        return self

    def policy(self, training: dict[str, Any], *, adapter: str | Path, reads_activity: bool) -> ContactPolicy:
        """Return the policy predict applies: the adapter's ``training`` thresholds, these replacing those not
        ``"bundle"``, for a model whose channel codes do or do not read channel activity."""
        return ContactPolicy.of_bundle(training, adapter=adapter).given(**self.model_dump()).for_model(reads_activity)


class RunOptions(BaseModel):
    """How predict runs the adapter: its base checkpoint, the forward passes, and reading the next recording ahead."""

    model_config = ConfigDict(frozen=True)

    base: str | Path | None = Field(None, description="Base checkpoint to use instead of the one the bundle "
                                    "records (its SHA-256 must still match).")
    batch_size: int = Field(32, description="Windows per forward pass (the predictions do not depend on it).")
    device: str = Field("auto", description="Device: auto (CUDA where available), cpu or cuda.")
    precision: str = Field("auto", description="Precision: auto (bf16 where the hardware runs it fast), fp32 or "
                           "bf16.")
    prefetch: bool = Field(True, description="Read and preprocess the next recording in a worker thread while the "
                           "current one is scored; each recording is read once either way.")

    @field_validator("batch_size")
    @classmethod
    def _at_least_one(cls, value: int) -> int:
        if value < 1:  # a ConfigError, not a ValueError: pydantic passes it on as the option's one line
            raise ConfigError(f"batch_size (--batch-size) must be at least 1, got {value}")
        return value


@dataclass(frozen=True)
class ScorerLabels:
    """A scorer's labels of a recording, one class index per predicted window (-1: none), and their file."""

    labels: np.ndarray
    file: Path


class ScorerFiles(BaseModel):
    """A scorer's label files, one per recording in the order of the recordings, and how to read them."""

    model_config = ConfigDict(frozen=True)

    labels: list[Path] | None = Field(None, description="A scorer's label file per recording, in the order of the "
                                      "recordings (on the command line once per file): each summary gets the scorer's agreement (kappa, accuracy, the "
                                      "confusion table) and the hypnogram shows the scorer's under the prediction.")
    label_map: str | None = Field(None, description="How to read the label files: aasm, rk (R&K numbers, one per "
                                  "5 s, as DREAMS) or eesm (default: stage or class names).")

    def of(self, files: Sequence[Path]) -> dict[Path, Path]:
        """Return each recording's label file (none without labels); a count other than ``files``' is a ConfigError."""
        if self.labels is None:
            return {}
        if len(self.labels) != len(files):
            raise ConfigError(f"give one --labels file per recording, in the same order: {len(files)} recording(s), "
                              f"{len(self.labels)} label file(s)")
        return dict(zip(files, self.labels))

    def read(self, file: Path | None, classes: list[str], *, n_windows: int,
             window_seconds: float) -> ScorerLabels | None:
        """Return the labels of ``file`` on the grid of ``n_windows`` predicted windows (None without a file)."""
        if file is None:
            return None
        from passport_kit.inference.agreement import scorer_labels

        return ScorerLabels(scorer_labels(file, classes, n_windows=n_windows, window_seconds=window_seconds,
                                          label_map=self.label_map), file)
