"""Quality-gated expert mixture: a bad channel's embedding stops claiming to be a good one.

The paper's Device Passport lost to ACPE on the EESM17 subjects with poor electrode contact:
the activity summary z_c of a bad channel steers its expert mixture to a confident, wrong code.
With the gate on, each window's channel quality q_c in [0, 1]
(:func:`passport_kit.signals.quality.window_scores`: flat, variance against the other
channels, correlation with neighbours; 1 = good) blends the mixture toward a learned noise
expert n::

    e_c' = q_c · e_c + (1 - q_c) · n

A channel that scores 1 keeps its code exactly (clean data is unchanged); a clearly bad one
gets n. The scores are data, not model work: the data pipeline computes them from the batch it
feeds the model (:func:`passport_kit.engine.forward.gate_meta`, which ``adapt``, ``evaluate``
and ``predict`` all go through) and hands them in with the channel metadata
(``ChannelMeta.quality``), so the model imports nothing from ``signals``. n is an adapter
tensor (``patch_embedding.positional_encoding.noise_expert``, trained under the ``adapter``
policy, stored in the bundle only); base checkpoints never hold it.
"""

from __future__ import annotations

from torch import nn

from passport_kit.errors import ConfigError
from passport_kit.model.channel_embedding import NOISE_EXPERT, _ExpertEmbedding
from passport_kit.model.config import EXPERT_KINDS


def enable_quality_gate(backbone: nn.Module) -> bool:
    """Return True after adding the noise expert; False if already on.

    ``backbone`` is a Backbone with an expert-kind embedding (ConfigError otherwise). Re-apply
    the freezing policy afterwards: the new tensor is not yet in any optimizer.
    """
    embedding = backbone.channel_embedding
    if not isinstance(embedding, _ExpertEmbedding):
        raise ConfigError(f"the quality gate needs an expert-kind checkpoint ({', '.join(EXPERT_KINDS)}); this one "
                          f"uses '{embedding.kind}' - drop --quality-gate or choose another checkpoint")
    return embedding.add_noise_expert()


def gate_classifier(classifier: nn.Module, policy: str) -> bool:
    """Return True after enabling the gate on ``classifier``'s backbone and re-applying ``policy``.

    The noise expert is a new tensor, so the freezing policy is applied (and checked) again to
    make it trainable under ``adapter``; False (nothing changed) if the gate was already on.
    """
    from passport_kit.model.policy import apply_policy, check_policy

    if not enable_quality_gate(classifier.backbone):  # type: ignore[arg-type]
        return False
    apply_policy(classifier, policy)
    check_policy(classifier, policy)
    return True


def has_quality_gate(backbone: nn.Module) -> bool:
    """Return whether ``backbone``'s channel embedding carries the noise expert (a module without one: no gate)."""
    return hasattr(getattr(backbone, "channel_embedding", None), NOISE_EXPERT)


__all__ = ["enable_quality_gate", "gate_classifier", "has_quality_gate"]
