"""The downstream training loop shared by ``adapt`` and ``evaluate``.

*What* is trained is the model's freezing policy (``passport_kit.model.apply_policy``); *how*
is this module: the CBraMod fine-tuning recipe as the Device Passport paper uses it
(``reference/cbramod.md`` §4.1, paper appendix A):

- AdamW, weight decay 5e-2. Learning rates follow CBraMod's ``multi_lr`` rule: everything
  inside the backbone (the mixture adapter, or all of it with ``--train full``) at ``lr``
  (1e-4, the paper's value), the newly initialised classification head at
  ``1e-3 · sqrt(batch / 256)`` (5e-4 at batch 64). A fresh head at 1e-4 learns too slowly
  for the small step budgets of a device onboarding; the paper's 1e-4 refers to the pretrained
  part.
- Cosine schedule over the whole step budget, down to 1e-6, stepped every step.
- Cross-entropy with label smoothing 0.1 (two-class tasks too: a two-logit softmax, so AUROC and
  the multi-class metrics share one code path), gradient clipping at global norm 1, head
  dropout 0.1 (set when the classifier is built).
- Skewed classes (N1 is rare in sleep) get inverse-frequency class weights, capped at 5, in the
  loss (``balance='weights'``, default) or class-balanced sampling (``'sampler'``).
- Beyond the paper (issue 8, poor-contact channels; both off by default, which is the paper's
  recipe): ``corrupt_prob`` replaces random channels of that share of training windows by
  synthetic faults (:mod:`passport_kit.engine.corruption`); ``quality_gate`` adds the
  quality-gated noise expert to an expert-kind model before training
  (:mod:`passport_kit.model.quality_gate`).
- Model selection by validation Cohen's kappa (CBraMod's rule for multi-class tasks; AUROC for
  two classes), evaluated every ``eval_every`` steps; the best state is restored at the end.
  Without ``max_steps`` the run lasts ``epochs`` epochs and stops early after ``patience``
  evaluations without improvement. With ``max_steps`` it runs exactly that many steps (the
  paper's compute-matched budget for sample-efficiency sweeps) and only selects the best state.

Batches are drawn without state: the order of epoch *e* is a permutation seeded by
``(seed, e)``, so a resumed run sees the very batches the interrupted one would have.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
from pydantic import BaseModel, ConfigDict, Field
from torch import Tensor, nn

from passport_kit.errors import DataError, TrainingError
from passport_kit.engine.forward import gate_meta, predict_proba
from passport_kit.model.meta import ChannelMeta
from passport_kit.engine.corruption import corrupt_windows, drop_channels
from passport_kit.onboard.metrics import ClassificationMetrics, classification_metrics
from passport_kit.runtime import Precision, autocast, step_seed
from passport_kit.engine.state import TrainingState, load_training_state, save_training_state

#: Key of the corruption draws in :func:`~passport_kit.runtime.step_seed` (step, stream).
_CORRUPTION_STREAM = 8
#: Key of the channel-dropout draws (``drop_prob``), and of the head's dropout draws.
_DROP_STREAM, _DROPOUT_STREAM = 9, 10

TrainPolicy = Literal["adapter", "head", "full"]
Balance = Literal["weights", "sampler", "none"]


class FinetuneSettings(BaseModel):
    """How the trainable part is optimised (the recipe in the module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    batch_size: int = Field(64, gt=0)
    lr: float = Field(1e-4, gt=0)
    head_lr: float | None = Field(None, gt=0, description="None: 1e-3 * sqrt(batch_size / 256)")
    weight_decay: float = Field(5e-2, ge=0)
    min_lr: float = Field(1e-6, ge=0)
    label_smoothing: float = Field(0.1, ge=0, lt=1)
    grad_clip: float | None = Field(1.0, gt=0)
    epochs: int = Field(50, gt=0)
    max_steps: int | None = Field(None, gt=0)
    eval_every: int | None = Field(None, gt=0, description="None: once per epoch")
    patience: int = Field(5, ge=1)
    balance: Balance = "weights"
    corrupt_prob: float = Field(0.0, ge=0, le=1, description="share of training windows given synthetic channel faults")
    quality_gate: bool = False
    drop_prob: float = Field(0.0, ge=0, le=1, description="share of training windows with random channels masked")
    l2sp: float = Field(0.0, ge=0, description="L2-SP: penalty l2sp/2 * |theta - theta_0|^2 pulling every trainable "
                        "tensor toward its value at the start of training (0: off, the paper's recipe)")
    seed: int = 0

    @property
    def resolved_head_lr(self) -> float:
        """Return the head's learning rate (CBraMod's multi-lr rule when not set)."""
        return self.head_lr if self.head_lr is not None else 1e-3 * math.sqrt(self.batch_size / 256)


@dataclass
class FitResult:
    """Outcome of one training run: best step, its validation metrics and the history."""

    best_step: int
    steps: int
    best_score: float | None
    validation: ClassificationMetrics | None
    history: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    stopped_early: bool = False


def trainable_state(model: nn.Module) -> dict[str, torch.Tensor]:
    """Return copies of the trainable tensors (CPU), by state-dict name."""
    names = {n for n, p in model.named_parameters() if p.requires_grad}
    return {k: v.detach().cpu().clone() for k, v in model.state_dict().items() if k in names}


#: The largest class weight (issue 18: an uncapped 28x on a 5-window class turned most N2 and N3
#: epochs of a real night into that class).
MAX_CLASS_WEIGHT = 5.0


def class_weights(y: np.ndarray, n_classes: int, cap: float = MAX_CLASS_WEIGHT) -> np.ndarray:
    """Return inverse-frequency weights n / (k · count_c) capped at ``cap``, 0 for classes absent from ``y``."""
    counts = np.bincount(y[y >= 0], minlength=n_classes).astype(np.float64)
    present = counts > 0
    weights = np.zeros(n_classes)
    weights[present] = np.minimum(counts[present].sum() / (present.sum() * counts[present]), cap)
    return weights


def _epoch_order(n: int, seed: int, epoch: int, y: np.ndarray | None) -> np.ndarray:
    """Return the window order of one epoch; with ``y`` a class-balanced draw with replacement."""
    rng = np.random.default_rng([seed, epoch])
    if y is None:
        return rng.permutation(n)
    counts = np.bincount(y)
    p = 1.0 / counts[y]
    return rng.choice(n, size=n, replace=True, p=p / p.sum())


def _sequence_chunks(train_index: np.ndarray, sequence: np.ndarray, batch_size: int) -> list[np.ndarray]:
    """Return the training rows cut into batches of consecutive windows of one recording (rows in time order)."""
    rows = np.sort(train_index)
    chunks: list[np.ndarray] = []
    names = np.asarray(sequence)[rows]
    starts = np.flatnonzero(np.r_[True, names[1:] != names[:-1], True])
    for a, b in zip(starts[:-1], starts[1:]):
        chunks += [rows[i:min(i + batch_size, b)] for i in range(a, b, batch_size)]
    return chunks


def _param_groups(model: nn.Module, settings: FinetuneSettings) -> list[dict[str, Any]]:
    """Return AdamW groups: head at the head rate, every other trainable tensor at ``lr``."""
    head, rest = [], []
    for name, p in model.named_parameters():
        if p.requires_grad:
            (head if name.startswith("head.") else rest).append(p)
    groups = []
    if rest:
        groups.append({"params": rest, "lr": settings.lr, "name": "backbone"})
    if head:
        groups.append({"params": head, "lr": settings.resolved_head_lr, "name": "head"})
    return groups


def batch_channel_mask(
    channel_mask: np.ndarray | None, idx: np.ndarray, shape: torch.Size, drop_prob: float, generator: torch.Generator
) -> Tensor | None:
    """Return the ``(B, C, P)`` bool patch mask of one training batch, or None when nothing is masked.

    The rows ``idx`` of ``channel_mask`` (known-bad channels), plus channel dropout
    (:func:`~passport_kit.engine.corruption.drop_channels`) among the channels left.
    """
    b, c, p = shape[0], shape[1], shape[2]
    known = torch.zeros(b, c, dtype=torch.bool) if channel_mask is None else torch.from_numpy(np.asarray(channel_mask[idx], dtype=bool))
    masked = known | drop_channels(~known, drop_prob, generator)
    if not masked.any():
        return None
    return masked[:, :, None].expand(b, c, p)


def selection_score(metrics: ClassificationMetrics) -> float:
    """Return the model-selection score: kappa, or AUROC for two-class tasks (CBraMod)."""
    if len(metrics.classes) == 2 and metrics.auroc is not None:
        return metrics.auroc
    return metrics.kappa


def selection_metric(n_classes: int) -> str:
    """Return the name of :func:`selection_score`'s metric for ``n_classes`` classes."""
    return "auroc" if n_classes == 2 else "kappa"


def near_chance(score: float, metric: str) -> bool:
    """Return whether a selection score says the model barely beats chance (AUROC < 0.55, kappa < 0.05)."""
    return score < (0.55 if metric == "auroc" else 0.05)


def diverged(step: int, total: int, what: str, settings: FinetuneSettings) -> TrainingError:
    """Return the error that stops a run whose loss or weights became non-finite at ``step`` (nothing is written)."""
    return TrainingError(
        f"training diverged at step {step} of {total}: {what} became non-finite, so no adapter bundle was written; "
        f"the learning rate is probably too high (lr {settings.lr:g}, head lr {settings.resolved_head_lr:g}): lower "
        "--lr / --head-lr (defaults 1e-4 and 1e-3*sqrt(batch/256)), or look for extreme values in the data")


def first_non_finite(named: list[tuple[str, Tensor]]) -> str | None:
    """Return the name of the first tensor of ``named`` holding NaN or inf, or None when all are finite.

    One device synchronisation for the whole list (this runs after every optimisation step).
    """
    if not named or bool(torch.stack([torch.isfinite(t).all() for _, t in named]).all()):
        return None
    return next(name for name, t in named if not bool(torch.isfinite(t).all()))


def fit(
    model: nn.Module,
    x: np.ndarray,
    y: np.ndarray,
    meta: ChannelMeta,
    classes: list[str],
    settings: FinetuneSettings,
    *,
    train_index: np.ndarray | None = None,
    val_index: np.ndarray | None = None,
    device: torch.device | None = None,
    precision: Precision = "fp32",
    state_path: Path | None = None,
    run_config: dict[str, Any] | None = None,
    progress: Callable[[int, int, dict[str, Any]], None] | None = None,
    channel_mask: np.ndarray | None = None,
    distrust: np.ndarray | None = None,
    sequence: np.ndarray | None = None,
) -> FitResult:
    """Train ``model``'s trainable parameters on windows ``x`` with labels ``y``; return the result.

    Parameters
    ----------
    model : nn.Module
        Classifier with its freezing policy applied; ``forward(x (B, C, P, 200), meta)`` returns
        logits ``(B, n_classes)``. On return it holds the best validation state.
    x : np.ndarray, shape (N, C, P, 200)
        Windows (a read-only memmap is fine: batches are read from it one at a time, so a
        dataset larger than memory is never copied whole).
    y : np.ndarray, shape (N,)
        Class indices (-1 = unlabeled; such windows must not be in ``train_index``).
    train_index : np.ndarray, optional
        Rows of ``x`` to train on (default: all).
    val_index : np.ndarray, optional
        Rows of ``x`` for model selection and early stopping; without them the last state is
        kept.
    state_path : Path, optional
        Resumable training state, written at every evaluation; an existing file whose
        ``run_config`` equals this run's is resumed.
    progress : callable, optional
        ``progress(step, total_steps, info)`` after every step (progress bars, logs).
    channel_mask : np.ndarray, shape (N, C) bool, optional
        Channels to replace by the mask token in each row of ``x``, in training and validation
        alike (the channels ``predict --mask-bad-channels`` would mask), so the model is trained
        the way it will be used.
    distrust : np.ndarray, shape (N, C) bool, optional
        Channels that keep their signal but not their say over their own channel code (expert
        kinds; ``predict --distrust-bad-channels``), in training and validation alike.
    sequence : np.ndarray, shape (N,), optional
        The recording of every row: each batch is then a run of consecutive windows of one recording
        (chunks of ``batch_size``, in a seeded order per epoch), as a probe head with temporal context
        reads them (LP-FT, :mod:`passport_kit.onboard.lpft`). None: windows drawn across recordings.
    """
    device = device or torch.device("cpu")
    y = np.asarray(y, dtype=np.int64)
    train_index = np.arange(len(y)) if train_index is None else np.asarray(train_index, dtype=np.int64)
    y_train = y[train_index]
    if len(train_index) == 0 or (y_train < 0).any():
        raise DataError("no labeled training windows; check the labels and the training subjects")
    has_val = val_index is not None and len(val_index) > 0
    n_classes = len(classes)
    chunks = None if sequence is None else _sequence_chunks(train_index, sequence, settings.batch_size)
    steps_per_epoch = len(chunks) if chunks is not None else max(1, math.ceil(len(train_index) / settings.batch_size))
    total = settings.max_steps or settings.epochs * steps_per_epoch
    eval_every = settings.eval_every or steps_per_epoch
    early_stop = settings.max_steps is None

    if settings.quality_gate:
        from passport_kit.model.policy import policy_of
        from passport_kit.model.quality_gate import gate_classifier

        gate_classifier(model, policy_of(model))
    model.to(device)
    meta_dev = meta.to(device)
    trained = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    # L2-SP's anchor: the trainable tensors as they start (pretrained adapter, fitted read-out), not as resumed.
    anchor = [p.detach().clone() for _, p in trained] if settings.l2sp > 0 else []
    optimizer = torch.optim.AdamW(_param_groups(model, settings), weight_decay=settings.weight_decay)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=total, eta_min=settings.min_lr)
    weight = None
    if settings.balance == "weights":
        weight = torch.as_tensor(class_weights(y_train, n_classes), dtype=torch.float32, device=device)
    loss_fn = nn.CrossEntropyLoss(weight=weight, label_smoothing=settings.label_smoothing)
    balanced_y = y_train if settings.balance == "sampler" else None

    step, best_step, best_score, bad_evals = 0, 0, -math.inf, 0
    best: dict[str, torch.Tensor] = trainable_state(model)
    history: list[dict[str, Any]] = []
    best_val: ClassificationMetrics | None = None
    running = 0.0
    run_config = dict(run_config or {})
    if state_path is not None and state_path.is_file():
        state = load_training_state(state_path)
        if state.config == run_config:
            state.restore(model, optimizer, scheduler)
            step = state.step
            best = state.data["best"]
            best_step, bad_evals = state.data["best_step"], state.data["bad_evals"]
            best_score = state.data["best_score"] if state.data["best_score"] is not None else -math.inf
            # The loss shown and logged is a running average: carry it on (states before it was saved: the last record's).
            running = state.data.get("running", (state.metrics.get("history") or [{}])[-1].get("train_loss", 0.0))
            history = list(state.metrics.get("history", []))
            if state.metrics.get("best_val"):
                best_val = ClassificationMetrics.model_validate(state.metrics["best_val"])
    start_time = time.perf_counter()
    model.train()  # frozen modules stay in eval (model.policy.FrozenStaysEval)
    while step < total:
        epoch, offset = divmod(step, steps_per_epoch)
        if chunks is not None:
            idx = chunks[np.random.default_rng([settings.seed, epoch]).permutation(len(chunks))[offset]]
        else:
            order = _epoch_order(len(train_index), settings.seed, epoch, balanced_y)
            # Sorted rows read a memmap front to back.
            idx = np.sort(train_index[order[offset * settings.batch_size : (offset + 1) * settings.batch_size]])
        xb = torch.from_numpy(np.ascontiguousarray(x[idx], dtype=np.float32))
        if settings.corrupt_prob > 0:
            xb, _ = corrupt_windows(xb, settings.corrupt_prob, torch.Generator().manual_seed(
                step_seed(settings.seed, step, _CORRUPTION_STREAM)))
        mb = batch_channel_mask(channel_mask, idx, xb.shape, settings.drop_prob,
                                torch.Generator().manual_seed(step_seed(settings.seed, step, _DROP_STREAM)))
        xb = xb.to(device)
        yb = torch.from_numpy(y[idx]).to(device)
        # Dropout draws seeded per step, as in pretraining: the same settings train the same
        # model, and a resumed run draws what the interrupted one would have.
        torch.manual_seed(step_seed(settings.seed, step, _DROPOUT_STREAM))
        extra: dict[str, Tensor] = {}
        if mb is not None:
            extra["mask"] = mb.to(device)
        if distrust is not None:
            extra["distrust"] = torch.from_numpy(np.asarray(distrust[idx], dtype=bool)).to(device)
        with autocast(device, precision):
            logits = model(xb, gate_meta(model, xb, meta_dev), **extra)
        loss = loss_fn(logits.float(), yb)
        if anchor:
            loss = loss + 0.5 * settings.l2sp * sum(((p - a) ** 2).sum() for (_, p), a in zip(trained, anchor))
        # A diverged run must stop before its weights are saved (issue 28): never a NaN bundle.
        if not bool(torch.isfinite(loss)):
            raise diverged(step + 1, total, "the training loss", settings)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if settings.grad_clip is not None:
            nn.utils.clip_grad_norm_([p for g in optimizer.param_groups for p in g["params"]], settings.grad_clip)
        optimizer.step()
        bad = first_non_finite(trained)
        if bad is not None:
            raise diverged(step + 1, total, f"the trainable tensor '{bad}'", settings)
        scheduler.step()
        step += 1
        loss_value = loss.item()
        running = 0.9 * running + 0.1 * loss_value if step > 1 else loss_value
        info: dict[str, Any] = {"loss": running}
        if step % eval_every == 0 or step == total:
            record: dict[str, Any] = {"step": step, "train_loss": running, "lr": scheduler.get_last_lr()[0]}
            if has_val:
                proba = predict_proba(model, x, meta, index=val_index, batch_size=max(settings.batch_size, 64),
                                      device=device, precision=precision, channel_mask=channel_mask,
                                      distrust=distrust)
                metrics = classification_metrics(y[val_index], proba.argmax(1), classes, proba)
                score = selection_score(metrics)
                record.update(val_kappa=metrics.kappa, val_balanced_accuracy=metrics.balanced_accuracy,
                              val_score=score)
                model.train()
                if score > best_score:
                    best_score, best_step, bad_evals, best_val = score, step, 0, metrics
                    best = trainable_state(model)
                else:
                    bad_evals += 1
                info["val"] = score
            else:
                best, best_step = trainable_state(model), step
            history.append(record)
            if state_path is not None:
                save_training_state(state_path, TrainingState.capture(
                    model, optimizer, scheduler, step=step, config=run_config,
                    data={"best": best, "best_step": best_step, "bad_evals": bad_evals,
                          "best_score": None if best_score == -math.inf else best_score, "running": running},
                    metrics={"history": history,
                             "best_val": best_val.model_dump() if best_val else None}))
            if early_stop and has_val and bad_evals >= settings.patience:
                break
        if progress is not None:
            progress(step, total, info)
    # Only the trainable tensors change during fitting; load exactly those back.
    result = model.load_state_dict(best, strict=False)
    if result.unexpected_keys or set(best) != {n for n, p in model.named_parameters() if p.requires_grad}:
        raise RuntimeError(f"best state does not match the trainable tensors: {result.unexpected_keys[:5]}")
    model.eval()
    return FitResult(
        best_step=best_step,
        steps=step,
        best_score=None if best_score == -math.inf else float(best_score),
        validation=best_val,
        history=history,
        seconds=time.perf_counter() - start_time,
        stopped_early=step < total,
    )
