"""Atomic, resumable training state: round trip, strictness and crash safety."""

from __future__ import annotations

import os
import random
from pathlib import Path

import numpy as np
import pytest
import torch

from passport_kit.errors import CheckpointError
from passport_kit.engine.state import (
    TrainingState,
    load_training_state,
    save_training_state,
)


def _run(steps: int, seed: int = 0) -> tuple[torch.nn.Module, torch.optim.Optimizer, object]:
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.GELU(), torch.nn.Linear(8, 2))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.05)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=20, eta_min=1e-5)
    for _ in range(steps):
        _one_step(model, optimizer, scheduler)
    return model, optimizer, scheduler


def _one_step(model, optimizer, scheduler) -> None:  # noqa: ANN001
    loss = model(torch.randn(5, 4)).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    scheduler.step()


def test_resumed_run_matches_uninterrupted_run(tmp_path: Path) -> None:
    reference = _run(6)[0]
    model, optimizer, scheduler = _run(3)
    path = save_training_state(
        tmp_path / "state.safetensors",
        TrainingState.capture(model, optimizer, scheduler, step=3, data={"offset": 3}, config={"a": 1}),
    )
    fresh, fresh_opt, fresh_sched = _run(0, seed=99)
    state = load_training_state(path)
    state.restore(fresh, fresh_opt, fresh_sched)
    for _ in range(3):
        _one_step(fresh, fresh_opt, fresh_sched)
    for (name, a), b in zip(reference.state_dict().items(), fresh.state_dict().values()):
        assert torch.equal(a, b), name


@pytest.mark.parametrize("field", ["step", "data", "config", "metrics"])
def test_plain_fields_round_trip(tmp_path: Path, field: str) -> None:
    model, optimizer, scheduler = _run(1)
    original = TrainingState.capture(
        model, optimizer, scheduler, step=5, data={"epoch": 2, "order": [3, 1, 2]},
        config={"lr": 5e-4, "betas": [0.9, 0.999]}, metrics={"loss": 0.25},
    )
    loaded = load_training_state(save_training_state(tmp_path / "s.safetensors", original))
    assert getattr(loaded, field) == getattr(original, field)


def test_rng_states_are_restored(tmp_path: Path) -> None:
    model, optimizer, scheduler = _run(1)
    path = save_training_state(tmp_path / "s.safetensors", TrainingState.capture(model, step=1))
    expected = (random.random(), np.random.rand(), torch.rand(1).item())
    load_training_state(path).restore(model)
    assert (random.random(), np.random.rand(), torch.rand(1).item()) == expected


def test_restore_refuses_a_different_model(tmp_path: Path) -> None:
    model, _, _ = _run(0)
    path = save_training_state(tmp_path / "s.safetensors", TrainingState.capture(model, step=0))
    other = torch.nn.Linear(4, 2)
    with pytest.raises(CheckpointError, match="does not fit this model"):
        load_training_state(path).restore(other)


def test_missing_state_says_start_without_resume(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="without --resume"):
        load_training_state(tmp_path / "absent.safetensors")


@pytest.mark.parametrize("keep_fraction", [0.0, 0.3, 0.9])
def test_truncated_file_is_refused(tmp_path: Path, keep_fraction: float) -> None:
    model, optimizer, scheduler = _run(1)
    path = save_training_state(tmp_path / "s.safetensors", TrainingState.capture(model, optimizer, scheduler, step=1))
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep_fraction)])
    with pytest.raises(CheckpointError):
        load_training_state(path)


def test_foreign_safetensors_file_is_refused(tmp_path: Path) -> None:
    from safetensors.torch import save_file

    save_file({"w": torch.zeros(2)}, str(tmp_path / "weights.safetensors"))
    with pytest.raises(CheckpointError, match="not a complete passport-kit training state"):
        load_training_state(tmp_path / "weights.safetensors")


def test_failed_write_keeps_previous_state_and_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model, _, _ = _run(0)
    path = save_training_state(tmp_path / "s.safetensors", TrainingState.capture(model, step=1))

    def crash(*args, **kwargs):  # noqa: ANN002, ANN003
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(KeyboardInterrupt):
        save_training_state(path, TrainingState.capture(model, step=2))
    monkeypatch.undo()
    assert load_training_state(path).step == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.safetensors"]
