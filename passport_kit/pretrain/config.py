"""The settings of a pretraining run: :class:`PretrainConfig` (stored in its training state and checkpoint).

Each field's type, default and description are the one source of the matching ``pretrain``
option: the CLI generates its options from the fields (``cli/pretrain.py``), so a new pretraining
option is written once, here. A description reads as ``--help`` text (the CLI adds the final
period) and as API documentation. This module imports no torch: the CLI reads it when it starts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from passport_kit.embedding_kinds import EMBEDDING_KINDS, EXPERT_KINDS
from passport_kit.errors import ConfigError, validation_problem


class DataSource(BaseModel):
    """One dataset to pretrain on, with the montage its recordings are mapped to."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: Path
    montage: str


class PretrainConfig(BaseModel):
    """Every setting of a pretraining run (stored in its training state and checkpoint)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    sources: list[DataSource] = Field(min_length=1)
    embedding: str = Field(description=f"Channel embedding: {', '.join(EMBEDDING_KINDS)}")
    arch: str = Field("cbramod-small", description="Architecture: cbramod-base, cbramod-small (default), "
                      "cbramod-tiny; with --init-from, the source's")
    out: Path = Field(description="Run folder; the base checkpoint is written here")
    name: str | None = Field(None, description="Checkpoint name (default: the --out folder name)")
    steps: int = Field(1000, gt=0, description="Optimisation steps (the cosine schedule spans them)")
    stop_at: int | None = Field(None, gt=0, description="End the run at this step and write the checkpoint (the "
                                "schedule still spans --steps); may change on --resume, e.g. to end an "
                                "interrupted run where it stopped")
    batch_size: int = Field(16, gt=0, description="Windows per step and process")
    lr: float = Field(5e-4, gt=0, description="Peak AdamW learning rate (CBraMod: 5e-4 at batch 128)")
    weight_decay: float = Field(5e-2, ge=0)
    eta_min: float = Field(1e-5, ge=0)
    grad_clip: float = Field(1.0, gt=0)
    mask_prob: float = Field(0.5, gt=0, lt=1)
    # Synthetic channel faults: passport_kit.engine.corruption.
    corrupt_prob: float = Field(0.0, ge=0, le=1, description="Share of windows (0-1) in which random channels are "
                                "replaced by synthetic faults (noise, drift, flat, line); the loss asks for the "
                                "clean signal. 0 = CBraMod's recipe")
    seed: int = Field(42, description="Seed of the masks, the subject split and the initial weights")
    checkpoint_every: int = Field(100, gt=0, description="Save the training state every N steps")
    val_every: int | None = Field(None, gt=0, description="Validate every N steps (default: at checkpoints)")
    val_fraction: float = Field(0.1, ge=0, lt=1, description="Fraction of subjects per dataset held out")
    val_subjects: list[str] = Field(default_factory=list, description="Subjects to hold out, comma-separated or "
                                    "repeated; a dataset that has any of them holds out exactly those, the others "
                                    "--val-fraction")
    # None: every held-out window (no option value spells it).
    val_max_windows: int | None = Field(256, gt=0, description="Held-out windows scored per dataset (evenly spaced)")
    window_seconds: float = Field(30.0, gt=0)
    notch_freq: float | None = Field(50.0, description="Mains notch in Hz (60 for TUH and other 60 Hz recordings; "
                                     "'none' for no notch)")
    # CBraMod drops windows over 100 µV.
    amplitude_limit_uv: float | None = Field(100.0, gt=0, description="Drop windows over this many µV ('none' "
                                             "keeps all)")
    dropout: float | None = Field(None, ge=0, lt=1)  # None: the architecture's default
    device: str = Field("auto", description="auto, cpu or cuda")
    precision: str = Field("auto", description="auto, fp32 or bf16")
    threads: int | None = Field(None, gt=0, description="CPU threads per process")
    # None: pretrain.loader.default_workers.
    workers: int | None = Field(None, ge=0, description="DataLoader worker processes per process that read the "
                                "cached windows ahead of the training step (default: 0 on CPU, min(4, CPU cores "
                                "per process - 1) on a GPU). The weights do not depend on it; it may change on "
                                "--resume")
    resume: bool = Field(False, description="Continue the run saved in --out")
    progress: bool = Field(True, description="Show a progress bar (plain lines where the output is not a "
                           "terminal); --no-progress: none")
    # Upcycling (pretrain.upcycle).
    init_from: str | None = Field(None, description="Upcycle: start from this base checkpoint's backbone (name or "
                                  "folder), e.g. an imported CBraMod; --embedding must be "
                                  f"{' or '.join(EXPERT_KINDS)}")
    train: Literal["experts", "all"] | None = Field(None, description="With --init-from: 'experts' (default; the "
                                                    "expert bank + mixture only, every backbone tensor frozen) or "
                                                    "'all'")
    temporal_position: Literal["acpe-conv", "sinusoid"] | None = Field(
        None, description="With --init-from: 'acpe-conv' keeps an acpe source's convolution for time (default for "
        "acpe sources), 'sinusoid' replaces it by the fixed patch-index sinusoid")

    @field_validator("embedding", "arch")
    @classmethod
    def _known_name(cls, value: str, info: ValidationInfo) -> str:
        from passport_kit.model.config import ARCHITECTURES

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
            where, message = validation_problem(exc)
            # A rule across options names them in its message.
            raise ConfigError(f"invalid pretraining option {where}: {message}" if where else message) from None

    @property
    def checkpoint_name(self) -> str:
        """Return the name written into the base checkpoint."""
        return self.name or self.out.resolve().name


__all__ = ["DataSource", "PretrainConfig"]
