"""Helpers for checkpoint tests: a CBraMod-shaped state dict written from the facts sheet."""

from __future__ import annotations

import torch


def cbramod_shapes(n_layers: int = 12) -> dict[str, tuple[int, ...]]:
    """Return the key → shape table of the official CBraMod state dict (cbramod.md §2)."""
    shapes: dict[str, tuple[int, ...]] = {
        "patch_embedding.mask_encoding": (200,),
        "patch_embedding.positional_encoding.0.weight": (200, 1, 19, 7),
        "patch_embedding.positional_encoding.0.bias": (200,),
        "patch_embedding.proj_in.0.weight": (25, 1, 1, 49),
        "patch_embedding.proj_in.0.bias": (25,),
        "patch_embedding.spectral_proj.0.weight": (200, 101),
        "patch_embedding.spectral_proj.0.bias": (200,),
        "proj_out.0.weight": (200, 200),
        "proj_out.0.bias": (200,),
    }
    for i in (1, 4, 7):  # GroupNorms
        shapes[f"patch_embedding.proj_in.{i}.weight"] = (25,)
        shapes[f"patch_embedding.proj_in.{i}.bias"] = (25,)
    for i in (3, 6):
        shapes[f"patch_embedding.proj_in.{i}.weight"] = (25, 25, 1, 3)
        shapes[f"patch_embedding.proj_in.{i}.bias"] = (25,)
    for layer in range(n_layers):
        p = f"encoder.layers.{layer}."
        for attn in ("self_attn_s", "self_attn_t"):
            shapes[p + attn + ".in_proj_weight"] = (300, 100)
            shapes[p + attn + ".in_proj_bias"] = (300,)
            shapes[p + attn + ".out_proj.weight"] = (100, 100)
            shapes[p + attn + ".out_proj.bias"] = (100,)
        shapes[p + "linear1.weight"] = (800, 200)
        shapes[p + "linear1.bias"] = (800,)
        shapes[p + "linear2.weight"] = (200, 800)
        shapes[p + "linear2.bias"] = (200,)
        for norm in ("norm1", "norm2"):
            shapes[p + norm + ".weight"] = (200,)
            shapes[p + norm + ".bias"] = (200,)
    return shapes


def random_cbramod_state(n_layers: int = 12, seed: int = 0) -> dict[str, torch.Tensor]:
    """Return random tensors with CBraMod's keys and shapes, scaled like trained weights.

    Matrices and kernels ~ N(0, 1/fan_in); norm gains ~ 1 ± 0.1; biases ~ N(0, 0.01); the mask
    token is zero as in the release.
    """
    gen = torch.Generator().manual_seed(seed)
    norm_gains = {f"patch_embedding.proj_in.{i}.weight" for i in (1, 4, 7)}
    state = {}
    for name, shape in cbramod_shapes(n_layers).items():
        t = torch.randn(*shape, generator=gen)
        if name.endswith("mask_encoding"):
            t = torch.zeros(shape)
        elif name in norm_gains or (".norm" in name and name.endswith("weight")):
            t = 1.0 + 0.1 * t
        elif len(shape) == 1:
            t = 0.1 * t
        else:
            fan_in = torch.Size(shape[1:]).numel()
            t = t / fan_in**0.5
        state[name] = t
    return state
