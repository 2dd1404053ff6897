"""Signals: from recordings to model-ready windows ``(N, C, P, 200)``.

Read (MNE: EDF, BDF, FIF, EEGLAB, BrainVision; DREAMS text, CSV; BIDS through MNE-BIDS; an
``mne.io.Raw`` or ``(array, sfreq, ch_names)`` in memory) → map
channels onto a montage → preprocess (CBraMod contract: 200 Hz, 0.3–75 Hz, notch, µV/100) →
windows + quality flags → memory-mapped cache. See ``docs/data.md``.

Example::

    >>> from passport_kit.signals import PreprocessConfig, load_dataset
    >>> ws = load_dataset("my_dataset/", "tuh-standard", PreprocessConfig(notch_freq=60))  # doctest: +SKIP
"""

from __future__ import annotations

from passport_kit.signals.channels import channel_key, map_channels
from passport_kit.signals.dataset import WindowSet, load_dataset, load_recording
from passport_kit.signals.dataset_spec import DatasetSpec, RecordingSpec, load_dataset_spec
from passport_kit.signals.labels import BUILTIN_LABEL_MAPS, LabelMap, get_label_map
from passport_kit.signals.preprocess import PreprocessConfig, preprocess
from passport_kit.signals.quality import ChannelQuality, QualityThresholds, channel_quality, recording_quality, windows_quality
from passport_kit.signals.readers import raw_from_memory, read_csv_recording, read_recording
from passport_kit.signals.simulator import simulate_dataset
from passport_kit.signals.windows import make_windows

__all__ = [
    "BUILTIN_LABEL_MAPS",
    "ChannelQuality",
    "DatasetSpec",
    "LabelMap",
    "PreprocessConfig",
    "QualityThresholds",
    "RecordingSpec",
    "WindowSet",
    "channel_key",
    "channel_quality",
    "get_label_map",
    "load_dataset",
    "load_dataset_spec",
    "load_recording",
    "make_windows",
    "map_channels",
    "preprocess",
    "raw_from_memory",
    "read_csv_recording",
    "read_recording",
    "recording_quality",
    "simulate_dataset",
    "windows_quality",
]
