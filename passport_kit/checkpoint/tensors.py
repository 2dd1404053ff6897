"""Tensors in and out of checkpoint files: strict loading, finiteness, safetensors bytes and hashes.

Loading is strict and says which tensors matched, were missing or unexpected, and never hands
back randomly initialised weights; NaN or inf is never written and never loaded (DESIGN.md §5).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load as load_safetensors_bytes
from torch import Tensor, nn

from passport_kit.errors import CheckpointError


@dataclass(frozen=True)
class LoadReport:
    """Which tensors of a file matched the model, and which were missing or unexpected."""

    matched: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    mismatched: list[str] = field(default_factory=list)  # "name: file (shape) vs model (shape)"

    @property
    def ok(self) -> bool:
        """Return True when every expected tensor matched and nothing else was present."""
        return bool(self.matched) and not (self.missing or self.unexpected or self.mismatched)

    def summary(self) -> str:
        """Return one line: counts, and the first few offending names."""
        parts = [f"{len(self.matched)} matched"]
        for label, names in (
            ("missing", self.missing),
            ("unexpected", self.unexpected),
            ("shape-mismatched", self.mismatched),
        ):
            if names:
                more = f" (+{len(names) - 5} more)" if len(names) > 5 else ""
                parts.append(f"{len(names)} {label} {names[:5]}{more}")
        return ", ".join(parts)


def compare_tensors(expected: Mapping[str, Tensor], found: Mapping[str, Tensor]) -> LoadReport:
    """Return the matched / missing / unexpected / shape-mismatched names of ``found``."""
    matched, mismatched = [], []
    for name, tensor in found.items():
        if name not in expected:
            continue
        if tuple(tensor.shape) != tuple(expected[name].shape):
            mismatched.append(
                f"{name}: file {tuple(tensor.shape)} vs model {tuple(expected[name].shape)}"
            )
        else:
            matched.append(name)
    missing = sorted(set(expected) - set(found))
    unexpected = sorted(set(found) - set(expected))
    return LoadReport(sorted(matched), missing, unexpected, mismatched)


def load_strict(module: nn.Module, tensors: Mapping[str, Tensor], *, what: str) -> LoadReport:
    """Return the report after loading ``tensors`` into every state-dict entry of ``module``.

    Raises CheckpointError (naming ``what``) unless the names and shapes match exactly.
    """
    report = compare_tensors(module.state_dict(), tensors)
    if not report.ok:
        raise CheckpointError(
            f"{what} does not fit the model: {report.summary()} - it was made for another"
            " architecture or embedding, or the file is damaged"
        )
    module.load_state_dict(dict(tensors), strict=True)
    return report


def state_for_saving(tensors: Mapping[str, Tensor], *, what: str) -> dict[str, Tensor]:
    """Return ``tensors`` as they are saved: detached, on the CPU, contiguous; CheckpointError if one is not finite."""
    state = {name: t.detach().to("cpu").contiguous() for name, t in tensors.items()}
    check_finite(state, what=what, fix="the model diverged; train it again with a lower learning rate")
    return state


def check_finite(tensors: Mapping[str, Tensor], *, what: str, fix: str) -> None:
    """Raise CheckpointError naming the first of ``tensors`` that holds NaN or inf (DESIGN.md §5: never written, never loaded)."""
    for name, tensor in tensors.items():
        if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
            bad = int((~torch.isfinite(tensor)).sum())
            raise CheckpointError(f"{what}: tensor '{name}' holds {bad} NaN or infinite values of {tensor.numel()}; "
                                  f"{fix}")


def parse_safetensors(data: bytes, path: Path) -> dict[str, Tensor]:
    """Return the tensors of safetensors file bytes read from ``path``; CheckpointError if they are not one."""
    try:
        return load_safetensors_bytes(data)
    except (SafetensorError, ValueError, RuntimeError) as exc:
        raise CheckpointError(f"'{path}' is not a valid safetensors file ({exc}); re-create it") from None


def sha256_bytes(data: bytes) -> str:
    """Return the SHA-256 hex digest of ``data``."""
    return hashlib.sha256(data).hexdigest()
