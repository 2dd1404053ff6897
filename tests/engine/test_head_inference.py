"""The engine and predict know heads only through their class (issue 60): each head says how it is scored."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest
import torch

from passport_kit.model.heads import HEADS, ClassificationHead, ProbeHead

PACKAGE = Path(__file__).resolve().parents[2] / "passport_kit"


@pytest.mark.parametrize("module", ["engine/forward.py", "engine/imputation.py", "inference/recording.py"])
def test_the_inference_path_names_no_head_class(module: str) -> None:
    tree = ast.parse((PACKAGE / module).read_text(encoding="utf-8"))
    named = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    named |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) for alias in node.names}
    assert not named & {HEADS.lookup(kind).__name__ for kind in HEADS.names()}, module


def test_each_head_says_how_it_is_scored() -> None:
    assert (ProbeHead.inference, ProbeHead.imputes_dead_channels) == ("read-out", True)
    assert (ClassificationHead.inference, ClassificationHead.imputes_dead_channels, ClassificationHead.n_prior) == (
        "forward", False, 0)


def test_a_head_scored_by_its_read_out_is_scored_so_whatever_its_class(monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine follows ``Head.inference``: a probe head declared a forward head is run through its forward pass
    (the same numbers here, no prior, smoothing or temperature), and its read-out path is then not taken."""
    from passport_kit.engine import forward
    from passport_kit.model import ChannelMeta, Classifier, build_backbone, model_config

    torch.manual_seed(0)
    model = Classifier(build_backbone(model_config("cbramod-tiny", "xyz")), 3, kind="probe", n_channels=2)
    torch.nn.init.normal_(model.head.linear.weight, std=0.1)
    meta = ChannelMeta.create(["C3", "C4"], [[-0.05, 0.0, 0.07], [0.05, 0.0, 0.07]])
    x = np.random.default_rng(0).normal(size=(3, 2, 2, 200)).astype(np.float32)
    read_out = forward.predict_proba(model, x, meta)
    calls: list[int] = []
    monkeypatch.setattr(forward, "_read_out_proba", lambda *a, **k: calls.append(1))
    monkeypatch.setattr(model.head, "inference", "forward")
    through_forward = forward.predict_proba(model, x, meta)
    assert calls == [] and np.allclose(read_out, through_forward, atol=1e-5)
