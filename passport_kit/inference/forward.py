"""Batched forward passes: class probabilities for a stack of windows.

One function serves validation during ``adapt``, ``evaluate`` and ``predict``, so that the
three see exactly the same numbers for the same model and windows.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from torch import nn

from passport_kit.model.meta import ChannelMeta
from passport_kit.training.runtime import Precision, autocast


def predict_proba(
    model: nn.Module,
    x: np.ndarray,
    meta: ChannelMeta,
    *,
    index: np.ndarray | None = None,
    batch_size: int = 64,
    device: torch.device | None = None,
    precision: Precision = "fp32",
    on_batch: Callable[[int], None] | None = None,
    channel_mask: np.ndarray | None = None,
    distrust: np.ndarray | None = None,
) -> np.ndarray:
    """Return softmax class probabilities, shape (N, n_classes) float32.

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
    on_batch : callable, optional
        Called with the number of windows after each batch (progress bars).
    channel_mask : np.ndarray, shape (N, C) bool, optional
        Channels to replace by the model's mask token in each row of ``x`` (every patch of them),
        as in pretraining: ``predict --mask-bad-channels``.
    distrust : np.ndarray, shape (N, C) bool, optional
        Channels that keep their signal but whose own activity must not shape their channel
        code (expert kinds): ``predict --distrust-bad-channels``.
    """
    device = device or torch.device("cpu")
    was_training = model.training
    model.eval()
    meta = meta.to(device)
    out: list[np.ndarray] = []
    try:
        with torch.inference_mode():
            rows = np.arange(len(x)) if index is None else np.asarray(index, dtype=np.int64)
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
                    logits = model(xb.to(device), meta, **extra)
                # Softmax in fp32: bf16 probabilities round visibly in the CSV.
                out.append(torch.softmax(logits.float(), dim=-1).cpu().numpy())
                if on_batch is not None:
                    on_batch(len(xb))
    finally:
        model.train(was_training)
    if not out:
        return np.zeros((0, 0), dtype=np.float32)
    return np.concatenate(out).astype(np.float32, copy=False)
