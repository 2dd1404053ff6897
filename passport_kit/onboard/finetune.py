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
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from pydantic import BaseModel, ConfigDict, Field
from torch import Tensor, nn

from passport_kit.errors import DataError, TrainingError
from passport_kit.engine.batch_rows import note
from passport_kit.engine.forward import gate_meta, predict_proba
from passport_kit.engine.corruption import corrupt_windows, drop_channels
from passport_kit.onboard.criteria import selection_score
from passport_kit.onboard.fitting import Balance, FitData, FitResult, FitRun, class_weights
from passport_kit.onboard.metrics import ClassificationMetrics, classification_metrics
from passport_kit.runtime import autocast, step_seed
from passport_kit.engine.state import TrainingState, load_training_state, save_training_state

#: Key of the corruption draws in :func:`~passport_kit.runtime.step_seed` (step, stream).
_CORRUPTION_STREAM = 8
#: Key of the channel-dropout draws (``drop_prob``), and of the head's dropout draws.
_DROP_STREAM, _DROPOUT_STREAM = 9, 10


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


def trainable_state(model: nn.Module) -> dict[str, torch.Tensor]:
    """Return copies of the trainable tensors (CPU), by state-dict name."""
    names = {n for n, p in model.named_parameters() if p.requires_grad}
    return {k: v.detach().cpu().clone() for k, v in model.state_dict().items() if k in names}


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


def fit(model: nn.Module, data: FitData, settings: FinetuneSettings, *, train_index: np.ndarray | None = None,
        val_index: np.ndarray | None = None, run: FitRun | None = None) -> FitResult:
    """Return the result of training ``model``'s trainable parameters on rows of ``data`` by ``settings``.

    One loop of small steps: plan the batches (:class:`_Batches`), resume (:meth:`_LoopState.resumed`),
    then per step a batch with its input regularisers (:func:`_training_batch`), the loss with L2-SP
    (:class:`_L2SP`), an optimisation step with its divergence checks (:class:`_Optimiser`), and at every
    evaluation the selection of the kept state, the saved state and early stopping (:class:`_LoopState`).

    Parameters
    ----------
    model : nn.Module
        Classifier with its freezing policy applied; ``forward(x (B, C, P, 200), meta)`` returns
        logits ``(B, n_classes)``. On return it holds the best validation state.
    data : FitData
        The windows, labels and per-window channel masks (and recordings, for runs of one recording).
    train_index : np.ndarray, optional
        Rows of ``data`` to train on (default: all).
    val_index : np.ndarray, optional
        Rows of ``data`` for model selection and early stopping; without them the last state is
        kept.
    run : FitRun, optional
        Device, precision, resumable state and progress (default: CPU, fp32, neither).
    """
    run = run or FitRun()
    device = run.device
    batches = _Batches.plan(data, train_index, settings)
    validate = val_index is not None and len(val_index) > 0
    if settings.quality_gate:
        from passport_kit.model.policy import policy_of
        from passport_kit.model.quality_gate import gate_classifier

        gate_classifier(model, policy_of(model))
    model.to(device)
    meta = data.meta.to(device)
    optimiser = _Optimiser(model, settings, batches.total)
    # L2-SP's anchor: the trainable tensors as they start (pretrained adapter, fitted read-out), not as resumed.
    l2sp = _L2SP(optimiser.trained, settings.l2sp)
    loss_fn = _loss_function(data.y[batches.train_index], len(data.classes), settings, device)
    loop = _LoopState.resumed(run, model, optimiser) or _LoopState(best=trainable_state(model))
    start_time = time.perf_counter()
    model.train()  # frozen modules stay in eval (model.policy.FrozenStaysEval)
    while loop.step < batches.total:
        step = loop.step
        xb, yb, extra = _training_batch(data, batches.rows(step), step, settings, device)
        # Dropout draws seeded per step, as in pretraining: the same settings train the same
        # model, and a resumed run draws what the interrupted one would have.
        torch.manual_seed(step_seed(settings.seed, step, _DROPOUT_STREAM))
        with autocast(device, run.precision):
            logits = model(xb, gate_meta(model, xb, meta), **extra)
        loop.add_loss(optimiser.step(l2sp(loss_fn(logits.float(), yb)), step + 1))
        info: dict[str, Any] = {"loss": loop.running}
        if batches.evaluates_at(loop.step):
            metrics = _validate(model, data, val_index, settings, run) if validate else None
            info.update(loop.evaluated(model, optimiser.lr, metrics))
            if run.state_path is not None:
                loop.save(run, model, optimiser)
            if settings.max_steps is None and validate and loop.bad_evals >= settings.patience:
                break  # early stopping (a fixed step budget only selects)
        if run.progress is not None:
            run.progress(loop.step, batches.total, info)
    return loop.result(model, batches.total, time.perf_counter() - start_time)


# -- the steps of fit() ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Batches:
    """The rows of every step, drawn without state: epoch *e*'s order is seeded by ``(seed, e)``."""

    train_index: np.ndarray
    settings: FinetuneSettings
    chunks: list[np.ndarray] | None  # runs of one recording (FitData.sequence), else None
    balanced_y: np.ndarray | None    # the training labels for class-balanced draws (balance='sampler')
    per_epoch: int
    total: int
    eval_every: int

    @classmethod
    def plan(cls, data: FitData, train_index: np.ndarray | None, settings: FinetuneSettings) -> _Batches:
        """Return the batch plan of ``train_index`` (default: every row); DataError when a row is unlabeled."""
        rows = np.arange(len(data.y)) if train_index is None else np.asarray(train_index, dtype=np.int64)
        if len(rows) == 0 or (data.y[rows] < 0).any():
            raise DataError("no labeled training windows; check the labels and the training subjects")
        chunks = None if data.sequence is None else _sequence_chunks(rows, data.sequence, settings.batch_size)
        per_epoch = len(chunks) if chunks is not None else max(1, math.ceil(len(rows) / settings.batch_size))
        return cls(rows, settings, chunks, data.y[rows] if settings.balance == "sampler" else None, per_epoch,
                   settings.max_steps or settings.epochs * per_epoch, settings.eval_every or per_epoch)

    def rows(self, step: int) -> np.ndarray:
        """Return the rows of step ``step`` (0-based)."""
        epoch, offset = divmod(step, self.per_epoch)
        if self.chunks is not None:
            return self.chunks[np.random.default_rng([self.settings.seed, epoch]).permutation(len(self.chunks))[offset]]
        order = _epoch_order(len(self.train_index), self.settings.seed, epoch, self.balanced_y)
        size = self.settings.batch_size
        return np.sort(self.train_index[order[offset * size:(offset + 1) * size]])  # sorted: a memmap read in order

    def evaluates_at(self, step: int) -> bool:
        """Return whether the run evaluates (and saves its state) after ``step`` steps."""
        return step % self.eval_every == 0 or step == self.total


def _training_batch(data: FitData, idx: np.ndarray, step: int, settings: FinetuneSettings,
                    device: torch.device) -> tuple[Tensor, Tensor, dict[str, Tensor]]:
    """Return step ``step``'s inputs ``(B, C, P, 200)``, labels ``(B,)`` and forward keywords (mask, distrust).

    The input regularisers act here, each drawing from its own seeded stream: synthetic channel
    faults (``corrupt_prob``) and channel dropout (``drop_prob``) among the channels not masked already.
    """
    read = xb = torch.from_numpy(np.ascontiguousarray(data.x[idx], dtype=np.float32))
    if settings.corrupt_prob > 0:
        xb, _ = corrupt_windows(xb, settings.corrupt_prob, torch.Generator().manual_seed(
            step_seed(settings.seed, step, _CORRUPTION_STREAM)))
    mb = batch_channel_mask(data.channel_mask, idx, xb.shape, settings.drop_prob,
                            torch.Generator().manual_seed(step_seed(settings.seed, step, _DROP_STREAM)))
    extra: dict[str, Tensor] = {}
    if mb is not None:
        extra["mask"] = mb.to(device)
    if data.distrust is not None:
        extra["distrust"] = torch.from_numpy(np.asarray(data.distrust[idx], dtype=bool)).to(device)
    on_device = xb.to(device)
    if xb is read:  # the windows as read (no synthetic fault): a cache keyed by row may serve them
        note(on_device, data.x, idx)
    return on_device, torch.from_numpy(data.y[idx]).to(device), extra


def _loss_function(y_train: np.ndarray, n_classes: int, settings: FinetuneSettings,
                   device: torch.device) -> nn.CrossEntropyLoss:
    """Return the cross-entropy with label smoothing, class-weighted when ``balance='weights'``."""
    weight = None
    if settings.balance == "weights":
        weight = torch.as_tensor(class_weights(y_train, n_classes), dtype=torch.float32, device=device)
    return nn.CrossEntropyLoss(weight=weight, label_smoothing=settings.label_smoothing)


class _L2SP:
    """L2-SP: adds ``strength/2 · Σ |θ − θ₀|²`` to a loss, θ₀ the trainable tensors when this is made (0: off)."""

    def __init__(self, trained: list[tuple[str, nn.Parameter]], strength: float) -> None:
        self.trained, self.strength = trained, strength
        self.anchor = [p.detach().clone() for _, p in trained] if strength > 0 else []

    def __call__(self, loss: Tensor) -> Tensor:
        if not self.anchor:
            return loss
        return loss + 0.5 * self.strength * sum(((p - a) ** 2).sum() for (_, p), a in zip(self.trained, self.anchor))


class _Optimiser:
    """AdamW over the head and backbone groups, the cosine schedule, clipping and the divergence checks."""

    def __init__(self, model: nn.Module, settings: FinetuneSettings, total: int) -> None:
        self.settings, self.total = settings, total
        self.trained = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW(_param_groups(model, settings), weight_decay=settings.weight_decay)
        self.scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(self.optimizer, T_max=total,
                                                                    eta_min=settings.min_lr)

    @property
    def lr(self) -> float:
        """Return the backbone group's learning rate now (the first group's)."""
        return self.scheduler.get_last_lr()[0]

    def step(self, loss: Tensor, step: int) -> float:
        """Return ``loss``'s value after one optimisation step on it, ``step`` the 1-based step it makes.

        A diverged run stops before its weights are saved (issue 28: never a NaN bundle): TrainingError
        when the loss, or after the step a trainable tensor, is not finite.
        """
        if not bool(torch.isfinite(loss)):
            raise diverged(step, self.total, "the training loss", self.settings)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if self.settings.grad_clip is not None:
            nn.utils.clip_grad_norm_([p for g in self.optimizer.param_groups for p in g["params"]],
                                     self.settings.grad_clip)
        self.optimizer.step()
        bad = first_non_finite(self.trained)
        if bad is not None:
            raise diverged(step, self.total, f"the trainable tensor '{bad}'", self.settings)
        self.scheduler.step()
        return loss.item()


def _validate(model: nn.Module, data: FitData, val_index: np.ndarray, settings: FinetuneSettings,
              run: FitRun) -> ClassificationMetrics:
    """Return the metrics of ``model`` on the validation rows, masked and distrusted as in training; ``model`` is
    back in training mode after."""
    proba = predict_proba(model, data.x, data.meta, index=val_index, batch_size=max(settings.batch_size, 64),
                          device=run.device, precision=run.precision, channel_mask=data.channel_mask,
                          distrust=data.distrust)
    model.train()
    return classification_metrics(data.y[val_index], proba.argmax(1), data.classes, proba)


@dataclass
class _LoopState:
    """What the loop carries from step to step and a resume restores: the running loss, the kept state, the history."""

    best: dict[str, Tensor]
    step: int = 0
    running: float = 0.0  # the loss shown and logged: a running average
    best_step: int = 0
    best_score: float = -math.inf
    bad_evals: int = 0
    history: list[dict[str, Any]] = field(default_factory=list)
    best_val: ClassificationMetrics | None = None

    @classmethod
    def resumed(cls, run: FitRun, model: nn.Module, optimiser: _Optimiser) -> _LoopState | None:
        """Return the loop state saved at ``run.state_path`` and restore the model, optimiser, schedule and random
        streams from it; None when there is none or it is another run's (its ``run_config`` differs)."""
        if run.state_path is None or not run.state_path.is_file():
            return None
        state = load_training_state(run.state_path)
        if state.config != dict(run.run_config or {}):
            return None
        state.restore(model, optimiser.optimizer, optimiser.scheduler)
        history = list(state.metrics.get("history", []))
        best_val = state.metrics.get("best_val")
        return cls(
            best=state.data["best"], step=state.step, best_step=state.data["best_step"],
            bad_evals=state.data["bad_evals"],
            best_score=state.data["best_score"] if state.data["best_score"] is not None else -math.inf,
            # States saved before the running average was: the last record's loss.
            running=state.data.get("running", (state.metrics.get("history") or [{}])[-1].get("train_loss", 0.0)),
            history=history, best_val=ClassificationMetrics.model_validate(best_val) if best_val else None)

    def add_loss(self, value: float) -> None:
        """Count one step done with training loss ``value``."""
        self.step += 1
        self.running = 0.9 * self.running + 0.1 * value if self.step > 1 else value

    def evaluated(self, model: nn.Module, lr: float, metrics: ClassificationMetrics | None) -> dict[str, Any]:
        """Record an evaluation at this step and keep ``model``'s trainable state when it is the best so far
        (without validation ``metrics``: the latest); return what the progress line adds."""
        record: dict[str, Any] = {"step": self.step, "train_loss": self.running, "lr": lr}
        info: dict[str, Any] = {}
        if metrics is None:
            self.best, self.best_step = trainable_state(model), self.step
        else:
            score = selection_score(metrics)
            record.update(val_kappa=metrics.kappa, val_balanced_accuracy=metrics.balanced_accuracy, val_score=score)
            if score > self.best_score:
                self.best_score, self.best_step, self.bad_evals, self.best_val = score, self.step, 0, metrics
                self.best = trainable_state(model)
            else:
                self.bad_evals += 1
            info["val"] = score
        self.history.append(record)
        return info

    def save(self, run: FitRun, model: nn.Module, optimiser: _Optimiser) -> None:
        """Write the resumable training state to ``run.state_path``."""
        save_training_state(run.state_path, TrainingState.capture(
            model, optimiser.optimizer, optimiser.scheduler, step=self.step, config=dict(run.run_config or {}),
            data={"best": self.best, "best_step": self.best_step, "bad_evals": self.bad_evals,
                  "best_score": None if self.best_score == -math.inf else self.best_score, "running": self.running},
            metrics={"history": self.history, "best_val": self.best_val.model_dump() if self.best_val else None}))

    def result(self, model: nn.Module, total: int, seconds: float) -> FitResult:
        """Return the fit's result after loading the kept trainable state back into ``model`` (left in eval mode)."""
        # Only the trainable tensors change during fitting; load exactly those back.
        loaded = model.load_state_dict(self.best, strict=False)
        if loaded.unexpected_keys or set(self.best) != {n for n, p in model.named_parameters() if p.requires_grad}:
            raise RuntimeError(f"best state does not match the trainable tensors: {loaded.unexpected_keys[:5]}")
        model.eval()
        return FitResult(best_step=self.best_step, steps=self.step,
                         best_score=None if self.best_score == -math.inf else float(self.best_score),
                         validation=self.best_val, history=self.history, seconds=seconds,
                         stopped_early=self.step < total)
