"""Masked patch reconstruction pretraining of a backbone and its channel embedding.

The objective is CBraMod's (``reference/cbramod.md`` §3.2): every patch of every channel of
every window is masked independently with probability 0.5 (the model replaces it with its
zero mask token), the reconstruction head predicts the raw 200 samples of each patch, and the
loss is the mean squared error over the *masked* patches only. AdamW (lr 5e-4, weight decay
5e-2 on every parameter), a cosine schedule stepped every iteration down to 1e-5, gradient
clipping at global norm 1. The expert kinds (``mlp-experts``, ``xattn-experts``) learn their
10 experts and the mixture network here; their activity summary only sees unmasked patches
(the model does that, given the mask).

One run, one folder (``--out``)::

    out/
      model.safetensors, config.json, MODEL_CARD.md   the base checkpoint (at the end)
      train/state.safetensors                         resumable training state (every N steps)
      train/metrics.csv                               step, loss, lr, grad norm, samples/s, validation
      train/tensorboard/                              the same, when tensorboard is installed

The same call runs alone or under ``torchrun`` (DDP, see :mod:`~passport_kit.pretrain.distributed`);
only rank 0 writes. Ctrl-C (SIGINT) or SIGTERM saves the state before the run stops, and
``resume=True`` continues with the same step, optimizer, schedule, random streams and data
position.
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from torch import Tensor, nn

from passport_kit.errors import ConfigError
from passport_kit.output_lock import output_lock
from passport_kit.pretrain import distributed as dist_tools
from passport_kit.pretrain import corpus as pdata
from passport_kit.pretrain import loader as pretrain_loader
from passport_kit import runtime
from passport_kit.engine.corruption import corrupt_windows
from passport_kit.pretrain.log import MetricsLog, ProgressReporter
from passport_kit.engine.state import TrainingState, load_training_state, save_training_state

STATE_FILE = "train/state.safetensors"
METRICS_FILE = "train/metrics.csv"

#: Settings that may change between a run and its ``--resume`` (they do not change the maths).
_RESUMABLE_CHANGES = frozenset(
    {"out", "resume", "device", "precision", "threads", "checkpoint_every", "val_every",
     "val_max_windows", "progress", "name", "workers", "stop_at"}
)


class DataSource(BaseModel):
    """One dataset to pretrain on, with the montage its recordings are mapped to."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: Path
    montage: str


class PretrainConfig(BaseModel):
    """Every setting of a pretraining run (stored in its training state and checkpoint)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    sources: list[DataSource] = Field(min_length=1)
    embedding: str
    arch: str = "cbramod-small"
    out: Path
    name: str | None = None  # checkpoint name; default: the --out folder's name
    steps: int = Field(1000, gt=0)
    # End the run at this step and write the checkpoint; the schedule still spans ``steps``.
    stop_at: int | None = Field(None, gt=0)
    batch_size: int = Field(16, gt=0)
    lr: float = Field(5e-4, gt=0)
    weight_decay: float = Field(5e-2, ge=0)
    eta_min: float = Field(1e-5, ge=0)
    grad_clip: float = Field(1.0, gt=0)
    mask_prob: float = Field(0.5, gt=0, lt=1)
    # Share of windows with synthetic channel faults (engine.corruption); 0 = CBraMod's recipe.
    corrupt_prob: float = Field(0.0, ge=0, le=1)
    seed: int = 42
    checkpoint_every: int = Field(100, gt=0)
    val_every: int | None = Field(None, gt=0)  # default: with every checkpoint
    val_fraction: float = Field(0.1, ge=0, lt=1)  # subjects held out per dataset
    # Subjects held out by name (a dataset that has some of them holds out exactly those).
    val_subjects: list[str] = Field(default_factory=list)
    val_max_windows: int | None = Field(256, gt=0)  # per dataset; evenly spaced, to bound the cost
    window_seconds: float = Field(30.0, gt=0)
    notch_freq: float | None = 50.0
    amplitude_limit_uv: float | None = Field(100.0, gt=0)  # CBraMod: drop windows over 100 µV
    dropout: float | None = Field(None, ge=0, lt=1)  # None: the architecture's default
    device: str = "auto"
    precision: str = "auto"
    threads: int | None = Field(None, gt=0)
    # DataLoader worker processes per training process; None: pretrain_loader.default_workers.
    workers: int | None = Field(None, ge=0)
    resume: bool = False
    progress: bool = True
    # Upcycling (pretrain.upcycle): start from this base checkpoint's backbone (name or folder).
    init_from: str | None = None
    train: Literal["experts", "all"] | None = None  # with init_from; default "experts"
    temporal_position: Literal["acpe-conv", "sinusoid"] | None = None  # with init_from; see upcycle

    @field_validator("embedding", "arch")
    @classmethod
    def _known_name(cls, value: str, info: ValidationInfo) -> str:
        from passport_kit.model.config import ARCHITECTURES, EMBEDDING_KINDS

        known = {"embedding": list(EMBEDDING_KINDS), "arch": sorted(ARCHITECTURES)}[info.field_name]
        if value not in known:
            what = "embedding" if info.field_name == "embedding" else "architecture"
            raise ValueError(f"unknown {what} {value!r}; choose one of {known}")
        return value

    @model_validator(mode="after")
    def _upcycling_options(self) -> PretrainConfig:
        from passport_kit.pretrain.upcycle import require_expert_kind

        if self.init_from is None:
            for option, value in (("--train", self.train), ("--temporal-position", self.temporal_position)):
                if value is not None:
                    raise ValueError(f"{option} applies to upcycling only; add --init-from BASE or drop {option}")
            return self
        try:
            require_expert_kind(self.embedding)
        except ConfigError as exc:  # pydantic turns a ValueError into a validation error
            raise ValueError(str(exc)) from None
        return self

    @model_validator(mode="after")
    def _stop_within_steps(self) -> PretrainConfig:
        if self.stop_at is not None and self.stop_at > self.steps:
            raise ValueError(f"--stop-at {self.stop_at} is after the last step ({self.steps}); lower it or drop it")
        return self

    @property
    def last_step(self) -> int:
        """Return the step at which the run ends: ``stop_at``, else ``steps``."""
        return self.stop_at or self.steps

    @property
    def trained_part(self) -> str:
        """Return what an upcycling run trains: ``experts`` (default) or ``all``."""
        return self.train or "experts"

    @classmethod
    def from_options(cls, **options: Any) -> PretrainConfig:
        """Return a config from user input; a bad value raises one-line :class:`ConfigError`."""
        try:
            return cls.model_validate(options)
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err.get("loc", ()))
            msg = str(err.get("msg", "invalid")).replace("Value error, ", "")
            if not where:  # a rule across options (the message names them)
                raise ConfigError(msg) from None
            raise ConfigError(f"invalid pretraining option {where}: {msg}") from None

    @property
    def checkpoint_name(self) -> str:
        """Return the name written into the base checkpoint."""
        return self.name or self.out.resolve().name


@dataclass
class StepEvent:
    """What one optimisation step did on one rank (for observers such as tests and audits)."""

    step: int
    rank: int
    world_size: int
    montage: str
    window_ids: list[str]
    loss: float


class TrainingInterrupted(KeyboardInterrupt):
    """A run stopped on Ctrl-C/SIGTERM after saving its state; ``--resume`` continues it."""

    def __init__(self, step: int, state_path: Path) -> None:
        super().__init__(f"interrupted at step {step}; state saved to {state_path}")
        self.step = step
        self.state_path = state_path


class MaskedReconstruction(nn.Module):
    """Wraps a backbone so one ``forward`` gives the masked-patch loss (what DDP wraps)."""

    def __init__(self, backbone: nn.Module) -> None:
        super().__init__()
        self.backbone = backbone

    def forward(self, x: Tensor, meta: Any, mask: Tensor, target: Tensor | None = None) -> Tensor:
        """Return the MSE over masked patches; ``x`` ``(B, C, P, 200)``, ``mask`` ``(B, C, P)`` bool.

        ``target`` (default ``x``) is what the masked patches should be: the clean windows when
        ``x`` carries synthetic faults (``--corrupt-prob``).
        """
        recon = self.backbone.reconstruct(x, meta, mask)
        return masked_mse(recon, x if target is None else target, mask)


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


def pretrain(
    config: PretrainConfig,
    *,
    datasets: list[tuple[str, Any]] | None = None,
    on_step: Callable[[StepEvent], None] | None = None,
    on_end: Callable[[nn.Module, int], None] | None = None,
) -> Path:
    """Pretrain a backbone by masked patch reconstruction; return the base checkpoint folder.

    ``datasets`` replaces reading ``config.sources``: ``(label, WindowSet)`` pairs already in
    memory (e.g. from :func:`passport_kit.signals.load_dataset` in a notebook); their labels
    are ignored and ``config.sources`` then only names them in the model card.
    ``on_step`` sees every step of this rank; ``on_end`` gets the trained backbone and the
    rank (both for audits and tests). Under ``torchrun`` every rank calls this with the same
    config; rank 0 writes.
    """
    ctx = dist_tools.env_context()
    device = runtime.resolve_device(config.device, local_rank=ctx.local_rank if ctx.enabled else None)
    precision = runtime.resolve_precision(config.precision, device)
    ctx = dist_tools.init_distributed(device.type)
    threads_before = torch.get_num_threads()
    try:
        # One writer per output folder (issue 28): rank 0 writes, so rank 0 holds the lock.
        with output_lock(config.out, "pretrain") if ctx.is_main else contextlib.nullcontext():
            return _Run(config, ctx, device, precision, datasets, on_step, on_end).run()
    finally:
        torch.set_num_threads(threads_before)  # a library call leaves the process as it found it
        dist_tools.shutdown_distributed(ctx)


class _Run:
    """One pretraining run on one rank (state that the loop shares)."""

    def __init__(
        self,
        config: PretrainConfig,
        ctx: dist_tools.DistContext,
        device: torch.device,
        precision: runtime.Precision,
        datasets: list[tuple[str, Any]] | None,
        on_step: Callable[[StepEvent], None] | None,
        on_end: Callable[[nn.Module, int], None] | None,
    ) -> None:
        self.cfg = config
        self.ctx = ctx
        self.device = device
        self.precision = precision
        self.datasets = datasets
        self.on_step = on_step
        self.on_end = on_end
        self.out = Path(config.out)
        self.state_path = self.out / STATE_FILE
        self.stop_requested = False
        # Upcycling (init_from): the source's (info, tensors), its record, the frozen tensor names.
        self.source: tuple[Any, dict[str, Tensor]] | None = None
        self.init_record: Any = None
        self.frozen: list[str] = []

    # -- set-up ---------------------------------------------------------------------------

    def _check_out_folder(self) -> None:
        if self.cfg.resume:
            return
        if self.state_path.exists():
            raise ConfigError(
                f"{self.out} holds the training state of an earlier run; pass --resume to continue "
                "it or choose a new --out folder"
            )
        if (self.out / "model.safetensors").exists():
            raise ConfigError(f"{self.out} already holds a base checkpoint; choose a new --out folder")

    def _load_corpus(self) -> pdata.PretrainCorpus:
        from passport_kit.signals.preprocess import PreprocessConfig

        preprocess = PreprocessConfig.from_dict(
            {"window_seconds": self.cfg.window_seconds, "notch_freq": self.cfg.notch_freq,
             "amplitude_limit_uv": self.cfg.amplitude_limit_uv}
        )
        self.preprocess = preprocess
        if self.datasets is not None:
            window_sets = list(self.datasets)
            self.preprocess = window_sets[0][1].config
        else:
            from passport_kit.montage import resolve_montage
            from passport_kit.signals import load_dataset

            window_sets = []
            for source in self.cfg.sources:
                montage = resolve_montage(source.montage)
                window_sets.append((str(source.path), load_dataset(source.path, montage,
                                                                   source_preprocess(source.path, preprocess))))
        return pdata.build_corpus(window_sets, val_fraction=self.cfg.val_fraction, seed=self.cfg.seed,
                                  val_subjects=self.cfg.val_subjects)

    def _build_model(self, corpus: pdata.PretrainCorpus) -> nn.Module:
        from passport_kit.model import ChannelMeta, build_backbone
        from passport_kit.model.config import model_config

        vocab: list[str] = []
        for pool in corpus.train + corpus.val:
            vocab += [n for n in pool.montage.ch_names if n.casefold() not in {v.casefold() for v in vocab}]
        overrides: dict[str, Any] = {}
        if self.cfg.embedding == "channel-id":
            overrides["channel_vocab"] = vocab
        if self.cfg.dropout is not None:
            overrides["dropout"] = self.cfg.dropout
        self.metas = [ChannelMeta.from_montage(p.montage).to(self.device) for p in corpus.train]
        self.val_metas = [ChannelMeta.from_montage(p.montage).to(self.device) for p in corpus.val]
        # Same initial weights on every rank: DDP also broadcasts rank 0's, this keeps it explicit.
        torch.manual_seed(self.cfg.seed)
        if self.source is not None:
            return self._build_upcycled().to(self.device)
        self.model_cfg = model_config(self.cfg.arch, self.cfg.embedding, **overrides)
        return build_backbone(self.model_cfg).to(self.device)

    def _read_source(self) -> None:
        """Read the ``init_from`` checkpoint and check the options against it (before the data)."""
        from passport_kit.pretrain import upcycle

        if self.cfg.init_from is None:
            return
        info, tensors = upcycle.read_source(self.cfg.init_from)
        arch = self.cfg.arch if "arch" in self.cfg.model_fields_set else None
        self.model_cfg = upcycle.upcycled_config(info.model, self.cfg.embedding, arch=arch, dropout=self.cfg.dropout,
                                                 temporal_position=self.cfg.temporal_position)
        self.source = (info, tensors)

    def _build_upcycled(self) -> nn.Module:
        from passport_kit.pretrain import upcycle

        info, tensors = self.source
        backbone = upcycle.build_upcycled(info, tensors, self.model_cfg)
        self.frozen = upcycle.freeze_for(backbone, self.cfg.trained_part)
        self.init_record = upcycle.init_source_record(info, self.model_cfg, self.cfg.trained_part, self.frozen)
        return backbone

    # -- the run --------------------------------------------------------------------------

    def run(self) -> Path:
        cfg, ctx = self.cfg, self.ctx
        runtime.set_threads(cfg.threads)
        runtime.seed_everything(cfg.seed)
        if ctx.is_main:
            self._check_out_folder()
        self._read_source()
        # Rank 0 reads first so that the preprocessing cache is written once, then the others.
        if ctx.is_main:
            corpus = self._load_corpus()
        dist_tools.barrier(ctx)
        if not ctx.is_main:
            corpus = self._load_corpus()
        self.corpus = corpus
        backbone = self._build_model(corpus)
        objective = MaskedReconstruction(backbone)
        model: nn.Module = objective
        if ctx.enabled:
            model = nn.parallel.DistributedDataParallel(objective, device_ids=None)
        params = [p for p in backbone.parameters() if p.requires_grad]
        optimizer = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
        scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=cfg.steps, eta_min=cfg.eta_min)

        step, epoch, position, elapsed_before = 0, 0, 0, 0.0
        if cfg.resume:
            state = load_training_state(self.state_path)
            _check_resume_config(state.config, cfg)
            saved_world = int(state.data.get("world_size", 1))
            if saved_world != ctx.world_size:
                raise ConfigError(
                    f"the saved run used {saved_world} process(es), this one {ctx.world_size}; the data "
                    f"position depends on it - resume with {saved_world} process(es)"
                )
            saved_source = state.data.get("init_sha256")
            if self.source is not None and saved_source not in (None, self.source[0].weights_sha256):
                raise ConfigError(
                    f"--init-from {cfg.init_from} has changed since the run started (SHA-256 "
                    f"{self.source[0].weights_sha256[:12]}... now, {str(saved_source)[:12]}... then); restore it "
                    "or choose a new --out folder"
                )
            state.restore(backbone, optimizer, scheduler)
            step = state.step
            if step > cfg.last_step:
                raise ConfigError(
                    f"the saved run is at step {step}, after --stop-at {cfg.stop_at}; give a later --stop-at or drop it"
                )
            epoch, position = int(state.data["epoch"]), int(state.data["position"])
            elapsed_before = float(state.metrics.get("elapsed_s", 0.0))

        log = MetricsLog(self.out / METRICS_FILE, resume_step=step if cfg.resume else None) if ctx.is_main else None
        reporter = ProgressReporter(total=cfg.last_step, start=step, enabled=ctx.is_main and cfg.progress)
        val_every = cfg.val_every or cfg.checkpoint_every
        started = time.perf_counter()
        last_loss = float("nan")
        last_val: dict[str, Any] = {}
        batches = pretrain_loader.RankBatches(corpus.train, cfg.batch_size, ctx.world_size, ctx.rank, cfg.seed)
        self.workers = self._resolve_workers()

        def snapshot() -> TrainingState:
            return TrainingState.capture(
                backbone, optimizer, scheduler, step=step,
                data={"epoch": epoch, "position": position, "world_size": ctx.world_size,
                      **({"init_sha256": self.source[0].weights_sha256} if self.source else {})},
                config=cfg.model_dump(mode="json"),
                metrics={"loss": last_loss, "elapsed_s": elapsed_before + time.perf_counter() - started},
            )

        with contextlib.ExitStack() as stack:
            stack.enter_context(_stop_signals(self))
            stack.enter_context(reporter)
            if log is not None:
                stack.callback(log.close)
            stream = stack.enter_context(pretrain_loader.batch_stream(
                batches, (epoch, position), cfg.last_step - step, workers=self.workers,
                pin_memory=self.device.type == "cuda"))
            backbone.train()
            t0 = time.perf_counter()
            for batch in stream:
                pool_idx, rows, x = batch.pool, batch.rows, batch.x
                epoch, position = batch.epoch, batch.position
                pool = corpus.train[pool_idx]
                step_seed = runtime.step_seed(cfg.seed, step, ctx.rank)  # masks and dropout of this step and rank
                gen = torch.Generator().manual_seed(step_seed)
                target = None
                if cfg.corrupt_prob > 0:
                    # The model sees faulty channels; the loss asks for the clean signal (denoising).
                    target = x.to(self.device, non_blocking=True)
                    x, _ = corrupt_windows(x, cfg.corrupt_prob, gen)
                x = x.to(self.device, non_blocking=True)
                mask = random_mask(tuple(x.shape[:3]), cfg.mask_prob, gen).to(self.device)
                torch.manual_seed(step_seed)  # dropout draws, reproducible per step and rank
                with runtime.autocast(self.device, self.precision):
                    loss = model(x, self.metas[pool_idx], mask, target)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                grad_norm = float(torch.nn.utils.clip_grad_norm_(params, cfg.grad_clip))
                optimizer.step()
                scheduler.step()
                step += 1
                position += 1
                loss_value = float(loss.detach())
                if ctx.enabled:
                    total = dist_tools.sum_over_ranks(torch.tensor([loss_value], device=self.device), ctx)
                    last_loss = float(total.item()) / ctx.world_size
                else:
                    last_loss = loss_value
                dt = time.perf_counter() - t0  # since the last step's end: waiting for the data counts
                samples_per_s = len(rows) * ctx.world_size / max(dt, 1e-9)
                if self.on_step is not None:
                    self.on_step(StepEvent(step, ctx.rank, ctx.world_size, pool.montage_name,
                                           pool.window_ids(rows), loss_value))
                stop = dist_tools.any_rank(self.stop_requested, ctx, self.device)
                row: dict[str, Any] = {
                    "step": step, "epoch": epoch, "montage": pool.montage_name, "loss": last_loss,
                    "lr": scheduler.get_last_lr()[0], "grad_norm": grad_norm,
                    "samples_per_s": samples_per_s,
                    "elapsed_s": elapsed_before + time.perf_counter() - started,
                }
                if ctx.is_main and (step % val_every == 0 or step == cfg.last_step):
                    last_val = self._validate(backbone)
                    row.update(last_val)
                    backbone.train()
                if log is not None:
                    log.write(row)
                reporter.update(step, last_loss, samples_per_s)
                if ctx.is_main and (step % cfg.checkpoint_every == 0 or stop or step == cfg.last_step):
                    save_training_state(self.state_path, snapshot())
                if stop:
                    dist_tools.barrier(ctx)
                    raise TrainingInterrupted(step, self.state_path)
                t0 = time.perf_counter()
        if self.on_end is not None:
            self.on_end(backbone, ctx.rank)
        if not ctx.is_main:
            dist_tools.barrier(ctx)
            return self.out
        wall = elapsed_before + time.perf_counter() - started
        # The last step validated already, unless a finished run was resumed (no step ran).
        final = last_val or self._validate(backbone)
        if cfg.resume and math.isnan(last_loss):  # no step ran in this session
            last_loss = float(state.metrics.get("loss", float("nan")))
        if self.source is not None:
            self._check_frozen_kept(backbone)
        folder = self._write_checkpoint(backbone, final, last_loss, wall)
        dist_tools.barrier(ctx)
        return folder

    def _resolve_workers(self) -> int:
        """Return this run's DataLoader worker count: ``--workers``, else the device's default."""
        if self.cfg.workers is not None:
            return self.cfg.workers
        per_machine = int(os.environ.get("LOCAL_WORLD_SIZE", "1")) if self.ctx.enabled else 1
        return pretrain_loader.default_workers(self.device.type, per_machine)

    def _check_frozen_kept(self, backbone: nn.Module) -> None:
        """Raise RuntimeError (a bug, not a user error) if a frozen source tensor changed."""
        from passport_kit.pretrain.upcycle import changed_tensors

        changed = changed_tensors(self.source[1], backbone.state_dict(), self.frozen)
        if changed:
            raise RuntimeError(f"frozen tensors changed during upcycling: {changed[:5]}")

    # -- validation and outputs -----------------------------------------------------------

    def _validate(self, backbone: nn.Module) -> dict[str, Any]:
        """Return held-out masked-reconstruction MSE and the MSE of predicting zeros (see :func:`heldout_mse`)."""
        return heldout_mse(backbone, self.corpus, self.val_metas, self.cfg, self.device, self.precision)

    def _input_contract(self) -> dict[str, Any]:
        """Return the checkpoint's preprocessing contract: CBraMod's, with this run's values."""
        from passport_kit.checkpoint import CBRAMOD_PREPROCESSING

        used = self.preprocess.model_dump(mode="json")
        return {**CBRAMOD_PREPROCESSING,
                **{k: used[k] for k in ("sfreq", "l_freq", "h_freq", "notch_freq", "scale_uv")}}

    def _write_checkpoint(self, backbone: nn.Module, final: dict[str, Any], last_loss: float, wall_s: float) -> Path:
        """Write the base checkpoint files into ``out`` beside ``out/train``; return ``out``.

        The checkpoint module writes a complete folder atomically; it goes to a hidden folder
        inside ``out`` and its files are renamed into ``out`` with ``config.json`` last, so the
        folder only reads as a checkpoint (config.json naming the weights' SHA-256) once every
        file is in place, and the training folder beside it is never touched.
        """
        from passport_kit.checkpoint import CARD_FILE, CONFIG_FILE, WEIGHTS_FILE, save_base_checkpoint
        from passport_kit.pretrain.card import model_card, training_info

        info = training_info(self.cfg, self.corpus, self.preprocess, final, last_loss, wall_s,
                             world_size=self.ctx.world_size, workers=self.workers,
                             runtime_line=runtime.describe(self.device, self.precision))
        if self.cfg.corrupt_prob > 0:
            info["corrupt_prob"] = self.cfg.corrupt_prob
        card = model_card(self.cfg, self.model_cfg, info, self.init_record)
        staging = self.out / ".checkpoint.tmp"
        if staging.exists():
            shutil.rmtree(staging)
        save_base_checkpoint(backbone, staging, name=self.cfg.checkpoint_name, card=card,
                             training_info=info, preprocessing=self._input_contract(),
                             init_from=self.init_record)
        for file in (WEIGHTS_FILE, CARD_FILE, CONFIG_FILE):
            os.replace(staging / file, self.out / file)
        shutil.rmtree(staging, ignore_errors=True)
        return self.out


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


def _check_resume_config(saved: dict[str, Any], current: PretrainConfig) -> None:
    """Raise ConfigError when ``--resume`` changes a setting that the saved run depends on."""
    now = current.model_dump(mode="json")
    for key, value in now.items():
        if key in _RESUMABLE_CHANGES:
            continue
        if key not in saved and value == PretrainConfig.model_fields[key].default:
            continue  # a setting added since the run was saved, left at its default
        if saved.get(key) != value:
            raise ConfigError(
                f"--resume with a different {key} ({saved.get(key)!r} in the saved run, {value!r} now); "
                "resume with the original settings or choose a new --out folder"
            )


@contextlib.contextmanager
def _stop_signals(run: _Run) -> Iterator[None]:
    """Turn the first SIGINT/SIGTERM into a stop request (state is saved, then the run stops).

    A second Ctrl-C interrupts at once. Outside the main thread (e.g. a notebook worker)
    signals cannot be caught and are left alone.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}

    def handler(signum: int, frame: object) -> None:  # noqa: ARG001
        if run.stop_requested and signum == signal.SIGINT:
            raise KeyboardInterrupt
        run.stop_requested = True

    for sig in previous:
        signal.signal(sig, handler)
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def parse_sources(data: list[str], montages: list[str]) -> list[DataSource]:
    """Return data sources, in order, from ``--data`` values and ``--montage`` values.

    ``--data DIR:MONTAGE`` names the montage of one dataset. The other ``--data`` values take
    ``--montage``: given once (for all of them) or once per such ``--data``, in the same order.
    """
    if not data:
        raise ConfigError("no --data given; pass at least one dataset folder")
    split: list[tuple[str, str | None]] = []
    for item in data:
        path, sep, montage = item.rpartition(":")
        # A path that exists as given (or a Windows drive letter) is never split at its ':'.
        if sep and path and montage and not Path(item).exists() and not any(c in montage for c in "/\\"):
            split.append((path, montage))
        else:
            split.append((item, None))
    plain = [p for p, m in split if m is None]
    if not plain:
        if len(montages) > 1:
            raise ConfigError("--montage given several times but every --data names its montage; drop --montage")
        return [DataSource(path=Path(p), montage=m) for p, m in split]
    if len(montages) == 1:
        names = iter(montages * len(plain))
    elif len(montages) == len(plain):
        names = iter(montages)
    elif not montages:
        raise ConfigError(f"no montage for --data {plain[0]}; pass --montage NAME or --data DIR:MONTAGE")
    else:
        raise ConfigError(
            f"{len(montages)} --montage values for {len(plain)} --data folders without ':MONTAGE'; "
            "give one --montage for all, one per --data, or use --data DIR:MONTAGE"
        )
    return [DataSource(path=Path(p), montage=m if m is not None else next(names)) for p, m in split]


def source_preprocess(path: Path, preprocess: Any) -> Any:
    """Return ``preprocess`` for one pretraining dataset: its dataset.yaml ``h_freq``, else a top its slowest recording carries.

    The rule of ``adapt`` and ``predict`` (:func:`~passport_kit.signals.recording.fit_preprocessing`):
    the 200 Hz input stays; a recording too slow for the band-pass top gets the top lowered below
    its Nyquist frequency, with a warning.
    """
    from passport_kit.signals.dataset import lowest_sampling_rate
    from passport_kit.signals.dataset_spec import load_dataset_spec
    from passport_kit.signals.recording import fit_preprocessing

    spec = load_dataset_spec(path)
    return fit_preprocessing(preprocess, rate=lambda: lowest_sampling_rate(spec), h_freq=spec.h_freq)
