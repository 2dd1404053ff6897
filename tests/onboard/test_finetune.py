"""The downstream training loop: what changes, what stays, early stopping, resume."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from passport_kit.model import ChannelMeta, build_backbone, model_config
from passport_kit.onboard.adapt import build_classifier
from passport_kit.onboard.finetune import FinetuneSettings, fit
from passport_kit.onboard.fitting import FitData, FitRun, class_weights

C, P, N = 3, 4, 96


def _data(seed: int = 0) -> tuple[np.ndarray, np.ndarray, ChannelMeta]:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, N)
    t = np.arange(P * 200) / 200
    x = np.stack([np.sin(2 * np.pi * (3 + 8 * k) * t)[None].repeat(C, 0) for k in y])
    x = (x + 0.3 * rng.standard_normal(x.shape)).reshape(N, C, P, 200).astype(np.float32)
    meta = ChannelMeta.create(["a", "b", "c"], rng.normal(0, 0.05, (C, 3)))
    return x, y, meta


def _model(kind: str = "mlp-experts", policy: str = "adapter"):
    torch.manual_seed(0)
    return build_classifier(build_backbone(model_config("cbramod-tiny", kind)), 2, policy)


SETTINGS = FinetuneSettings(batch_size=16, max_steps=8, eval_every=4, seed=1)


@pytest.mark.parametrize("policy", ["adapter", "head"])
def test_only_policy_tensors_change(policy: str) -> None:
    x, y, meta = _data()
    model = _model(policy=policy)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    fit(model, FitData(x, y, meta, ["lo", "hi"]), SETTINGS, val_index=np.arange(32))
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    changed = {k for k, v in model.state_dict().items() if not torch.equal(v, before[k])}
    assert changed and changed <= trainable


def test_fixed_budget_runs_exactly_max_steps() -> None:
    x, y, meta = _data()
    result = fit(_model(), FitData(x, y, meta, ["lo", "hi"]), SETTINGS, val_index=np.arange(32))
    assert result.steps == 8 and [h["step"] for h in result.history] == [4, 8]


def test_early_stopping_stops_after_patience() -> None:
    x, y, meta = _data()
    # Random labels: validation never improves for long, so patience 1 stops well before 20 epochs.
    y_rand = np.random.default_rng(3).integers(0, 2, N)
    settings = FinetuneSettings(batch_size=32, epochs=20, patience=1, seed=0)
    result = fit(_model(), FitData(x, y_rand, meta, ["lo", "hi"]), settings, val_index=np.arange(32))
    assert result.stopped_early and result.steps < 20 * 3


def test_resume_after_interruption_matches_uninterrupted_run(tmp_path: Path) -> None:
    x, y, meta = _data()
    full = _model()
    fit(full, FitData(x, y, meta, ["lo", "hi"]), SETTINGS, val_index=np.arange(32))

    def interrupt(step: int, total: int, info: dict) -> None:
        if step == 6:
            raise KeyboardInterrupt

    state = tmp_path / "state.safetensors"
    with pytest.raises(KeyboardInterrupt):
        fit(_model(), FitData(x, y, meta, ["lo", "hi"]), SETTINGS, val_index=np.arange(32),
            run=FitRun(state_path=state, run_config={"run": 1}, progress=interrupt))
    assert state.is_file()
    resumed = _model()
    result = fit(resumed, FitData(x, y, meta, ["lo", "hi"]), SETTINGS, val_index=np.arange(32),
                 run=FitRun(state_path=state, run_config={"run": 1}))
    assert result.steps == 8
    for key, value in full.state_dict().items():
        torch.testing.assert_close(resumed.state_dict()[key], value)


def test_class_weights_are_inverse_frequency() -> None:
    # counts (3, 1, 0): n/(k*count) over the 2 present classes = 4/6, 4/2, absent -> 0
    assert class_weights(np.array([0, 0, 0, 1]), 3) == pytest.approx([2 / 3, 2.0, 0.0])


def test_masked_channels_do_not_reach_the_trained_weights() -> None:
    # A channel masked in every window (a known-bad contact) is replaced by the mask token, so
    # whatever it records must not change what training learns.
    x, y, meta = _data()
    mask = np.zeros((N, C), dtype=bool)
    mask[:, 1] = True
    garbage = x.copy()
    garbage[:, 1] = 50.0 * np.random.default_rng(9).standard_normal(garbage[:, 1].shape)
    trained = []
    for data in (x, garbage):
        model = _model()
        fit(model, FitData(data, y, meta, ["lo", "hi"], channel_mask=mask), SETTINGS, val_index=np.arange(32))
        trained.append(model.state_dict())
    for key, value in trained[0].items():
        torch.testing.assert_close(trained[1][key], value)
    unmasked = _model()
    fit(unmasked, FitData(garbage, y, meta, ["lo", "hi"]), SETTINGS, val_index=np.arange(32))
    assert any(not torch.allclose(unmasked.state_dict()[k], v) for k, v in trained[0].items())


@pytest.mark.parametrize("drop_prob", [0.0, 1.0])
def test_channel_dropout_changes_training_only_when_on(drop_prob: float) -> None:
    x, y, meta = _data()
    plain, dropped = _model(), _model()
    fit(plain, FitData(x, y, meta, ["lo", "hi"]), SETTINGS)
    fit(dropped, FitData(x, y, meta, ["lo", "hi"]), SETTINGS.model_copy(update={"drop_prob": drop_prob}))
    same = all(torch.allclose(dropped.state_dict()[k], v, atol=1e-6) for k, v in plain.state_dict().items())
    assert same is (drop_prob == 0.0)


def test_a_resumed_run_logs_the_same_history_as_an_uninterrupted_one(tmp_path: Path) -> None:
    x, y, meta = _data()
    settings = FinetuneSettings(batch_size=16, max_steps=8, eval_every=2, seed=1)
    full = fit(_model(), FitData(x, y, meta, ["lo", "hi"]), settings, val_index=np.arange(32))

    def interrupt(step: int, total: int, info: dict) -> None:
        if step == 5:
            raise KeyboardInterrupt

    state = tmp_path / "state.safetensors"
    with pytest.raises(KeyboardInterrupt):
        fit(_model(), FitData(x, y, meta, ["lo", "hi"]), settings, val_index=np.arange(32),
            run=FitRun(state_path=state, run_config={"run": 1}, progress=interrupt))
    resumed = fit(_model(), FitData(x, y, meta, ["lo", "hi"]), settings, val_index=np.arange(32),
                  run=FitRun(state_path=state, run_config={"run": 1}))
    # The running loss carries on from the saved state (it restarted from 0 before issue 28).
    assert [h["train_loss"] for h in resumed.history] == pytest.approx([h["train_loss"] for h in full.history])
