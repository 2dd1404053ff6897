"""What recordings sampled below 150 Hz cost in accuracy: the same simulated nights at 200, 100 and 50 Hz.

A recording at ``sfreq`` below 150 Hz keeps the model's 200 Hz input, but the band-pass top
drops below its Nyquist frequency (45 Hz at 100 Hz, 22 Hz at 50 Hz; docs/data.md). To see what
that costs, this benchmark simulates one dataset at 200 Hz (``passport-kit simulate``),
resamples every night with MNE (``raw.resample``, as a user's 100 Hz Sleep-EDF or 50 Hz DREAMS
recordings arrive), and runs the same leave-one-subject-out evaluation on each copy, with the
default recipe and the shipped checkpoint. Printed: Cohen's kappa and balanced accuracy per
rate (mean ± SD over held-out subjects) and the paired per-subject difference against 200 Hz.

Run::

    .venv/bin/python benchmarks/low_rate.py [--subjects 6] [--hours 1] [--rates 200,100,50] \\
        [--montage eesm17-ear] [--checkpoint passport-small-mlp] [--threads 2] [--out bench-out/low_rate]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import machine_line


def resampled_copy(source: Path, out: Path, sfreq: float) -> Path:
    """Return a copy of the dataset folder ``source`` with every EDF resampled to ``sfreq`` Hz by MNE."""
    import mne

    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(source, out, ignore=shutil.ignore_patterns("*.edf"))
    for edf in sorted(source.glob("*.edf")):
        raw = mne.io.read_raw_edf(edf, preload=True, verbose="error").resample(sfreq, verbose="error")
        mne.export.export_raw(out / edf.name, raw, fmt="edf", verbose="error")
    return out


def per_subject(report, metric: str) -> dict[str, float]:
    """Return ``{held-out subject: metric}`` of a one-checkpoint, one-seed LOSO evaluation report (the checkpoint's
    rows: the first method; band power and the zero-shot stager have rows of their own)."""
    method = report.rows[0]["method"]
    return {row["test_subject"]: float(row[metric]) for row in report.rows if row["method"] == method}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--montage", default="eesm17-ear")
    parser.add_argument("--checkpoint", default="passport-small-mlp")
    parser.add_argument("--subjects", type=int, default=6)
    parser.add_argument("--hours", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rates", default="200,100,50")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("bench-out/low_rate"))
    args = parser.parse_args()

    import warnings

    from passport_kit.errors import PassportWarning
    from passport_kit.signals import simulate_dataset
    from passport_kit.onboard.evaluate import evaluate

    warnings.simplefilter("ignore", PassportWarning)  # the lowered band is the point here
    rates = [float(r) for r in args.rates.split(",")]
    args.out.mkdir(parents=True, exist_ok=True)
    base = simulate_dataset(args.montage, args.out / "sim200", n_subjects=args.subjects, hours=args.hours,
                            seed=args.seed, sfreq=200.0, overwrite=True)
    print(machine_line(args.threads))
    print(f"{args.montage}, {args.subjects} subjects x {args.hours:g} h (seed {args.seed}), LOSO, "
          f"checkpoint {args.checkpoint}, default recipe")
    scores: dict[float, dict[str, dict[str, float]]] = {}
    for rate in rates:
        data = base if rate == 200.0 else resampled_copy(base, args.out / f"sim{rate:g}", rate)
        start = time.perf_counter()
        report = evaluate(montage=args.montage, data=data, out=args.out / f"eval{rate:g}",
                          checkpoints=(args.checkpoint,), protocol="loso", threads=args.threads)
        scores[rate] = {m: per_subject(report, m) for m in ("kappa", "balanced_accuracy")}
        print(f"  {rate:g} Hz: evaluated in {time.perf_counter() - start:.0f} s")
    print(f"{'rate':>8} {'band top':>9} {'kappa':>15} {'bal. acc.':>15} {'Δkappa vs 200 (paired)':>26}")
    from passport_kit.signals.preprocess import safe_h_freq

    for rate in rates:
        kappa, bacc = (np.array(list(scores[rate][m].values())) for m in ("kappa", "balanced_accuracy"))
        top = 75.0 if rate >= 150 else safe_h_freq(rate)
        line = f"{rate:>6g} Hz {top:>6g} Hz {kappa.mean():>7.3f} ± {kappa.std(ddof=1):.3f} " \
               f"{bacc.mean():>7.3f} ± {bacc.std(ddof=1):.3f}"
        if rate != 200.0 and 200.0 in scores:
            ref = scores[200.0]["kappa"]
            diff = np.array([scores[rate]["kappa"][s] - ref[s] for s in ref if s in scores[rate]["kappa"]])
            line += f" {diff.mean():>+10.3f} ± {diff.std(ddof=1) / np.sqrt(len(diff)):.3f} (SE, n={len(diff)})"
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
