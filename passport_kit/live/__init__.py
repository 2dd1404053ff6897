"""Live staging: a device's Lab Streaming Layer (LSL) stream staged epoch by epoch, as ``predict`` stages a file.

:mod:`~passport_kit.live.prediction` runs predict's pipeline on the stream's recent samples (the
one module that calls prediction); :mod:`~passport_kit.live.causal` stages epochs causally
(the night smoothing as a forward filter), live and from a file alike;
:mod:`~passport_kit.live.stream` reads the stream through ``mne-lsl``, writes the growing
outputs and an outlet of the stages, and the night report at the end;
:mod:`~passport_kit.live.lsl_scope` keeps liblsl's discovery on this machine where asked;
:mod:`~passport_kit.live.replay` plays a recording as a stream (tests, benchmarks, trying a set-up).
"""

from passport_kit.live.causal import CausalSettings, CausalStager, StagedEpoch, stage_recording_causally
from passport_kit.live.prediction import EpochScorer, adapter_scorer, zero_shot_scorer

__all__ = ["CausalSettings", "CausalStager", "EpochScorer", "StagedEpoch", "adapter_scorer",
           "stage_recording_causally", "zero_shot_scorer"]
