"""Files of a simulated dataset: EDF recordings, per-epoch label tables, ``dataset.yaml``.

- ``<subject>.edf``: EDF (16-bit) with one signal per montage channel, labelled with the
  montage channel name, physical dimension ``uV``, and a symmetric physical range per channel
  (its largest absolute value plus 5%, rounded up to 50 µV, at least ±100 µV), so the
  quantisation step is at most a few hundredths of a µV for ordinary channels.
- ``<subject>_hypnogram.csv``: header ``stage,onset_s``, then one row per 30-s epoch: the AASM
  stage name (``W``, ``N1``, ``N2``, ``N3``, ``REM``) in the first column and the epoch onset
  in seconds from the start of the recording in the second.
- ``dataset.yaml``: exactly the keys of DESIGN.md §6 (``task``, ``window_seconds``,
  ``classes``, ``recordings`` with ``subject``, ``file``, ``labels``).

Every file is written atomically (temp file + rename), and ``dataset.yaml`` last, so a run
that dies half-way leaves a folder that does not read as a dataset.
"""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from passport_kit.atomic_io import atomic_output, write_table
from passport_kit.atomic_io import atomic_write_text as write_text
from passport_kit.signals.simulator.hypnogram import EPOCH_SECONDS, STAGES

DATASET_FILE = "dataset.yaml"
#: Start of every simulated night (EDF header), fixed so that files are reproducible.
START = dt.datetime(2020, 1, 1, 23, 0, 0)
_RANGE_STEP_UV = 50.0
_MIN_RANGE_UV = 100.0


def physical_range(x: np.ndarray) -> tuple[float, float]:
    """Return a symmetric EDF physical range (µV) that holds ``x`` with 5% headroom."""
    peak = float(np.max(np.abs(x))) if x.size else 0.0
    top = max(_MIN_RANGE_UV, math.ceil(peak * 1.05 / _RANGE_STEP_UV) * _RANGE_STEP_UV)
    return -top, top


def write_edf(path: Path, data: np.ndarray, ch_names: list[str], sfreq: float, *,
              subject: str, kinds: list[str]) -> Path:
    """Write ``data`` (C, n_samples) µV as an EDF file at ``path`` atomically; return the path."""
    import edfio

    transducer = {"eeg": "AgAgCl electrode", "eog": "AgAgCl electrode",
                  "emg": "AgAgCl electrode", "ecg": "AgAgCl electrode", "misc": ""}
    signals = [
        edfio.EdfSignal(np.asarray(row, dtype=np.float64), sampling_frequency=float(sfreq),
                        label=name, transducer_type=transducer.get(kind, ""),
                        physical_dimension="uV", physical_range=physical_range(row),
                        prefiltering="simulated")
        for row, name, kind in zip(data, ch_names, kinds)
    ]
    edf = edfio.Edf(signals, patient=edfio.Patient(code=subject),
                    recording=edfio.Recording(startdate=START.date(),
                                              equipment_code="passport-kit-simulator"),
                    starttime=START.time(), data_record_duration=1.0)
    with atomic_output(path) as tmp:
        edf.write(tmp)
    return path


def write_labels(path: Path, stages: np.ndarray) -> Path:
    """Write one AASM stage name per 30-s epoch (header ``stage,onset_s``); return the path."""
    rows = [{"stage": STAGES[int(s)], "onset_s": k * EPOCH_SECONDS} for k, s in enumerate(stages)]
    return write_table(path, rows)


def write_dataset_yaml(folder: Path, recordings: list[dict[str, str]], *, header: str) -> Path:
    """Write ``dataset.yaml`` (DESIGN.md §6) for ``recordings`` into ``folder``; return its path."""
    doc: dict[str, Any] = {
        "task": "sleep-staging",
        "window_seconds": int(EPOCH_SECONDS),
        "classes": list(STAGES),
        "recordings": recordings,
    }
    comment = "".join(f"# {line}\n" for line in header.splitlines())
    text = comment + yaml.safe_dump(doc, sort_keys=False, default_flow_style=None, width=100)
    return write_text(folder / DATASET_FILE, text)
