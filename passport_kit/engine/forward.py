"""Batched forward passes: class probabilities (or a probe head's inputs) for a stack of windows.

One function serves validation during ``adapt``, ``evaluate`` and ``predict``, so that the
three see exactly the same numbers for the same model and windows.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from passport_kit.engine.batch_rows import note
from passport_kit.errors import CheckpointError, ConfigError
from passport_kit.model.meta import ChannelMeta
from passport_kit.model.quality_gate import has_quality_gate
from passport_kit.runtime import Precision, autocast
from passport_kit.signals.dead_channels import DeadChannels
from passport_kit.signals.quality import window_scores

#: Why a probe head's inputs are always computed in fp32: they feed a fitted regression whose
#: standardisation is folded into its weights; bf16 rounding (8 bits of mantissa) of the pooled
#: features would make the same bundle give other numbers on a bf16 machine than where it was
#: fitted. It is one forward pass without gradients: fp32 costs little.
PROBE_PRECISION: Precision = "fp32"


def gate_meta(model: nn.Module, xb: torch.Tensor, meta: ChannelMeta) -> ChannelMeta:
    """Return ``meta`` carrying the channel quality of each window of ``xb`` ``(B, C, P, 200)`` when ``model`` is gated.

    A quality-gated channel embedding (:mod:`passport_kit.model.quality_gate`) reads each
    window's channel scores (:func:`~passport_kit.signals.quality.window_scores` of the very
    windows it is given, ``(B, C)``) from ``meta.quality``; other models get ``meta`` unchanged,
    and nothing is scored.
    """
    if not has_quality_gate(getattr(model, "backbone", model)):
        return meta
    scores = window_scores(xb.detach().float().cpu().numpy(), list(meta.names), meta.positions.cpu().numpy())
    return meta.with_quality(torch.from_numpy(np.ascontiguousarray(scores, dtype=np.float32)))


def _batches(model: nn.Module, x: np.ndarray, meta: ChannelMeta, rows: np.ndarray, *, batch_size: int,
             device: torch.device, precision: Precision, channel_mask: np.ndarray | None,
             distrust: np.ndarray | None, gate: bool = True
             ) -> Iterator[tuple[torch.Tensor, ChannelMeta, dict[str, torch.Tensor]]]:
    """Yield ``(xb, meta, extra)`` for consecutive batches of ``rows`` of ``x``: a model's inputs, ``model`` in eval
    mode, with no grad and under autocast at ``precision`` while the caller runs its forward pass on them.

    ``xb`` ``(B, C, P, 200)`` on ``device``; ``meta`` scored for a quality gate unless ``gate`` is False (a call
    that does not run the backbone); ``extra``: the batch's ``mask`` and ``distrust`` where given.
    """
    was_training = model.training
    model.eval()
    meta = meta.to(device)
    try:
        with torch.inference_mode():
            for start in range(0, len(rows), batch_size):
                # A copy: memmaps are read-only, and torch wants writable memory.
                batch = rows[start : start + batch_size]
                xb = torch.from_numpy(np.array(x[batch], dtype=np.float32))
                extra: dict[str, torch.Tensor] = {}
                if channel_mask is not None:
                    mask = torch.from_numpy(np.asarray(channel_mask[batch], dtype=bool))[:, :, None]
                    extra["mask"] = mask.expand(-1, -1, xb.shape[2]).to(device)
                if distrust is not None:
                    extra["distrust"] = torch.from_numpy(np.asarray(distrust[batch], dtype=bool)).to(device)
                with autocast(device, precision):
                    yield note(xb.to(device), x, batch), gate_meta(model, xb, meta) if gate else meta, extra
    finally:
        model.train(was_training)


def read_out_features(
    model: nn.Module, x: np.ndarray, meta: ChannelMeta, index: np.ndarray | None = None, *, batch_size: int = 64,
    device: torch.device | None = None, channel_mask: np.ndarray | None = None, distrust: np.ndarray | None = None,
    pooling: str | None = None, backbone: bool = True,
) -> np.ndarray:
    """Return a probe head's inputs ``(N, F)`` float64 for rows ``index`` of ``x`` ``(N, C, P, 200)`` (fp32 forward).

    ``pooling`` overrides the head's pooling of the backbone features (``ProbeHead.features``).
    ``backbone`` False: the backbone block is zeros and the backbone does not run
    (:meth:`ProbeHead.features_without_backbone`): only for scoring a head that does not read it.
    """
    rows = np.arange(len(x)) if index is None else np.asarray(index, dtype=np.int64)
    out = []
    if not backbone:
        head = model.head
        call = lambda xb, meta, **extra: head.features_without_backbone(xb)  # noqa: E731  (masks: backbone only)
    elif pooling is None:
        call = model.read_out_features
    else:
        call = functools.partial(model.read_out_features, pooling=pooling)
    for xb, batch_meta, extra in _batches(model, x, meta, rows, batch_size=batch_size,
                                          device=device or torch.device("cpu"), precision=PROBE_PRECISION,
                                          channel_mask=channel_mask, distrust=distrust, gate=backbone):
        out.append(call(xb, batch_meta, **extra).float().cpu().numpy())
    return np.concatenate(out).astype(np.float64) if out else np.zeros((0, 0))


def finite_probabilities(proba: np.ndarray) -> np.ndarray:
    """Return ``proba`` ``(N, K)`` when every value is finite; else raise a one-line CheckpointError.

    Never staged (issue 46): a head's smoothing edited to zeros gave NaN for every window, and
    the night was staged all Wake with exit 0. Bundles are checked on load
    (:mod:`passport_kit.checkpoint.head_checks`); this is the last line for what no check foresaw.
    """
    bad = ~np.isfinite(np.asarray(proba)).all(axis=1) if np.size(proba) else np.zeros(0, dtype=bool)
    if bad.any():
        raise CheckpointError(f"the adapter gave NaN or infinite class probabilities for {int(bad.sum())} of {len(bad)} "
                              "windows, so nothing was staged; its head settings in adapter.json are damaged - "
                              "restore them or re-run adapt")
    return proba


def predict_proba(
    model: nn.Module,
    x: np.ndarray,
    meta: ChannelMeta,
    *,
    index: np.ndarray | None = None,
    batch_size: int = 64,
    device: torch.device | None = None,
    precision: Precision = "fp32",
    channel_mask: np.ndarray | None = None,
    distrust: np.ndarray | None = None,
    groups: Sequence[Any] | None = None,
    prior: np.ndarray | None = None,
    dead: DeadChannels | None = None,
) -> np.ndarray:
    """Return softmax class probabilities, shape (N, n_classes) float32.

    A head scored by its read-out (``Head.inference`` ``"read-out"``: a
    :class:`~passport_kit.model.heads.ProbeHead`) reads inputs computed in fp32
    whatever ``precision`` says (``PROBE_PRECISION``); one with temporal context reads the
    rows as consecutive windows of the recordings ``groups`` names (None: one recording); one
    whose weights on the backbone block are all 0 (``ProbeHead.reads_backbone`` False) is
    scored without running the backbone, and one whose weights on the band-power block are all 0 too
    (``ProbeHead.reads_spectral`` False: the sleep stager's read-outs) without computing band power.

    Parameters
    ----------
    model : nn.Module
        A classifier whose ``forward(x (B, C, P, 200), meta)`` returns logits ``(B, n_classes)``.
    x : np.ndarray, shape (N, C, P, 200)
        Windows in montage order (a read-only memmap is fine: batches are copied).
    meta : ChannelMeta
        Channel names and positions of ``x``'s channel axis.
    index : np.ndarray, optional
        Rows of ``x`` to predict, in this order (default: all). Rows are read batch by batch,
        so a memmap larger than memory is never copied whole.
    channel_mask : np.ndarray, shape (N, C) bool, optional
        Channels to replace by the model's mask token in each row of ``x`` (every patch of them),
        as in pretraining: ``predict --mask-bad-channels``.
    distrust : np.ndarray, shape (N, C) bool, optional
        Channels that keep their signal but whose own activity must not shape their channel
        code (expert kinds): ``predict --distrust-bad-channels``.
    groups : sequence, optional
        The recording of each predicted row (one entry per row of ``index``), for a probe head
        with temporal context; None: the rows are one recording.
    prior : np.ndarray, shape (N, S), optional
        A sleep prior's log-probabilities for every row of ``x``
        (:func:`passport_kit.sleep.priors.prior_log_proba`): needed by, and only read by, a
        probe head with a prior block (``head.n_prior``).
    dead : DeadChannels, optional
        The dead (flat, NaN, near-dead) channel-windows of every row of ``x``: a probe head reads
        their band powers from the nearest live channel instead
        (:func:`passport_kit.engine.imputation.impute_dead_channels`; issue 46).

    A probe head's night smoothing and temperature (:meth:`ProbeHead.postprocess`) are applied
    last, over ``groups``' recordings.
    """
    device = device or torch.device("cpu")
    rows = np.arange(len(x)) if index is None else np.asarray(index, dtype=np.int64)
    head = getattr(model, "head", None)
    # The head says how it is scored (Head.inference): the engine knows heads only through their class.
    if getattr(head, "inference", "forward") == "read-out":
        z = _read_out_inputs(model, x, meta, rows, batch_size=batch_size, device=device, channel_mask=channel_mask,
                             distrust=distrust, dead=dead)
        return _read_out_proba(model.head, z, rows, prior=prior, groups=groups, device=device)
    out: list[np.ndarray] = []
    for xb, batch_meta, extra in _batches(model, x, meta, rows, batch_size=batch_size, device=device,
                                          precision=precision, channel_mask=channel_mask, distrust=distrust):
        # Softmax in fp32: bf16 probabilities round visibly in the CSV.
        out.append(torch.softmax(model(xb, batch_meta, **extra).float(), dim=-1).cpu().numpy())
    if not out:
        return np.zeros((0, 0), dtype=np.float32)
    return np.concatenate(out).astype(np.float32, copy=False)


def _read_out_inputs(model: nn.Module, x: np.ndarray, meta: ChannelMeta, rows: np.ndarray, *, batch_size: int,
                     device: torch.device, channel_mask: np.ndarray | None, distrust: np.ndarray | None,
                     dead: DeadChannels | None) -> np.ndarray:
    """Return the inputs ``(N, F)`` float64 of a head scored by its read-out (``Head.inference`` ``"read-out"``) for
    rows ``rows`` of ``x``: computed in fp32, dead channels' band powers imputed (:func:`predict_proba`'s arguments)."""
    head = model.head
    # A read-out that gives the backbone no weight (the band-power, context and prior rungs) cannot be
    # changed by it: its inputs are computed without the backbone's forward pass, the same logits.
    if head.reads_backbone or head.reads_spectral:
        z = read_out_features(model, x, meta, rows, batch_size=batch_size, device=device,
                              channel_mask=channel_mask, distrust=distrust, backbone=head.reads_backbone)
    else:  # the sleep stager's read-outs: nothing the windows give is read, the zeros meet zero weights
        z = np.zeros((len(rows), head.n_backbone_features + head.n_spectral_features))
    if len(z) and dead is not None and head.imputes_dead_channels:
        from passport_kit.engine.imputation import impute_dead_channels

        z = impute_dead_channels(z, DeadChannels(np.asarray(dead.windows)[rows], dead.expected_uv), head,
                                 meta.positions.cpu().numpy())
    return z


def _read_out_proba(head: nn.Module, z: np.ndarray, rows: np.ndarray, *, prior: np.ndarray | None,
                    groups: Sequence[Any] | None, device: torch.device) -> np.ndarray:
    """Return the probabilities ``(N, n_classes)`` of a head's read-out of inputs ``z`` ``(N, F)`` (rows ``rows`` of
    the windows): a stacked stager's block appended, then its read-out over ``groups``' recordings and its
    post-processing."""
    if len(z) == 0:
        return np.zeros((0, 0), dtype=np.float32)
    if head.n_prior:
        if prior is None:
            raise ConfigError("this read-out stacks a sleep prior: pass its log-probabilities (prior=)")
        z = np.concatenate([z, np.asarray(prior, dtype=np.float64)[rows]], axis=1)
    runs = None if groups is None else list(groups)
    with torch.inference_mode():
        logits = head.read_out(torch.from_numpy(z).float().to(device), runs)
    proba = torch.softmax(logits.float(), dim=-1).cpu().numpy().astype(np.float32, copy=False)
    return finite_probabilities(head.postprocess(proba, runs))
