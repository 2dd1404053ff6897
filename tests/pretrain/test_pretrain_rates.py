"""Pretraining data at any sampling rate: each dataset's band-pass top follows adapt's rule (issue 19 item 1)."""

from __future__ import annotations

from pathlib import Path

import mne
import numpy as np
import pytest

from passport_kit.errors import PassportWarning
from passport_kit.signals import PreprocessConfig
from passport_kit.pretrain.run import source_preprocess


def _folder(root: Path, sfreq: float, h_freq: float | None) -> Path:
    root.mkdir(parents=True)
    raw = mne.io.RawArray(np.random.default_rng(0).normal(0, 1e-5, (1, int(60 * sfreq))),
                          mne.create_info(["Cz"], sfreq, "eeg"), verbose="error")
    raw.save(root / "r1_raw.fif", verbose="error")
    lines = ["task: classification", "window_seconds: 30", "classes: [a]"]
    if h_freq is not None:
        lines.append(f"h_freq: {h_freq:g}")
    lines += ["recordings:", "  - subject: s1", "    file: r1_raw.fif", "    label: a"]
    (root / "dataset.yaml").write_text("\n".join(lines) + "\n")
    return root


def test_a_slow_dataset_gets_a_band_its_rate_carries(tmp_path: Path) -> None:
    with pytest.warns(PassportWarning, match="lowered to 45 Hz"):
        config = source_preprocess(_folder(tmp_path / "d", 100.0, None), PreprocessConfig())
    assert config.h_freq == 45.0 and config.sfreq == 200.0


def test_dataset_yaml_h_freq_wins(tmp_path: Path) -> None:
    assert source_preprocess(_folder(tmp_path / "d", 100.0, 30.0), PreprocessConfig()).h_freq == 30.0
    assert source_preprocess(_folder(tmp_path / "e", 200.0, None), PreprocessConfig()).h_freq == 75.0
