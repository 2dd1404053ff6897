"""A read-out that gives the backbone no weight is scored without the backbone, to the same bytes."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from passport_kit.engine.forward import predict_proba
from passport_kit.model import build_backbone, model_config
from passport_kit.model.heads import Classifier, ProbeHead
from passport_kit.model.spectral import STANDARD_BANDS
from tests.model.model_helpers import make_meta

N_CHANNELS = 3


def _band_power_model(context: int, scaling: str, *, backbone_weight: float = 0.0) -> Classifier:
    """Return a probe classifier whose read-out weights the band-power block only (``backbone_weight`` 0)."""
    torch.manual_seed(0)
    model = Classifier(build_backbone(model_config("cbramod-tiny", "mlp-experts")), 3, kind="probe",
                       n_channels=N_CHANNELS, layer=0, bands=STANDARD_BANDS, scaling=scaling, context=context)
    head = model.head
    with torch.no_grad():
        weight = torch.randn_like(head.linear.weight)
        width = weight.shape[1] // (2 if context else 1)
        for start in (0, width) if context else (0,):
            weight[:, start:start + head.n_backbone_features] *= backbone_weight
        head.linear.weight.copy_(weight)
        head.linear.bias.copy_(torch.randn_like(head.linear.bias))
    return model.eval()


def _windows(n: int = 10) -> np.ndarray:
    return np.random.default_rng(1).standard_normal((n, N_CHANNELS, 4, 200)).astype(np.float32)


@pytest.mark.parametrize(("context", "scaling"), [(0, "none"), (2, "recording")])
def test_band_power_read_out_skips_the_backbone_and_gives_the_same_bytes(monkeypatch: pytest.MonkeyPatch,
                                                                         context: int, scaling: str) -> None:
    model, x, meta = _band_power_model(context, scaling), _windows(), make_meta(N_CHANNELS)
    groups = ["a"] * 6 + ["b"] * 4
    assert not model.head.reads_backbone
    monkeypatch.setattr(ProbeHead, "reads_backbone", property(lambda self: True))
    with_backbone = predict_proba(model, x, meta, batch_size=4, groups=groups)
    monkeypatch.undo()

    def no_backbone(*args: object, **kwargs: object) -> None:
        raise AssertionError("the backbone ran for a read-out that does not read it")

    monkeypatch.setattr(model.backbone, "forward", no_backbone)
    without = predict_proba(model, x, meta, batch_size=4, groups=groups)
    assert without.dtype == with_backbone.dtype and without.tobytes() == with_backbone.tobytes()


@pytest.mark.parametrize("context", [0, 2])
def test_a_read_out_that_weights_the_backbone_runs_it(context: int) -> None:
    model = _band_power_model(context, "none", backbone_weight=1e-3)
    assert model.head.reads_backbone


def test_a_weight_on_the_running_mean_copy_of_the_backbone_block_counts_as_read() -> None:
    model = _band_power_model(2, "none")
    head = model.head
    with torch.no_grad():
        head.linear.weight[0, head.linear.in_features // 2] = 0.5  # the running mean's first backbone column
    assert head.reads_backbone


def _stager_model(context: int) -> Classifier:
    """Return a probe classifier stacking a 5-stage prior whose read-out weights the prior block alone."""
    torch.manual_seed(0)
    model = Classifier(build_backbone(model_config("cbramod-tiny", "mlp-experts")), 5, kind="probe",
                       n_channels=N_CHANNELS, layer=0, bands=STANDARD_BANDS, context=context, n_prior=5,
                       prior={"name": "yasa", "eeg": "C0"})
    head = model.head
    with torch.no_grad():
        weight = torch.zeros_like(head.linear.weight)
        width = weight.shape[1] // (2 if context else 1)
        for start in (0, width) if context else (0,):
            prior = start + head.n_backbone_features + head.n_spectral_features
            weight[:, prior:prior + 5] = torch.randn(5, 5)
        head.linear.weight.copy_(weight)
        head.linear.bias.copy_(torch.randn_like(head.linear.bias))
    return model.eval()


@pytest.mark.parametrize("context", [0, 2])
def test_a_read_out_of_the_prior_alone_computes_no_band_power_and_gives_the_same_bytes(
        monkeypatch: pytest.MonkeyPatch, context: int) -> None:
    model, x, meta = _stager_model(context), _windows(), make_meta(N_CHANNELS)
    prior = np.log(np.random.default_rng(2).dirichlet(np.ones(5), len(x)))
    head = model.head
    assert not head.reads_backbone and not head.reads_spectral
    monkeypatch.setattr(ProbeHead, "reads_spectral", property(lambda self: True))
    with_band_power = predict_proba(model, x, meta, batch_size=4, prior=prior)
    monkeypatch.undo()

    def no_band_power(*args: object, **kwargs: object) -> None:
        raise AssertionError("band power was computed for a read-out that does not read it")

    monkeypatch.setattr(head, "spectral", no_band_power)
    without = predict_proba(model, x, meta, batch_size=4, prior=prior)
    assert without.dtype == with_band_power.dtype and without.tobytes() == with_band_power.tobytes()


@pytest.mark.parametrize("context", [0, 2])
def test_a_read_out_that_weights_band_power_reads_it(context: int) -> None:
    model = _stager_model(context)
    head = model.head
    width = head.linear.weight.shape[1] // (2 if context else 1)
    with torch.no_grad():
        head.linear.weight[0, (width if context else 0) + head.n_backbone_features + 3] = 1e-6
    assert head.reads_spectral and not head.reads_backbone
