"""The backbone: patch embedding + channel embedding + criss-cross encoder + reconstruction head."""

from __future__ import annotations

from collections.abc import Sequence

from torch import Tensor, nn

from passport_kit.errors import ConfigError, DataError
from passport_kit.model.channel_embedding import (
    ChannelEmbedding,
    ChannelIdEmbedding,
    build_channel_embedding,
)
from passport_kit.model.config import PATCH_SAMPLES, ModelConfig
from passport_kit.model.meta import ChannelMeta
from passport_kit.model.patch_embedding import PatchEmbedding
from passport_kit.model.policy import FrozenStaysEval
from passport_kit.model.transformer import CrissCrossEncoder


class Backbone(FrozenStaysEval, nn.Module):
    """CBraMod criss-cross transformer with a selectable channel embedding.

    State-dict names equal CBraMod's (``patch_embedding.*``, ``encoder.layers.{i}.*``,
    ``proj_out.0.*``); with the ``acpe`` embedding the whole state dict is CBraMod's.
    """

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self._config = config
        self.patch_embedding = PatchEmbedding(
            config.d_model, config.dropout, build_channel_embedding(config)
        )
        self.encoder = CrissCrossEncoder(
            config.n_layers, config.d_model, config.n_heads, config.d_ff, config.dropout
        )
        self.proj_out = nn.Sequential(nn.Linear(config.d_model, PATCH_SAMPLES))
        self._init_linear_weights()

    def _init_linear_weights(self) -> None:
        # CBraMod's init: Kaiming-normal (fan_out, relu) on every Linear weight of the backbone
        # (attention out_proj included); packed in_proj keeps Xavier. The channel embedding's
        # mixture networks keep PyTorch's default, being trained from scratch on small data.
        for module in (self.patch_embedding.spectral_proj, self.encoder, self.proj_out):
            for sub in module.modules():
                if isinstance(sub, nn.Linear):
                    nn.init.kaiming_normal_(sub.weight, mode="fan_out", nonlinearity="relu")
        # Except the reconstruction head, which starts at zero: the model then starts at the
        # zero predictor's loss. With CBraMod's init its first outputs are ~20x the signal
        # (loss ~400x that of predicting zeros), and on CPU budgets the run spent its steps
        # unlearning that and stayed at the zero predictor (docs/pretraining.md, probe 3).
        # Downstream the head is unused and imported checkpoints overwrite it.
        nn.init.zeros_(self.proj_out[0].weight)
        nn.init.zeros_(self.proj_out[0].bias)

    @property
    def config(self) -> ModelConfig:
        """Return the architecture, including channel-id rows added since construction."""
        emb = self.channel_embedding
        if isinstance(emb, ChannelIdEmbedding) and emb.vocab != self._config.channel_vocab:
            return self._config.model_copy(update={"channel_vocab": list(emb.vocab)})
        return self._config

    @property
    def channel_embedding(self) -> ChannelEmbedding:
        """Return the channel embedding module (at ``patch_embedding.positional_encoding``)."""
        return self.patch_embedding.positional_encoding  # type: ignore[return-value]

    def add_channels(self, names: Sequence[str]) -> list[str]:
        """Return channel names newly added to a `channel-id` table (others: nothing to add)."""
        emb = self.channel_embedding
        return emb.add_channels(names) if isinstance(emb, ChannelIdEmbedding) else []

    def forward(self, x: Tensor, meta: ChannelMeta, mask: Tensor | None = None,
                distrust: Tensor | None = None, depth: int | None = None) -> Tensor:
        """Return encoder features ``(B, C, P, D)`` for ``x`` ``(B, C, P, 200)`` in 100 µV units.

        ``mask`` ``(B, C, P)`` bool marks patches replaced by the mask token (pretraining).
        ``distrust`` ``(B, C)`` bool marks poor contacts whose activity must not shape their
        channel code (expert kinds; others ignore it).
        ``depth``: the features after the first ``depth`` criss-cross layers (0: the patch and
        channel embedding's output; None: after every layer).
        """
        self._check_input(x, meta, mask)
        if distrust is not None and tuple(distrust.shape) != tuple(x.shape[:2]):
            raise DataError(f"distrust has shape {tuple(distrust.shape)}; expected {tuple(x.shape[:2])}")
        if depth is not None and not 0 <= depth <= len(self.encoder.layers):
            raise ConfigError(f"depth {depth} is outside 0..{len(self.encoder.layers)} (this backbone's layers)")
        return self.encoder(self.patch_embedding(x, meta, mask, distrust), depth)

    def reconstruct(self, x: Tensor, meta: ChannelMeta, mask: Tensor | None = None) -> Tensor:
        """Return reconstructed patches ``(B, C, P, 200)`` (the pretraining head's output)."""
        return self.proj_out(self.forward(x, meta, mask))

    @staticmethod
    def _check_input(x: Tensor, meta: ChannelMeta, mask: Tensor | None) -> None:
        if x.dim() != 4 or x.shape[-1] != PATCH_SAMPLES:
            raise DataError(
                f"model input has shape {tuple(x.shape)}; expected (batch, channels, patches,"
                f" {PATCH_SAMPLES}) - window the signal into 1-s patches at 200 Hz"
            )
        if x.shape[1] != meta.n_channels:
            raise DataError(
                f"input has {x.shape[1]} channels but the channel metadata lists"
                f" {meta.n_channels} ({list(meta.names)[:8]}...) - map the recording to the montage"
            )
        if mask is not None and tuple(mask.shape) != tuple(x.shape[:3]):
            raise DataError(f"mask has shape {tuple(mask.shape)}; expected {tuple(x.shape[:3])}")


def build_backbone(config: ModelConfig) -> Backbone:
    """Return a freshly initialised backbone for ``config``."""
    return Backbone(config)
