"""The registry of channel embedding kinds (DESIGN.md §4): names and what each reads, without torch.

Torch-free so that the CLI can list the kinds in its help without importing the model;
:mod:`passport_kit.model.config` re-exports it, and each kind's module
(:mod:`passport_kit.model.channel_embedding`) is found by its name here.

>>> from passport_kit.embedding_kinds import EMBEDDING_KINDS
>>> EMBEDDING_KINDS[:2]
('ape', 'channel-id')
"""

from __future__ import annotations

from dataclasses import dataclass

from passport_kit.errors import ConfigError
from passport_kit.registry import Registry


@dataclass(frozen=True)
class EmbeddingKindSpec:
    """One channel embedding kind (DESIGN.md §4): its name, what it is, and what it reads.

    ``positions``: the kind reads electrode positions, so every montage channel needs one;
    ``experts``: a Device Passport kind (a frozen expert bank and a trainable mixture adapter,
    the kinds ``pretrain --init-from`` grows and the quality gate applies to).
    """

    name: str
    summary: str
    positions: bool = False
    experts: bool = False


#: The registry of channel embedding kinds: each is named here once (an unknown kind: a ConfigError naming them).
EMBEDDINGS: Registry[EmbeddingKindSpec] = Registry("channel embedding", unknown=ConfigError)
for _spec in (
    EmbeddingKindSpec("ape", "sinusoidal by channel index"),
    EmbeddingKindSpec("channel-id", "learned vector looked up by channel name"),
    EmbeddingKindSpec("xyz", "sinusoidal per axis of the electrode position", positions=True),
    EmbeddingKindSpec("acpe", "CBraMod's depthwise convolution over the channel x patch grid"),
    EmbeddingKindSpec("mlp-experts", "Device Passport: softmax mixture of experts from activity and position",
                      positions=True, experts=True),
    EmbeddingKindSpec("xattn-experts", "Device Passport: cross-attention over experts from activity and position",
                      positions=True, experts=True),
):
    EMBEDDINGS.add(_spec.name, _spec)
EMBEDDING_KINDS: tuple[str, ...] = tuple(EMBEDDINGS)
#: The Device Passport kinds (an expert bank and a mixture adapter).
EXPERT_KINDS: tuple[str, ...] = tuple(k for k, spec in EMBEDDINGS.items() if spec.experts)
