"""``predict`` on one night: where the time goes, stage by stage, and how it grows with the night.

Simulates ear-EEG nights (``eesm17-ear``, 12 channels) of each length in ``--hours``, adapts a
throw-away adapter on a small simulated dataset (``--recipe probe``, the default of ``adapt``;
``finetune``: ``--finetune-steps``, default 1: the weights do not matter for speed, but do for the bf16 agreement), then times, on ``--threads`` torch
threads, the stages of :func:`passport_kit.inference.predict.read_for_prediction` and after it:

- ``read_recording + mapped_data``: open the EDF, map the montage channels, read their samples (the one read);
- ``recording_quality``: :func:`channel_quality` of those same samples;
- ``load_recording`` stage: :func:`windows_from_data` (filter, windows, flags; no cache);
- ``night_prior``: the sleep stager's log-probabilities, where the read-out stacks them (the default bundle
  of ``adapt`` on sleep data since issue 43: the stager rung);
- ``predict_proba``: the model over every window, with the masks predict derives from the quality (and the
  prior); a probe read-out that gives the backbone (or band power) no weight does not compute it;
  where ``--precision`` resolves to bf16 and the head is not a probe (whose inputs are fp32 by
  design), also two warm pairs of the same call in bf16 and in fp32, and the share of windows
  whose predicted stage is the same in both;
- ``distribution_verdict``: the training-distribution guard (spectra and correlations of the windows);
- ``same_signal``: the fingerprint against the training recordings;
- ``plot_hypnogram``: the hypnogram + hypnodensity PNG alone;
- ``write_prediction``: every report (CSV, TSV, JSON, PNG);
- each stage's CPU seconds (this process, all threads), and their sum;
- ``predict()``: the whole call as the CLI makes it (every report written), the median of
  ``--repeats`` calls in a warm process (imports done), so the figure is the call's own; its wall
  time and its CPU time (this process, all threads);
- with ``--backbone-pairs N``: ``predict()`` with the default shortcut (a read-out that gives the
  backbone no weight does not run it) and with the backbone forced to run, N pairs in turn.

With several ``--hours``, the last table gives ``predict()`` per hour of recording: flat when the
time grows linearly with the night. ``--overlap`` also times ``predict()`` over two copies of
the first night with ``prefetch`` on (the second night read while the model works on the first)
and off, in turn.

Run::

    .venv/bin/python benchmarks/bench_predict.py [--hours 1,8] [--threads 2] [--out bench-out/predict]
    .venv/bin/python benchmarks/bench_predict.py --plot-only      # the hypnogram PNG alone, 3 calls

Before and after a change, paired: run it with ``PYTHONPATH`` set to each package tree in turn (e.g. an
export of the commit before, then this checkout), the same ``--out`` and ``--reuse`` (docs/RESULTS.md, issue 47).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import machine_line

MONTAGE = "eesm17-ear"


def timed(label: str, fn, rows: list[tuple[str, float]], cpu: list[tuple[str, float]] | None = None):
    """Run ``fn()``, append ``(label, seconds)`` to ``rows`` (and its CPU seconds, all threads, to ``cpu``); return
    its result."""
    start, start_cpu = time.perf_counter(), time.process_time()
    out = fn()
    rows.append((label, time.perf_counter() - start))
    if cpu is not None:
        cpu.append((label, time.process_time() - start_cpu))
    return out


def plot_only(hours: float, out: Path) -> int:
    """Print the time of 3 ``plot_hypnogram`` calls on a random (Dirichlet) hypnodensity of ``hours``."""
    import numpy as np

    from passport_kit.sleep.hypnogram import Hypnogram
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


def night(out: Path, hours: float, *, reuse: bool) -> Path:
    """Return the EDF of a simulated ``hours`` night under ``out`` (kept from an earlier run with ``reuse``)."""
    from passport_kit.signals.simulator import simulate_dataset

    folder = out / f"night-{hours:g}h"
    if not (reuse and (folder / "s01.edf").is_file()):
        simulate_dataset(MONTAGE, folder, n_subjects=1, hours=hours, seed=5, overwrite=True)
    return folder / "s01.edf"


def stage_rows(bundle: Path, edf: Path, out: Path, *, device: str, precision: str, batch_size: int,
               repeats: int) -> tuple[list[tuple[str, float]], int]:
    """Return the ``(stage, seconds)`` rows of one night (wall, then CPU per stage) and its number of windows."""
    import numpy as np
    import torch

    from passport_kit.engine.forward import PROBE_PRECISION, predict_proba
    from passport_kit.inference import night_report as N
    from passport_kit.inference import recording as R
    from passport_kit.inference.options import ContactOptions, RunOptions
    from passport_kit.inference.predict import predict
    from passport_kit.sleep.hypnogram import Hypnogram
    from passport_kit.inference.reports import plot_hypnogram
    from passport_kit.model.heads import ProbeHead
    from passport_kit.signals import read_recording
    from passport_kit.signals.channels import mapped_data
    from passport_kit.signals.fingerprint import same_signal
    from passport_kit.signals.quality import channel_quality
    from passport_kit.signals.recording import RecordingWindows, fit_preprocessing, recording_start, windows_from_data

    shutil.rmtree(out, ignore_errors=True)  # predictions of an earlier run (--reuse) would refuse the new ones
    loaded = R.load_for_prediction(bundle, ContactOptions(), RunOptions(device=device, precision=precision))
    model, meta, montage, config = loaded.model, loaded.meta, loaded.montage, loaded.config
    torch_device, prec = loaded.device, loaded.precision
    rows: list[tuple[str, float]] = []
    cpu: list[tuple[str, float]] = []

    def read():
        raw = read_recording(edf)
        return raw, mapped_data(raw, montage)

    raw, data = timed("read_recording + mapped_data (the one read)", read, rows, cpu)
    sfreq = float(raw.info["sfreq"])
    quality = timed("recording_quality: channel_quality of the same samples",
                    lambda: channel_quality(data, sfreq, montage, window_seconds=config.window_seconds,
                                            notch_freq=config.notch_freq), rows, cpu)
    rec_config = fit_preprocessing(config, rate=lambda: (sfreq, str(edf)))
    x, flags = timed("load_recording stage: windows_from_data (filter, windows, flags)",
                     lambda: windows_from_data(data, sfreq, rec_config), rows, cpu)
    del data
    onsets = np.arange(len(x)) * config.window_seconds
    night = RecordingWindows(x=x, flags=flags, onset_s=onsets, quality=quality, config=rec_config,
                             start=recording_start(raw))
    prior = timed("night_prior (the sleep stager, where the read-out stacks it)",
                  lambda: R.night_prior(model.head, night, montage), rows, cpu)
    masked, distrusted = loaded.policy.masks(quality, onsets, config.window_seconds)
    probe = isinstance(getattr(model, "head", None), ProbeHead)
    prec_label = f"{PROBE_PRECISION}: a probe head's inputs" if probe else prec
    if probe:
        prec_label += (", backbone skipped" if not model.head.reads_backbone else "") + (
            ", band power skipped" if not getattr(model.head, "reads_spectral", True) else "")
    mask = masked if masked is not None and masked.any() else None
    proba = timed(f"predict_proba (model, batch {batch_size}, {prec_label})",
                  lambda: predict_proba(model, x, loaded.channel_meta, batch_size=batch_size, device=torch_device,
                                        precision=prec, channel_mask=mask, distrust=distrusted, prior=prior), rows, cpu)
    if prec == "bf16" and not probe:
        # The same call in fp32 beside it, and how often the two pick the same stage.
        for i in range(2):  # bf16 again, then fp32: a warm pair after the first (cold) bf16 call
            run = {}
            for p_name in ("bf16", "fp32"):
                start = time.perf_counter()
                run[p_name] = predict_proba(model, x, loaded.channel_meta, batch_size=batch_size,
                                            device=torch_device, precision=p_name, channel_mask=mask,
                                            distrust=distrusted)
                rows.append((f"predict_proba {p_name} (warm pair {i + 1})", time.perf_counter() - start))
        agree = float((run["bf16"].argmax(1) == run["fp32"].argmax(1)).mean())
        n_stages = len(set(run["fp32"].argmax(1).tolist()))
        rows.append((f"fp32 vs bf16 predicted stages agree (%, {len(x)} windows, {n_stages} stages predicted in fp32)",
                     100 * agree))
    verdict = timed("distribution_verdict (the guard: spectra, correlations)",
                    lambda: N.distribution_verdict(meta.metrics.distribution, night,
                                                   predicted=proba.argmax(1)), rows, cpu)
    timed("same_signal (fingerprint)", lambda: same_signal(x, meta.metrics.fingerprints), rows, cpu)
    hyp = Hypnogram([str(meta.classes[k]) for k in proba.argmax(1)], epoch_seconds=config.window_seconds,
                    classes=[str(c) for c in meta.classes], proba=proba)
    timed("plot_hypnogram (PNG alone)", lambda: plot_hypnogram(out / "hypnogram.png", hyp, title="bench"), rows)
    timed("write_prediction (CSV, TSV, JSON, PNG)",
          lambda: N.write_prediction(out / "reports", edf, proba, night, adapter=loaded.facts,
                                     checks=N.TrainingChecks(distribution=verdict),
                                     contacts=N.ChannelMasks(loaded.policy, masked, distrusted)), rows, cpu)
    times, cpus = [], []
    for i in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        predict(bundle, [edf], out / f"predictions-{i}",
                  run=RunOptions(device=device, precision=precision, batch_size=batch_size))
        times.append(time.perf_counter() - start)
        cpus.append(time.process_time() - start_cpu)
    rows.append((f"predict() (all of it; median of {repeats})", statistics.median(times)))
    rows += [(f"CPU s: {label}", seconds) for label, seconds in cpu]
    rows.append((f"CPU s: the stages above, summed", sum(seconds for _, seconds in cpu)))
    rows.append((f"predict() CPU seconds (this process, all threads; median of {repeats}; each: "
                 f"{' '.join(f'{c:.2f}' for c in cpus)})", statistics.median(cpus)))
    return rows, len(x)


def backbone_pair_rows(bundle: Path, edf: Path, out: Path, *, device: str, precision: str, batch_size: int,
                       pairs: int) -> list[tuple[str, float]]:
    """Return ``predict()`` wall and CPU seconds with and without the backbone shortcut, ``pairs`` pairs in turn (medians).

    "without": :attr:`ProbeHead.reads_backbone` forced True, so the backbone runs as before the shortcut
    (the same probabilities: tested in tests/engine/test_forward_without_backbone.py).
    """
    from unittest import mock

    from passport_kit.inference.predict import RunOptions, predict
    from passport_kit.model.heads import ProbeHead

    got: dict[str, dict[str, list[float]]] = {k: {"wall": [], "cpu": []} for k in ("shortcut", "backbone")}
    for i in range(pairs):
        for kind in ("shortcut", "backbone"):
            forced = mock.patch.object(ProbeHead, "reads_backbone", property(lambda self: True))
            with forced if kind == "backbone" else mock.MagicMock():
                start, start_cpu = time.perf_counter(), time.process_time()
                predict(bundle, [edf], out / f"pair-{kind}-{i}",
                        run=RunOptions(device=device, precision=precision, batch_size=batch_size))
                got[kind]["wall"].append(time.perf_counter() - start)
                got[kind]["cpu"].append(time.process_time() - start_cpu)
    med = {k: {c: statistics.median(v) for c, v in d.items()} for k, d in got.items()}
    ratio = statistics.median(a / b for a, b in zip(got["shortcut"]["cpu"], got["backbone"]["cpu"]))
    return [("predict() CPU s, backbone skipped where the read-out gives it no weight (default)", med["shortcut"]["cpu"]),
            ("predict() CPU s, backbone run (before the shortcut)", med["backbone"]["cpu"]),
            ("predict() wall s, backbone skipped (default)", med["shortcut"]["wall"]),
            ("predict() wall s, backbone run", med["backbone"]["wall"]),
            (f"CPU ratio shortcut / backbone run (median of {pairs} pairs)", ratio)]


def overlap_rows(bundle: Path, edf: Path, out: Path, *, device: str, precision: str, batch_size: int,
                 repeats: int) -> list[tuple[str, float]]:
    """Return ``predict()`` over two copies of ``edf`` with prefetch on and off, ``repeats`` pairs in turn (medians)."""
    from passport_kit.inference.predict import RunOptions, predict

    folder = out / "two-nights"
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("a.edf", "b.edf"):
        shutil.copy(edf, folder / name)
    times: dict[bool, list[float]] = {True: [], False: []}
    for i in range(repeats):
        for ahead in (True, False):
            start = time.perf_counter()
            predict(bundle, [folder], out / f"two-{ahead}-{i}",
                    run=RunOptions(device=device, precision=precision, batch_size=batch_size, prefetch=ahead))
            times[ahead].append(time.perf_counter() - start)
    on, off = statistics.median(times[True]), statistics.median(times[False])
    return [("predict(), 2 nights, prefetch on", on), ("predict(), 2 nights, prefetch off", off),
            ("ratio on / off", on / off)]


def main(argv: list[str] | None = None) -> int:
    """Print the stage times of predict on simulated nights."""
    import torch

    from passport_kit.montage.registry import HOME_ENV
    from passport_kit.signals.simulator import simulate_dataset
    from passport_kit.onboard.adapt import adapt

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--hours", default="8", help="night lengths, comma-separated (e.g. 1,8)")
    p.add_argument("--threads", type=int, default=2, help="torch threads")
    p.add_argument("--device", default="cpu")
    p.add_argument("--precision", default="auto", help="as predict's --precision (auto: bf16 on CPUs with native bf16)")
    p.add_argument("--batch-size", type=int, default=None, help="predict's batch size (default: predict's own)")
    p.add_argument("--recipe", choices=("probe", "finetune"), default="probe", help="the adapter's recipe")
    p.add_argument("--finetune-steps", type=int, default=1,
                   help="training steps of the finetune adapter (more: a head whose stage agreement in bf16 means something)")
    p.add_argument("--repeats", type=int, default=1, help="predict() calls per night (median)")
    p.add_argument("--overlap", action="store_true", help="also time predict() over two nights, prefetch on vs off")
    p.add_argument("--backbone-pairs", type=int, default=0,
                   help="also time predict() with the backbone shortcut and with the backbone forced to run, N pairs in turn")
    p.add_argument("--reuse", action="store_true", help="reuse nights simulated into --out by an earlier run")
    p.add_argument("--out", type=Path, default=Path("bench-out/predict"))
    p.add_argument("--plot-only", action="store_true",
                   help="only time plot_hypnogram, 3 calls on a random hypnodensity of --hours")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    hours = [float(h) for h in args.hours.split(",")]
    if args.plot_only:
        return plot_only(hours[0], args.out)
    from passport_kit.inference.predict import RunOptions

    batch_size = args.batch_size or RunOptions().batch_size
    # A fresh home: no cache or bundle from another run takes part.
    os.environ[HOME_ENV] = tempfile.mkdtemp(prefix="bench-predict-")
    train = simulate_dataset(MONTAGE, args.out / "train", n_subjects=2, hours=0.25, seed=6, overwrite=True)
    recipe = {"max_steps": args.finetune_steps, "batch_size": 8} if args.recipe == "finetune" else {}
    bundle = adapt(montage=MONTAGE, data=train, out=args.out / "adapter", threads=args.threads, resume=False,
                   overwrite=True, **recipe).bundle
    per_hour: list[tuple[float, int, float]] = []
    for h in hours:
        edf = night(args.out, h, reuse=args.reuse)
        rows, n = stage_rows(bundle, edf, args.out / f"run-{h:g}h", device=args.device, precision=args.precision,
                             batch_size=batch_size, repeats=args.repeats)
        if args.overlap and h == hours[0]:
            rows += overlap_rows(bundle, edf, args.out / f"run-{h:g}h", device=args.device,
                                 precision=args.precision, batch_size=batch_size, repeats=args.repeats)
        if args.backbone_pairs and h == hours[0]:
            rows += backbone_pair_rows(bundle, edf, args.out / f"run-{h:g}h", device=args.device,
                                       precision=args.precision, batch_size=batch_size, pairs=args.backbone_pairs)
        print(f"{h:g} h night, {n} windows × 12 channels, recipe {args.recipe}, load {os.getloadavg()[0]:.1f}")
        print("| stage | seconds |\n|---|---|")
        for label, seconds in rows:
            print(f"| {label} | {seconds:.2f} |")
        per_hour.append((h, n, next(seconds for label, seconds in rows if label.startswith("predict() (all"))))
    if len(per_hour) > 1:
        print("| night | windows | predict() s | s per hour |\n|---|---|---|---|")
        for h, n, seconds in per_hour:
            print(f"| {h:g} h | {n} | {seconds:.2f} | {seconds / h:.2f} |")
    print(machine_line(args.threads))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
