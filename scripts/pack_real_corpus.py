"""Write a smaller copy of the real pretraining corpus, to move it to a machine that lacks ``../shared/data``.

    .venv/bin/python scripts/pack_real_corpus.py OUT.tar.xz [--data ../shared/data] [--sfreq 100]

The copy keeps the folder layout that ``scripts/real_pretrain_sources.py`` reads (``muse/`` with its
``recordings.tsv``, ``eegmat/``, ``dreams-spindles/``), so ``scripts/pretrain_real.sh`` runs on it
unchanged with ``DATA=<unpacked folder>``. What it changes, to fit a 64 MB transfer (the GPU
machine of docs/RESULTS.md's "GPU" section):

- Muse and eegmat EDFs are low-passed at 45 Hz (MNE's default FIR) and resampled to ``--sfreq``
  (100 Hz), written as EDF with a fixed physical range of ±16,383.5 µV, i.e. 0.5 µV steps (Muse's
  own ADC step is 0.49 µV). The recipe already low-passes eegmat at 45 Hz; for Muse it removes
  45-75 Hz, which the recipe at 256 Hz keeps.
- DREAMS files are copied as they are (text files and ``excerpt3.edf``).

Nothing else is read or written; the output is one ``.tar.xz``.
"""

from __future__ import annotations

import argparse
import csv
import io
import shutil
import tarfile
import tempfile
from pathlib import Path

import mne
import numpy as np
from edfio import Edf, EdfSignal

LIMIT_UV = 16383.5  # physical range ±LIMIT_UV over the int16 digital range: 0.5 µV per step


def reduced_edf(src: Path, dst: Path, sfreq: float) -> None:
    """Write ``src`` low-passed at 45 Hz and resampled to ``sfreq`` as an EDF with 0.5 µV steps."""
    raw = mne.io.read_raw_edf(src, preload=True, verbose="error")
    raw.pick("eeg")
    raw.filter(None, 45.0, verbose="error")
    raw.resample(sfreq, verbose="error")
    data = raw.get_data() * 1e6
    n = (data.shape[1] // int(sfreq)) * int(sfreq)  # whole 1-s data records
    signals = [
        EdfSignal(np.clip(row[:n], -LIMIT_UV, LIMIT_UV), sampling_frequency=sfreq, label=name,
                  physical_dimension="uV", physical_range=(-LIMIT_UV, LIMIT_UV), digital_range=(-32768, 32767))
        for name, row in zip(raw.ch_names, data)
    ]
    dst.parent.mkdir(parents=True, exist_ok=True)
    Edf(signals).write(dst)


def pack(data: Path, out: Path, sfreq: float) -> None:
    """Write the reduced corpus under ``data`` into the archive ``out``."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "data"
        muse = data / "muse"
        with open(muse / "recordings.tsv", newline="", encoding="utf-8") as fh:
            files = [row["file"] for row in csv.DictReader(fh, delimiter="\t")]
        for rel in files:
            reduced_edf(muse / rel, root / "muse" / rel, sfreq)
        for name in ("recordings.tsv", "muse.yaml", "README.md", "LICENSE"):
            if (muse / name).exists():
                shutil.copy2(muse / name, root / "muse" / name)
        for edf in sorted((data / "eegmat").glob("Subject[0-9][0-9]_[12].edf")):
            reduced_edf(edf, root / "eegmat" / edf.name, sfreq)
        shutil.copytree(data / "dreams-spindles", root / "dreams-spindles")
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w:xz", preset=6) as tar:
            tar.add(root, arcname="data")
        tmp_out = out.with_name(out.name + ".tmp")
        tmp_out.write_bytes(buffer.getvalue())
        tmp_out.replace(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--sfreq", type=float, default=100.0)
    args = parser.parse_args()
    pack(args.data, args.out, args.sfreq)
    print(f"{args.out}: {args.out.stat().st_size / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
