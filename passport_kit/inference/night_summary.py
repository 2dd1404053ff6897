"""``<stem>_summary.json``, typed: what predict says about one recording, as :class:`NightSummary`.

The night report (:mod:`passport_kit.inference.night_report`) builds it and writes it; the CLI
prints from its attributes; a resumed run reads it back (``inference.files.finished_result``);
docs/formats.md describes it from its JSON schema (``scripts/formats_doc.py``). The blocks
that are documents of their own (the sleep statistics, channel quality, the distribution check,
the preprocessing, a scorer's agreement) stay JSON objects here, described by their field.

A key is written only where it applies (``zero_shot`` for a stager alone, ``sleep_statistics``
for a staged night, ``recording_class`` for a classification, ...): the fields given when it is
built, in the order declared. Keys a later version adds are kept when one is read back.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class NightSummary(BaseModel):
    """What predict says about one recording: ``<stem>_summary.json``."""

    model_config = ConfigDict(extra="allow")

    recording: str = Field(description="The recording file (or the name of a recording given in memory).")
    start: str | None = Field(None, description="Its first sample's date and time (ISO 8601), where the file has one.")
    adapter: str = Field(description="The adapter bundle folder that staged it, or zero-shot:<stager> for a stager "
                                     "alone.")
    base_checkpoint: str = Field("", description="The adapter's base checkpoint (a stager alone: its name and "
                                                 "licence).")
    task: str = Field("", description="sleep-staging or classification ('' for bundles older than the field).")
    classes: list[str] = Field(description="The class names, in the order of the CSV's p_<class> columns.")
    n_windows: int = Field(0, description="Windows predicted.")
    window_seconds: float = Field(30.0, description="Seconds per window.")
    flagged_windows: int = Field(0, description="Windows a quality check flagged (half the channels bad or with a "
                                                "signal flag, a band too narrow, a stager's dead channel).")
    class_counts: dict[str, int] = Field({}, description="Windows per predicted class.")
    mean_confidence: float | None = Field(None, description="Mean top probability over the windows (null: none).")
    low_confidence_windows: int = Field(0, description="Windows whose top probability is under "
                                                       "low_confidence_below.")
    low_confidence_below: float = Field(0.0, description="The top probability under which a window is low "
                                                         "confidence: a third of the way from chance to certainty "
                                                         "for sleep staging.")
    distribution: dict[str, Any] | None = Field(None, description="How far the recording lies from the adapter's "
                                                                  "training data (with the amplitude check on).")
    classes_not_learned: list[str] = Field([], description="Classes the adapter cannot output: no training window, "
                                                           "no stager reaching them.")
    classes_without_training_windows: list[str] = Field([], description="Classes without a training window.")
    classes_from_stager_alone: list[str] = Field([], description="Classes without a training window that the "
                                                                 "adapter outputs all the same, from its stacked "
                                                                 "sleep stager (unchecked against the labels).")
    zero_shot: dict[str, str | None] | None = Field(None, description="A stager alone: the stager and the montage "
                                                                      "channels it read (eeg, eog, emg; "
                                                                      "<role>_in_file where the file names them "
                                                                      "otherwise).")
    in_sample: bool = Field(False, description="The recording is among the adapter's training data.")
    scorer_agreement: dict[str, Any] | None = Field(None, description="With --labels: kappa, accuracy and the "
                                                                      "confusion table against the scorer.")
    validation: dict[str, Any] | None = Field(None, description="With --labels, sleep staging: the validation "
                                                                "report's numbers of this night.")
    preprocessing: dict[str, Any] = Field({}, description="The preprocessing the recording got (rate, band, notch, "
                                                          "window).")
    channel_quality: dict[str, Any] | None = Field(None, description="Bad channels, quality scores, masked, "
                                                                     "distrusted and dead channel-windows.")
    statistics_meaningful: bool = Field(True, description="False for statistics of a recording shorter than 2 h "
                                                          "(or withheld).")
    statistics_note: str | None = Field(None, description="Why the statistics are not meaningful.")
    sleep_statistics: dict[str, Any] | None = Field(None, description="Sleep staging: the AASM statistics (TST, SE, "
                                                                      "SOL, LPS, WASO, REM_latency, stage minutes "
                                                                      "and shares); null when withheld.")
    caveat: str | None = Field(None, description="Sleep staging: what automatic staging is and is not.")
    recording_class: str | None = Field(None, description="Classification: the recording's class (mean probability "
                                                           "over windows); null when withheld.")
    recording_probabilities: dict[str, float] | None = Field(None, description="Classification: the mean "
                                                                               "probability of each class.")
    statistics_withheld: str | None = Field(None, description="Why the statistics (or the recording's class) are "
                                                              "withheld: most windows unreliable, a band too narrow, "
                                                              "unlike the training data; null: they are not.")
    staged_live: dict[str, Any] | None = Field(None, description="A night staged live from an LSL stream "
                                                                 "(`passport-kit stream`): the stream, its channels, "
                                                                 "the look-ahead and history in epochs, the night "
                                                                 "smoothing, the gaps and the delay from an epoch's "
                                                                 "last sample to its stage.")

    @property
    def staged(self) -> bool:
        """Return whether the recording was staged as a night (sleep statistics), not classified."""
        return "sleep_statistics" in self.model_fields_set

    def to_json(self) -> dict[str, Any]:
        """Return the summary as written: the keys given, in the order declared (then any a later version added)."""
        return self.model_dump(exclude_unset=True)

    @classmethod
    def read(cls, path: Path) -> NightSummary:
        """Return the summary of a ``<stem>_summary.json``."""
        return cls.model_validate(json.loads(path.read_text(encoding="utf-8")))

    # A notebook's summary["sleep_statistics"]["TST"], from before the summary was typed, still reads it.
    def __getitem__(self, key: str) -> Any:
        if key not in self.model_fields_set and key not in (self.model_extra or {}):
            raise KeyError(key)
        return getattr(self, key)

    def __contains__(self, key: object) -> bool:
        return key in self.model_fields_set or key in (self.model_extra or {})

    def get(self, key: str, default: Any = None) -> Any:
        """Return the value of key ``key`` as the JSON has it, else ``default`` (as a dict's ``get``)."""
        return self[key] if key in self else default


__all__ = ["NightSummary"]
