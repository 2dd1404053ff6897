"""What pretraining, onboarding and prediction share to run a model: the floor under all three.

- :mod:`~passport_kit.engine.forward`: the forward pass in batches (``predict_proba``), the quality
  gate's per-window scores (``gate_meta``) and a probe head's inputs (``read_out_features``).
- :mod:`~passport_kit.engine.corruption`: synthetic channel faults and channel dropout for training.
- :mod:`~passport_kit.engine.state`: resumable training state (model, optimiser, random generators).

It imports none of :mod:`passport_kit.pretrain`, :mod:`passport_kit.onboard` (onboarding) and
:mod:`passport_kit.inference` (prediction).
"""
