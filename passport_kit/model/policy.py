"""Freezing policies: *what* is trained, kept apart from *how* it is trained.

``adapter``: the channel embedding's adapter parameters + the head (for the expert kinds the
mixture network only - experts and keys stay frozen; for ``acpe`` / ``channel-id`` the
embedding's own parameters; ``ape`` / ``xyz`` have none, so only the head).
``head``: the classification head only. ``full``: every parameter.

Frozen modules stay in ``eval()`` even after ``model.train()`` (dropout off, as Lightning's
``BaseFinetuning`` does), because a frozen network should compute the features it was
trained to compute.
"""

from __future__ import annotations

from typing import Literal, get_args

from torch import nn

from passport_kit.errors import ConfigError

Policy = Literal["adapter", "head", "full"]
POLICIES: tuple[str, ...] = get_args(Policy)


class FrozenStaysEval:
    """Mixin for nn.Module: ``train(True)`` leaves fully frozen submodules in eval mode."""

    def train(self, mode: bool = True):  # noqa: ANN201 - returns self, as nn.Module.train
        """Return self after setting the mode; fully frozen submodules stay in eval."""
        super().train(mode)  # type: ignore[misc]
        if mode:
            _frozen_to_eval(self)  # type: ignore[arg-type]
        return self


def _frozen_to_eval(module: nn.Module) -> None:
    # Top-down: a child whose parameters are all frozen goes to eval with its whole subtree;
    # a child without parameters (Dropout, GELU) keeps its parent's mode, so a trainable
    # head's dropout stays active.
    for child in module.children():
        params = list(child.parameters())
        if params and not any(p.requires_grad for p in params):
            child.eval()
        else:
            _frozen_to_eval(child)


def policy_parameter_names(model: nn.Module, policy: str) -> set[str]:
    """Return the names of the parameters that ``policy`` trains in ``model``.

    ``model`` is a Classifier (``backbone`` + ``head``) or a bare Backbone (no head).
    """
    if policy not in POLICIES:
        raise ConfigError(f"unknown freezing policy {policy!r}; choose one of {list(POLICIES)}")
    names = [name for name, _ in model.named_parameters()]
    if policy == "full":
        return set(names)
    selected = {n for n in names if n.startswith("head.")}
    if policy == "adapter":
        backbone = getattr(model, "backbone", model)
        embedding = backbone.channel_embedding
        prefix = next(name for name, m in model.named_modules() if m is embedding)
        selected |= {f"{prefix}.{n}" for n in embedding.adapter_parameter_names()}
    return selected


def policy_of(model: nn.Module) -> Policy:
    """Return the freezing policy :func:`apply_policy` last applied to ``model``; ``full`` if none was.

    A module no policy touched trains every parameter (PyTorch's default), which is ``full``.
    """
    return getattr(model, "policy", "full")


def apply_policy(model: nn.Module, policy: str) -> list[str]:
    """Return the sorted trainable parameter names after freezing ``model`` per ``policy``."""
    trainable = policy_parameter_names(model, policy)
    for name, param in model.named_parameters():
        param.requires_grad_(name in trainable)
    model.policy = policy  # type: ignore[assignment]  # read by save_adapter_bundle
    model.train(model.training)  # re-apply modes: newly frozen modules go to eval
    return sorted(trainable)


def check_policy(model: nn.Module, policy: str) -> None:
    """Raise RuntimeError unless the trainable parameters are exactly ``policy``'s.

    Also checks that no fully frozen module is in training mode. A failure is a bug in the
    caller (something toggled ``requires_grad`` by hand), not a user error.
    """
    expected = policy_parameter_names(model, policy)
    actual = {name for name, p in model.named_parameters() if p.requires_grad}
    if expected != actual:
        raise RuntimeError(
            f"trainable parameters differ from policy {policy!r}: unexpectedly trainable"
            f" {sorted(actual - expected)[:10]}, unexpectedly frozen {sorted(expected - actual)[:10]}"
        )
    for name, module in model.named_modules():
        params = list(module.parameters())
        if module.training and params and not any(p.requires_grad for p in params):
            raise RuntimeError(f"frozen module {name or type(module).__name__!r} is in training mode")


def trainable_summary(model: nn.Module) -> str:
    """Return a one-line count of trainable vs all parameters (PEFT-style sanity line)."""
    total = sum(p.numel() for p in model.parameters())
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    share = 100.0 * trainable / max(total, 1)
    return f"trainable params: {trainable:,} || all params: {total:,} || trainable%: {share:.4f}"
