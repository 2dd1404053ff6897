"""Pretraining objectives: what a step draws for its batch, the loss of the batch, what validation logs.

An objective is one ``nn.Module`` around the backbone whose ``forward`` gives the loss, so that
DDP wraps the objective and its gradients are reduced over every tensor the loss touches. The
run (:mod:`passport_kit.pretrain.run`) talks to it through :class:`Objective` only:

1. :meth:`Objective.inputs` draws what one step needs besides the windows (masks, targets) from the
   step's random stream, after the input corruption's draws and before the dropout seed;
2. ``forward(x, meta, **inputs)`` returns the loss (under autocast; a scalar in fp32);
3. :meth:`Objective.validate` scores the held-out windows; its ``logged`` keys are the validation
   columns of ``train/metrics.csv``, and the whole dict is what the model card reads;
   :meth:`Objective.record` is what the checkpoint's training record says of the objective.

:class:`MaskedReconstruction` (CBraMod's, ``reference/cbramod.md`` §3.2) is the one objective so
far: every patch of every channel of every window is masked independently with probability
``mask_prob``, the reconstruction head predicts the raw 200 samples of each patch, and the loss is
the mean squared error over the masked patches only. A new objective is a subclass here (the model
card's parts included: ``title``, ``card_lines``, ``card_validation``) with its test; the run builds it
in ``_Run._build_training``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import torch
from torch import Tensor, nn

from passport_kit import runtime
from passport_kit.pretrain import corpus as pdata
from passport_kit.pretrain.config import PretrainConfig


class Objective(nn.Module):
    """Base of a pretraining objective around ``backbone``, set by ``config``; subclasses implement the three steps."""

    #: The keys of :meth:`validate`'s dict that are columns of ``train/metrics.csv`` (and TensorBoard scalars).
    logged: ClassVar[tuple[str, ...]] = ()

    def __init__(self, backbone: nn.Module, config: PretrainConfig) -> None:
        super().__init__()
        self.backbone = backbone
        self.config = config

    def inputs(self, x: Tensor, clean: Tensor, generator: torch.Generator) -> dict[str, Tensor]:
        """Return ``forward``'s keywords for one step's windows ``x`` ``(B, C, P, 200)`` (on the device).

        ``clean`` is ``x`` without the synthetic faults of ``--corrupt-prob`` (``x`` itself when
        there are none); ``generator`` is the step's random stream on this rank (CPU).
        """
        raise NotImplementedError

    def forward(self, x: Tensor, meta: Any, **inputs: Tensor) -> Tensor:
        """Return the loss of one batch: a scalar, computed in fp32 even under bf16 autocast."""
        raise NotImplementedError

    def validate(self, corpus: pdata.PretrainCorpus, metas: list[Any], device: torch.device,
                 precision: runtime.Precision) -> dict[str, Any]:
        """Return the held-out scores of ``corpus.val`` (``metas``: their channels, in order); {} when none is held out."""
        raise NotImplementedError

    def record(self) -> dict[str, Any]:
        """Return what the checkpoint's training record (config.json) says of the objective: its name first."""
        raise NotImplementedError

    # -- the model card (pretrain/card.py asks the objective for its parts) ------------------------------------------
    #: What the card says the backbone was pretrained by ("pretrained by <title>.").
    title: ClassVar[str] = ""

    def card_lines(self, info: dict[str, Any]) -> list[str]:
        """Return the card's bullet(s) on the objective, from the run's training ``info``."""
        raise NotImplementedError

    def card_validation(self, validation: dict[str, Any]) -> list[str]:
        """Return the card's held-out section, from :meth:`validate`'s dict (as recorded in config.json)."""
        raise NotImplementedError


class MaskedReconstruction(Objective):
    """Masked patch reconstruction: the MSE of the reconstructed masked patches (the module docstring)."""

    logged = ("val_loss", "val_zero_loss")

    def inputs(self, x: Tensor, clean: Tensor, generator: torch.Generator) -> dict[str, Tensor]:
        """Return the patch mask ``(B, C, P)`` (Bernoulli ``mask_prob``) and the target: the clean windows."""
        return {"mask": random_mask(tuple(x.shape[:3]), self.config.mask_prob, generator).to(x.device),
                "target": clean}

    def forward(self, x: Tensor, meta: Any, mask: Tensor, target: Tensor) -> Tensor:  # type: ignore[override]
        """Return the MSE over masked patches; ``x`` and ``target`` ``(B, C, P, 200)``, ``mask`` ``(B, C, P)`` bool.

        ``target`` is what the masked patches should be: the clean windows when ``x`` carries
        synthetic faults (``--corrupt-prob``), else ``x``.
        """
        recon = self.backbone.reconstruct(x, meta, mask)
        return masked_mse(recon, target, mask)

    def validate(self, corpus: pdata.PretrainCorpus, metas: list[Any], device: torch.device,
                 precision: runtime.Precision) -> dict[str, Any]:
        """Return held-out masked-reconstruction MSE and the MSE of predicting zeros (see :func:`heldout_mse`)."""
        return heldout_mse(self.backbone, corpus, metas, self.config, device, precision)

    def record(self) -> dict[str, Any]:
        """Return the objective's name and masking probability."""
        return {"objective": "masked patch reconstruction (MSE on masked patches)", "mask_prob": self.config.mask_prob}

    title = "masked patch reconstruction"

    def card_lines(self, info: dict[str, Any]) -> list[str]:
        """Return the masking probability and the loss."""
        return [f"- Objective: each patch masked with probability {info['mask_prob']} (zero mask token), MSE on "
                "masked patches only."]

    def card_validation(self, validation: dict[str, Any]) -> list[str]:
        """Return the held-out MSE per dataset and overall next to predicting zeros, and what their ratio means."""
        val = validation
        if val.get("val_loss") is None:
            return ["No subjects were held out (`--val-fraction 0` or one subject per dataset)."]
        lines = [
            "Masked-patch reconstruction MSE (units of (100 µV)²) on the held-out subjects' windows, with "
            "the same random masks, against predicting zeros for every masked patch:",
            "",
            "| held-out data | windows | model | predicting zeros | ratio |",
            "|---|---|---|---|---|",
        ]
        for label, d in val.get("per_dataset", {}).items():
            ratio = d["val_loss"] / d["val_zero_loss"] if d["val_zero_loss"] else float("nan")
            lines.append(f"| `{label}` | {d['windows']} | {d['val_loss']:.4f} | {d['val_zero_loss']:.4f} | {ratio:.3f} |")
        n_all = sum(d["windows"] for d in val.get("per_dataset", {}).values())
        lines.append(f"| all | {n_all} | {val['val_loss']:.4f} | {val['val_zero_loss']:.4f} | "
                     f"{val.get('ratio_to_zero', float('nan')):.3f} |")
        lines += ["", _verdict(val.get("ratio_to_zero", float("nan")))]
        warning = _per_dataset_warning(val.get("per_dataset", {}))
        if warning:
            lines += ["", warning]
        return lines


def masked_mse(prediction: Tensor, target: Tensor, mask: Tensor) -> Tensor:
    """Return the mean squared error over masked patches (all 200 samples of each).

    ``prediction``/``target`` are ``(B, C, P, 200)``, ``mask`` is ``(B, C, P)`` bool. Computed
    in fp32 even under bf16 autocast. With no masked patch at all the loss is a zero that still
    carries gradients (so every DDP rank reduces the same parameters).
    """
    err = (prediction.float() - target.float()).pow(2)
    if not bool(mask.any()):
        return (prediction.float() * 0.0).sum()
    return err[mask].mean()


def random_mask(shape: tuple[int, int, int], prob: float, generator: torch.Generator) -> Tensor:
    """Return a Bernoulli(``prob``) mask of shape ``(B, C, P)`` (True = masked)."""
    return torch.rand(shape, generator=generator) < prob


@torch.no_grad()
def heldout_mse(backbone: nn.Module, corpus: pdata.PretrainCorpus, metas: list[Any], cfg: PretrainConfig,
                device: torch.device, precision: runtime.Precision) -> dict[str, Any]:
    """Return held-out masked-reconstruction MSE and the MSE of predicting zeros.

    ``val_loss``/``val_zero_loss`` pool every held-out window of ``corpus.val`` (``metas``: their
    channel metadata, in order); ``per_dataset`` maps each dataset to its own pair. Masks are
    drawn from a fixed seed, so values are comparable across steps and runs.
    """
    if not corpus.val:
        return {}
    backbone.eval()
    gen = torch.Generator().manual_seed(pdata.validation_seed(cfg.seed))
    totals = np.zeros(3)
    per_dataset: dict[str, dict[str, float]] = {}
    for pool, meta in zip(corpus.val, metas):
        sums = np.zeros(3)  # squared error of the model, of zeros, masked values counted
        for rows in pdata.validation_batches(pool, cfg.batch_size, cfg.val_max_windows):
            x = torch.from_numpy(pool.gather(rows)).to(device)
            mask = random_mask(tuple(x.shape[:3]), cfg.mask_prob, gen).to(device)
            with runtime.autocast(device, precision):
                recon = backbone.reconstruct(x, meta, mask)
            target = x[mask]
            sums += (float((recon.float()[mask] - target).pow(2).sum()), float(target.pow(2).sum()),
                     float(target.numel()))
        if sums[2]:
            per_dataset[pool.labels[0]] = {"val_loss": sums[0] / sums[2], "val_zero_loss": sums[1] / sums[2],
                                           "windows": len(pdata.validation_rows(pool, cfg.val_max_windows))}
        totals += sums
    if not totals[2]:
        return {}
    return {"val_loss": totals[0] / totals[2], "val_zero_loss": totals[1] / totals[2],
            "per_dataset": per_dataset}


def _verdict(ratio: float) -> str:
    """Return one honest sentence on what the held-out ratio to the zero predictor means."""
    if ratio < 0.9:
        return (f"The model's error is {100 * (1 - ratio):.0f} % below predicting zeros: pretraining learned "
                "structure of the signals that carries over to new subjects.")
    if ratio < 1.0:
        return (f"The model's error is only {100 * (1 - ratio):.1f} % below predicting zeros: this run has barely "
                "started to learn to reconstruct masked patches; expect weak features.")
    return ("The model's error is **not below** predicting zeros: this run did not get past the zero predictor, "
            "so the reconstruction has not been learned. Its weights (and expert bank) have trained for the "
            "steps above but carry little signal knowledge; pretrain longer (see docs/pretraining.md) before "
            "relying on them.")


def _per_dataset_warning(per_dataset: dict[str, dict[str, Any]]) -> str | None:
    """Return a sentence naming the datasets where the model is not below predicting zeros, if any.

    The overall ratio is dominated by the dataset with the most held-out windows, so a dataset
    the model failed on must be named on its own.
    """
    worse = [label for label, d in per_dataset.items() if d["val_zero_loss"] and d["val_loss"] >= d["val_zero_loss"]]
    if not worse or len(per_dataset) < 2:
        return None
    names = ", ".join(f"`{w}`" for w in worse)
    return (f"But on the held-out subjects of {names} it is **worse than predicting zeros**: what it learned "
            "does not carry over to that data (typically too little of it in training); the overall ratio "
            "does not cover it.")


__all__ = ["MaskedReconstruction", "Objective", "heldout_mse", "masked_mse", "random_mask"]
