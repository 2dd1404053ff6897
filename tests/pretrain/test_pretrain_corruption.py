"""Pretraining with synthetic channel faults (``pretrain --corrupt-prob``, issue 8)."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import numpy as np
import pytest
import torch
from pretrain_helpers import tiny_config, two_montage_data

from passport_kit.pretrain.run import STATE_FILE, StepEvent, TrainingInterrupted, pretrain
from passport_kit.engine.state import load_training_state


def _final_state(out: Path, prob: float) -> dict[str, torch.Tensor]:
    state: dict[str, torch.Tensor] = {}
    pretrain(tiny_config(out, steps=2, corrupt_prob=prob), datasets=two_montage_data(),
             on_end=lambda model, rank: state.update(model.state_dict()))
    return state


def test_corruption_changes_training_and_is_recorded(tmp_path: Path) -> None:
    plain = _final_state(tmp_path / "plain", 0.0)
    corrupted = _final_state(tmp_path / "corrupt", 1.0)
    assert any(not torch.equal(plain[k], corrupted[k]) for k in plain)
    training = json.loads((tmp_path / "corrupt" / "config.json").read_text())["training"]
    assert training["corrupt_prob"] == 1.0
    assert "corrupt_prob" not in json.loads((tmp_path / "plain" / "config.json").read_text())["training"]


def test_corruption_losses_are_finite(tmp_path: Path) -> None:
    losses: list[float] = []
    pretrain(tiny_config(tmp_path / "run", steps=3, corrupt_prob=0.5), datasets=two_montage_data(),
             on_step=lambda e: losses.append(e.loss))
    assert len(losses) == 3 and np.isfinite(losses).all()


def test_resume_accepts_a_saved_run_without_the_new_setting(tmp_path: Path) -> None:
    """A run saved before --corrupt-prob existed resumes when the option stays at its default."""
    def stop_at_1(event: StepEvent) -> None:
        if event.step == 1:
            signal.raise_signal(signal.SIGINT)

    cfg = tiny_config(tmp_path / "run", steps=2)
    with pytest.raises(TrainingInterrupted):
        pretrain(cfg, datasets=two_montage_data(), on_step=stop_at_1)
    path = tmp_path / "run" / STATE_FILE
    state = load_training_state(path)
    state.config.pop("corrupt_prob")
    from passport_kit.engine.state import save_training_state

    save_training_state(path, state)
    out = pretrain(cfg.model_copy(update={"resume": True}), datasets=two_montage_data())
    assert (out / "model.safetensors").is_file()
