"""``predict`` on one night: where the time goes, stage by stage.

Simulates one ear-EEG night (``eesm17-ear``, 12 channels, ``--hours``), adapts a throw-away
adapter on a small simulated dataset (``--max-steps 1``: the weights do not matter for speed),
then times, on ``--threads`` torch threads:

- ``load_recording``: read the EDF, map channels, preprocess, window, flag (no cache);
- ``recording_quality``: the raw-recording channel quality (read again, per window);
- ``predict_proba``: the model over every window (fp32, CPU unless ``--device``);
- ``plot_hypnogram``: the hypnogram + hypnodensity PNG alone;
- ``predict()``: the whole call as the CLI makes it (every report written), with an empty
  preprocessing cache, as on a first run.

Run::

    .venv/bin/python benchmarks/bench_predict.py [--hours 8] [--threads 2] [--out bench-out/predict]
    .venv/bin/python benchmarks/bench_predict.py --plot-only      # the hypnogram PNG alone, 3 calls
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import machine_line

MONTAGE = "eesm17-ear"


def timed(label: str, fn, rows: list[tuple[str, float]]):
    """Run ``fn()``, append ``(label, seconds)`` to ``rows`` and return its result."""
    start = time.perf_counter()
    out = fn()
    rows.append((label, time.perf_counter() - start))
    return out


def plot_only(hours: float, out: Path) -> int:
    """Print the time of 3 ``plot_hypnogram`` calls on a random (Dirichlet) hypnodensity of ``hours``."""
    import numpy as np

    from passport_kit.inference.hypnogram import Hypnogram
    from passport_kit.inference.reports import plot_hypnogram

    classes = ["W", "N1", "N2", "N3", "REM"]
    proba = np.random.default_rng(0).dirichlet(np.ones(len(classes)), round(hours * 120))
    hyp = Hypnogram([classes[k] for k in proba.argmax(1)], epoch_seconds=30.0, classes=classes, proba=proba)
    out.mkdir(parents=True, exist_ok=True)
    times = []
    for i in range(3):
        start = time.perf_counter()
        plot_hypnogram(out / f"plot{i}.png", hyp, title="bench")
        times.append(time.perf_counter() - start)
    print(f"plot_hypnogram, {len(proba)} epochs: " + " / ".join(f"{t:.2f}" for t in times) + " s")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Print the stage times of predict on one simulated night."""
    import torch

    from passport_kit.checkpoint import load_adapter_bundle
    from passport_kit.inference.forward import predict_proba
    from passport_kit.inference.hypnogram import Hypnogram
    from passport_kit.inference.predict import predict
    from passport_kit.inference.reports import plot_hypnogram
    from passport_kit.model import ChannelMeta
    from passport_kit.montage import Montage
    from passport_kit.montage.registry import HOME_ENV
    from passport_kit.signals import PreprocessConfig, load_recording
    from passport_kit.signals.quality import recording_quality
    from passport_kit.signals.simulator import simulate_dataset
    from passport_kit.training.adapt import adapt

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--hours", type=float, default=8.0, help="length of the predicted night")
    p.add_argument("--threads", type=int, default=2, help="torch threads")
    p.add_argument("--device", default="cpu")
    p.add_argument("--out", type=Path, default=Path("bench-out/predict"))
    p.add_argument("--plot-only", action="store_true",
                   help="only time plot_hypnogram, 3 calls on a random hypnodensity of --hours")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    if args.plot_only:
        return plot_only(args.hours, args.out)
    # A fresh cache folder: predict() below must read and preprocess the night itself, as a first run does.
    os.environ[HOME_ENV] = tempfile.mkdtemp(prefix="bench-predict-")
    night = simulate_dataset(MONTAGE, args.out / "night", n_subjects=1, hours=args.hours, seed=5, overwrite=True)
    train = simulate_dataset(MONTAGE, args.out / "train", n_subjects=2, hours=0.25, seed=6, overwrite=True)
    bundle = adapt(montage=MONTAGE, data=train, out=args.out / "adapter", max_steps=1, batch_size=8,
                   threads=args.threads, resume=False).bundle
    edf = night / "s01.edf"
    model, meta = load_adapter_bundle(bundle)
    montage, config = Montage.from_dict(meta.montage), PreprocessConfig.from_dict(meta.preprocessing)
    rows: list[tuple[str, float]] = []
    windows = timed("load_recording", lambda: load_recording(edf, montage, config, cache=False), rows)
    timed("recording_quality", lambda: recording_quality(edf, montage, window_seconds=config.window_seconds,
                                                         mains_freq=config.notch_freq), rows)
    proba = timed("predict_proba", lambda: predict_proba(model, windows.x, ChannelMeta.from_montage(montage),
                                                         device=torch.device(args.device)), rows)
    hyp = Hypnogram([str(meta.classes[k]) for k in proba.argmax(1)], epoch_seconds=config.window_seconds,
                    classes=[str(c) for c in meta.classes], proba=proba)
    timed("plot_hypnogram", lambda: plot_hypnogram(args.out / "hypnogram.png", hyp, title="bench"), rows)
    timed("predict() (all of it)", lambda: predict(bundle, [edf], args.out / "predictions", device=args.device),
          rows)
    print(f"{args.hours:g} h night, {len(windows.x)} windows × {len(montage.ch_names)} channels")
    print("| stage | seconds |\n|---|---|")
    for label, seconds in rows:
        print(f"| {label} | {seconds:.2f} |")
    print(machine_line(args.threads))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
