"""Small in-memory pretraining data for the pretraining tests (real WindowSet objects).

Signals are an alpha-like rhythm with a per-window amplitude per channel plus noise, so a
model can learn to reconstruct masked patches from their neighbours within a few steps.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch

from passport_kit.checkpoint import import_cbramod
from passport_kit.montage import get_montage
from passport_kit.signals import PreprocessConfig, WindowSet
from passport_kit.pretrain.run import DataSource, PretrainConfig

PATCHES = 4


def synthetic_windowset(montage_name: str, n_windows: int, n_subjects: int, seed: int = 0) -> WindowSet:
    """Return ``n_windows`` windows ``(N, C, 4, 200)`` of ``n_subjects`` subjects on a montage."""
    montage = get_montage(montage_name)
    rng = np.random.default_rng(seed)
    c = montage.n_channels
    t = np.arange(PATCHES * 200) / 200.0
    rhythm = np.sin(2 * np.pi * rng.uniform(8, 12, size=(n_windows, 1, 1)) * t)
    x = rhythm * rng.uniform(0.3, 1.0, size=(n_windows, c, 1)) + 0.2 * rng.normal(size=(n_windows, c, t.size))
    subjects = np.array([f"sub{i % n_subjects:02d}" for i in range(n_windows)])
    return WindowSet(
        x=x.reshape(n_windows, c, PATCHES, 200).astype(np.float32),
        y=np.full(n_windows, -1, dtype=np.int64),
        subject=subjects,
        recording=np.array([f"{s}.edf" for s in subjects]),
        onset_s=np.zeros(n_windows),
        flags=np.zeros((n_windows, c), dtype=np.uint8),
        classes=[],
        montage=montage,
        config=PreprocessConfig(window_seconds=PATCHES),
    )


def two_montage_data() -> list[tuple[str, WindowSet]]:
    """Return two small datasets on different montages (6 and 6 channels, different sites)."""
    return [
        ("sim-standard", synthetic_windowset("tuh-standard", 24, 6, seed=1)),
        ("sim-frontal", synthetic_windowset("tuh-frontal", 16, 4, seed=2)),
    ]


def tiny_config(out: Path, **overrides: object) -> PretrainConfig:
    """Return a fast pretraining config (2 layers, batch 4) over :func:`two_montage_data`."""
    options: dict[str, object] = {
        "sources": [DataSource(path=Path("sim-standard"), montage="tuh-standard"),
                    DataSource(path=Path("sim-frontal"), montage="tuh-frontal")],
        "embedding": "mlp-experts", "arch": "cbramod-tiny", "out": out, "steps": 4, "batch_size": 4,
        "checkpoint_every": 2, "val_fraction": 0.25, "window_seconds": PATCHES, "progress": False,
        "device": "cpu", "precision": "fp32", "threads": 1,
    }
    options.update(overrides)
    return PretrainConfig(**options)


def imported_cbramod(folder: Path, n_layers: int) -> Path:
    """Return a base checkpoint imported from a random CBraMod release file with ``n_layers`` (12: the official layout)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "checkpoint"))
    from checkpoint_helpers import random_cbramod_state

    release = folder / "pretrained_weights.pth"
    torch.save(random_cbramod_state(n_layers), release)
    return import_cbramod(release, folder / "base", name=f"cbramod-{n_layers}")
