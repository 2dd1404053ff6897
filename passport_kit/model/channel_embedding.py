"""The six channel embeddings, one interface, selected by name.

Every kind maps patch embeddings ``(B, C, P, D)`` to positionally encoded patch embeddings of
the same shape. ``acpe`` encodes channel and time together (CBraMod's depthwise convolution);
every other kind adds a per-channel vector plus a fixed sinusoid over the patch index (the
paper leaves the temporal position of these kinds open; see docs/model.md). An expert kind
grown on an imported `acpe` backbone (``pretrain --init-from``) may keep that backbone's
convolution for time instead of the sinusoid (``ModelConfig.temporal_position``).

The module sits at ``patch_embedding.positional_encoding`` of the backbone for every kind, so
that ``acpe`` keeps the exact state-dict names of the CBraMod release.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from passport_kit.errors import ChannelMappingError
from passport_kit.model.config import EMBEDDINGS, ModelConfig
from passport_kit.model.meta import ChannelMeta
from passport_kit.registry import Registry

#: Metres → decimetres: the expert kinds see positions on the scale of patch embeddings.
DECIMETRES_PER_METRE = 10.0
#: The `xyz` rule of the paper: millimetres, shifted by 150 mm so head positions are >= 0.
XYZ_OFFSET_MM = 150.0
XYZ_DIMS_PER_AXIS = 66
#: Name of the quality gate's learned vector in the expert kinds (adapter bundles only).
NOISE_EXPERT = "noise_expert"
#: The module of each channel embedding kind, filled by subclassing :class:`ChannelEmbedding` (tests/model checks
#: that every kind of :data:`~passport_kit.model.config.EMBEDDINGS` has one).
EMBEDDING_MODULES: Registry[type[ChannelEmbedding]] = Registry("channel embedding module")


def sinusoid(index: Tensor, dim: int) -> Tensor:
    """Return the Vaswani sinusoid table ``(N, dim)`` for positions ``index`` ``(N,)``.

    Even columns are sines, odd columns cosines, wavelengths from 2π to 10000·2π.
    """
    half = torch.arange(0, dim, 2, dtype=torch.float32, device=index.device)
    freq = torch.exp(half * (-math.log(10000.0) / dim))
    angle = index.to(torch.float32)[:, None] * freq[None, :]
    table = torch.zeros(index.shape[0], dim, device=index.device)
    table[:, 0::2] = torch.sin(angle)
    table[:, 1::2] = torch.cos(angle[:, : dim // 2])
    return table


def xyz_sinusoid(positions: Tensor, d_model: int) -> Tensor:
    """Return the paper's `xyz` embedding ``(C, d_model)`` of positions ``(C, 3)`` in metres.

    Metres → mm, +150 mm, rounded to whole millimetres; each axis indexes a 66-dim sinusoid;
    the three are concatenated (198 dims) and zero-padded to ``d_model``.
    """
    index = torch.round(positions.to(torch.float32) * 1000.0 + XYZ_OFFSET_MM)
    axes = [sinusoid(index[:, a], XYZ_DIMS_PER_AXIS) for a in range(3)]
    return F.pad(torch.cat(axes, dim=-1), (0, d_model - 3 * XYZ_DIMS_PER_AXIS))


def position_features(meta: ChannelMeta) -> Tensor:
    """Return ``(C, 7)`` metadata m_c: active xyz (dm), reference xyz (dm), bipolar flag.

    A bipolar derivation feeds both of its electrodes; a monopolar channel has reference
    zeros (the head-frame origin) and flag 0, so the flag, not the zeros, tells them apart.
    """
    active = meta.positions * DECIMETRES_PER_METRE
    bipolar = meta.is_bipolar
    reference = torch.where(
        bipolar[:, None], meta.reference_positions * DECIMETRES_PER_METRE, torch.zeros_like(active)
    )
    return torch.cat([active, reference, bipolar[:, None].to(active.dtype)], dim=-1)


def borrow_summaries(summary: Tensor, distrust: Tensor, positions: Tensor) -> Tensor:
    """Return ``summary`` ``(B, C, D)`` with each distrusted channel's row taken from its nearest trusted one.

    ``distrust`` ``(B, C)`` bool; ``positions`` ``(C, 3)`` (active electrodes). Nearest = the
    smallest electrode distance among the channels not distrusted in the same window (ties:
    the first in montage order). Rows with no trusted channel in their window are unchanged.
    """
    distrust = distrust.bool()
    if not distrust.any():
        return summary
    b, c, d = summary.shape
    dist = torch.cdist(positions.float(), positions.float())  # (C, C)
    dist = dist.unsqueeze(0).expand(b, c, c).masked_fill(distrust.unsqueeze(1), math.inf)
    nearest, source = dist.min(dim=-1)  # (B, C): the trusted channel closest to each channel
    replace = distrust & torch.isfinite(nearest)
    borrowed = torch.gather(summary, 1, source.unsqueeze(-1).expand(b, c, d))
    return torch.where(replace.unsqueeze(-1), borrowed, summary)


class ChannelEmbedding(nn.Module):
    """Base of every kind: ``forward(emb (B, C, P, D), meta, mask) -> (B, C, P, D)``."""

    #: The kind's name in the registry :data:`~passport_kit.model.config.EMBEDDINGS`; a subclass
    #: that sets it is the module of that kind (:data:`EMBEDDING_MODULES`, where :func:`build_channel_embedding`
    #: finds it).
    kind: str = ""
    #: Whether the channel codes read channel activity (the expert kinds), so ``distrust`` applies.
    reads_activity: bool = False

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        kind = cls.__dict__.get("kind")
        if kind:
            if kind not in EMBEDDINGS:
                raise TypeError(f"{cls.__name__}.kind {kind!r} is not a kind of model.config.EMBEDDINGS; add it there")
            EMBEDDING_MODULES.add(kind, cls)

    def __init__(self, d_model: int) -> None:
        super().__init__()
        self.d_model = d_model

    @classmethod
    def from_config(cls, config: ModelConfig) -> ChannelEmbedding:
        """Return this kind's module for the architecture ``config``."""
        return cls(config.d_model)

    def forward(self, emb: Tensor, meta: ChannelMeta, mask: Tensor | None = None,
                distrust: Tensor | None = None) -> Tensor:
        """Return ``emb`` ``(B, C, P, D)`` plus channel and temporal position.

        ``distrust`` ``(B, C)`` bool marks channels whose own activity must not shape their code
        (expert kinds only; see :meth:`_ExpertEmbedding.query_input`). Other kinds ignore it.
        """
        channel = self.gate(self.channel_vectors(emb, meta, mask, distrust), meta)  # (C, D) or (B, C, D)
        if channel.dim() == 2:
            channel = channel.unsqueeze(0)
        return emb + self.position_terms(emb, channel.unsqueeze(2))

    def position_terms(self, emb: Tensor, channel: Tensor) -> Tensor:
        """Return what is added to ``emb`` ``(B, C, P, D)``: ``channel`` ``(B|1, C, 1, D)`` plus time.

        Time is the fixed sinusoid over the patch index (see :class:`_ExpertEmbedding` for the
        kept ACPE convolution of an upcycled backbone).
        """
        temporal = sinusoid(torch.arange(emb.shape[2], device=emb.device), self.d_model)
        # Sum the small position terms first: one pass over the large embedding, not two.
        return (channel + temporal).to(emb.dtype)

    def channel_vectors(self, emb: Tensor, meta: ChannelMeta, mask: Tensor | None,
                        distrust: Tensor | None = None) -> Tensor:
        """Return the per-channel vectors ``(C, D)`` or ``(B, C, D)`` of this kind."""
        raise NotImplementedError

    def adapter_parameter_names(self) -> list[str]:
        """Return the names (relative to this module) trained under the `adapter` policy."""
        return [name for name, _ in self.named_parameters()]

    def gate(self, vectors: Tensor, meta: ChannelMeta) -> Tensor:
        """Return the channel vectors as they enter the model (no gate here; see :class:`_ExpertEmbedding`)."""
        return vectors


class AbsoluteEmbedding(ChannelEmbedding):
    """`ape`: a fixed sinusoid over the channel's index in the montage (no parameters)."""

    kind = "ape"

    def channel_vectors(self, emb: Tensor, meta: ChannelMeta, mask: Tensor | None,
                        distrust: Tensor | None = None) -> Tensor:
        """Return ``(C, D)`` sinusoids of the channel indices 0..C-1."""
        return sinusoid(torch.arange(emb.shape[1], device=emb.device), self.d_model)


class XYZEmbedding(ChannelEmbedding):
    """`xyz`: the paper's fixed per-axis sinusoid of the electrode position (no parameters).

    A bipolar channel gets the mean of the embeddings of its two electrodes (never the
    embedding of their midpoint).
    """

    kind = "xyz"

    def channel_vectors(self, emb: Tensor, meta: ChannelMeta, mask: Tensor | None,
                        distrust: Tensor | None = None) -> Tensor:
        """Return ``(C, D)`` position sinusoids."""
        meta.require_positions(self.kind)
        positions = meta.positions.to(emb.device)
        active = xyz_sinusoid(positions, self.d_model)
        bipolar = meta.is_bipolar.to(emb.device)
        reference = xyz_sinusoid(torch.nan_to_num(meta.reference_positions.to(emb.device)), self.d_model)
        return torch.where(bipolar[:, None], 0.5 * (active + reference), active)


class ChannelIdEmbedding(ChannelEmbedding):
    """`channel-id`: a learned vector per channel name (case-insensitive lookup).

    Unknown names are refused; :meth:`add_channels` appends freshly initialised rows.
    """

    kind = "channel-id"

    def __init__(self, d_model: int, vocab: Sequence[str]) -> None:
        super().__init__(d_model)
        self.vocab: list[str] = []
        self._index: dict[str, int] = {}
        self.table = nn.Parameter(torch.empty(0, d_model))
        self.add_channels(vocab)

    @classmethod
    def from_config(cls, config: ModelConfig) -> ChannelIdEmbedding:
        """Return the table with a row for every name of ``config.channel_vocab``."""
        return cls(config.d_model, config.channel_vocab)

    def add_channels(self, names: Sequence[str]) -> list[str]:
        """Return the names that were new, after appending one learned row for each.

        Replaces the ``table`` parameter: call it before building an optimizer.
        """
        new = []
        for name in names:
            if name.casefold() not in self._index and name.casefold() not in {n.casefold() for n in new}:
                new.append(name)
        if not new:
            return []
        rows = torch.empty(len(new), self.d_model, device=self.table.device)
        nn.init.trunc_normal_(rows, std=0.02)
        grad = self.table.requires_grad
        self.table = nn.Parameter(torch.cat([self.table.detach(), rows]), requires_grad=grad)
        for name in new:
            self._index[name.casefold()] = len(self.vocab)
            self.vocab.append(name)
        return new

    def channel_vectors(self, emb: Tensor, meta: ChannelMeta, mask: Tensor | None,
                        distrust: Tensor | None = None) -> Tensor:
        """Return ``(C, D)`` rows looked up by channel name."""
        unknown = [n for n in meta.names if n.casefold() not in self._index]
        if unknown:
            raise ChannelMappingError(
                f"the channel-id embedding has no row for channels {unknown} (known:"
                f" {self.vocab[:24]}{' ...' if len(self.vocab) > 24 else ''}); add rows with"
                " Backbone.add_channels(names) (adapt and evaluate add them for their montage's channels),"
                " or choose another embedding"
            )
        idx = torch.tensor([self._index[n.casefold()] for n in meta.names], device=self.table.device)
        return self.table[idx]


class ACPEEmbedding(ChannelEmbedding):
    """`acpe`: CBraMod's depthwise (19, 7) convolution over the channel × patch grid, residual.

    The convolution is registered as child ``"0"`` so that its parameters are named
    ``positional_encoding.0.weight`` / ``.bias`` exactly as in the CBraMod release.
    """

    kind = "acpe"

    def __init__(self, d_model: int) -> None:
        super().__init__(d_model)
        self.add_module("0", acpe_conv(d_model))

    @property
    def conv(self) -> nn.Conv2d:
        """Return the depthwise convolution."""
        return self._modules["0"]  # type: ignore[return-value]

    def forward(self, emb: Tensor, meta: ChannelMeta, mask: Tensor | None = None,
                distrust: Tensor | None = None) -> Tensor:
        """Return ``emb + conv(emb)`` for ``emb`` ``(B, C, P, D)`` (``distrust`` does not apply)."""
        return emb + apply_grid_conv(self.conv, emb)


def acpe_conv(d_model: int) -> nn.Conv2d:
    """Return CBraMod's depthwise (19, 7) convolution over the channel × patch grid."""
    return nn.Conv2d(d_model, d_model, kernel_size=(19, 7), padding=(9, 3), groups=d_model)


def apply_grid_conv(conv: nn.Conv2d, emb: Tensor) -> Tensor:
    """Return ``conv`` applied to ``emb`` ``(B, C, P, D)`` as a (D, C, P) grid, as ``(B, C, P, D)``."""
    # (B, C, P, D) contiguous *is* (B, D, C, P) in channels_last layout: no copy needed.
    return conv(emb.permute(0, 3, 1, 2)).permute(0, 2, 3, 1)


class _ExpertEmbedding(ChannelEmbedding):
    """Shared part of the Device Passport kinds: a frozen-able expert bank and the query input.

    The activity summary z_c is the mean of the channel's unmasked patch embeddings, normalised
    per channel (parameter-free LayerNorm) so that a frozen encoder's scale cannot swamp the
    position features; it is concatenated with m_c (:func:`position_features`).
    """

    n_meta = 7
    reads_activity = True
    #: Initial scale of the experts: per-dimension on the order of a sinusoid code (0.7) and of
    #: patch embeddings, so channel vectors matter from the first step (std 0.02 made them noise).
    expert_init_std = 1.0
    #: Initial std of the mixture's first-layer weights on the 7 position numbers (decimetres)...
    position_init_std = 1.0
    #: ... and the factor applied to PyTorch's default init of its weights on the 200-dim z_c.
    activity_init_scale = 0.1
    #: Initial std of the mixture's output layer.
    output_init_std = 0.3

    def __init__(self, d_model: int, n_experts: int, temporal_position: str = "sinusoid") -> None:
        super().__init__(d_model)
        self.experts = nn.Parameter(torch.empty(n_experts, d_model))
        std = self.expert_init_std
        nn.init.trunc_normal_(self.experts, std=std, a=-3 * std, b=3 * std)
        if temporal_position == "acpe-conv":
            # An upcycled ACPE backbone keeps its convolution (named as in CBraMod) for time.
            self.add_module("0", acpe_conv(d_model))

    @property
    def temporal_conv(self) -> nn.Conv2d | None:
        """Return the kept ACPE convolution, or None when time is the fixed sinusoid."""
        return self._modules.get("0")  # type: ignore[return-value]

    def position_terms(self, emb: Tensor, channel: Tensor) -> Tensor:
        """Return the expert mixture ``channel`` ``(B, C, 1, D)`` plus time (sinusoid or kept conv).

        The kept convolution is applied exactly as in `acpe` (``emb + conv(emb)``), so a frozen
        encoder upcycled from an `acpe` base sees the temporal (and neighbour) term it was
        pretrained with; the experts add the channel code on top (docs/model.md).
        """
        conv = self.temporal_conv
        if conv is None:
            return super().position_terms(emb, channel)
        return apply_grid_conv(conv, emb) + channel.to(emb.dtype)

    def _init_mixture(self, first: nn.Linear, last: nn.Linear) -> None:
        """Start the mixture as a smooth function of electrode position.

        With PyTorch's default init the 200 activity inputs swamp the 7 position numbers, so
        every channel starts with nearly the same (activity-driven, window-to-window random)
        mixture and the codes carry no geometry; probes showed pretraining then learns slowly or
        not at all (docs/pretraining.md). Here neighbouring electrodes start with similar
        mixtures (as the fixed `xyz` code gives them), and the activity terms start small and
        are learned.
        """
        with torch.no_grad():
            first.weight[:, : self.d_model] *= self.activity_init_scale
            nn.init.normal_(first.weight[:, self.d_model :], std=self.position_init_std)
            nn.init.normal_(last.weight, std=self.output_init_std)

    def query_input(self, emb: Tensor, meta: ChannelMeta, mask: Tensor | None,
                    distrust: Tensor | None = None) -> Tensor:
        """Return ``(B, C, D + 7)``: [normalised z_c, m_c] for every sample and channel.

        A channel marked in ``distrust`` ``(B, C)`` (a poor contact, by its quality score) keeps
        its signal and its own position m_c, but its z_c is the summary of the nearest trusted
        channel of the same window (:func:`borrow_summaries`): a noisy contact's activity looks
        like no electrode seen in pretraining and steers the mixture to a confident, wrong code
        (the paper's EESM17 failure). With no trusted channel in the window it keeps its own.
        """
        meta.require_positions(self.kind)
        if mask is None:
            summary = emb.mean(dim=2)
        else:
            keep = (~mask.bool()).to(emb.dtype).unsqueeze(-1)  # (B, C, P, 1)
            # A channel whose patches are all masked gets z_c = 0 rather than NaN.
            summary = (emb * keep).sum(dim=2) / keep.sum(dim=2).clamp_min(1.0)
        summary = F.layer_norm(summary.float(), (self.d_model,))
        if distrust is not None:
            summary = borrow_summaries(summary, distrust.to(summary.device), meta.positions.to(summary.device))
        meta_feats = position_features(meta).to(emb.device)
        meta_feats = meta_feats.unsqueeze(0).expand(emb.shape[0], -1, -1)
        return torch.cat([summary, meta_feats], dim=-1)

    def bank_parameter_names(self) -> list[str]:
        """Return the expert bank's and mixture's names (what ``pretrain --train experts`` trains).

        Everything of this module except a kept ACPE convolution (part of the imported backbone)
        and the noise expert (an adaptation-time addition).
        """
        return [name for name, _ in self.named_parameters() if not name.startswith("0.") and name != NOISE_EXPERT]

    def adapter_parameter_names(self) -> list[str]:
        """Return the mixture's parameter names (and the noise expert's): experts (and keys) stay frozen."""
        return [name for name, _ in self.named_parameters()
                if name.startswith("mixture.") or name == NOISE_EXPERT]

    def add_noise_expert(self) -> bool:
        """Return True after adding the learned noise expert n (zeros, ``(D,)``); False if it exists.

        Quality-gated mixture (``adapt --quality-gate``): e_c' = q_c e_c + (1 - q_c) n, with
        q_c the channel's quality score in the window (``meta.quality``, scored by the data
        pipeline: :func:`passport_kit.engine.forward.gate_meta`). Added at
        adaptation time, never in ``__init__``, so base checkpoints keep their tensor names;
        it starts at zero, so a bad channel first loses its (misleading) code and the adapter
        learns what to say instead. Call it before building an optimizer.
        """
        if hasattr(self, NOISE_EXPERT):
            return False
        self.register_parameter(NOISE_EXPERT, nn.Parameter(torch.zeros(self.d_model, device=self.experts.device)))
        return True

    def gate(self, vectors: Tensor, meta: ChannelMeta) -> Tensor:
        """Return ``(B, C, D)`` mixtures gated toward the noise expert by ``meta.quality`` (unchanged without one)."""
        noise = getattr(self, NOISE_EXPERT, None)
        if noise is None:
            return vectors
        if meta.quality is None:  # a gated model fed without scores would silently run ungated
            raise RuntimeError("a quality-gated channel embedding needs each window's channel quality: pass "
                               "meta.with_quality(scores) (passport_kit.engine.forward.gate_meta)")
        q = meta.quality.to(device=vectors.device, dtype=vectors.dtype).unsqueeze(-1)  # (B, C, 1)
        return q * vectors + (1.0 - q) * noise.to(vectors.dtype)


class MLPExpertEmbedding(_ExpertEmbedding):
    """`mlp-experts`: e_c = Σ_k softmax(MLP([z_c, m_c]))_k E_k."""

    kind = "mlp-experts"

    def __init__(self, d_model: int, n_experts: int, hidden: int, temporal_position: str = "sinusoid") -> None:
        super().__init__(d_model, n_experts, temporal_position)
        self.mixture = nn.Sequential(
            nn.Linear(d_model + self.n_meta, hidden), nn.GELU(), nn.Linear(hidden, n_experts)
        )
        self._init_mixture(self.mixture[0], self.mixture[2])

    @classmethod
    def from_config(cls, config: ModelConfig) -> MLPExpertEmbedding:
        """Return the expert bank and mixture network sized by ``config``."""
        return cls(config.d_model, config.n_experts, config.mixture_hidden, config.temporal_position)

    def mixture_weights(self, emb: Tensor, meta: ChannelMeta, mask: Tensor | None,
                        distrust: Tensor | None = None) -> Tensor:
        """Return the mixture weights ``(B, C, K)`` (rows sum to 1)."""
        return torch.softmax(self.mixture(self.query_input(emb, meta, mask, distrust)).float(), dim=-1)

    def channel_vectors(self, emb: Tensor, meta: ChannelMeta, mask: Tensor | None,
                        distrust: Tensor | None = None) -> Tensor:
        """Return ``(B, C, D)`` expert mixtures."""
        return self.mixture_weights(emb, meta, mask, distrust) @ self.experts


class XAttnExpertEmbedding(_ExpertEmbedding):
    """`xattn-experts`: a query from [z_c, m_c] attends over learned expert keys; values = experts."""

    kind = "xattn-experts"

    def __init__(self, d_model: int, n_experts: int, hidden: int, key_dim: int,
                 temporal_position: str = "sinusoid") -> None:
        super().__init__(d_model, n_experts, temporal_position)
        self.keys = nn.Parameter(torch.empty(n_experts, key_dim))
        nn.init.trunc_normal_(self.keys, std=1.0)
        self.mixture = nn.Sequential(
            nn.Linear(d_model + self.n_meta, hidden), nn.GELU(), nn.Linear(hidden, key_dim)
        )
        self._init_mixture(self.mixture[0], self.mixture[2])

    @classmethod
    def from_config(cls, config: ModelConfig) -> XAttnExpertEmbedding:
        """Return the expert bank, keys and query network sized by ``config``."""
        return cls(config.d_model, config.n_experts, config.mixture_hidden, config.expert_key_dim,
                   config.temporal_position)

    def mixture_weights(self, emb: Tensor, meta: ChannelMeta, mask: Tensor | None,
                        distrust: Tensor | None = None) -> Tensor:
        """Return the attention weights ``(B, C, K)`` of each channel's query over the experts."""
        query = self.mixture(self.query_input(emb, meta, mask, distrust)).float()
        scores = query @ self.keys.t() / math.sqrt(self.keys.shape[1])
        return torch.softmax(scores, dim=-1)

    def channel_vectors(self, emb: Tensor, meta: ChannelMeta, mask: Tensor | None,
                        distrust: Tensor | None = None) -> Tensor:
        """Return ``(B, C, D)`` attention-weighted experts."""
        return self.mixture_weights(emb, meta, mask, distrust) @ self.experts


def build_channel_embedding(config: ModelConfig) -> ChannelEmbedding:
    """Return the channel embedding named by ``config.embedding`` (the module registered under that kind)."""
    return EMBEDDING_MODULES[config.embedding].from_config(config)
