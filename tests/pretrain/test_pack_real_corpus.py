"""scripts/pack_real_corpus.py: the smaller copy of the real corpus that travels to a GPU machine."""

from __future__ import annotations

import importlib.util
import tarfile
from pathlib import Path

import mne
import numpy as np
from edfio import Edf, EdfSignal

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "pack_real_corpus.py"
_spec = importlib.util.spec_from_file_location("pack_real_corpus", SCRIPT)
pack = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(pack)


def _edf(path: Path, sfreq: float, names: list[str], seconds: int, seed: int) -> np.ndarray:
    """Write an EDF of slow sines plus a 70 Hz line (µV) and return its data."""
    t = np.arange(int(sfreq * seconds)) / sfreq
    rng = np.random.default_rng(seed)
    data = np.stack([20 * np.sin(2 * np.pi * (3 + i) * t) + 10 * np.sin(2 * np.pi * 70 * t)
                     + rng.normal(0, 1, t.size) for i in range(len(names))])
    path.parent.mkdir(parents=True, exist_ok=True)
    Edf([EdfSignal(row, sampling_frequency=sfreq, label=n, physical_dimension="uV",
                   physical_range=(-500, 500)) for n, row in zip(names, data)]).write(path)
    return data


def test_pack_keeps_the_layout_and_the_signal_below_45_hz(tmp_path: Path) -> None:
    data = tmp_path / "data"
    _edf(data / "muse" / "visual" / "a" / "rec.edf", 256, ["TP9", "AF7", "AF8", "TP10"], 20, 0)
    (data / "muse" / "recordings.tsv").write_text("file\tsubject\texperiment\tseconds\n"
                                                  "visual/a/rec.edf\tcueing-subject1\tvisual/cueing\t20\n")
    _edf(data / "eegmat" / "Subject00_1.edf", 500, ["EEG Fp1", "EEG Fp2"], 10, 1)
    (data / "eegmat" / "notes.edf").write_bytes(b"")  # not a SubjectNN_K file: left out
    (data / "dreams-spindles").mkdir()
    (data / "dreams-spindles" / "excerpt1.txt").write_text("[C3-A1]\n1.0\n2.0\n")
    out = tmp_path / "corpus.tar.xz"

    pack.pack(data, out, 100.0)

    with tarfile.open(out) as tar:
        names = set(tar.getnames())
        tar.extractall(tmp_path / "unpacked", filter="data")
    assert {"data/muse/recordings.tsv", "data/muse/visual/a/rec.edf", "data/eegmat/Subject00_1.edf",
            "data/dreams-spindles/excerpt1.txt"} <= names
    assert "data/eegmat/notes.edf" not in names
    root = tmp_path / "unpacked" / "data"
    assert (root / "dreams-spindles" / "excerpt1.txt").read_text() == "[C3-A1]\n1.0\n2.0\n"
    raw = mne.io.read_raw_edf(root / "muse" / "visual" / "a" / "rec.edf", preload=True, verbose="error")
    assert raw.info["sfreq"] == 100.0 and raw.ch_names == ["TP9", "AF7", "AF8", "TP10"]
    got = raw.get_data() * 1e6
    assert got.shape == (4, 2000)
    # The slow sines survive (to within the filter's ripple and 0.5 µV steps); the 70 Hz line is gone.
    t = np.arange(2000) / 100.0
    mid = slice(200, 1800)
    for i in range(4):
        slow = 20 * np.sin(2 * np.pi * (3 + i) * t)
        assert np.sqrt(np.mean((got[i, mid] - slow[mid]) ** 2)) < 1.5
    assert not (tmp_path / "corpus.tar.xz.tmp").exists()
