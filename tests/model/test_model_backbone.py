"""Backbone: CBraMod's names and sizes, any C and P, masking, input checks, bf16 autocast."""

from __future__ import annotations

import pytest
import torch
from model_helpers import make_meta, needs_cpu_bf16

from passport_kit.errors import ChannelMappingError, DataError
from passport_kit.model import ARCHITECTURES, ChannelMeta, build_backbone, model_config


def test_base_acpe_has_cbramod_state_dict_size() -> None:
    backbone = build_backbone(model_config("cbramod-base", "acpe"))
    state = backbone.state_dict()
    assert len(state) == 211  # cbramod.md §2
    # 4,924,000 in CBraMod counts the non-trainable mask token, a buffer here.
    assert sum(p.numel() for p in backbone.parameters()) == 4_923_800
    assert state["patch_embedding.positional_encoding.0.weight"].shape == (200, 1, 19, 7)
    assert state["encoder.layers.11.self_attn_t.in_proj_weight"].shape == (300, 100)


@pytest.mark.parametrize("arch", sorted(ARCHITECTURES))
def test_named_architectures_have_their_depth(arch: str) -> None:
    backbone = build_backbone(model_config(arch, "xyz"))
    assert len(backbone.encoder.layers) == ARCHITECTURES[arch]


@pytest.mark.parametrize(("c", "p"), [(1, 1), (4, 3), (19, 2), (6, 30)])
def test_forward_and_reconstruct_keep_the_grid(c: int, p: int) -> None:
    backbone = build_backbone(model_config("cbramod-tiny", "acpe")).eval()
    x = torch.randn(2, c, p, 200)
    assert backbone(x, make_meta(c)).shape == (2, c, p, 200)
    assert backbone.reconstruct(x, make_meta(c)).shape == (2, c, p, 200)


def test_masked_patch_content_is_ignored() -> None:
    backbone = build_backbone(model_config("cbramod-tiny", "mlp-experts")).eval()
    meta = make_meta(3)
    x = torch.randn(1, 3, 4, 200)
    mask = torch.zeros(1, 3, 4, dtype=torch.bool)
    mask[0, 1, 2] = True
    y = x.clone()
    y[0, 1, 2] = 50.0  # what the mask token replaces must not matter
    with torch.no_grad():
        torch.testing.assert_close(backbone(x, meta, mask), backbone(y, meta, mask))
        assert not torch.allclose(backbone(x, meta), backbone(y, meta))


@pytest.mark.parametrize(
    ("shape", "n_meta"), [((2, 3, 4, 100), 3), ((2, 3, 4, 200), 5), ((3, 4, 200), 3)]
)
def test_wrong_input_shape_is_a_data_error(shape: tuple[int, ...], n_meta: int) -> None:
    backbone = build_backbone(model_config("cbramod-tiny", "ape"))
    with pytest.raises(DataError, match="expected|channel metadata"):
        backbone(torch.randn(*shape), make_meta(n_meta))


@needs_cpu_bf16
@pytest.mark.parametrize("kind", ["acpe", "xattn-experts"])
def test_bf16_autocast_stays_close_to_fp32(kind: str) -> None:
    backbone = build_backbone(model_config("cbramod-tiny", kind)).eval()
    meta = make_meta(5, bipolar=(1,))
    x = torch.randn(2, 5, 6, 200)
    with torch.no_grad():
        ref = backbone(x, meta)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            low = backbone(x, meta)
    rel = (low.float() - ref).norm() / ref.norm()
    assert rel < 0.05


@pytest.mark.parametrize("name", ["tuh-standard", "eesm19-ear"])
def test_channel_meta_from_a_registered_montage(name: str) -> None:
    from passport_kit.montage import get_montage

    montage = get_montage(name)
    meta = ChannelMeta.from_montage(montage)
    assert list(meta.names) == montage.ch_names
    torch.testing.assert_close(meta.positions, torch.as_tensor(montage.positions, dtype=torch.float32))
    assert not meta.is_bipolar.any()  # these montages are referential
    backbone = build_backbone(model_config("cbramod-tiny", "xattn-experts")).eval()
    assert backbone(torch.randn(1, montage.n_channels, 2, 200), meta).shape == (1, montage.n_channels, 2, 200)


def test_channel_meta_refuses_duplicate_names() -> None:
    with pytest.raises(ChannelMappingError, match="duplicate channel names"):
        ChannelMeta.create(["Cz", "CZ"])
