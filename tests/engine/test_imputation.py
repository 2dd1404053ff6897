"""A probe head reads a dead channel's band powers from its nearest live neighbour (issue 46, item 1)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from passport_kit.engine.forward import predict_proba, read_out_features
from passport_kit.engine.imputation import donor_order, impute_dead_channels
from passport_kit.model import ChannelMeta, build_backbone, model_config
from passport_kit.model.heads import Classifier
from passport_kit.signals.dead_channels import DeadChannels

#: Three channels on a line: 0 and 1 are neighbours, 2 lies far off.
POSITIONS = np.array([[0.0, 0.0, 0.0], [0.01, 0.0, 0.0], [0.2, 0.0, 0.0]])


def _model(bands: list[list[float]] | None) -> tuple[Classifier, ChannelMeta]:
    torch.manual_seed(0)
    model = Classifier(build_backbone(model_config("cbramod-tiny", "mlp-experts")), 3, kind="probe", n_channels=3,
                       layer=0, bands=bands).eval()
    torch.nn.init.normal_(model.head.linear.weight, std=0.3)
    meta = ChannelMeta.create(["a", "b", "c"], torch.tensor(POSITIONS, dtype=torch.float32),
                              torch.full((3, 3), float("nan")))
    return model, meta


def _windows(seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = np.arange(4 * 200) / 200.0
    x = rng.normal(0, 0.1, (4, 3, 4 * 200)) + 0.3 * np.sin(2 * np.pi * rng.uniform(2, 12, (4, 1, 1)) * t)
    return x.reshape(4, 3, 4, 200).astype(np.float32)


def test_donors_are_the_other_channels_nearest_first() -> None:
    assert donor_order(POSITIONS).tolist() == [[1, 2], [0, 2], [1, 0]]


@pytest.mark.parametrize("bands", [[[0.5, 4.0], [4.0, 8.0], [8.0, 30.0]], None])
def test_a_dead_channel_is_read_as_its_nearest_live_neighbour(bands: list[list[float]] | None) -> None:
    # Issue 46: one zeroed channel of 12 staged a 2-h night REM from start to end at confidence 0.999.
    model, meta = _model(bands)
    x = _windows()
    dead_x = x.copy()
    dead_x[:, 0] = 0.0
    neighbour_x = x.copy()
    neighbour_x[:, 0] = x[:, 1]  # what the read-out should see: channel 1's band powers in channel 0's place
    dead = DeadChannels(windows=np.tile([True, False, False], (4, 1)))
    imputed = predict_proba(model, dead_x, meta, dead=dead)
    wanted = predict_proba(model, neighbour_x, meta)
    as_is = predict_proba(model, dead_x, meta)
    spectral = slice(model.head.n_backbone_features, None)
    z_dead = impute_dead_channels(read_out_features(model, dead_x, meta), dead, model.head, POSITIONS)
    assert np.allclose(z_dead[:, spectral], read_out_features(model, neighbour_x, meta)[:, spectral], atol=1e-5)
    assert np.abs(imputed - wanted).max() < np.abs(as_is - wanted).max()


def test_absolute_power_moves_with_the_training_amplitude_and_live_windows_stay() -> None:
    model, meta = _model([[0.5, 4.0], [4.0, 30.0]])
    z = read_out_features(model, _windows(), meta)
    dead = np.zeros((4, 3), dtype=bool)
    dead[1, 0] = True
    out = impute_dead_channels(z, DeadChannels(dead, expected_uv=np.array([20.0, 10.0, 10.0])), model.head, POSITIONS)
    start = model.head.n_backbone_features
    channel = slice(start, start + 4)  # channel 0: absolute (2), then relative (2)
    donor = slice(start + 4, start + 8)
    assert np.allclose(out[1, channel][:2], z[1, donor][:2] + 2 * np.log10(2.0))
    assert np.allclose(out[1, channel][2:], z[1, donor][2:])
    unchanged = np.ones(len(z), dtype=bool)
    unchanged[1] = False
    assert np.array_equal(out[unchanged], z[unchanged]) and np.array_equal(out[1, :start], z[1, :start])


def test_a_window_without_a_live_channel_is_left_as_it_is() -> None:
    model, meta = _model([[0.5, 4.0], [4.0, 30.0]])
    z = read_out_features(model, _windows(), meta)
    assert np.array_equal(impute_dead_channels(z, DeadChannels(np.ones((4, 3), dtype=bool)), model.head, POSITIONS), z)
