"""What dead channels do to a staged night: one simulated test night with channels zeroed, at 1 % gain, or NaN.

Issue 46 found one zeroed channel of 12 turning a 2-h night of TST 108 min into REM from start
to end (TST 120 min, SE 100 %, confidence 0.999) with a band-power bundle. This benchmark
simulates a dataset (``passport-kit simulate``), adapts a bundle on all subjects but the last
(``--recipe`` as given, ``--prior none``), and predicts the last night clean and with each fault:
its first channel (and the first right-ear channel) zeroed, at 1 % gain, zeroed in the second
half only, and its first channel all NaN in a CSV copy. Printed per fault: TST, SE, WASO, mean
confidence, the share of epochs staged as on the clean night, and the channel-windows whose band
power the read-out took from a neighbour (``channel_quality.dead_channels``). The table in
docs/reliability.md § issue 46 came from::

    .venv/bin/python benchmarks/dead_channels.py --recipe probe --context 0
    .venv/bin/python benchmarks/dead_channels.py            # the default adapt

Run::

    .venv/bin/python benchmarks/dead_channels.py [--subjects 5] [--hours 2] [--seed 3] [--montage eesm17-ear] \\
        [--recipe auto|probe] [--context N] [--out bench-out/dead_channels]
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import machine_line

#: (name, channels by index, gain, second half only)
FAULTS = [("dead1", [0], 0.0, False), ("dead2", [0, 6], 0.0, False), ("gain1pct", [0], 0.01, False),
          ("gain1pct2", [0, 6], 0.01, False), ("half_dead1", [0], 0.0, True), ("half_dead2", [0, 6], 0.0, True)]


def cli(*args: str) -> None:
    """Run ``passport-kit ARGS`` quietly in this interpreter; stop on failure."""
    subprocess.run([sys.executable, "-m", "passport_kit.cli.app", *args, "-q"], check=True)


def faulty_copies(night: Path, out: Path) -> dict[str, Path]:
    """Return ``{fault: recording}``: ``night`` (an EDF) clean, with each of :data:`FAULTS`, and as a CSV with a NaN
    column."""
    import edfio
    import mne

    copies = {"clean": night}
    for name, channels, gain, half in FAULTS:
        edf = edfio.read_edf(night)
        for c in channels:
            data = edf.signals[c].data.copy()
            data[len(data) // 2 if half else 0:] *= gain
            edf.signals[c].update_data(data)
        (out / name).mkdir(parents=True, exist_ok=True)
        edf.write(out / name / night.name)
        copies[name] = out / name / night.name
    raw = mne.io.read_raw_edf(night, preload=True, verbose="error")
    data = raw.get_data() * 1e6
    data[0] = np.nan
    (out / "nancsv").mkdir(parents=True, exist_ok=True)
    csv_path = out / "nancsv" / f"{night.stem}.csv"
    with csv_path.open("w") as f:
        f.write("time," + ",".join(raw.ch_names) + "\n")
        for i, t in enumerate(np.arange(data.shape[1]) / raw.info["sfreq"]):
            f.write(f"{t:.3f}," + ",".join("nan" if np.isnan(v) else f"{v:.3f}" for v in data[:, i]) + "\n")
    copies["nancsv"] = csv_path
    return copies


def staged(folder: Path) -> tuple[list[str], dict]:
    """Return the classes per epoch and the summary of one recording's prediction ``folder``."""
    rows = list(csv.DictReader(next(folder.glob("*_predictions.csv")).open()))
    return [r["class"] for r in rows], json.loads(next(folder.glob("*_summary.json")).read_text())


def main(argv: list[str] | None = None) -> int:
    """Simulate, adapt, predict every fault; print one line each; return 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subjects", type=int, default=5)
    parser.add_argument("--hours", type=float, default=2.0)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--montage", default="eesm17-ear")
    parser.add_argument("--recipe", default="auto")
    parser.add_argument("--context", type=int, default=None)
    parser.add_argument("--out", type=Path, default=Path("bench-out/dead_channels"))
    args = parser.parse_args(argv)
    import torch

    print(machine_line(torch.get_num_threads()))  # the CLI runs below inherit OMP_NUM_THREADS
    sim, train = args.out / "sim", args.out / "train"
    cli("simulate", "-m", args.montage, "-o", str(sim), "-n", str(args.subjects), "--hours", str(args.hours),
        "--seed", str(args.seed), "--overwrite")
    last = f"s{args.subjects:02d}"
    train.mkdir(parents=True, exist_ok=True)
    lines = (sim / "dataset.yaml").read_text().splitlines()
    (train / "dataset.yaml").write_text("\n".join(line for line in lines if last not in line) + "\n")
    for f in sim.glob("s*"):
        if not f.name.startswith(last):
            (train / f.name).write_bytes(f.read_bytes())
    bundle = args.out / f"bundle-{args.recipe}"
    extra = ["--recipe", args.recipe] + ([] if args.context is None else ["--context", str(args.context)])
    cli("adapt", "--montage", args.montage, "--data", str(train), "--out", str(bundle), "--prior", "none",
        "--overwrite", *extra)
    clean = None
    for name, recording in faulty_copies(sim / f"{last}.edf", args.out / "faults").items():
        pred = args.out / "pred" / name
        cli("predict", "--adapter", str(bundle), str(recording), "--out", str(pred), "--overwrite")
        classes, summary = staged(pred / recording.stem)
        clean = clean or classes
        stats = summary["sleep_statistics"] or {}
        agree = np.mean([a == b for a, b in zip(clean, classes)])
        print(f"{name:11s} TST {stats.get('TST')} SE {stats.get('SE', float('nan')):.1f} WASO {stats.get('WASO')} "
              f"confidence {summary['mean_confidence']:.3f} agreement {100 * agree:.1f} % imputed "
              f"{(summary['channel_quality'].get('dead_channels') or {}).get('windows')} withheld {summary['statistics_withheld']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
