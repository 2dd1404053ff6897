"""Upcycling: an expert bank grown around another base checkpoint's backbone (``pretrain --init-from``).

A user with the official CBraMod weights (imported as an `acpe` base) gets a Device Passport
base without re-pretraining the backbone: the patch embedding, the criss-cross encoder and
the reconstruction head are taken from the source checkpoint tensor for tensor (a strict
load: every one present with its shape, nothing left over), a fresh `mlp-experts` or
`xattn-experts` channel embedding is built around them, and masked patch reconstruction
trains either the bank and its mixture network alone (``train="experts"``: every source tensor
frozen and kept bit for bit) or everything (``train="all"``).

Temporal position: an `acpe` backbone learned time from its convolution, not from a
sinusoid. By default the new embedding keeps that convolution (frozen under
``train="experts"``) and adds the expert mixture on top (``temporal_position="acpe-conv"``);
``"sinusoid"`` replaces it by the fixed patch-index sinusoid of the expert kinds. Why the
default, with the measurement: docs/model.md.
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import Tensor

from passport_kit.checkpoint import BaseCheckpointInfo, InitSource, compare_tensors, load_base_checkpoint, load_strict
from passport_kit.errors import CheckpointError, ConfigError
from passport_kit.model import Backbone, build_backbone
from passport_kit.model.config import EXPERT_KINDS, ModelConfig, parse_model_config

TrainedPart = Literal["experts", "all"]
#: Where every channel embedding lives in a backbone's state dict.
EMBEDDING_PREFIX = "patch_embedding.positional_encoding."
#: The kept ACPE convolution's names (CBraMod's, in `acpe` and in an expert kind that keeps it).
ACPE_CONV_TENSORS = (EMBEDDING_PREFIX + "0.weight", EMBEDDING_PREFIX + "0.bias")


def read_source(name_or_path: str) -> tuple[BaseCheckpointInfo, dict[str, Tensor]]:
    """Return a source checkpoint's info and tensors (SHA-256 checked, loaded strictly)."""
    backbone, info = load_base_checkpoint(name_or_path)
    return info, {name: t.detach().clone() for name, t in backbone.state_dict().items()}


def require_expert_kind(embedding: str) -> None:
    """Raise ConfigError unless ``embedding`` is a kind that upcycling can grow (an expert kind)."""
    if embedding not in EXPERT_KINDS:
        raise ConfigError(
            f"--init-from grows an expert bank, so --embedding must be one of {list(EXPERT_KINDS)}, not "
            f"{embedding!r}; to train another kind, pretrain from scratch without --init-from"
        )


def upcycled_config(
    source: ModelConfig,
    embedding: str,
    *,
    temporal_position: str | None = None,
    arch: str | None = None,
    dropout: float | None = None,
) -> ModelConfig:
    """Return the architecture of the upcycled backbone: the source's, with an expert embedding.

    ``arch`` (when the user named one) must be the source's; ``temporal_position`` None keeps an
    `acpe` source's convolution and gives any other source the sinusoid.
    """
    require_expert_kind(embedding)
    if arch is not None and arch != source.arch:
        raise ConfigError(
            f"--config {arch} does not match the source checkpoint's architecture {source.arch} "
            f"({source.n_layers} layers); drop --config, the backbone's architecture comes from --init-from"
        )
    if temporal_position is None:
        temporal_position = "acpe-conv" if source.embedding == "acpe" else "sinusoid"
    if temporal_position == "acpe-conv" and source.embedding != "acpe":
        raise ConfigError(
            f"--temporal-position acpe-conv keeps an `acpe` backbone's convolution, but the source uses "
            f"{source.embedding!r}; use --temporal-position sinusoid"
        )
    fields = source.model_dump() | {"embedding": embedding, "temporal_position": temporal_position,
                                    "channel_vocab": []}
    if dropout is not None:
        fields["dropout"] = dropout
    return parse_model_config(fields)


def imported_tensor_names(backbone: Backbone) -> list[str]:
    """Return the names of ``backbone``'s state dict that come from the source checkpoint.

    Everything outside the channel embedding, plus the kept ACPE convolution.
    """
    kept_conv = backbone.config.temporal_position == "acpe-conv"
    return [name for name in backbone.state_dict()
            if not name.startswith(EMBEDDING_PREFIX) or (kept_conv and name in ACPE_CONV_TENSORS)]


def build_upcycled(info: BaseCheckpointInfo, tensors: dict[str, Tensor], config: ModelConfig) -> Backbone:
    """Return a backbone for ``config`` whose imported tensors are the source's (strictly).

    The source must provide every imported tensor with its shape; its own channel embedding is
    dropped (except a kept ACPE convolution). The experts start at **zero** (the mixture keeps
    its usual initialisation; seed the global generator first for reproducible runs): with the
    kept convolution the upcycled model then starts as exactly the source model, and the bank
    grows from there. Measured against the kind's usual std-1 start, which perturbs the frozen
    encoder's input at once: docs/model.md.
    """
    backbone = build_backbone(config)
    with torch.no_grad():
        backbone.channel_embedding.experts.zero_()
    state = backbone.state_dict()
    imported = imported_tensor_names(backbone)
    offered = {name: t for name, t in tensors.items()
               if not name.startswith(EMBEDDING_PREFIX) or name in imported}
    report = compare_tensors({name: state[name] for name in imported}, offered)
    if not report.ok:
        raise CheckpointError(
            f"the backbone of checkpoint '{info.name}' does not fit a {config.arch} backbone: {report.summary()} "
            "- give a base checkpoint of the same architecture"
        )
    load_strict(backbone, state | offered, what=f"checkpoint '{info.name}' ({info.path})")
    return backbone


def freeze_for(backbone: Backbone, train: TrainedPart) -> list[str]:
    """Return the sorted names of the tensors left frozen after setting ``requires_grad`` for ``train``.

    ``experts``: only the expert bank, its keys and the mixture network train; ``all``: everything.
    Frozen modules go to ``eval()`` when the model is put in training mode (:class:`FrozenStaysEval`),
    so the frozen encoder computes its features without dropout, as it would downstream.
    """
    trainable = {name for name, _ in backbone.named_parameters()}
    if train == "experts":
        trainable = {EMBEDDING_PREFIX + name for name in backbone.channel_embedding.bank_parameter_names()}
    for name, param in backbone.named_parameters():
        param.requires_grad_(name in trainable)
    backbone.train(backbone.training)
    return sorted(name for name in backbone.state_dict() if name not in trainable)


def init_source_record(info: BaseCheckpointInfo, config: ModelConfig, train: TrainedPart,
                       frozen: list[str]) -> InitSource:
    """Return what ``config.json`` of the upcycled checkpoint records about its source."""
    return InitSource(name=info.name, sha256=info.weights_sha256, embedding=info.model.embedding,
                      trained=train, temporal_position=config.temporal_position, frozen_tensors=frozen)


def changed_tensors(before: dict[str, Tensor], after: dict[str, Tensor], names: list[str]) -> list[str]:
    """Return the names among ``names`` whose tensors differ between ``before`` and ``after`` (bit for bit)."""
    return [name for name in names if not torch.equal(before[name].cpu(), after[name].cpu())]
