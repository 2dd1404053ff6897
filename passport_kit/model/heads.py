"""Classification head and the Classifier (backbone + head) trained by `adapt`."""

from __future__ import annotations

from typing import Any, Literal

from torch import Tensor, nn

from passport_kit.errors import ConfigError, DataError
from passport_kit.model.backbone import Backbone
from passport_kit.model.meta import ChannelMeta
from passport_kit.model.policy import FrozenStaysEval

Pooling = Literal["mean", "patches"]


class ClassificationHead(nn.Module):
    """Pool encoder features, normalise, then a two-layer MLP with dropout.

    ``mean``: average over channels and patches → D features (any C and P).
    ``patches``: average over channels, keep the patch order → P·D features (fixed P).
    The parameter-free pooling makes the head independent of the channel count, so one head
    serves any montage.
    """

    def __init__(
        self,
        d_model: int,
        n_classes: int,
        *,
        pooling: Pooling = "mean",
        n_patches: int | None = None,
        hidden: int = 200,
        dropout: float = 0.1,
    ) -> None:
        super().__init__()
        if n_classes < 1:
            raise ConfigError(f"n_classes must be at least 1, got {n_classes}")
        if pooling not in ("mean", "patches"):
            raise ConfigError(f"unknown pooling {pooling!r}; choose 'mean' or 'patches'")
        if pooling == "patches" and not n_patches:
            raise ConfigError("pooling='patches' needs n_patches (the window length in seconds)")
        self.pooling = pooling
        self.n_patches = n_patches if pooling == "patches" else None
        self.norm = nn.LayerNorm(d_model)
        in_features = d_model * (self.n_patches or 1)
        self.net = nn.Sequential(
            nn.Linear(in_features, hidden), nn.ELU(), nn.Dropout(dropout), nn.Linear(hidden, n_classes)
        )

    def forward(self, feats: Tensor) -> Tensor:
        """Return logits ``(B, n_classes)`` for features ``(B, C, P, D)``."""
        if self.pooling == "mean":
            pooled = self.norm(feats.mean(dim=(1, 2)))
        else:
            if feats.shape[2] != self.n_patches:
                raise DataError(
                    f"head expects {self.n_patches} patches per window, got {feats.shape[2]} -"
                    " use the window length the adapter was trained with"
                )
            pooled = self.norm(feats.mean(dim=1)).flatten(1)
        return self.net(pooled)


class Classifier(FrozenStaysEval, nn.Module):
    """Backbone + classification head; ``forward(x, meta) -> (B, n_classes)`` logits."""

    def __init__(
        self,
        backbone: Backbone,
        n_classes: int,
        *,
        pooling: Pooling = "mean",
        n_patches: int | None = None,
        hidden: int = 200,
        dropout: float = 0.1,
    ) -> None:
        super().__init__()
        self.backbone = backbone
        self.head = ClassificationHead(
            backbone.config.d_model,
            n_classes,
            pooling=pooling,
            n_patches=n_patches,
            hidden=hidden,
            dropout=dropout,
        )
        self.policy = "full"
        self._head_settings = {
            "n_classes": n_classes,
            "pooling": pooling,
            "n_patches": self.head.n_patches,
            "hidden": hidden,
            "dropout": dropout,
        }

    @property
    def head_settings(self) -> dict[str, Any]:
        """Return the keyword arguments that rebuild this head (stored in adapter bundles)."""
        return dict(self._head_settings)

    def forward(self, x: Tensor, meta: ChannelMeta, mask: Tensor | None = None,
                distrust: Tensor | None = None) -> Tensor:
        """Return logits ``(B, n_classes)`` for ``x`` ``(B, C, P, 200)`` (``mask``, ``distrust``: see Backbone)."""
        return self.head(self.backbone(x, meta, mask, distrust))
