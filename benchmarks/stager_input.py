"""What the sleep stager reads (issue 55 item 4): the product's ``predict --zero-shot yasa`` against YASA on its own.

On the DREAMS excerpts 1 (100 Hz) and 3 (50 Hz), C3-A1 (``benchmarks/montages/dreams-c3.yaml``),
written as FIF files by ``real_data.dreams_folder``:

- the product: ``passport-kit predict --zero-shot yasa`` on both files, the stage it writes per
  30-s window (``*_predictions.csv``);
- YASA on its own, as its documentation runs it: the FIF file opened with MNE,
  ``yasa.SleepStaging(raw, eeg_name="C3-A1").predict()``; YASA refuses a recording at or below
  80 Hz, so excerpt 3 is first upsampled to 100 Hz by ``raw.resample(100)`` (MNE's default), as a
  YASA user must.

Both are scored with Cohen's kappa against the scorer's AASM epochs (R&K per 5 s, majority per
30 s) on the same epochs: per night and pooled over the two::

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/stager_input.py --out /tmp/stager-input

Skips cleanly (exit 0, one line) without ``../shared/data``.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from real_data import DEFAULT_DATA, DREAMS_MONTAGE, dreams_folder  # noqa: E402

#: YASA's stage names onto the labels' (AASM).
_YASA = {"WAKE": "W", "N1": "N1", "N2": "N2", "N3": "N3", "REM": "REM"}


def product_stages(files: list[Path], out: Path) -> dict[str, list[str]]:
    """Return ``{file stem: stage per 30-s window}`` of ``passport-kit predict --zero-shot yasa`` on ``files``."""
    command = [sys.executable, "-m", "passport_kit.cli.app", "predict", "--zero-shot", "yasa", "--montage",
               str(DREAMS_MONTAGE), *map(str, files), "--out", str(out), "--overwrite"]
    subprocess.run(command, check=True, capture_output=True, text=True, env=os.environ | {"PYTHONWARNINGS": "ignore"})
    stages = {}
    for f in files:
        with (out / f.stem / f"{f.stem}_predictions.csv").open() as table:
            stages[f.stem] = [row["class"] for row in csv.DictReader(table)]
    return stages


def yasa_stages(path: Path) -> list[str]:
    """Return YASA's own stage per 30-s epoch of the FIF file ``path`` (upsampled to 100 Hz where YASA needs it)."""
    import mne
    import yasa

    raw = mne.io.read_raw_fif(path, preload=True, verbose="error")
    if raw.info["sfreq"] <= 80:  # YASA asserts sfreq > 80
        raw.resample(100.0, verbose="error")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hypno = yasa.SleepStaging(raw, eeg_name=raw.ch_names[0]).predict()
    return [_YASA[str(s)] for s in hypno.hypno]


def kappas(labels: dict[str, list[str]], predicted: dict[str, list[str]]) -> dict[str, float]:
    """Return Cohen's kappa per night and pooled, on the epochs both the scorer and the stager have."""
    from sklearn.metrics import cohen_kappa_score

    pairs: dict[str, tuple[list[str], list[str]]] = {}
    for night, truth in labels.items():
        n = min(len(truth), len(predicted[night]))
        keep = [i for i in range(n) if truth[i] in _YASA.values()]
        pairs[night] = ([truth[i] for i in keep], [predicted[night][i] for i in keep])
    out = {night: round(float(cohen_kappa_score(t, p)), 3) for night, (t, p) in pairs.items()}
    pooled = ([s for t, _ in pairs.values() for s in t], [s for _, p in pairs.values() for s in p])
    out["pooled"] = round(float(cohen_kappa_score(*pooled)), 3)
    out["epochs"] = len(pooled[0])
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--out", type=Path, default=Path("runs/stager-input"))
    args = parser.parse_args(argv)
    if not (args.data / "dreams-spindles").is_dir():
        print(f"stager_input: no DREAMS recordings under {args.data}; skipped")
        return 0
    folder = dreams_folder(args.data / "dreams-spindles", args.out / "data-dreams")
    files = [folder / "excerpt1_raw.fif", folder / "excerpt3_raw.fif"]
    labels = {f.stem: (folder / f"{f.stem.removesuffix('_raw')}_stages.csv").read_text().split()[1:] for f in files}
    rows = {"product zero-shot yasa": kappas(labels, product_stages(files, args.out / "predict")),
            "yasa on its own": kappas(labels, {f.stem: yasa_stages(f) for f in files})}
    for name, row in rows.items():
        print(name, row)
    (args.out / "stager_input.json").write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
