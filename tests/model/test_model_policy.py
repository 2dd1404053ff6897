"""Freezing policies: exactly the policy's tensors train; frozen modules stay in eval()."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from model_helpers import make_meta

from passport_kit.errors import ConfigError, DataError
from passport_kit.model import (
    EMBEDDING_KINDS,
    Classifier,
    apply_policy,
    build_backbone,
    check_policy,
    model_config,
    trainable_summary,
)

ADAPTER_TRAINS = {
    "ape": set(),
    "xyz": set(),
    "channel-id": {"table"},
    "acpe": {"0.weight", "0.bias"},
    "mlp-experts": {"mixture.0.weight", "mixture.0.bias", "mixture.2.weight", "mixture.2.bias"},
    "xattn-experts": {"mixture.0.weight", "mixture.0.bias", "mixture.2.weight", "mixture.2.bias"},
}
EMB = "backbone.patch_embedding.positional_encoding."
HEAD = {"head.norm.weight", "head.norm.bias", "head.net.0.weight", "head.net.0.bias", "head.net.3.weight", "head.net.3.bias"}


def _classifier(kind: str, n_channels: int = 4) -> Classifier:
    meta = make_meta(n_channels)
    vocab = list(meta.names) if kind == "channel-id" else []
    return Classifier(build_backbone(model_config("cbramod-tiny", kind, channel_vocab=vocab)), 3)


@pytest.mark.parametrize("kind", EMBEDDING_KINDS)
def test_adapter_policy_trains_the_mixture_and_head_only(kind: str) -> None:
    model = _classifier(kind)
    trainable = set(apply_policy(model, "adapter"))
    assert trainable == HEAD | {EMB + n for n in ADAPTER_TRAINS[kind]}
    check_policy(model, "adapter")


@pytest.mark.parametrize(("policy", "expected"), [("head", HEAD), ("full", None)])
def test_head_and_full_policies(policy: str, expected: set[str] | None) -> None:
    model = _classifier("mlp-experts")
    trainable = set(apply_policy(model, policy))
    assert trainable == (expected if expected is not None else {n for n, _ in model.named_parameters()})


@pytest.mark.parametrize("kind", ["mlp-experts", "xattn-experts", "acpe", "channel-id"])
def test_frozen_tensors_do_not_change_after_a_training_step(kind: str) -> None:
    model = _classifier(kind)
    apply_policy(model, "adapter")
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    # All parameters handed to AdamW with weight decay: frozen ones must still not move.
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.05)
    model.train()
    logits = model(torch.randn(4, 4, 3, 200), make_meta(4))
    F.cross_entropy(logits, torch.tensor([0, 1, 2, 0])).backward()
    opt.step()
    for name, param in model.named_parameters():
        moved = not torch.equal(before[name], param.detach())
        assert moved == param.requires_grad, name


def test_frozen_modules_stay_in_eval_after_train() -> None:
    model = _classifier("mlp-experts")
    apply_policy(model, "adapter")
    model.train()
    assert not model.backbone.encoder.training
    assert not model.backbone.patch_embedding.proj_in.training
    assert model.backbone.channel_embedding.mixture.training
    assert model.head.net[2].training  # the head's dropout stays active
    check_policy(model, "adapter")


def test_full_policy_puts_everything_back_in_train_mode() -> None:
    model = _classifier("acpe")
    apply_policy(model, "head")
    apply_policy(model, "full")
    model.train()
    assert all(m.training for m in model.modules())


def test_check_policy_catches_a_hand_toggled_parameter() -> None:
    model = _classifier("mlp-experts")
    apply_policy(model, "adapter")
    model.backbone.channel_embedding.experts.requires_grad_(True)
    with pytest.raises(RuntimeError, match="unexpectedly trainable.*experts"):
        check_policy(model, "adapter")


def test_unknown_policy_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="choose one of"):
        apply_policy(_classifier("ape"), "lora")


def test_trainable_summary_counts_parameters() -> None:
    model = _classifier("ape")
    apply_policy(model, "head")
    n_head = sum(p.numel() for p in model.head.parameters())
    assert trainable_summary(model).startswith(f"trainable params: {n_head:,} || all params:")


@pytest.mark.parametrize("c", [1, 5])
def test_classifier_mean_pooling_accepts_any_channel_count(c: int) -> None:
    model = _classifier("xyz", c).eval()
    assert model(torch.randn(2, c, 3, 200), make_meta(c)).shape == (2, 3)


def test_patch_pooling_head_refuses_another_window_length() -> None:
    model = Classifier(build_backbone(model_config("cbramod-tiny", "xyz")), 5, pooling="patches", n_patches=4)
    assert model(torch.randn(2, 3, 4, 200), make_meta(3)).shape == (2, 5)
    with pytest.raises(DataError, match="expects 4 patches"):
        model(torch.randn(2, 3, 6, 200), make_meta(3))


def test_heads_are_registered_by_kind_and_a_second_head_of_a_kind_is_refused() -> None:
    from passport_kit.model.heads import HEADS, ClassificationHead, Head, ProbeHead

    assert HEADS.names() == ("probe", "mlp") and Head.of_kind("mlp") is ClassificationHead
    with pytest.raises(ValueError, match="a head kind named 'probe' is already registered"):
        type("AnotherProbe", (Head,), {"kind": "probe"})
    assert HEADS["probe"] is ProbeHead
    with pytest.raises(ConfigError, match="unknown head kind 'rnn'; choose one of probe, mlp"):
        Head.of_kind("rnn")



def test_a_probe_read_out_says_which_classes_its_stager_reaches() -> None:
    """Issue 58: what the shipped read-out can output, read from its weights, not from the training labels."""
    import torch

    from passport_kit.model.heads import ClassificationHead, Head, ProbeHead

    head = ProbeHead(d_model=8, n_classes=3, n_channels=1, n_prior=3, prior={"name": "yasa"})
    with torch.no_grad():
        head.linear.weight.zero_()
        head.linear.bias.copy_(torch.tensor([0.0, -30.0, -30.0]))
        head.linear.weight[1, 0] = -0.1    # an unseen class's pooled-feature weight, moved a little by LP-FT
        head.linear.weight[2, -1] = 1.0    # the stager's log-probability reaches class 2: it can be output
    assert head.stager_classes() == [2]
    assert ProbeHead(d_model=8, n_classes=3, n_channels=1).stager_classes() == []   # no stager stacked
    assert Head.stager_classes(head) == [] and ClassificationHead.stager_classes is Head.stager_classes
