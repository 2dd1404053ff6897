"""Architecture description of a backbone: the named configurations and their pydantic model.

A :class:`ModelConfig` is everything needed to rebuild a backbone before its weights are
loaded; it is stored verbatim in ``config.json`` of every base checkpoint (DESIGN.md §5).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

# The registry of kinds is torch-free, for the CLI's help (passport_kit/embedding_kinds.py); re-exported here.
from passport_kit.embedding_kinds import EMBEDDING_KINDS, EMBEDDINGS, EXPERT_KINDS, EmbeddingKindSpec  # noqa: F401
from passport_kit.errors import ConfigError, validation_problem

EmbeddingKind = Literal[EMBEDDING_KINDS]  # type: ignore[valid-type]  # Literal["ape", "channel-id", ...]
#: How a kind other than `acpe` encodes the patch index: the fixed sinusoid, or the depthwise
#: ACPE convolution kept from an imported backbone (``pretrain --init-from``; docs/model.md).
TemporalPosition = Literal["sinusoid", "acpe-conv"]

#: Samples per patch: one second at 200 Hz. Hard-wired in CBraMod (the spectral branch has
#: exactly 101 rfft bins), so it is a constant here rather than a setting.
PATCH_SAMPLES = 200

#: Depth of each named configuration; every other dimension is CBraMod's.
ARCHITECTURES: dict[str, int] = {
    "cbramod-base": 12,  # the paper's configuration (and the official CBraMod release)
    "cbramod-small": 4,  # same layer design, for CPU work
    "cbramod-tiny": 2,  # for tests
}


class ModelConfig(BaseModel):
    """Architecture of a backbone (stored in ``config.json`` of a base checkpoint)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    arch: str
    n_layers: int = Field(gt=0)
    d_model: int = 200
    n_heads: int = 8
    d_ff: int = 800
    dropout: float = Field(default=0.1, ge=0.0, lt=1.0)
    embedding: EmbeddingKind
    n_experts: int = Field(default=10, gt=0)
    #: Hidden width of the mixture networks of the expert kinds.
    mixture_hidden: int = Field(default=128, gt=0)
    #: Width of expert keys / queries of `xattn-experts`.
    expert_key_dim: int = Field(default=64, gt=0)
    #: Rows of the `channel-id` table, in order (compared case-insensitively).
    channel_vocab: list[str] = Field(default_factory=list)
    #: Temporal position of the kinds other than `acpe` (which has its own convolution).
    temporal_position: TemporalPosition = "sinusoid"

    @model_validator(mode="after")
    def _cbramod_shape(self) -> ModelConfig:
        # The criss-cross split gives half of d_model and half of the heads to each axis,
        # and the spectral branch fixes d_model = patch length; check that once, here.
        if self.d_model != PATCH_SAMPLES:
            raise ValueError(f"d_model must be {PATCH_SAMPLES} (one patch), got {self.d_model}")
        if self.n_heads % 2 or (self.d_model // 2) % (self.n_heads // 2):
            raise ValueError(f"n_heads={self.n_heads} cannot be split 50/50 over d_model/2")
        if self.temporal_position == "acpe-conv" and self.embedding not in EXPERT_KINDS:
            raise ValueError(f"temporal_position 'acpe-conv' is for the expert kinds, not {self.embedding!r}")
        return self


def model_config(arch: str, embedding: str, **overrides: object) -> ModelConfig:
    """Return the ModelConfig of a named architecture with one embedding kind.

    >>> model_config("cbramod-tiny", "acpe").n_layers
    2
    """
    if arch not in ARCHITECTURES:
        raise ConfigError(f"unknown architecture {arch!r}; choose one of {sorted(ARCHITECTURES)}")
    EMBEDDINGS.lookup(embedding)  # a ConfigError naming the kinds for another
    fields = {"arch": arch, "n_layers": ARCHITECTURES[arch], "embedding": embedding, **overrides}
    return parse_model_config(fields)


def parse_model_config(data: object) -> ModelConfig:
    """Return a ModelConfig validated from a mapping; ConfigError with one line if invalid."""
    try:
        return ModelConfig.model_validate(data)
    except ValidationError as exc:
        where, message = validation_problem(exc)
        raise ConfigError(f"invalid model config: {where or 'config'}: {message} - fix the architecture settings") from None
