"""Pretraining: a base checkpoint by masked reconstruction, from scratch or grown around another base.

- :mod:`~passport_kit.pretrain.run`: the pretraining run (``pretrain(PretrainConfig) -> Path``).
- :mod:`~passport_kit.pretrain.config`: ``PretrainConfig``, every setting of a run (torch-free: the CLI's options).
- :mod:`~passport_kit.pretrain.objective`: the objective the run trains (masked reconstruction) and its interface.
- :mod:`~passport_kit.pretrain.corpus`: the corpus of windows, memory-mapped shards by montage.
- :mod:`~passport_kit.pretrain.loader`: batches of one montage each, with worker processes.
- :mod:`~passport_kit.pretrain.log`: the metrics log and the progress line.
- :mod:`~passport_kit.pretrain.card`: ``MODEL_CARD.md`` and the training record of ``config.json``.
- :mod:`~passport_kit.pretrain.upcycle`: an expert bank grown around a frozen imported backbone.
- :mod:`~passport_kit.pretrain.distributed`: several processes (``torchrun``), rank 0 writes.

Pretraining never imports onboarding (:mod:`passport_kit.onboard`); what both use (training state,
input corruption, the forward pass) lives in :mod:`passport_kit.engine`.
"""
