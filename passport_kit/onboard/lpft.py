"""LP-FT: train the mixture adapter from the backbone rung's read-out, kept only where it helps (issues 26, 33).

The ladder's gradient rung (:mod:`passport_kit.onboard.ladder`, ``--recipe auto``): tried only when the
ladder took the backbone rung, from that read-out, asking the training subjects whether gradient training
of the mixture adapter and the read-out improves on it:

1. **Start** (the "LP" of LP-FT, Kumar et al. 2022): the backbone rung's fitted read-out (standardisation
   folded in, with its band-power block and context), which reads the backbone, so the adapter gets a
   gradient. The ladder never starts LP-FT from a read-out it rejected.
2. **Fine-tune**: AdamW without weight decay at a small learning rate (1e-4, the paper's adapter rate,
   for adapter and read-out alike), cross-entropy without label smoothing and with capped class weights,
   and an L2-SP penalty (Li et al. 2018) pulling every trained tensor toward where it started: the
   pretrained adapter and the fitted read-out. Batches of a head with temporal context are runs of
   consecutive windows of one recording. Budget: :func:`step_budget` (about four passes over the data,
   40 to 400 steps) at a constant rate, so a run stopped after k steps is the first k steps of the full one.
3. **Decide** by inner cross-validation over training subjects (grouped folds): on each fold the start
   read-out is fitted on the fold's training subjects and scored at step 0, LP-FT after a quarter, half
   and all of the budget; the step count with the best mean paired gain is kept only if that gain exceeds
   :data:`~passport_kit.onboard.criteria.SE_MULTIPLE` standard errors and the minimum effect
   (:data:`~passport_kit.onboard.criteria.MIN_EFFECT`), the ladder's rule.
   Then the adapter is trained on every training window for that many steps; otherwise the read-out is
   kept unchanged.

Not tried (recorded as the reason): fewer than two training subjects (nothing to cross-validate over), a
policy that trains no adapter tensor; the ladder itself does not offer it for a read-out scaled per
recording or stacking the sleep prior (a batch cannot carry the whole night). ``adapter.json``
``metrics.selection.adapter_training`` records the decision, both scores, the gain and the curve.
"""

from __future__ import annotations

import contextlib
import copy
import math
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import numpy as np
import torch
from torch import nn

from passport_kit.checkpoint.adapter_metrics import AdapterTraining
from passport_kit.engine.batch_rows import rows_of
from passport_kit.engine.forward import predict_proba
from passport_kit.onboard.criteria import MIN_EFFECT, SE_MULTIPLE, selection_score
from passport_kit.onboard.finetune import FinetuneSettings, fit
from passport_kit.onboard.fitting import FitData, FitRun
from passport_kit.onboard.metrics import classification_metrics
from passport_kit.onboard.probe import MAX_INNER_FOLDS, ReadOutChoice, fit_head, repeated_group_folds

#: The learning rate of adapter and read-out (the paper's adapter rate; the read-out starts at its optimum).
LPFT_LR = 1e-4
#: L2-SP strength: penalty l2sp/2 * |theta - theta_0|^2 summed over the trained tensors.
LPFT_L2SP = 1e-2
#: Step budget: this many passes over the training windows, within [MIN_STEPS, MAX_STEPS].
BUDGET_EPOCHS, MIN_STEPS, MAX_STEPS = 4, 40, 400
#: Fractions of the budget at which the inner cross-validation scores LP-FT.
CHECKPOINTS = (0.25, 0.5, 1.0)


#: Memory (bytes) the frozen blocks' memo may hold: windows beyond it are computed at every use, as before.
MEMO_BYTES = 512 * 2**20


class FrozenMemo:
    """The per-window outputs of the blocks LP-FT does not train, computed once per window of ``x``.

    LP-FT trains the mixture adapter and the read-out; the patch embedding before position
    (:meth:`~passport_kit.model.patch_embedding.PatchEmbedding.embed_patches`: convolutions, spectrum, frozen
    and in eval mode) and the read-out's band-power block (:meth:`~passport_kit.model.heads.ProbeHead.spectral`)
    read the window alone. Yet the training loop and its validation compute them for every window of every
    batch: on 3 half-hour nights about two thirds of LP-FT's CPU time. Within :meth:`installed` the model's
    two blocks are served from here, keyed by row: the batch makers note which rows of ``x`` a batch holds, as
    read (:mod:`passport_kit.engine.batch_rows`); a window's output is computed on its first use and kept.
    Both blocks compute each window on its own (per-window convolution, group norm and FFT), so a window's
    output is the same bytes whatever batch it came in (tested); a batch without rows of ``x`` (changed since
    it was read, a synthetic fault, another array) and windows with a masked patch (the mask enters the patch
    embedding) are computed as before.
    """

    def __init__(self, x: np.ndarray, rows: np.ndarray, budget: int | None = None) -> None:
        self.x, self.budget = x, MEMO_BYTES if budget is None else budget
        rows = list(dict.fromkeys(np.asarray(rows, dtype=np.int64).tolist()))
        self.slot = {r: k for k, r in enumerate(rows)}  # row of x -> its place in each block's store
        # Per block: one tensor (rows kept, ...) filled as windows come, and which of its places are filled.
        self.store: dict[Any, torch.Tensor] = {}
        self.filled: dict[Any, np.ndarray] = {}
        self.used = 0  # bytes of the stores

    def slots_of(self, xb: torch.Tensor) -> np.ndarray:
        """Return the store place of each window of ``xb`` ``(B, C, P, S)`` (-1: none): that of the row of ``x`` it was
        read from, where the batch maker noted it (:func:`~passport_kit.engine.batch_rows.rows_of`)."""
        rows = rows_of(xb, self.x)
        if rows is None:
            return np.full(len(xb), -1, dtype=np.int64)
        return np.fromiter((self.slot.get(int(r), -1) for r in rows), dtype=np.int64, count=len(rows))

    def serve(self, block: Any, compute: Callable[[np.ndarray], torch.Tensor], xb: torch.Tensor,
              fresh: np.ndarray | None = None) -> torch.Tensor:
        """Return block ``block``'s output ``(B, ...)`` for windows ``xb`` ``(B, C, P, S)``: kept windows from the
        memo, the others by ``compute(positions in xb)``; ``fresh`` ``(B,)`` bool: windows never kept (masked)."""
        slots = self.slots_of(xb)
        if fresh is not None:
            slots[fresh] = -1
        filled = self.filled.get(block)
        hit = (slots >= 0) & (filled[np.maximum(slots, 0)] if filled is not None else False)
        todo = np.flatnonzero(~hit)
        if not len(todo):  # the common case once every window was seen: one gather
            return self.store[block][torch.from_numpy(slots)].to(xb.device)
        computed = compute(todo)
        if len(todo) == len(xb):
            out = computed
        else:
            out = torch.empty((len(xb), *computed.shape[1:]), dtype=computed.dtype, device=computed.device)
            out[torch.from_numpy(np.flatnonzero(hit))] = self.store[block][torch.from_numpy(slots[hit])].to(out.device)
            out[torch.from_numpy(todo)] = computed
        self._keep(block, computed, slots[todo])
        return out

    def _keep(self, block: Any, computed: torch.Tensor, slots: np.ndarray) -> None:
        """Keep rows of ``computed`` at store places ``slots`` (-1: not kept), within the memory budget."""
        # Plain tensors, also when made under torch.inference_mode (validation): kept there, read in training.
        with torch.inference_mode(False):
            if block not in self.store:
                per_row = computed[0].numel() * computed.element_size() if len(computed) else 1
                places = min(len(self.slot), (self.budget - self.used) // max(per_row, 1))
                self.store[block] = torch.empty((places, *computed.shape[1:]), dtype=computed.dtype)
                self.used += places * per_row
                self.filled[block] = np.zeros(len(self.slot), dtype=bool)
            store, filled = self.store[block], self.filled[block]
            keep = np.flatnonzero((slots >= 0) & (slots < len(store)))
            if len(keep):
                store[torch.from_numpy(slots[keep])] = computed[torch.from_numpy(keep)].detach().to(store.device)
            filled[slots[keep]] = True

    @contextlib.contextmanager
    def installed(self, model: nn.Module) -> Iterator[None]:
        """Within: ``model``'s patch embedding (before position) and probe head's band-power block served from here."""
        patches, head = model.backbone.patch_embedding, model.head
        plain_patches, plain_spectral = patches.embed_patches, getattr(head, "spectral", None)

        def embed_patches(x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
            # Where it runs decides which form computes it (the bf16 fast path applies in some contexts only):
            # a store per context.
            device = x.device.type
            block = ("patches", torch.is_autocast_enabled(device), torch.get_autocast_dtype(device),
                     torch.is_grad_enabled(), patches.training)
            if mask is None:
                return self.serve(block, lambda todo: plain_patches(_rows(x, todo)), x)
            fresh = mask.reshape(mask.shape[0], -1).any(dim=1).cpu().numpy()
            return self.serve(block, lambda todo: plain_patches(_rows(x, todo), _rows(mask, todo)), x, fresh)

        served: dict[tuple[Any, str], Callable[..., torch.Tensor]] = {(patches, "embed_patches"): embed_patches}
        if plain_spectral is not None:  # a probe head (LP-FT's): its band-power block
            served[(head, "spectral")] = lambda x: self.serve("spectral", lambda todo: plain_spectral(_rows(x, todo)), x)
        before = {key: vars(key[0]).get(key[1]) for key in served}  # an instance's own attribute, if it had one
        for (owner, name), fn in served.items():
            setattr(owner, name, fn)
        try:
            yield
        finally:
            for (owner, name), old in before.items():
                if old is None:
                    del vars(owner)[name]
                else:
                    setattr(owner, name, old)


def _rows(t: torch.Tensor, positions: np.ndarray) -> torch.Tensor:
    """Return rows ``positions`` of ``t`` (``t`` itself when they are all of its rows, in order)."""
    if len(positions) == len(t):
        return t
    return t[torch.from_numpy(positions)]


def step_budget(n_windows: int, batch_size: int) -> int:
    """Return LP-FT's step budget for ``n_windows`` training windows: about four passes, 40 to 400 steps."""
    return int(min(MAX_STEPS, max(MIN_STEPS, BUDGET_EPOCHS * math.ceil(n_windows / batch_size))))


def lpft_settings(*, steps: int, batch_size: int = 64, lr: float | None = None, head_lr: float | None = None,
                  seed: int = 0, eval_every: int | None = None) -> FinetuneSettings:
    """Return the optimisation settings of LP-FT (module docstring): small rate, L2-SP, no decay or smoothing."""
    return FinetuneSettings(batch_size=batch_size, lr=lr or LPFT_LR, head_lr=head_lr or lr or LPFT_LR,
                            weight_decay=0.0, label_smoothing=0.0, max_steps=steps, eval_every=eval_every,
                            l2sp=LPFT_L2SP, min_lr=lr or LPFT_LR, seed=seed)


def not_tried(reason: str) -> AdapterTraining:
    """Return the decision of a run where adapter training was not tried (``reason`` says why)."""
    return AdapterTraining(trained=False, reason=reason)


def train(model: nn.Module, data: FitData, rows: np.ndarray, *, start: ReadOutChoice, plain: dict[str, np.ndarray],
          settings: FinetuneSettings, seed: int = 0, val_index: np.ndarray | None = None,
          run: FitRun | None = None, memo: FrozenMemo | None = None) -> Any:
    """Return the fit of LP-FT on ``rows``: the head set to read-out ``start`` fitted on ``plain`` (the read-out
    inputs of ``rows``), then adapter and read-out trained by ``settings`` (batches of consecutive windows of one
    recording, ``data.sequence``, when ``start`` has temporal context). ``val_index``, ``run``:
    :func:`~passport_kit.onboard.finetune.fit`'s; ``memo``: the frozen blocks' outputs (:class:`FrozenMemo`; None:
    one for these rows)."""
    seq = None if data.sequence is None else np.asarray(data.sequence)
    fit_head(model.head, plain, data.y[rows], start, len(data.classes),
             recordings=None if seq is None else list(seq[rows]), seed=seed)
    if memo is None:
        memo = FrozenMemo(data.x, rows if val_index is None else np.concatenate([rows, val_index]))
    with memo.installed(model):
        return fit(model, data if start.context else replace(data, sequence=None), settings, train_index=rows,
                   val_index=val_index, run=run)


def _fold_score(model: nn.Module, x: np.ndarray, y: np.ndarray, meta: Any, classes: list[str], rows: np.ndarray,
                **forward: Any) -> float:
    proba = predict_proba(model, x, meta, index=rows, **forward)
    return selection_score(classification_metrics(y[rows], proba.argmax(1), classes, proba))


def decide(
    model: nn.Module, data: FitData, rows: np.ndarray, groups: np.ndarray, *, chosen: ReadOutChoice,
    start: ReadOutChoice, plain: dict[str, np.ndarray], settings: FinetuneSettings, run: FitRun | None = None,
    min_effect: float | None = None,
) -> AdapterTraining:
    """Return whether LP-FT beats the probe on grouped inner folds of ``rows`` (the module docstring's rule).

    ``data``: the windows (their ``sequence``: each row's recording, for a read-out with context);
    ``groups``: each window's subject (at most ``MAX_INNER_FOLDS`` folds); ``plain``: the probe's read-out
    inputs of ``rows`` per pooling (row i of each = ``rows[i]``); ``chosen``: the probe's read-out; ``start``:
    LP-FT's starting read-out; ``settings``: LP-FT's, its seed the folds' and fits'; ``run``: where it runs
    (only its device and precision are used: nothing is saved). ``model`` is not changed.
    """
    rows = np.asarray(rows, dtype=np.int64)
    g = np.asarray(groups)[rows]
    seed = settings.seed
    n_folds = min(MAX_INNER_FOLDS, len(np.unique(g)))
    budget = int(settings.max_steps or 0)
    every = max(1, budget // 4)
    marks = sorted({min(budget, every * round(budget * f / every)) for f in CHECKPOINTS})
    x, meta, classes, n_classes = data.x, data.meta, data.classes, len(data.classes)
    run = FitRun() if run is None else FitRun(device=run.device, precision=run.precision)
    forward = {"batch_size": max(settings.batch_size, 64), "device": run.device, "precision": run.precision,
               "channel_mask": data.channel_mask, "distrust": data.distrust}
    seq_all = None if data.sequence is None else np.asarray(data.sequence)
    y = np.asarray(data.y, dtype=np.int64)
    gains: dict[int, list[float]] = {m: [] for m in marks}
    probe_scores: list[float] = []
    lpft_scores: dict[int, list[float]] = {m: [] for m in marks}
    memo = FrozenMemo(x, rows)  # one for every fold: the frozen blocks are the same in every copy of the model
    for fit_pos, test_pos in repeated_group_folds(g, n_folds, 1, seed)[0]:
        fit_rows, test_rows = rows[fit_pos], rows[test_pos]
        if len(np.unique(y[fit_rows])) < 2 or (n_classes == 2 and len(np.unique(y[test_rows])) < 2):
            continue  # AUROC needs both classes in the test fold; a fit needs two classes
        sub = {k: v[fit_pos] for k, v in plain.items()}
        seq = None if seq_all is None else list(seq_all[fit_rows])
        probe = copy.deepcopy(model)
        fit_head(probe.head, sub, y[fit_rows], chosen, n_classes, recordings=seq, seed=seed)
        probe.eval()
        with memo.installed(probe):
            base = _fold_score(probe, x, y, meta, classes, test_rows, **forward)
        del probe
        tuned = copy.deepcopy(model)
        # One run, scored on the fold's test subjects at every mark (its kept state is not used).
        result = train(tuned, data, fit_rows, start=start, plain=sub,
                       settings=settings.model_copy(update={"eval_every": every}), seed=seed, val_index=test_rows,
                       run=run, memo=memo)
        scores = {int(r["step"]): float(r["val_score"]) for r in result.history if "val_score" in r}
        del tuned
        probe_scores.append(base)
        for m in marks:
            lpft_scores[m].append(scores[m])
            gains[m].append(scores[m] - base)
    used = len(probe_scores)
    if used < 2:
        return AdapterTraining(trained=False, reason=f"{used} usable inner fold(s): nothing to decide on",
                               budget=budget, folds=used)
    curve = [{"steps": m, "gain": round(float(np.mean(gains[m])), 4),
              "se": round(float(np.std(gains[m], ddof=1) / math.sqrt(used)), 4)} for m in marks]
    best = max(marks, key=lambda m: np.mean(gains[m]))
    gain = float(np.mean(gains[best]))
    se = float(np.std(gains[best], ddof=1) / math.sqrt(used))
    effect = MIN_EFFECT["auroc" if n_classes == 2 else "kappa"] if min_effect is None else float(min_effect)
    trained = gain > SE_MULTIPLE * se and gain >= effect and gain > 0
    reason = (f"inner cross-validation: LP-FT after {best} steps gains {gain:+.3f} (SE {se:.3f}) over the read-out"
              if trained else f"inner cross-validation: LP-FT's best gain {gain:+.3f} (after {best} steps) is not "
                              f"above {SE_MULTIPLE:g} standard errors ({se:.3f} each) and {effect:g}: the simpler "
                              "read-out is kept")
    return AdapterTraining(trained=trained, reason=reason, steps=best if trained else 0, budget=budget, folds=used,
                           probe_score=float(np.mean(probe_scores)),
                           lpft_score=float(np.mean(lpft_scores[best])), gain=gain, standard_error=se,
                           start=start.as_dict(), curve=curve)


__all__ = ["AdapterTraining", "BUDGET_EPOCHS", "CHECKPOINTS", "LPFT_L2SP", "LPFT_LR", "decide", "lpft_settings",
           "not_tried", "step_budget", "train"]
