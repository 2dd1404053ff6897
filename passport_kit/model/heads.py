"""Classification head and the Classifier (backbone + head) trained by `adapt`."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any, ClassVar, Literal, get_args

import torch
from torch import Tensor, nn

from passport_kit.errors import ConfigError, DataError
from passport_kit.model.backbone import Backbone
from passport_kit.model.meta import ChannelMeta
from passport_kit.model.policy import FrozenStaysEval
from passport_kit.model.spectral import band_power_features
from passport_kit.registry import Registry

Pooling = Literal["mean", "patches"]
HeadKind = Literal["mlp", "probe"]
#: How the engine scores a head (:attr:`Head.inference`).
InferencePath = Literal["forward", "read-out"]

#: Bands (Hz) of the spectral summary of probe heads written before issue 24 (``bands`` None): log absolute
#: power only, by :func:`log_band_power`. New heads use :mod:`passport_kit.model.spectral`.
#: Delta (split), theta, alpha, sigma, beta.
#: All at or below 30 Hz, which every recording at 64 Hz or more carries, and below the
#: prefilter differences of real data sets (eegmat's 45 Hz low-pass in some recordings).
SPECTRAL_BANDS: tuple[tuple[float, float], ...] = ((0.5, 2.0), (2.0, 4.0), (4.0, 8.0), (8.0, 12.0), (12.0, 16.0),
                                                   (16.0, 30.0))


def log_band_power(x: Tensor, bands: tuple[tuple[float, float], ...] = SPECTRAL_BANDS) -> Tensor:
    """Return log10 band powers ``(B, C, len(bands))`` of windows ``x`` ``(B, C, P, 200)`` (200 Hz, 100 µV).

    Welch's estimate as a band-power classifier computes it (scipy's ``welch`` defaults at
    ``nperseg`` = 2 s): two-second segments with 50 % overlap, each mean-removed and tapered by
    a periodic Hann window, periodograms averaged, then averaged over each band's 0.5-Hz bins.
    A one-second window uses one-second segments.
    """
    sfreq = x.shape[-1]  # one-second patches
    signal = x.reshape(x.shape[0], x.shape[1], -1)
    n = min(2 * sfreq, signal.shape[-1])
    frames = signal.unfold(-1, n, n // 2)  # (B, C, segments, n)
    taper = torch.hann_window(n, periodic=True, dtype=x.dtype, device=x.device)
    frames = (frames - frames.mean(dim=-1, keepdim=True)) * taper
    power = torch.fft.rfft(frames, dim=-1).abs().pow(2).mean(dim=2) / taper.pow(2).sum()  # (B, C, F)
    freqs = torch.fft.rfftfreq(n, d=1.0 / sfreq, device=x.device)
    cols = [power[..., (freqs >= lo) & (freqs < hi)].mean(-1) for lo, hi in bands]
    return torch.log10(torch.stack(cols, dim=-1) + 1e-10)


def sequence_features(z: Tensor, context: int, groups: Sequence[Any] | None = None) -> Tensor:
    """Return ``[z, centred running mean of z over ±context rows]`` ``(N, 2F)`` for rows ``z`` ``(N, F)`` in time order.

    ``groups`` (N,) names the recording of each row: the mean never crosses a recording's
    edge (at an edge it covers the rows that exist). ``context=0`` returns ``z`` unchanged.
    This is the probe head's temporal context for sleep staging: the stage of a 30-s epoch is
    scored with the minutes around it, as YASA's rolling features and sequence models do.
    """
    if context <= 0:
        return z
    out = torch.empty_like(z)
    for start, stop in recording_runs(len(z), groups):
        seg = z[start:stop]
        cum = torch.cat([torch.zeros_like(seg[:1]), seg.cumsum(dim=0)])
        idx = torch.arange(len(seg), device=z.device)
        lo, hi = (idx - context).clamp(min=0), (idx + context + 1).clamp(max=len(seg))
        out[start:stop] = (cum[hi] - cum[lo]) / (hi - lo).unsqueeze(1).to(z.dtype)
    return torch.cat([z, out], dim=1)


def recording_runs(n: int, groups: Sequence[Any] | None = None) -> list[tuple[int, int]]:
    """Return ``(start, stop)`` of every run of equal consecutive ``groups`` entries over ``n`` rows (None: one run)."""
    if groups is None:
        return [(0, n)] if n else []
    keys = list(groups)
    runs, start = [], 0
    for i in range(1, n + 1):
        if i == n or keys[i] != keys[start]:
            runs.append((start, i))
            start = i
    return runs


#: How a probe head scales its inputs before the read-out: as they are, or per recording (each feature minus
#: its median over the recording's windows, divided by its interquartile range), as YASA scales every
#: feature within a night. Only for data labelled per window (sleep): where a recording holds one class,
#: scaling within it would erase the label.
Scaling = Literal["none", "recording"]
SCALINGS: tuple[str, ...] = ("none", "recording")


def recording_scaled(z: Tensor, groups: Sequence[Any] | None = None) -> Tensor:
    """Return rows ``z`` ``(N, F)`` robust-scaled within each recording ``groups`` names (None: one recording).

    Each feature minus its median over the recording's rows, divided by its interquartile range
    (1 where that is 0). A recording of one row comes back as zeros.
    """
    out = torch.empty_like(z)
    for start, stop in recording_runs(len(z), groups):
        seg = z[start:stop]
        q = torch.quantile(seg.double(), torch.tensor([0.25, 0.5, 0.75], dtype=torch.float64, device=z.device), dim=0)
        iqr = q[2] - q[0]
        iqr = torch.where(iqr > 1e-12, iqr, torch.ones_like(iqr))
        out[start:stop] = ((seg.double() - q[1]) / iqr).to(z.dtype)
    return out


def read_out_inputs(z: Tensor, context: int, scaling: str = "none", groups: Sequence[Any] | None = None,
                    unscaled: int = 0) -> Tensor:
    """Return what a probe head's linear layer reads for features ``z`` ``(N, F)``: scaled, then with context.

    ``unscaled``: how many trailing columns keep their values under ``scaling`` "recording" (the sleep stager's
    log-probabilities, issue 55: an offset read-out adds them unscaled, so its inputs must hold them unscaled).
    """
    if scaling == "recording":
        cut = z.shape[1] - int(unscaled)
        z = torch.cat([recording_scaled(z[:, :cut], groups), z[:, cut:]], dim=1) if unscaled else recording_scaled(z, groups)
    return sequence_features(z, context, groups)


#: How a probe head pools the encoder features over channels and patches: their mean (D values),
#: or their mean and their spread over the window's patches (2 D values).
ProbePooling = Literal["mean", "meanstd"]
PROBE_POOLINGS: tuple[str, ...] = ("mean", "meanstd")
#: The layer a new probe head reads: 0 = the patch and channel embedding's output, before any
#: criss-cross layer. Measured (docs/history/accuracy.md § Real EEG, session 7): the shipped backbones'
#: two transformer layers, pretrained on little data for reconstruction, add nothing a linear
#: read-out can use, while the pretrained embedding is well ahead of a random one.
PROBE_LAYER = 0


def pooled_width(d_model: int, pooling: str) -> int:
    """Return how many backbone features a probe head reads with ``pooling`` (ConfigError if unknown)."""
    if pooling not in PROBE_POOLINGS:
        raise ConfigError(f"unknown probe pooling {pooling!r}; choose one of {', '.join(PROBE_POOLINGS)}")
    return d_model * (2 if pooling == "meanstd" else 1)


def fp32_head(t: Tensor) -> contextlib.AbstractContextManager:
    """Return a context in which a head's layers run in fp32 on ``t``'s device, also under bf16 autocast.

    A head is a negligible share of a forward pass (a few (B, F) × (F, K) products), and under
    bf16 its rounding was the largest single cause of predicted classes differing between bf16
    and fp32 inference: pooled features differ little between windows, and bf16 rounds away part
    of that difference (issue 36, ``benchmarks/bench_model.py``'s agreement on 1024 windows of
    ``cbramod-small``: 97.2 % with a bf16 head, 98.0 % in fp32). Training under autocast then
    also computes the head and its gradients in fp32.
    """
    return torch.autocast(t.device.type, enabled=False)


#: The head classes by kind, filled by subclassing :class:`Head` (an unknown kind: a ConfigError naming them).
HEADS: Registry[type[Head]] = Registry("head kind", unknown=ConfigError)


class Head(nn.Module):
    """Base of every classification head: a subclass that sets ``kind`` is registered under it.

    A head owns how it is built from the backbone (:meth:`build`, the keywords a bundle stores),
    what it stores (:meth:`settings`, adapter.json's ``head`` block) and how it reads the
    backbone (:meth:`logits`). :class:`Classifier` knows heads only through this class, so a new
    head is one subclass here plus its keys in ``checkpoint``'s ``HeadSettings``.
    """

    #: The head's name in adapter.json (``head.kind``, ``variant.head``): one of :data:`HeadKind`, and its name in
    #: :data:`HEADS`.
    kind: str = ""

    #: How the engine scores this head (:func:`passport_kit.engine.forward.predict_proba`): ``"forward"``, the
    #: model's forward pass batch by batch at the run's precision; ``"read-out"``, the head's :meth:`read_out` of
    #: inputs computed in fp32 (the model's ``read_out_features``), over whole recordings, then its
    #: :meth:`postprocess`.
    inference: ClassVar[InferencePath] = "forward"
    #: Whether predict gives the engine a night's dead channel-windows, for this head to read their inputs from the
    #: nearest live channel (:mod:`passport_kit.engine.imputation`, by :meth:`spectral_layout`).
    imputes_dead_channels: ClassVar[bool] = False
    #: The stacked sleep stager's block: its width (0: none; its log-probabilities are appended to the read-out's
    #: inputs by the caller) and the stager (a :class:`passport_kit.sleep.StagerChoice` as a dict).
    n_prior: int = 0
    prior: dict[str, Any] | None = None

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        kind = cls.__dict__.get("kind")
        if kind:
            if kind not in get_args(HeadKind):
                raise TypeError(f"{cls.__name__}.kind {kind!r} is not one of HeadKind; add it there")
            HEADS.add(kind, cls)

    @classmethod
    def of_kind(cls, kind: str) -> type[Head]:
        """Return the head class registered as ``kind`` (ConfigError naming the kinds for another)."""
        return HEADS.lookup(kind)

    @classmethod
    def build(cls, backbone: Backbone, n_classes: int, **options: Any) -> Head:
        """Return this head over ``backbone`` for ``n_classes`` from its stored keywords (``options``)."""
        raise NotImplementedError

    def settings(self) -> dict[str, Any]:
        """Return the keyword arguments of :class:`Classifier` that rebuild this head, in the order stored."""
        raise NotImplementedError

    def logits(self, backbone: Backbone, x: Tensor, meta: ChannelMeta, mask: Tensor | None,
               distrust: Tensor | None) -> Tensor:
        """Return logits ``(B, n_classes)`` of windows ``x`` through ``backbone``."""
        raise NotImplementedError

    def stager_classes(self) -> list[int]:
        """Return the indices of the classes a stacked sleep stager's output reaches (none: no stager stacked)."""
        return []

    def postprocess(self, proba: Any, groups: Sequence[Any] | None = None) -> Any:
        """Return probabilities ``(N, K)`` after what follows the head over each night (none here: as they are)."""
        return proba


class ProbeHead(Head):
    """A linear read-out of pooled backbone features and each channel's log band power.

    The default head of ``adapt`` (docs/onboarding.md, recipe ``probe``). Its input is
    ``[backbone features pooled over channels and patches (D, or 2 D with pooling "meanstd"),
    log10 power in SPECTRAL_BANDS of every channel (C · 6)]``; one linear layer maps it to
    logits. It is fitted as a regularised logistic regression on frozen features
    (:mod:`passport_kit.onboard.probe`), whose standardisation is folded into the weights, so
    the bundle holds only ``linear.weight`` and ``linear.bias``.

    ``layer``: the backbone features are those after the first ``layer`` criss-cross layers
    (0: the patch and channel embedding; None, as in bundles written before the option
    existed: after every layer). ``pooling``: ``"mean"`` averages the features over channels
    and patches; ``"meanstd"`` adds each feature's standard deviation over the patches
    (averaged over channels), i.e. how much it varies within the window.

    Why the spectral part: on small real data sets the pooled features of a small pretrained
    backbone trail a band-power classifier (docs/history/accuracy.md, issue 18); a read-out that sees
    both is never starved of what the classic baseline uses, and the backbone adds what it
    knows on top. The fitted weights are per channel, so the head belongs to one montage.

    ``context`` > 0 (sleep staging): the read-out also sees the running mean of these inputs
    over ±``context`` neighbouring windows (:func:`sequence_features`), so its input doubles.
    Such a head scores a recording as a sequence: ``forward`` treats its batch as consecutive
    windows of one recording, and :func:`~passport_kit.engine.forward.predict_proba`
    passes whole recordings.
    """

    kind = "probe"
    inference = "read-out"
    imputes_dead_channels = True

    @classmethod
    def build(cls, backbone: Backbone, n_classes: int, *, n_channels: int | None = None, context: int = 0,
              layer: int | None = None, pooling_probe: ProbePooling = "mean",
              bands: Sequence[Sequence[float]] | None = None, scaling: Scaling = "none", n_prior: int = 0,
              prior: dict[str, Any] | None = None, temperature: float = 1.0,
              smoothing: dict[str, Any] | None = None, scales_prior: bool = True) -> ProbeHead:
        """Return a probe head over ``backbone`` (``n_channels``: the montage's; ``layer`` at most its layers)."""
        if not n_channels:
            raise ConfigError("a probe head needs n_channels (the montage's channel count)")
        n_layers = backbone.config.n_layers
        if layer is not None and layer > n_layers:  # here, not at the first forward: adapt reads data first
            raise ConfigError(f"probe_layer {layer} is beyond this backbone's {n_layers} layers; choose 0..{n_layers}")
        return cls(backbone.config.d_model, n_classes, n_channels, context, layer, pooling_probe, bands, scaling,
                   n_prior, prior, temperature, smoothing, scales_prior)

    def settings(self) -> dict[str, Any]:
        """Return the keywords that rebuild this head, every one (the bundle leaves out what older heads lacked:
        ``checkpoint.files.MIGRATIONS``)."""
        return {"kind": "probe", "n_classes": self.linear.out_features, "n_channels": self.n_channels,
                "context": self.context, "layer": self.layer, "pooling_probe": self.pooling,
                "bands": None if self.bands is None else [list(b) for b in self.bands], "scaling": self.scaling,
                "n_prior": self.n_prior, "prior": None if self.prior is None else dict(self.prior),
                "temperature": self.temperature, "smoothing": self.smoothing, "scales_prior": self.scales_prior}

    def logits(self, backbone: Backbone, x: Tensor, meta: ChannelMeta, mask: Tensor | None,
               distrust: Tensor | None) -> Tensor:
        """Return logits of ``x``: the backbone read after ``layer`` layers, and the windows' band power."""
        return self(backbone(x, meta, mask, distrust, self.layer), x)

    def __init__(self, d_model: int, n_classes: int, n_channels: int, context: int = 0, layer: int | None = None,
                 pooling: ProbePooling = "mean", bands: Sequence[Sequence[float]] | None = None,
                 scaling: Scaling = "none", n_prior: int = 0, prior: dict[str, Any] | None = None,
                 temperature: float = 1.0, smoothing: dict[str, Any] | None = None, scales_prior: bool = True) -> None:
        super().__init__()
        if n_prior < 0 or (n_prior and not prior) or not temperature > 0:
            raise ConfigError(f"a probe head's prior block needs a prior spec and a positive temperature, got "
                              f"n_prior {n_prior}, prior {prior!r}, temperature {temperature}")
        #: The sleep prior block (issue 33): ``n_prior`` log-probabilities per window from the prior ``prior``
        #: names (:class:`passport_kit.sleep.priors.StagerChoice` as a dict), appended to the read-out's inputs by
        #: the caller (the head reads windows, not nights). 0: no prior block.
        self.n_prior, self.prior = int(n_prior), (dict(prior) if prior else None)
        #: Whether ``scaling`` "recording" scales the prior block too (issue 55). True: heads written before, whose
        #: fits saw the block scaled (an offset read-out's among them, whose identity then read the scaled block:
        #: not the model its fit scored). New read-outs with a prior block keep it unscaled (False), in the fit
        #: and here alike; the value is moot without a prior block or per-recording scaling.
        self.scales_prior = bool(scales_prior)
        #: What follows the read-out (:mod:`passport_kit.model.night`): the night's HMM smoothing (None: none) with
        #: ``transitions`` (K, K) and ``emission_prior`` (K,), then the temperature (1: none).
        self.temperature = float(temperature)
        self.smoothing = None if smoothing is None else {k: [list(map(float, r)) if isinstance(r, (list, tuple))
                                                             else float(r) for r in v] for k, v in smoothing.items()}
        if n_classes < 1 or n_channels < 1 or context < 0 or (layer is not None and layer < 0):
            raise ConfigError(f"a probe head needs classes, channels and a context and layer of 0 or more, got "
                              f"{n_classes}, {n_channels}, {context} and {layer}")
        if scaling not in SCALINGS:
            raise ConfigError(f"unknown probe scaling {scaling!r}; choose one of {', '.join(SCALINGS)}")
        if bands is not None and (not len(bands) or any(len(b) != 2 or not 0 <= b[0] < b[1] for b in bands)):
            raise ConfigError(f"probe bands must be (low, high) pairs in Hz with low < high, got {bands!r}")
        self.d_model, self.n_channels, self.context = d_model, n_channels, context
        self.layer, self.pooling, self.scaling = layer, pooling, scaling
        #: None: the spectral block of heads written before issue 24 (log absolute power, SPECTRAL_BANDS).
        self.bands = None if bands is None else tuple((float(lo), float(hi)) for lo, hi in bands)
        self.linear = nn.Linear(self._width(context, pooling), n_classes)
        nn.init.zeros_(self.linear.weight)
        nn.init.zeros_(self.linear.bias)

    @property
    def n_spectral_features(self) -> int:
        """Return how many spectral features the head reads (per channel: absolute and relative power per band)."""
        per_channel = len(SPECTRAL_BANDS) if self.bands is None else 2 * len(self.bands)
        return self.n_channels * per_channel

    def _width(self, context: int, pooling: str) -> int:
        n_inputs = pooled_width(self.d_model, pooling) + self.n_spectral_features + getattr(self, "n_prior", 0)
        return n_inputs * (2 if context else 1)

    def spectral(self, x: Tensor) -> Tensor:
        """Return the spectral block ``(B, n_spectral_features)`` of windows ``x`` ``(B, C, P, 200)``."""
        if self.bands is None:
            return log_band_power(x.float()).flatten(1)
        return band_power_features(x, self.bands)

    def spectral_layout(self) -> tuple[int, int, int]:
        """Return ``(first column, columns per channel, absolute-power columns per channel)`` of the spectral block
        in the read-out's inputs (channel-major: every band of channel 0, then channel 1, ...)."""
        per_channel = self.n_spectral_features // self.n_channels
        # heads before issue 24 read log absolute power only; later ones absolute, then relative, per band
        return self.n_backbone_features, per_channel, per_channel if self.bands is None else len(self.bands)

    @property
    def n_backbone_features(self) -> int:
        """Return how many leading input features come from the backbone (the rest are spectral)."""
        return pooled_width(self.d_model, self.pooling)

    @property
    def reads_backbone(self) -> bool:
        """Return whether any read-out weight falls on the backbone block (or its running-mean copy).

        False for the read-outs the ladder fits with ``backbone_weight`` 0 (the band-power, context
        and prior rungs: their folded weights on that block are exactly 0) and for a fresh, zero
        head: the backbone's output cannot change such a head's logits, so scoring it need not run
        the backbone (:func:`~passport_kit.engine.forward.predict_proba`). A NaN weight counts as
        read: it would have poisoned the logits.
        """
        return self._reads(0, self.n_backbone_features)

    @property
    def reads_spectral(self) -> bool:
        """Return whether any read-out weight falls on the band-power block (or its running-mean copy).

        False for the sleep stager's read-outs (the ladder's ``stager`` and ``recalibrated`` rungs read the
        prior block alone; issue 47: a night's band power was a third of such a bundle's ``predict``): the
        band powers cannot change their logits, so scoring them need not compute them. As
        :attr:`reads_backbone`, a NaN weight counts as read.
        """
        start = self.n_backbone_features
        return self._reads(start, start + self.n_spectral_features)

    def _reads(self, start: int, stop: int) -> bool:
        """Return whether a read-out weight on input columns ``start:stop`` (or their running-mean copy) is not 0."""
        weight = self.linear.weight.detach()
        width = weight.shape[1] // (2 if self.context else 1)
        blocks = [weight[:, start:stop]] + ([weight[:, width + start:width + stop]] if self.context else [])
        return any(bool(block.ne(0).any()) for block in blocks)

    def features_without_backbone(self, x: Tensor) -> Tensor:
        """Return the read-out's input ``(B, F)`` for windows ``x`` ``(B, C, P, 200)`` with the backbone block as zeros.

        For a head that does not read the backbone (:attr:`reads_backbone` False): the zeros meet
        weights that are exactly 0, as the pooled features would, so the logits are those of
        :meth:`features` (same widths, same product; tested byte for byte), without the backbone's
        forward pass. A head that reads band power neither (:attr:`reads_spectral` False) needs no
        features at all: :func:`~passport_kit.engine.forward.predict_proba` gives it zeros, by the same argument.
        """
        if x.shape[1] != self.n_channels:
            raise DataError(f"this head was fitted on {self.n_channels} channels, got {x.shape[1]}; "
                            "predict with the montage the adapter was trained on")
        n = self.n_backbone_features
        return torch.cat([torch.zeros(x.shape[0], n, dtype=torch.float32, device=x.device), self.spectral(x)], dim=1)

    def features(self, feats: Tensor, x: Tensor, pooling: ProbePooling | None = None) -> Tensor:
        """Return the read-out's input ``(B, F)`` for backbone features ``(B, C, P, D)`` and windows ``x``.

        ``pooling`` overrides the head's own (the probe recipe computes "meanstd" once and
        chooses between the poolings by cross-validation).
        """
        if x.shape[1] != self.n_channels:
            raise DataError(f"this head was fitted on {self.n_channels} channels, got {x.shape[1]}; "
                            "predict with the montage the adapter was trained on")
        feats = feats.float()  # pooled in fp32 also under bf16 autocast (see fp32_head)
        pooled = [feats.mean(dim=(1, 2))]
        if (pooling or self.pooling) == "meanstd" and feats.shape[-1]:  # (a width-0 block has no spread)
            pooled.append(feats.std(dim=2, correction=0).mean(dim=1))
        return torch.cat([*pooled, self.spectral(x)], dim=1)

    def set_read_out(self, context: int, pooling: ProbePooling | None = None, scaling: Scaling | None = None,
                     prior: dict[str, Any] | None = None, n_prior: int = 0) -> None:
        """Give the head ``context`` windows on each side (and ``pooling``, ``scaling``, a prior block of ``n_prior``
        inputs from ``prior``); a new, zero read-out layer, no smoothing, temperature 1."""
        pooling = pooling or self.pooling
        self.n_prior, self.prior = (int(n_prior), dict(prior)) if n_prior and prior else (0, None)
        self.scales_prior = not self.n_prior  # a new prior block stays unscaled (issue 55); without one, as ever
        self.temperature, self.smoothing = 1.0, None
        # Where the old layer was: a head on a GPU keeps its read-out there (evaluate --device cuda scored a CPU layer).
        self.linear = nn.Linear(self._width(context, pooling), self.linear.out_features, device=self.linear.weight.device)
        self.context, self.pooling, self.scaling = context, pooling, scaling or self.scaling
        nn.init.zeros_(self.linear.weight)
        nn.init.zeros_(self.linear.bias)

    def read_out(self, z: Tensor, groups: Sequence[Any] | None = None) -> Tensor:
        """Return logits ``(N, n_classes)`` from read-out inputs ``z`` ``(N, F)`` (rows in time order per group).

        In fp32 also under bf16 autocast (:func:`fp32_head`).
        """
        with fp32_head(z):
            return self.linear(read_out_inputs(z.to(self.linear.weight.dtype), self.context, self.scaling, groups,
                                               self.unscaled_inputs))

    @property
    def unscaled_inputs(self) -> int:
        """Return how many trailing read-out inputs per-recording scaling leaves as they are (the prior block of a
        head written since issue 55; 0 otherwise)."""
        return 0 if self.scales_prior else self.n_prior

    def forward(self, feats: Tensor, x: Tensor) -> Tensor:
        """Return logits ``(B, n_classes)`` (with ``context`` or ``scaling``: the batch is one recording's windows)."""
        if self.n_prior:
            raise ConfigError("this read-out stacks a sleep prior, computed per night: score it with "
                              "passport_kit.engine.forward.predict_proba(..., prior=...)")
        return self.read_out(self.features(feats, x))

    def stager_classes(self) -> list[int]:
        """Return the indices of the classes a stacked sleep stager's log-probabilities reach: this read-out can output
        them whatever its training labels held (issue 58: a stager shipped as it is, or recalibrated around its own
        output with a weight of 1 from each stage, still outputs REM after training nights without REM).

        A class without training windows that no stager column reaches has a zero row and the fit's constant -30
        (:func:`passport_kit.onboard.probe.fit_head`): it is never output.
        """
        if not self.n_prior:
            return []
        weight = self.linear.weight.detach()
        half = weight.shape[1] // (2 if self.context else 1)   # the stager's block ends the inputs (and their mean)
        blocks = [weight[:, half - self.n_prior:half]] + ([weight[:, -self.n_prior:]] if self.context else [])
        return [int(k) for k in torch.nonzero(torch.cat(blocks, dim=1).ne(0).any(dim=1)).flatten()]

    def postprocess(self, proba: Any, groups: Sequence[Any] | None = None) -> Any:
        """Return probabilities ``(N, K)`` (numpy) after the head's smoothing over each night, then its temperature.

        Rows in time order within each run of equal ``groups`` (None: one recording). Identity
        for a head with neither (every head before issue 33).
        """
        if self.smoothing is None and self.temperature == 1.0:
            return proba
        from passport_kit.model.night import smooth, temper

        import numpy as np

        out = np.asarray(proba, dtype=np.float64)
        if self.smoothing is not None:
            out = smooth(out, np.asarray(self.smoothing["transitions"]), np.asarray(self.smoothing["emission_prior"]),
                         groups)
        return temper(out, self.temperature).astype(np.float32)


class ClassificationHead(Head):
    """Pool encoder features, normalise, then a two-layer MLP with dropout.

    ``mean``: average over channels and patches → D features (any C and P).
    ``patches``: average over channels, keep the patch order → P·D features (fixed P).
    The parameter-free pooling makes the head independent of the channel count, so one head
    serves any montage.
    """

    kind = "mlp"

    @classmethod
    def build(cls, backbone: Backbone, n_classes: int, *, pooling: Pooling = "mean", n_patches: int | None = None,
              hidden: int = 200, dropout: float = 0.1) -> ClassificationHead:
        """Return the paper's MLP head over ``backbone``'s width."""
        return cls(backbone.config.d_model, n_classes, pooling=pooling, n_patches=n_patches, hidden=hidden,
                   dropout=dropout)

    def settings(self) -> dict[str, Any]:
        """Return the keywords that rebuild this head (the bundle leaves out its kind, as it always has)."""
        first, dropout, last = self.net[0], self.net[2], self.net[-1]
        return {"kind": "mlp", "n_classes": last.out_features, "pooling": self.pooling, "n_patches": self.n_patches,
                "hidden": first.out_features, "dropout": dropout.p}

    def logits(self, backbone: Backbone, x: Tensor, meta: ChannelMeta, mask: Tensor | None,
               distrust: Tensor | None) -> Tensor:
        """Return logits of ``x`` from the backbone's output."""
        return self(backbone(x, meta, mask, distrust))

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
        """Return logits ``(B, n_classes)`` for features ``(B, C, P, D)``.

        The head runs in fp32 also under bf16 autocast (:func:`fp32_head`).
        """
        if self.pooling == "patches" and feats.shape[2] != self.n_patches:
            raise DataError(
                f"head expects {self.n_patches} patches per window, got {feats.shape[2]} -"
                " use the window length the adapter was trained with"
            )
        with fp32_head(feats):
            if self.pooling == "mean":
                pooled = self.norm(feats.float().mean(dim=(1, 2)))
            else:
                pooled = self.norm(feats.float().mean(dim=1)).flatten(1)
            return self.net(pooled)


class Classifier(FrozenStaysEval, nn.Module):
    """Backbone + classification head; ``forward(x, meta) -> (B, n_classes)`` logits.

    ``kind`` names the head (:class:`Head`'s registry: ``mlp``, the paper's; ``probe``, the
    cross-validated read-out) and ``head_options`` are that head's keywords, as
    ``adapter.json``'s ``head`` block stores them (:attr:`head_settings`).
    """

    def __init__(self, backbone: Backbone, n_classes: int, *, kind: HeadKind = "mlp", **head_options: Any) -> None:
        super().__init__()
        self.backbone = backbone
        builder = Head.of_kind(kind)
        try:
            self.head: Head = builder.build(backbone, n_classes, **head_options)
        except TypeError as exc:  # a keyword another head takes
            raise ConfigError(f"head {kind!r} does not take these settings ({exc}); give that head's own") from None
        self.policy = "full"

    @property
    def head_settings(self) -> dict[str, Any]:
        """Return the keyword arguments that rebuild this head (stored in adapter bundles)."""
        return self.head.settings()

    def forward(self, x: Tensor, meta: ChannelMeta, mask: Tensor | None = None,
                distrust: Tensor | None = None) -> Tensor:
        """Return logits ``(B, n_classes)`` for ``x`` ``(B, C, P, 200)`` (``mask``, ``distrust``: see Backbone)."""
        return self.head.logits(self.backbone, x, meta, mask, distrust)

    def read_out_features(self, x: Tensor, meta: ChannelMeta, mask: Tensor | None = None,
                          distrust: Tensor | None = None, pooling: ProbePooling | None = None) -> Tensor:
        """Return a probe head's input ``(B, F)`` for ``x`` ``(B, C, P, 200)`` (what its linear layer reads).

        ``pooling`` overrides the head's own (see :meth:`ProbeHead.features`).
        """
        if not isinstance(self.head, ProbeHead):
            raise ConfigError("read_out_features needs a probe head (Classifier(kind='probe'))")
        return self.head.features(self.backbone(x, meta, mask, distrust, self.head.layer), x, pooling)
