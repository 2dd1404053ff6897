"""Fixtures for onboarding tests: a tiny montage, a tiny labeled sleep dataset, tiny checkpoints.

The dataset is built here from class-dependent oscillations (EDF + labels + dataset.yaml), not
by the physics simulator, so that adapt → predict end-to-end runs stay within seconds.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import edfio
import mne
import numpy as np
import pytest
import torch

CLASSES = ["W", "N1", "N2", "N3", "REM"]
# A dominant frequency per stage (Hz), so even a few steps can separate some classes.
FREQ = {"W": 10.0, "N1": 6.0, "N2": 13.0, "N3": 1.5, "REM": 4.0}

TINY_MONTAGE = """\
name: tiny-ear
description: three ear electrodes, for tests
coordinate_frame: head
units: mm
reference: average
channels:
  - name: EL1
    position: [-80.0, -5.0, 10.0]
  - name: ER1
    position: [80.0, -5.0, 10.0]
  - name: EL2
    position: [-78.0, 2.0, -3.0]
"""


def write_recording(path: Path, labels: list[str], names: list[str], *, seed: int, sfreq: float = 200.0,
                    noise: float = 3.0) -> Path:
    """Write an EDF whose 30-s epochs oscillate at the frequency of their label (µV scale; ``noise``: µV of white
    noise)."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(30 * sfreq)) / sfreq
    epochs = [20 * np.sin(2 * np.pi * FREQ[lab] * t + rng.uniform(0, 6)) for lab in labels]
    base = np.concatenate(epochs)
    signals = [
        edfio.EdfSignal(base * (0.8 + 0.2 * i) + noise * rng.standard_normal(base.size), sampling_frequency=sfreq,
                        label=name, physical_dimension="uV", physical_range=(-500, 500))
        for i, name in enumerate(names)
    ]
    edfio.Edf(signals).write(path)
    return path


def make_dataset(root: Path, *, n_subjects: int = 4, n_epochs: int = 10, names: list[str] | None = None,
                 noise: float = 3.0) -> Path:
    """Write a labeled sleep dataset folder (EDF + CSV labels + dataset.yaml); return it."""
    names = names or ["EL1", "ER1", "EL2"]
    root.mkdir(parents=True, exist_ok=True)
    lines = ["task: sleep-staging", "window_seconds: 30", f"classes: [{', '.join(CLASSES)}]", "recordings:"]
    for s in range(n_subjects):
        subject = f"s{s + 1:02d}"
        labels = [CLASSES[(i + s) % len(CLASSES)] for i in range(n_epochs)]
        write_recording(root / f"{subject}.edf", labels, names, seed=s, noise=noise)
        (root / f"{subject}.csv").write_text("\n".join(labels) + "\n")
        lines += [f"  - subject: {subject}", f"    file: {subject}.edf", f"    labels: {subject}.csv"]
    (root / "dataset.yaml").write_text("\n".join(lines) + "\n")
    return root


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> Counter:
    """Return a Counter of the EDF files MNE opens while the test runs (file name → openings): read-once tests."""
    counts: Counter = Counter()
    real = mne.io.read_raw_edf

    def counting(path, *args, **kwargs):  # noqa: ANN001, ANN202 - MNE's signature
        counts[Path(path).name] += 1
        return real(path, *args, **kwargs)

    monkeypatch.setattr(mne.io, "read_raw_edf", counting)
    return counts


@pytest.fixture(scope="session")
def montage_yaml(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("montage") / "tiny-ear.yaml"
    path.write_text(TINY_MONTAGE)
    return path


@pytest.fixture(scope="session")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_dataset(tmp_path_factory.mktemp("data") / "tiny")


def save_tiny_checkpoint(name: str, kind: str = "mlp-experts", *, seed: int = 0) -> str:
    """Save a randomly initialised cbramod-tiny base checkpoint as a user checkpoint; return its name."""
    from passport_kit.checkpoint import save_base_checkpoint, user_checkpoint_dir
    from passport_kit.model import build_backbone, model_config

    torch.manual_seed(seed)
    backbone = build_backbone(model_config("cbramod-tiny", kind))
    save_base_checkpoint(backbone, user_checkpoint_dir() / name, name=name, card="test checkpoint")
    return name


@pytest.fixture(scope="session")
def session_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One PASSPORT_KIT_HOME for the onboarding tests, holding tiny checkpoints and the cache.

    Sharing it lets the tests reuse the two tiny base checkpoints, one adapter bundle and the
    preprocessing cache instead of rebuilding them per test; a test that must alter the home
    points PASSPORT_KIT_HOME elsewhere itself.
    """
    import os

    home = tmp_path_factory.mktemp("onboard_home")
    previous = os.environ.get("PASSPORT_KIT_HOME")
    os.environ["PASSPORT_KIT_HOME"] = str(home)
    try:
        save_tiny_checkpoint("tiny-mlp")
        save_tiny_checkpoint("tiny-acpe", "acpe")
    finally:
        if previous is None:
            os.environ.pop("PASSPORT_KIT_HOME", None)
        else:
            os.environ["PASSPORT_KIT_HOME"] = previous
    return home


@pytest.fixture(autouse=True)
def _onboard_home(session_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PASSPORT_KIT_HOME", str(session_home))
    return session_home


@pytest.fixture
def make_tiny_checkpoint():
    """Return :func:`save_tiny_checkpoint` (a fixture: importing ``conftest`` by name is ambiguous)."""
    return save_tiny_checkpoint


@pytest.fixture
def checkpoint() -> str:
    """Name of a tiny Device Passport (mlp-experts) base checkpoint."""
    return "tiny-mlp"


@pytest.fixture(scope="session")
def bundle(session_home: Path, montage_yaml: Path, dataset: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An adapter bundle adapted (3 steps) from 'tiny-mlp' on the tiny dataset."""
    import os

    from passport_kit.onboard.adapt import adapt

    out = tmp_path_factory.mktemp("bundle") / "adapter"
    previous = os.environ.get("PASSPORT_KIT_HOME")
    os.environ["PASSPORT_KIT_HOME"] = str(session_home)
    try:
        adapt(montage=str(montage_yaml), data=dataset, out=out, checkpoint="tiny-mlp", max_steps=3, batch_size=8)
    finally:
        if previous is not None:
            os.environ["PASSPORT_KIT_HOME"] = previous
    return out
