"""Physics-based sleep-EEG simulator: dipoles in a four-shell spherical head, seen by any montage.

``simulate_dataset`` writes a dataset folder (EDF + per-epoch labels + ``dataset.yaml``);
``simulate_recording`` returns one night as an array. The model is described in
``docs/simulator.md``; modules follow the data flow: :mod:`.hypnogram` (stages),
:mod:`.profile` (subjects), :mod:`.sources` and :mod:`.dynamics` (the brain),
:mod:`.head_model` (volume conduction), :mod:`.electrodes` and :mod:`.artifacts` (contacts),
:mod:`.recording` (one night), :mod:`.writer` and :mod:`.simulate` (files).
"""

from __future__ import annotations

from passport_kit.signals.simulator.recording import SimulatedRecording, simulate_recording
from passport_kit.signals.simulator.simulate import (
    BadChannel,
    SimulationConfig,
    parse_bad_channels,
    simulate_dataset,
    simulation_config,
)

__all__ = [
    "BadChannel",
    "SimulatedRecording",
    "SimulationConfig",
    "parse_bad_channels",
    "simulate_dataset",
    "simulate_recording",
    "simulation_config",
]
