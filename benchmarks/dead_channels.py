"""What dead channels do to a staged night: held-out nights with channels zeroed, at 1 % gain, or NaN.

Issue 46 found one zeroed channel of 12 turning a 2-h night of TST 108 min into REM from start
to end (TST 120 min, SE 100 %, confidence 0.999) with a band-power bundle; issue 57 measured
89.6-95.4 % agreement on another night and bundle where one night had given 95.8-100 %. This
benchmark measures the agreement on several nights and bundles, with intervals:

- **simulated** (``--montages``, ``--seeds``): per montage and seed, ``passport-kit simulate``
  a dataset, adapt a bundle on all subjects but the last ``--test-nights`` (``--recipe``,
  ``--prior none``), and predict each held-out night clean and with each fault of
  :data:`FAULTS`: the montage's first channel (and the channel half-way down the montage:
  ELA and ERA on ``eesm17-ear``) zeroed, at 1 % gain, zeroed in the second half only, and the
  first channel all NaN in a CSV copy;
- **eegmat** (``--eegmat DIR``, real EEG: rest vs mental arithmetic, 10-s windows, montage
  ``tuh-19``): adapt on subjects 00-08, predict the rest and arithmetic recordings of 09-11
  with the same faults (no NaN copy).

Printed per (bundle, night, fault): TST, SE, mean confidence, the share of epochs (windows)
classed as on the clean night with its 95 % Wilson interval, the channel-windows whose band
power the read-out took from a neighbour, the most channels imputed in one window, and the
summary's ``imputation_unvouched``; then per fault the pooled share over every night with the
range of the per-night intervals. The Wilson interval takes epochs as independent draws; epochs
of a night are correlated, so it is narrower than the truth: read the spread over nights too.
``--csv`` writes every row. The tables in docs/reliability.md came from::

    .venv/bin/python benchmarks/dead_channels.py --recipe probe --context 0
    .venv/bin/python benchmarks/dead_channels.py            # the default adapt

Run::

    .venv/bin/python benchmarks/dead_channels.py [--montages eesm17-ear,tuh-standard] [--seeds 3,4] \\
        [--subjects 5] [--test-nights 2] [--hours 2] [--recipe auto|probe] [--context N] \\
        [--eegmat ../shared/data/eegmat] [--csv rows.csv] [--out bench-out/dead_channels]
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import binomtest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import machine_line

#: (name, channels as "first" / "half" of the montage, gain, second half only)
FAULTS = [("dead1", ["first"], 0.0, False), ("dead2", ["first", "half"], 0.0, False),
          ("gain1pct", ["first"], 0.01, False), ("gain1pct2", ["first", "half"], 0.01, False),
          ("half_dead1", ["first"], 0.0, True), ("half_dead2", ["first", "half"], 0.0, True)]


def cli(*args: str) -> None:
    """Run ``passport-kit ARGS`` quietly in this interpreter; stop on failure."""
    subprocess.run([sys.executable, "-m", "passport_kit.cli.app", *args, "-q"], check=True)


def signal_index(labels: list[str], name: str) -> int:
    """Return the index of the EDF signal that carries montage channel ``name`` (label equal, or ending in it)."""
    low = [label.lower().strip() for label in labels]
    for i, label in enumerate(low):
        if label == name.lower() or label.endswith(" " + name.lower()):
            return i
    raise SystemExit(f"no signal for channel {name} among {labels}")


def faulty_copies(night: Path, out: Path, names: dict[str, str], nan_copy: bool = True) -> dict[str, Path]:
    """Return ``{fault: recording}``: ``night`` (an EDF) clean and with each of :data:`FAULTS` (``names`` maps
    "first"/"half" to montage channels), and as a CSV with the first channel NaN (``nan_copy``)."""
    import edfio
    import mne

    copies = {"clean": night}
    for name, which, gain, half in FAULTS:
        edf = edfio.read_edf(night)
        labels = [s.label for s in edf.signals]
        for c in (signal_index(labels, names[w]) for w in which):
            data = edf.signals[c].data.copy()
            data[len(data) // 2 if half else 0:] *= gain
            edf.signals[c].update_data(data)
        (out / name).mkdir(parents=True, exist_ok=True)
        edf.write(out / name / night.name)
        copies[name] = out / name / night.name
    if not nan_copy:
        return copies
    raw = mne.io.read_raw_edf(night, preload=True, verbose="error")
    data = raw.get_data() * 1e6
    data[signal_index(raw.ch_names, names["first"])] = np.nan
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


def fault_names(montage: str) -> dict[str, str]:
    """Return the montage's "first" channel and the one half-way down it."""
    from passport_kit.montage.registry import get_montage

    names = list(get_montage(montage).ch_names)
    return {"first": names[0], "half": names[len(names) // 2]}


def night_rows(bundle: Path, night: Path, work: Path, names: dict[str, str], tag: str,
               nan_copy: bool = True) -> list[dict[str, Any]]:
    """Predict ``night`` clean and with every fault with ``bundle``; return one row per fault (printed as it comes)."""
    rows: list[dict[str, Any]] = []
    clean: list[str] | None = None
    for name, recording in faulty_copies(night, work / "faults", names, nan_copy).items():
        pred = work / "pred" / name
        cli("predict", "--adapter", str(bundle), str(recording), "--out", str(pred), "--overwrite")
        classes, summary = staged(pred / recording.stem)
        clean = clean or classes
        stats = summary.get("sleep_statistics") or {}
        same = int(sum(a == b for a, b in zip(clean, classes)))
        ci = binomtest(same, len(clean)).proportion_ci(method="wilson")
        dead = (summary.get("channel_quality") or {}).get("dead_channels") or {}
        row = {"bundle": tag, "night": night.stem, "fault": name, "epochs": len(clean), "agree": same,
               "share": same / len(clean), "ci_low": ci.low, "ci_high": ci.high, "TST": stats.get("TST"),
               "SE": stats.get("SE"), "confidence": summary.get("mean_confidence"),
               "imputed": sum((dead.get("windows") or {}).values()), "max_per_window": dead.get("most_in_one_window"),
               "unvouched": dead.get("imputation_unvouched"),
               "bad": ",".join((summary.get("channel_quality") or {}).get("bad_channels") or [])}
        print(f"{tag:22s} {night.stem:12s} {name:10s} TST {row['TST']} SE {row['SE']} confidence "
              f"{row['confidence']:.3f} agreement {100 * row['share']:.1f} % ({100 * ci.low:.1f}-{100 * ci.high:.1f}) "
              f"imputed {row['imputed']} (at most {row['max_per_window']} in a window) bad [{row['bad']}] "
              f"unvouched: {row['unvouched']}", flush=True)
        rows.append(row)
    return rows


def simulated_rows(montage: str, seed: int, args: argparse.Namespace) -> list[dict[str, Any]]:
    """Simulate one dataset, adapt on its first subjects, return the rows of its held-out nights."""
    out = args.out / f"{montage}-seed{seed}"
    sim, train = out / "sim", out / "train"
    cli("simulate", "-m", montage, "-o", str(sim), "-n", str(args.subjects), "--hours", str(args.hours),
        "--seed", str(seed), "--overwrite")
    held = [f"s{k:02d}" for k in range(args.subjects - args.test_nights + 1, args.subjects + 1)]
    train.mkdir(parents=True, exist_ok=True)
    lines = (sim / "dataset.yaml").read_text().splitlines()
    (train / "dataset.yaml").write_text("\n".join(line for line in lines if not any(h in line for h in held)) + "\n")
    for f in sim.glob("s*"):
        if not any(f.name.startswith(h) for h in held):
            (train / f.name).write_bytes(f.read_bytes())
    bundle = out / f"bundle-{args.recipe}"
    extra = ["--recipe", args.recipe] + ([] if args.context is None else ["--context", str(args.context)])
    cli("adapt", "--montage", montage, "--data", str(train), "--out", str(bundle), "--prior", "none",
        "--overwrite", "--seed", str(seed), *extra)
    names = fault_names(montage)
    return [row for h in held
            for row in night_rows(bundle, sim / f"{h}.edf", out / h, names, f"{montage} seed {seed}")]


def eegmat_rows(eegmat: Path, args: argparse.Namespace) -> list[dict[str, Any]]:
    """Adapt on eegmat subjects 00-08 (montage tuh-19, rest vs arithmetic), return the rows of 09-11's recordings."""
    from transfer_real import WINDOW_SECONDS

    out = args.out / "eegmat"
    held = ("Subject09", "Subject10", "Subject11")
    lines = ["task: classification", f"window_seconds: {WINDOW_SECONDS}", "classes: [rest, arithmetic]",
             "allow_outside_paths: true", "recordings:"]
    for f in sorted(eegmat.glob("Subject*_[12].edf")):
        subject, part = f.stem.split("_")
        if subject not in held:
            lines += [f"  - subject: {subject}", f"    file: {f.resolve().as_posix()}",
                      f"    label: {'rest' if part == '1' else 'arithmetic'}"]
    (out / "train").mkdir(parents=True, exist_ok=True)
    (out / "train" / "dataset.yaml").write_text("\n".join(lines) + "\n")
    bundle = out / "bundle-probe"
    cli("adapt", "--montage", "tuh-19", "--data", str(out / "train"), "--out", str(bundle), "--recipe", "probe",
        "--overwrite")
    names = fault_names("tuh-19")
    return [row for h in held for part in ("1", "2")
            for row in night_rows(bundle, eegmat / f"{h}_{part}.edf", out / f"{h}_{part}", names, "eegmat tuh-19",
                                  nan_copy=False)]


def pooled(rows: list[dict[str, Any]]) -> None:
    """Print per fault the pooled share over every night and the range of the per-night intervals."""
    for fault in dict.fromkeys(r["fault"] for r in rows):
        these = [r for r in rows if r["fault"] == fault]
        share = sum(r["agree"] for r in these) / sum(r["epochs"] for r in these)
        print(f"{fault:10s} {len(these)} nights: pooled {100 * share:.1f} %, nights {100 * min(r['share'] for r in these):.1f}"
              f"-{100 * max(r['share'] for r in these):.1f} %, intervals {100 * min(r['ci_low'] for r in these):.1f}"
              f"-{100 * max(r['ci_high'] for r in these):.1f} %; imputed at most "
              f"{max((r['max_per_window'] or 0) for r in these)} channels in a window; unvouched "
              f"{sum(bool(r['unvouched']) for r in these)}; named bad {sum(bool(r['bad']) for r in these)}")


def main(argv: list[str] | None = None) -> int:
    """Measure every bundle's held-out nights under every fault; print one line each and the pooled shares."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--montages", default="eesm17-ear,tuh-standard")
    parser.add_argument("--seeds", default="3,4")
    parser.add_argument("--subjects", type=int, default=5)
    parser.add_argument("--test-nights", type=int, default=2)
    parser.add_argument("--hours", type=float, default=2.0)
    parser.add_argument("--recipe", default="auto")
    parser.add_argument("--context", type=int, default=None)
    parser.add_argument("--eegmat", type=Path, default=None, help="eegmat folder (real EEG); left out when not given")
    parser.add_argument("--csv", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=Path("bench-out/dead_channels"))
    args = parser.parse_args(argv)
    import torch

    print(machine_line(torch.get_num_threads()))  # the CLI runs below inherit OMP_NUM_THREADS
    rows: list[dict[str, Any]] = []
    for montage in filter(None, args.montages.split(",")):
        for seed in (int(s) for s in args.seeds.split(",") if s):
            rows += simulated_rows(montage, seed, args)
    if args.eegmat is not None:
        rows += eegmat_rows(args.eegmat, args)
    pooled([r for r in rows if r["bundle"] != "eegmat tuh-19"])
    if any(r["bundle"] == "eegmat tuh-19" for r in rows):
        print("eegmat:")
        pooled([r for r in rows if r["bundle"] == "eegmat tuh-19"])
    if args.csv is not None:
        with args.csv.open("w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
