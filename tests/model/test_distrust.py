"""Distrusted channels (issue 8): a poor contact keeps its signal but not its say over its own code."""

from __future__ import annotations

import pytest
import torch
from model_helpers import make_meta

from passport_kit.errors import DataError
from passport_kit.model import ChannelMeta, build_backbone, model_config
from passport_kit.model.channel_embedding import borrow_summaries


def _backbone(kind: str, meta: ChannelMeta):
    torch.manual_seed(0)
    return build_backbone(model_config("cbramod-tiny", kind)).eval()


def test_borrowed_rows_come_from_the_nearest_trusted_channel() -> None:
    positions = torch.tensor([[0.0, 0.0, 0.0], [0.01, 0.0, 0.0], [0.03, 0.0, 0.0], [0.10, 0.0, 0.0]])
    summary = torch.arange(2 * 4 * 2, dtype=torch.float32).reshape(2, 4, 2)
    distrust = torch.tensor([[False, True, False, False],     # 1 -> 0 (0.01 away; 2 is 0.02 away)
                             [True, True, False, True]])      # 0 -> 2, 1 -> 2, 3 -> 2 (the only trusted one)
    out = borrow_summaries(summary, distrust, positions)
    assert torch.equal(out[0, [0, 2, 3]], summary[0, [0, 2, 3]])   # trusted rows untouched
    assert torch.equal(out[0, 1], summary[0, 0])
    assert torch.equal(out[1], summary[1, [2, 2, 2, 2]])


def test_a_window_without_trusted_channels_keeps_its_own_summaries() -> None:
    summary = torch.randn(1, 3, 4)
    out = borrow_summaries(summary, torch.ones(1, 3, dtype=torch.bool), torch.randn(3, 3))
    assert torch.equal(out, summary)


@pytest.mark.parametrize("kind", ["mlp-experts", "xattn-experts"])
def test_a_distrusted_channel_content_cannot_move_any_channel_code(kind: str) -> None:
    meta = make_meta(4)
    embedding = _backbone(kind, meta).channel_embedding
    emb = torch.randn(2, 4, 3, 200)
    distrust = torch.zeros(2, 4, dtype=torch.bool)
    distrust[0, 1] = True
    changed = emb.clone()
    changed[0, 1] = 50.0 * torch.randn(3, 200)   # a wild contact in sample 0 only
    a = embedding.channel_vectors(emb, meta, None, distrust)
    b = embedding.channel_vectors(changed, meta, None, distrust)
    torch.testing.assert_close(a, b)
    # ... while without distrust the same change does move that channel's code.
    plain = embedding.channel_vectors(emb, meta, None) - embedding.channel_vectors(changed, meta, None)
    assert plain[0, 1].abs().max() > 1e-4


@pytest.mark.parametrize("kind", ["mlp-experts", "acpe", "xyz"])
def test_nothing_distrusted_changes_nothing(kind: str) -> None:
    meta = make_meta(3)
    backbone = _backbone(kind, meta)
    x = torch.randn(2, 3, 2, 200)
    with torch.no_grad():
        plain = backbone(x, meta)
        none = backbone(x, meta, distrust=torch.zeros(2, 3, dtype=torch.bool))
    assert torch.equal(plain, none)


def test_position_kinds_ignore_distrust() -> None:
    meta = make_meta(3)
    backbone = _backbone("acpe", meta)
    x = torch.randn(2, 3, 2, 200)
    with torch.no_grad():
        assert torch.equal(backbone(x, meta), backbone(x, meta, distrust=torch.ones(2, 3, dtype=torch.bool)))


def test_distrust_shape_is_checked() -> None:
    meta = make_meta(3)
    with pytest.raises(DataError, match="distrust has shape"):
        _backbone("mlp-experts", meta)(torch.randn(2, 3, 2, 200), meta, distrust=torch.zeros(3, 2, dtype=torch.bool))


@pytest.mark.parametrize("kind", ["ape", "xyz", "acpe", "mlp-experts", "xattn-experts"])
def test_only_the_expert_kinds_read_channel_activity(kind: str) -> None:
    assert _backbone(kind, make_meta(3)).channel_embedding.reads_activity == (kind in ("mlp-experts", "xattn-experts"))
