"""The model: CBraMod backbone, the six channel embeddings, heads and freezing policies.

>>> from passport_kit.model import ChannelMeta, build_backbone, model_config
>>> backbone = build_backbone(model_config("cbramod-tiny", "xyz"))
"""

from __future__ import annotations

from passport_kit.model.backbone import Backbone, build_backbone
from passport_kit.model.channel_embedding import ChannelEmbedding
from passport_kit.model.config import (
    ARCHITECTURES,
    EMBEDDING_KINDS,
    EMBEDDINGS,
    EXPERT_KINDS,
    PATCH_SAMPLES,
    EmbeddingKind,
    ModelConfig,
    model_config,
    parse_model_config,
)
from passport_kit.model.heads import ClassificationHead, Classifier
from passport_kit.model.meta import ChannelMeta
from passport_kit.model.policy import (
    POLICIES,
    Policy,
    apply_policy,
    check_policy,
    policy_of,
    policy_parameter_names,
    trainable_summary,
)

__all__ = [
    "ARCHITECTURES",
    "EMBEDDINGS",
    "EMBEDDING_KINDS",
    "EXPERT_KINDS",
    "PATCH_SAMPLES",
    "POLICIES",
    "Backbone",
    "ChannelEmbedding",
    "ChannelMeta",
    "ClassificationHead",
    "Classifier",
    "EmbeddingKind",
    "ModelConfig",
    "Policy",
    "apply_policy",
    "build_backbone",
    "check_policy",
    "model_config",
    "parse_model_config",
    "policy_of",
    "policy_parameter_names",
    "trainable_summary",
]
