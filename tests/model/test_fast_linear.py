"""The oneDNN fast path for frozen / inference linear layers gives F.linear's numbers."""

from __future__ import annotations

from unittest import mock

import pytest
import torch
import torch.nn.functional as F
from model_helpers import make_meta

import passport_kit.model.fast_linear as fast_linear
from passport_kit.model import Classifier, apply_policy, build_backbone, model_config

pytestmark = pytest.mark.skipif(fast_linear.ONEDNN_OP is None, reason="torch build without oneDNN linear")


@pytest.fixture(autouse=True)
def _lever_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """The lever is opt-in (PASSPORT_KIT_ONEDNN_LINEAR=1); these tests switch it on."""
    monkeypatch.setattr(fast_linear, "_ONEDNN_LINEAR", fast_linear.ONEDNN_OP)


def _adapter_model() -> Classifier:
    model = Classifier(build_backbone(model_config("cbramod-tiny", "mlp-experts")), 3)
    apply_policy(model, "adapter")
    return model.train()


def _step_grads(model: Classifier, x: torch.Tensor) -> dict[str, torch.Tensor]:
    torch.manual_seed(1)  # the head's dropout draws the same mask in both runs
    model.zero_grad(set_to_none=True)
    F.cross_entropy(model(x, make_meta(x.shape[1])), torch.tensor([0, 1, 2])).backward()
    return {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("gelu", [False, True])
def test_inference_matches_f_linear(gelu: bool) -> None:
    x = torch.randn(2, 5, 7, 200)[..., 50:150]  # a strided slice, as the attention halves pass
    weight, bias = torch.randn(300, 100), torch.randn(300)
    expected = F.linear(x, weight, bias)
    expected = F.gelu(expected) if gelu else expected
    with torch.inference_mode():
        got = fast_linear.linear(x, weight, bias, gelu=gelu)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)


def test_adapter_gradients_match_f_linear() -> None:
    model = _adapter_model()
    x = torch.randn(3, 4, 6, 200)
    fast = _step_grads(model, x)
    with mock.patch.object(fast_linear, "_ONEDNN_LINEAR", None):
        slow = _step_grads(model, x)
    assert sorted(fast) == sorted(slow)
    for name in slow:
        torch.testing.assert_close(fast[name], slow[name], rtol=1e-4, atol=1e-6 * float(slow[name].abs().max()))


def test_trainable_weights_take_f_linear() -> None:
    model = Classifier(build_backbone(model_config("cbramod-tiny", "mlp-experts")), 3)
    apply_policy(model, "full")
    spy = mock.Mock(side_effect=AssertionError("oneDNN path used for trainable weights"))
    with mock.patch.object(fast_linear, "_ONEDNN_LINEAR", spy):
        model(torch.randn(2, 4, 3, 200), make_meta(4)).sum().backward()
    spy.assert_not_called()
