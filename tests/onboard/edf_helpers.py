"""Small EDF writers shared by the onboarding tests (each test module used to carry its own copy)."""

from __future__ import annotations

from pathlib import Path

import edfio
import numpy as np


def prefiltered_edf(path: Path, seed: int, prefilter: str, freq: float) -> None:
    """Write 60 s of a ``freq`` Hz rhythm + noise on EL1 ER1 EL2 (200 Hz, µV) whose header says ``prefilter``."""
    rng = np.random.default_rng(seed)
    t = np.arange(200 * 60) / 200.0
    signals = [edfio.EdfSignal(20 * np.sin(2 * np.pi * freq * t) + 3 * rng.standard_normal(t.size),
                               sampling_frequency=200.0, label=name, physical_dimension="uV",
                               physical_range=(-500, 500), prefiltering=prefilter)
               for name in ("EL1", "ER1", "EL2")]
    edfio.Edf(signals).write(path)


def rhythm_edf(path: Path, names: list[str], *, seed: int, epochs: int = 4) -> Path:
    """Write a small EDF (30-s epochs of noise and a 10 Hz rhythm, µV) with channels ``names``; return it."""
    rng = np.random.default_rng(seed)
    t = np.arange(200 * 30 * epochs) / 200.0
    edfio.Edf([edfio.EdfSignal(20 * np.sin(2 * np.pi * 10 * t) + 3 * rng.standard_normal(t.size),
                               sampling_frequency=200.0, label=n, physical_dimension="uV",
                               physical_range=(-500, 500)) for n in names]).write(path)
    return path


def prefilter_dataset(folder: Path, *, odd: str, usual: str, l_freq: float | None = None) -> Path:
    """Write rest and task recordings of 3 subjects (10-s windows) whose headers say ``usual`` prefilters, but
    subject s01's task recording says ``odd`` (as eegmat's subjects 08, 10, 11); return the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = ["task: classification", "window_seconds: 10", "classes: [rest, task]"]
    lines += [f"l_freq: {l_freq:g}"] if l_freq is not None else []
    lines.append("recordings:")
    for s in range(3):
        for k, (label, freq) in enumerate((("rest", 10.0), ("task", 6.0))):
            name = f"s{s + 1:02d}_{k + 1}.edf"
            prefiltered_edf(folder / name, 10 * s + k, odd if (s, label) == (0, "task") else usual, freq)
            lines.append(f"  - {{subject: s{s + 1:02d}, file: {name}, label: {label}}}")
    (folder / "dataset.yaml").write_text("\n".join(lines) + "\n")
    return folder
