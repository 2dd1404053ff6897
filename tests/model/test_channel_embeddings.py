"""The six channel embeddings: any channel count, the properties each kind promises."""

from __future__ import annotations

import math

import pytest
import torch
from model_helpers import make_meta

from passport_kit.errors import ChannelMappingError, ConfigError
from passport_kit.model import EMBEDDING_KINDS, ChannelMeta, build_backbone, model_config
from passport_kit.model.channel_embedding import position_features, sinusoid, xyz_sinusoid


def _backbone(kind: str, meta: ChannelMeta):
    vocab = list(meta.names) if kind == "channel-id" else []
    return build_backbone(model_config("cbramod-tiny", kind, channel_vocab=vocab))


@pytest.mark.parametrize("kind", EMBEDDING_KINDS)
@pytest.mark.parametrize("n_channels", [1, 5, 19])
def test_every_kind_runs_forward_and_backward(kind: str, n_channels: int) -> None:
    meta = make_meta(n_channels, bipolar=(0,))
    backbone = _backbone(kind, meta)
    x = torch.randn(1, n_channels, 3, 200)
    mask = torch.rand(1, n_channels, 3) < 0.5
    # Through the encoder features: the reconstruction head starts at zero (no gradient beyond it).
    backbone(x, meta, mask).square().mean().backward()
    grads = [p.grad for p in backbone.channel_embedding.parameters()]
    assert all(g is not None and torch.isfinite(g).all() for g in grads)
    assert backbone.encoder.layers[0].linear1.weight.grad.abs().sum() > 0


@pytest.mark.parametrize("kind", ["xyz", "channel-id", "mlp-experts", "xattn-experts"])
def test_reordering_channels_with_their_metadata_permutes_the_output(kind: str) -> None:
    meta = make_meta(6, bipolar=(2,))
    backbone = _backbone(kind, meta).eval()
    x = torch.randn(2, 6, 4, 200)
    order = [3, 0, 5, 2, 1, 4]
    with torch.no_grad():
        out = backbone(x, meta)
        permuted = backbone(x[:, order], meta.permute(order))
    torch.testing.assert_close(permuted, out[:, order], atol=2e-5, rtol=1e-4)


def test_ape_depends_on_channel_order_only() -> None:
    # The documented weakness of `ape`: moving a channel changes its embedding.
    meta = make_meta(4)
    backbone = _backbone("ape", meta).eval()
    x = torch.randn(1, 4, 2, 200)
    with torch.no_grad():
        permuted = backbone(x[:, [1, 0, 2, 3]], meta.permute([1, 0, 2, 3]))
        assert not torch.allclose(permuted, backbone(x, meta)[:, [1, 0, 2, 3]], atol=1e-4)


def test_xyz_follows_the_papers_rule() -> None:
    # 12.4 mm → 162.4 → index 162 on x; y and z at the origin → index 150; 2 padding dims.
    emb = xyz_sinusoid(torch.tensor([[0.0124, 0.0, 0.0004]]), 200)[0]
    assert emb.shape == (200,)
    torch.testing.assert_close(emb[:66], sinusoid(torch.tensor([162.0]), 66)[0])
    torch.testing.assert_close(emb[66:132], sinusoid(torch.tensor([150.0]), 66)[0])
    torch.testing.assert_close(emb[132:198], sinusoid(torch.tensor([150.0]), 66)[0])
    assert emb[198:].abs().sum() == 0
    assert emb[0] == pytest.approx(math.sin(162.0))


def test_channel_id_refuses_unknown_names() -> None:
    backbone = build_backbone(model_config("cbramod-tiny", "channel-id", channel_vocab=["Fp1", "Fp2"]))
    meta = ChannelMeta.create(["FP1", "ELA"])
    with pytest.raises(ChannelMappingError, match=r"no row for channels \['ELA'\].*add_channels"):
        backbone(torch.randn(1, 2, 2, 200), meta)


def test_channel_id_adds_rows_when_told() -> None:
    backbone = build_backbone(model_config("cbramod-tiny", "channel-id", channel_vocab=["Fp1"]))
    old = backbone.channel_embedding.table.detach().clone()
    assert backbone.add_channels(["fp1", "ELA", "ELB"]) == ["ELA", "ELB"]  # Fp1 known (any case)
    assert backbone.config.channel_vocab == ["Fp1", "ELA", "ELB"]
    torch.testing.assert_close(backbone.channel_embedding.table[:1], old)
    out = backbone(torch.randn(1, 2, 2, 200), ChannelMeta.create(["ELB", "FP1"]))
    assert out.shape == (1, 2, 2, 200)


@pytest.mark.parametrize("kind", ["xyz", "mlp-experts", "xattn-experts"])
def test_position_kinds_refuse_missing_positions(kind: str) -> None:
    backbone = build_backbone(model_config("cbramod-tiny", kind))
    with pytest.raises(ChannelMappingError, match="needs electrode positions"):
        backbone(torch.randn(1, 2, 2, 200), ChannelMeta.create(["A", "B"]))


def test_position_features_feed_both_electrodes_of_a_bipolar_channel() -> None:
    meta = ChannelMeta.create(
        ["C3", "F3-A2"], [[-0.05, 0.0, 0.08], [-0.04, 0.05, 0.07]], [[float("nan")] * 3, [0.08, -0.01, -0.04]]
    )
    feats = position_features(meta)
    torch.testing.assert_close(feats[0], torch.tensor([-0.5, 0.0, 0.8, 0.0, 0.0, 0.0, 0.0]))
    torch.testing.assert_close(feats[1], torch.tensor([-0.4, 0.5, 0.7, 0.8, -0.1, -0.4, 1.0]))


@pytest.mark.parametrize("kind", ["mlp-experts", "xattn-experts"])
def test_activity_summary_pools_unmasked_patches_only(kind: str) -> None:
    meta = make_meta(3)
    emb_module = _backbone(kind, meta).channel_embedding
    emb = torch.randn(2, 3, 5, 200)
    mask = torch.zeros(2, 3, 5, dtype=torch.bool)
    mask[:, :, 3:] = True
    changed = emb.clone()
    changed[:, :, 3:] += 10.0  # masked patches must not move z_c
    torch.testing.assert_close(
        emb_module.query_input(emb, meta, mask), emb_module.query_input(changed, meta, mask)
    )
    weights = emb_module.mixture_weights(emb, meta, mask)
    assert weights.shape == (2, 3, 10)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 3))


def test_unknown_kind_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="choose one of"):
        model_config("cbramod-tiny", "rope")


def test_a_fresh_backbone_reconstructs_zeros() -> None:
    # The pretraining head starts at the zero predictor (docs/pretraining.md, probe 3).
    meta = make_meta(4)
    backbone = _backbone("acpe", meta).eval()
    with torch.no_grad():
        out = backbone.reconstruct(torch.randn(2, 4, 3, 200), meta)
    assert torch.equal(out, torch.zeros_like(out))


@pytest.mark.parametrize("kind", ["mlp-experts", "xattn-experts"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_expert_codes_start_similar_for_neighbouring_electrodes(kind: str, seed: int) -> None:
    # Without geometry in the initial codes pretraining stayed at the zero predictor.
    from passport_kit.montage import resolve_montage

    meta = ChannelMeta.from_montage(resolve_montage("tuh-19"))
    torch.manual_seed(seed)
    backbone = _backbone(kind, meta).eval()
    with torch.no_grad():
        emb = torch.randn(3, meta.n_channels, 5, 200)
        codes = backbone.channel_embedding.channel_vectors(emb, meta, None).mean(0)
    codes = torch.nn.functional.normalize(codes - codes.mean(0), dim=-1)
    cos = codes @ codes.t()
    dist = torch.cdist(meta.positions, meta.positions)
    off = ~torch.eye(meta.n_channels, dtype=torch.bool)
    near, far = cos[off & (dist < 0.06)], cos[off & (dist > 0.12)]
    assert near.numel() > 10 and far.numel() > 10
    assert near.mean() > far.mean() + 0.3


@pytest.mark.parametrize("kind", EMBEDDING_KINDS)
def test_each_registered_kind_builds_its_own_module(kind: str) -> None:
    # One registry (model.config.EMBEDDINGS) names the kinds; each module registers under its kind.
    from passport_kit.model.channel_embedding import EMBEDDING_MODULES
    from passport_kit.model.config import EMBEDDINGS

    assert set(EMBEDDING_MODULES) == set(EMBEDDINGS) == set(EMBEDDING_KINDS)
    built = build_backbone(model_config("cbramod-tiny", kind)).channel_embedding
    assert built.kind == kind and built.reads_activity == EMBEDDINGS[kind].experts


def test_a_module_for_an_unregistered_kind_is_refused() -> None:
    from passport_kit.model.channel_embedding import ChannelEmbedding

    with pytest.raises(TypeError, match="not a kind of model.config.EMBEDDINGS"):
        type("Stray", (ChannelEmbedding,), {"kind": "stray"})


def test_a_second_module_for_a_kind_is_refused() -> None:
    from passport_kit.model.channel_embedding import EMBEDDING_MODULES, ChannelEmbedding

    with pytest.raises(ValueError, match="a channel embedding module named 'ape' is already registered"):
        type("Again", (ChannelEmbedding,), {"kind": "ape"})
    assert EMBEDDING_MODULES["ape"].__name__ != "Again"


def test_a_second_embedding_kind_of_a_taken_name_is_refused() -> None:
    from passport_kit.model.config import EMBEDDINGS, EmbeddingKindSpec

    with pytest.raises(ValueError, match="a channel embedding named 'xyz' is already registered"):
        EMBEDDINGS.add("xyz", EmbeddingKindSpec("xyz", "another"))
