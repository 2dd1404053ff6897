"""Pretraining of a backbone and its channel embedding: the run, one rank's loop of small steps.

The objective is CBraMod's masked patch reconstruction (:mod:`~passport_kit.pretrain.objective`,
``reference/cbramod.md`` §3.2), the one :class:`~passport_kit.pretrain.objective.Objective` so far;
the run asks it for each step's draws, the loss and the held-out scores, and owns the rest: AdamW
(lr 5e-4, weight decay 5e-2 on every parameter), a cosine schedule stepped every iteration down to
1e-5, gradient clipping at global norm 1, input corruption (``--corrupt-prob``), logging, saving
and resuming. The expert kinds (``mlp-experts``, ``xattn-experts``) learn their 10 experts and
the mixture network here; their activity summary only sees unmasked patches (the model does that,
given the mask).

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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from passport_kit.errors import ConfigError
from passport_kit.output_lock import output_lock
from passport_kit.pretrain import distributed as dist_tools
from passport_kit.pretrain import corpus as pdata
from passport_kit.pretrain import loader as pretrain_loader
from passport_kit import runtime
from passport_kit.engine.corruption import corrupt_windows
from passport_kit.pretrain.config import DataSource, PretrainConfig
from passport_kit.pretrain.log import TRAINING_COLUMNS, MetricsLog, ProgressReporter
from passport_kit.pretrain.objective import MaskedReconstruction, Objective
from passport_kit.engine.state import TrainingState, load_training_state, save_training_state

STATE_FILE = "train/state.safetensors"
METRICS_FILE = "train/metrics.csv"

#: Settings that may change between a run and its ``--resume`` (they do not change the maths).
_RESUMABLE_CHANGES = frozenset(
    {"out", "resume", "device", "precision", "threads", "checkpoint_every", "val_every",
     "val_max_windows", "progress", "name", "workers", "stop_at"}
)


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


@dataclass
class _Position:
    """Where one rank's run is: its step and data position, its time, and its last loss and validation."""

    step: int = 0
    epoch: int = 0
    position: int = 0  # batches of the epoch done
    elapsed_before: float = 0.0  # seconds of the sessions before a resume
    saved_loss: float = float("nan")  # the resumed state's last loss
    last_loss: float = float("nan")  # mean over ranks, of this session's last step
    last_val: dict[str, Any] = field(default_factory=dict)
    started: float = field(default_factory=time.perf_counter)

    def elapsed(self) -> float:
        """Return the run's seconds so far, earlier sessions included."""
        return self.elapsed_before + time.perf_counter() - self.started


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

    def _licence(self) -> str | None:
        """Return the new checkpoint's licence line: an upcycled one keeps its source's terms (issue 58: an imported
        CBraMod's Apache-2.0); a fresh one states none (its pretraining data's licences are the user's to state)."""
        if self.init_record is None or self.source is None:
            return None
        source = self.source[0]
        return f"derived from base checkpoint {source.name}, whose licence is: {source.licence or 'not stated'}"

    # -- the run --------------------------------------------------------------------------

    def run(self) -> Path:
        """Return the base checkpoint folder after the whole run: set-up, resume, the steps, the checkpoint."""
        runtime.set_threads(self.cfg.threads)
        runtime.seed_everything(self.cfg.seed)
        self._read_inputs()
        self._build_training()
        at = self._resume()
        self._train(at)
        return self._finish(at)

    def _read_inputs(self) -> None:
        """Check the output folder (rank 0), read the ``init_from`` source and the corpus (rank 0 first)."""
        if self.ctx.is_main:
            self._check_out_folder()
        self._read_source()
        # Rank 0 reads first so that the preprocessing cache is written once, then the others.
        if self.ctx.is_main:
            self.corpus = self._load_corpus()
        dist_tools.barrier(self.ctx)
        if not self.ctx.is_main:
            self.corpus = self._load_corpus()

    def _build_training(self) -> None:
        """Build the backbone, its objective (what DDP wraps under torchrun), the optimizer and the schedule."""
        cfg = self.cfg
        self.backbone = self._build_model(self.corpus)
        self.objective: Objective = MaskedReconstruction(self.backbone, cfg)
        self.model: nn.Module = self.objective
        if self.ctx.enabled:
            self.model = nn.parallel.DistributedDataParallel(self.objective, device_ids=None)
        self.params = [p for p in self.backbone.parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW(self.params, lr=cfg.lr, weight_decay=cfg.weight_decay)
        self.scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(self.optimizer, T_max=cfg.steps,
                                                                    eta_min=cfg.eta_min)

    def _resume(self) -> _Position:
        """Return where the run starts: step 0, or (``resume``) the saved run's step and data position, with the
        weights, optimizer, schedule and random streams restored; ConfigError when the saved run does not fit."""
        cfg, ctx = self.cfg, self.ctx
        if not cfg.resume:
            return _Position()
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
        state.restore(self.backbone, self.optimizer, self.scheduler)
        if state.step > cfg.last_step:
            raise ConfigError(
                f"the saved run is at step {state.step}, after --stop-at {cfg.stop_at}; give a later --stop-at or "
                "drop it"
            )
        return _Position(step=state.step, epoch=int(state.data["epoch"]), position=int(state.data["position"]),
                         elapsed_before=float(state.metrics.get("elapsed_s", 0.0)),
                         saved_loss=float(state.metrics.get("loss", float("nan"))))

    def _train(self, at: _Position) -> None:
        """Run the steps from ``at`` to the last step, or until a stop request (state saved, TrainingInterrupted)."""
        cfg, ctx = self.cfg, self.ctx
        log = None
        if ctx.is_main:
            log = MetricsLog(self.out / METRICS_FILE, columns=TRAINING_COLUMNS + self.objective.logged,
                             resume_step=at.step if cfg.resume else None)
        reporter = ProgressReporter(total=cfg.last_step, start=at.step, enabled=ctx.is_main and cfg.progress)
        at.started = time.perf_counter()
        batches = pretrain_loader.RankBatches(self.corpus.train, cfg.batch_size, ctx.world_size, ctx.rank, cfg.seed)
        self.workers = self._resolve_workers()
        with contextlib.ExitStack() as stack:
            stack.enter_context(_stop_signals(self))
            stack.enter_context(reporter)
            if log is not None:
                stack.callback(log.close)
            stream = stack.enter_context(pretrain_loader.batch_stream(
                batches, (at.epoch, at.position), cfg.last_step - at.step, workers=self.workers,
                pin_memory=self.device.type == "cuda"))
            self.backbone.train()
            t0 = time.perf_counter()
            for batch in stream:
                at.epoch, at.position = batch.epoch, batch.position
                loss_value, grad_norm = self._step(batch, at.step)
                at.step += 1
                at.position += 1
                at.last_loss = self._mean_over_ranks(loss_value)
                dt = time.perf_counter() - t0  # since the last step's end: waiting for the data counts
                samples_per_s = len(batch.rows) * ctx.world_size / max(dt, 1e-9)
                pool = self.corpus.train[batch.pool]
                if self.on_step is not None:
                    self.on_step(StepEvent(at.step, ctx.rank, ctx.world_size, pool.montage_name,
                                           pool.window_ids(batch.rows), loss_value))
                stop = dist_tools.any_rank(self.stop_requested, ctx, self.device)
                self._log(at, pool.montage_name, grad_norm, samples_per_s, log)
                reporter.update(at.step, at.last_loss, samples_per_s)
                self._save(at, stop)
                t0 = time.perf_counter()

    def _step(self, batch: Any, step: int) -> tuple[float, float]:
        """Return this rank's loss and the gradient norm of one optimisation step on ``batch`` (step ``step``, 0-based).

        One random stream per step and rank draws, in this order, the input corruption, the
        objective's draws (the masks) and, as the global seed, the dropout.
        """
        cfg = self.cfg
        step_seed = runtime.step_seed(cfg.seed, step, self.ctx.rank)
        gen = torch.Generator().manual_seed(step_seed)
        x, clean = batch.x, None
        if cfg.corrupt_prob > 0:
            # The model sees faulty channels; the loss asks for the clean signal (denoising).
            clean = x.to(self.device, non_blocking=True)
            x, _ = corrupt_windows(x, cfg.corrupt_prob, gen)
        x = x.to(self.device, non_blocking=True)
        inputs = self.objective.inputs(x, x if clean is None else clean, gen)
        torch.manual_seed(step_seed)  # dropout draws, reproducible per step and rank
        with runtime.autocast(self.device, self.precision):
            loss = self.model(x, self.metas[batch.pool], **inputs)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        grad_norm = float(torch.nn.utils.clip_grad_norm_(self.params, cfg.grad_clip))
        self.optimizer.step()
        self.scheduler.step()
        return float(loss.detach()), grad_norm

    def _mean_over_ranks(self, loss_value: float) -> float:
        """Return the mean of every rank's loss (this rank's alone without torchrun)."""
        if not self.ctx.enabled:
            return loss_value
        total = dist_tools.sum_over_ranks(torch.tensor([loss_value], device=self.device), self.ctx)
        return float(total.item()) / self.ctx.world_size

    def _log(self, at: _Position, montage: str, grad_norm: float, samples_per_s: float, log: MetricsLog | None) -> None:
        """Write the step's row of the metrics log, validating first on validation steps (rank 0)."""
        cfg = self.cfg
        row: dict[str, Any] = {
            "step": at.step, "epoch": at.epoch, "montage": montage, "loss": at.last_loss,
            "lr": self.scheduler.get_last_lr()[0], "grad_norm": grad_norm, "samples_per_s": samples_per_s,
            "elapsed_s": at.elapsed(),
        }
        if self.ctx.is_main and (at.step % (cfg.val_every or cfg.checkpoint_every) == 0 or at.step == cfg.last_step):
            at.last_val = self._validate()
            row.update(at.last_val)
            self.backbone.train()
        if log is not None:
            log.write(row)

    def _save(self, at: _Position, stop: bool) -> None:
        """Save the training state at checkpoint steps, the last step and a stop request (rank 0); on a stop
        request raise TrainingInterrupted once every rank is there."""
        cfg, ctx = self.cfg, self.ctx
        if ctx.is_main and (at.step % cfg.checkpoint_every == 0 or stop or at.step == cfg.last_step):
            save_training_state(self.state_path, TrainingState.capture(
                self.backbone, self.optimizer, self.scheduler, step=at.step,
                data={"epoch": at.epoch, "position": at.position, "world_size": ctx.world_size,
                      **({"init_sha256": self.source[0].weights_sha256} if self.source else {})},
                config=cfg.model_dump(mode="json"),
                metrics={"loss": at.last_loss, "elapsed_s": at.elapsed()},
            ))
        if stop:
            dist_tools.barrier(ctx)
            raise TrainingInterrupted(at.step, self.state_path)

    def _finish(self, at: _Position) -> Path:
        """Return the run folder after writing the base checkpoint (rank 0; the other ranks wait for it)."""
        cfg, ctx = self.cfg, self.ctx
        if self.on_end is not None:
            self.on_end(self.backbone, ctx.rank)
        if not ctx.is_main:
            dist_tools.barrier(ctx)
            return self.out
        wall = at.elapsed()
        # The last step validated already, unless a finished run was resumed (no step ran).
        final = at.last_val or self._validate()
        last_loss = at.last_loss
        if cfg.resume and math.isnan(last_loss):  # no step ran in this session
            last_loss = at.saved_loss
        if self.source is not None:
            self._check_frozen_kept(self.backbone)
        folder = self._write_checkpoint(self.backbone, final, last_loss, wall)
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

    def _validate(self) -> dict[str, Any]:
        """Return the objective's held-out scores (rank 0; the backbone is left in eval mode)."""
        return self.objective.validate(self.corpus, self.val_metas, self.device, self.precision)

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
                             objective=self.objective.record(), world_size=self.ctx.world_size, workers=self.workers,
                             runtime_line=runtime.describe(self.device, self.precision))
        if self.cfg.corrupt_prob > 0:
            info["corrupt_prob"] = self.cfg.corrupt_prob
        card = model_card(self.cfg, self.model_cfg, info, self.objective, self.init_record)
        staging = self.out / ".checkpoint.tmp"
        if staging.exists():
            shutil.rmtree(staging)
        save_base_checkpoint(backbone, staging, name=self.cfg.checkpoint_name, card=card,
                             training_info=info, preprocessing=self._input_contract(),
                             init_from=self.init_record, licence=self._licence())
        for file in (WEIGHTS_FILE, CARD_FILE, CONFIG_FILE):
            os.replace(staging / file, self.out / file)
        shutil.rmtree(staging, ignore_errors=True)
        return self.out


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
