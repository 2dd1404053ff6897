"""Robustness to poor-contact channels (issue 8): LOSO kappa on subjects with and without bad channels.

The paper's Device Passport lost to ACPE on the two EESM17 subjects with poor electrode
contact. This benchmark asks whether the options of ``adapt``/``predict`` close that gap without
costing anything on clean subjects:

- data: simulated ear-EEG sleep (``eesm17-ear``, :mod:`passport_kit.signals.simulator`) where
  some subjects have poor-contact channels (``--bad-channels``: ``noise`` or ``drift``; ``flat``
  channels are dropped by the data layer anyway, so they test nothing here);
- protocol: leave-one-subject-out, the paper's fine-tuning recipe
  (:func:`passport_kit.onboard.finetune.fit`, ``adapter`` policy, a fixed step budget, the
  best of 4 validation points kept, per-window instance normalisation as the paper does for
  EESM17), one run per fold and training variant;
- training variants: ``acpe`` (the shipped ACPE checkpoint), ``mlp`` (the shipped Device Passport
  checkpoint, paper recipe), ``mlp+corrupt`` (``--corrupt-prob``), ``mlp+gate``
  (``--quality-gate``), ``mlp+gate+corrupt``, ``+drop`` (masked training: ``--channel-dropout``
  and the low-quality channels masked), ``mlp+distrust`` (``--distrust-bad-channels``: the
  low-quality channels keep their signal, their expert mixture reads the nearest good channel),
  ``mlp+distrust+uncorr`` and ``acpe+uncorr`` (``--mask-uncorrelated-channels``: channels whose
  1–40 Hz neighbour correlation is below ``--uncorrelated`` in a window are masked there, in
  training and at test time; the first also distrusts as ``mlp+distrust``);
- test-time variants: every model not trained with distrust is scored three times, as is, with
  ``predict --mask-bad-channels`` (``+mask``: channels whose raw-recording quality score is below
  the threshold in a window are replaced by the mask token there) and with
  ``predict --distrust-bad-channels`` (``+distrust@test``);
- reported: Cohen's kappa per held-out subject, and its mean over the subjects with bad
  channels and over the clean subjects, per variant (``robustness.csv/.json``, ``summary.md``).

``--quick`` runs in minutes on two CPU cores with tiny budgets: weak evidence, a smoke test of
the protocol. Run it again with the same ``--out`` to reuse the simulated data.

Usage::

    python benchmarks/robustness.py --quick --out bench-out/robustness
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

# Threaded OpenBLAS workers spin-wait: on a busy shared machine the simulator's matrix products
# stalled for minutes (measured: 4 s of CPU in 5 min). torch keeps its own --threads.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

from transfer_common import RunRecord, ensure_simulated, markdown_table, write_outputs  # noqa: E402

from passport_kit.atomic_io import atomic_write_text  # noqa: E402

MONTAGE = "eesm17-ear"
CHECKPOINTS = {"acpe": "passport-small-acpe", "mlp": "passport-small-mlp"}
#: Training variants: name → (checkpoint key, corrupt_prob (None: --corrupt-prob), quality gate,
#: masked training (channel dropout at --drop-prob, and the training windows' low-quality
#: channels masked as +mask masks them at test time), distrusted (the low-quality channels, in
#: training and at test time), uncorrelated channels masked (``--uncorrelated``, in training
#: and at test time)).
VARIANTS = {
    "acpe": ("acpe", 0.0, False, False, False, False),
    "mlp": ("mlp", 0.0, False, False, False, False),
    "mlp+corrupt": ("mlp", None, False, False, False, False),
    "mlp+gate": ("mlp", 0.0, True, False, False, False),
    "mlp+gate+corrupt": ("mlp", None, True, False, False, False),
    "acpe+drop": ("acpe", 0.0, False, True, False, False),
    "mlp+drop": ("mlp", 0.0, False, True, False, False),
    "mlp+drop+corrupt": ("mlp", None, False, True, False, False),
    "mlp+distrust": ("mlp", 0.0, False, False, True, False),
    "acpe+uncorr": ("acpe", 0.0, False, False, False, True),
    "mlp+distrust+uncorr": ("mlp", 0.0, False, False, True, True),
}
QUICK = {"subjects": 5, "hours": 0.75, "steps": 40, "batch_size": 24,
         "bad_channels": "s02:ELA:noise,s02:ERB:drift,s04:ELE:noise"}
FULL = {"subjects": 9, "hours": 2.0, "steps": 200, "batch_size": 32,
        "bad_channels": "s02:ELA:noise,s02:ERB:drift,s05:ELE:noise,s05:ERI:noise"}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Return the command line (defaults depend on ``--quick``)."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="minutes-scale run (tiny budgets; weak evidence)")
    p.add_argument("--out", type=Path, default=Path("bench-out/robustness"), help="output folder")
    p.add_argument("--subjects", type=int, help="simulated subjects (quick 5, full 9)")
    p.add_argument("--hours", type=float, help="hours per night (quick 0.75, full 2)")
    p.add_argument("--bad-channels", help="simulator poor contacts SUBJECT:CHANNEL:KIND,... (see docs/simulator.md)")
    p.add_argument("--steps", type=int, help="fine-tuning steps per fold (quick 40, full 200)")
    p.add_argument("--batch-size", type=int, help="fine-tuning batch (quick 24, full 32)")
    p.add_argument("--instance-norm", action=argparse.BooleanOptionalAction, default=True,
                   help="per-window normalisation, as the paper does for EESM17 ear-EEG (default on)")
    p.add_argument("--balance", default="weights", choices=["weights", "sampler", "none"],
                   help="skewed classes, as adapt --balance (default weights)")
    p.add_argument("--corrupt-prob", type=float, default=0.5, help="corruption share of the +corrupt variants")
    p.add_argument("--drop-prob", type=float, default=0.5, help="channel-dropout share of the +drop variants")
    p.add_argument("--mask-threshold", type=float, default=0.5, help="quality score under which +mask masks")
    p.add_argument("--uncorrelated", type=float, default=0.2,
                   help="neighbour correlation under which the +uncorr variants mask a channel")
    p.add_argument("--variants", default=",".join(VARIANTS), help=f"comma-separated subset of {list(VARIANTS)}")
    p.add_argument("--seed", type=int, default=0, help="simulation and fine-tuning seed")
    p.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    p.add_argument("--device", default="cpu", help="torch device for fine-tuning and scoring (cpu, cuda, auto)")
    args = p.parse_args(argv)
    defaults = QUICK if args.quick else FULL
    for key, value in defaults.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    unknown = sorted(set(args.variants.split(",")) - set(VARIANTS))
    if unknown:
        p.error(f"unknown variants {unknown}; choose from {list(VARIANTS)}")
    return args


def bad_subjects(spec: str) -> list[str]:
    """Return the subjects named in a ``--bad-channels`` spec (``*`` not supported here)."""
    return sorted({item.split(":")[0] for item in spec.split(",") if item.strip()})


def run_fold(variant: str, test_subject: str, loaded: dict[str, Any], args: argparse.Namespace) -> list[dict[str, Any]]:
    """Return two rows (as is, +mask) for one training variant and held-out subject."""
    import copy

    from passport_kit.engine.forward import predict_proba
    from passport_kit.model import ChannelMeta
    from passport_kit.onboard.adapt import build_classifier, usable_windows
    from passport_kit.onboard.finetune import FinetuneSettings, fit
    from passport_kit.onboard.fitting import FitData, FitRun
    from passport_kit.onboard.metrics import classification_metrics
    from passport_kit.runtime import resolve_device, seed_everything
    from passport_kit.onboard.splits import SubjectSplit, with_validation

    key, corrupt, gate, masked_training, distrusted, uncorrelated = VARIANTS[variant]
    backbone, windows, masks, lonely = loaded[key]
    trained_mask = masks if masked_training else lonely if uncorrelated else None
    keep = usable_windows(windows)
    subjects = sorted(set(windows.subject[keep].tolist()))
    split = with_validation(SubjectSplit(name=test_subject, train=tuple(s for s in subjects if s != test_subject),
                                         test=(test_subject,)), fraction=0.2, seed=args.seed)
    train_mask, val_mask, test_mask = split.masks(windows.subject)
    settings = FinetuneSettings(batch_size=args.batch_size, max_steps=args.steps, eval_every=max(1, args.steps // 4),
                                balance=args.balance,
                                corrupt_prob=args.corrupt_prob if corrupt is None else corrupt, quality_gate=gate,
                                drop_prob=args.drop_prob if masked_training else 0.0, seed=args.seed)
    seed_everything(args.seed)  # the head's initial weights: the same in every fold and process, as evaluate does
    model = build_classifier(copy.deepcopy(backbone), len(windows.classes), "adapter")
    meta = ChannelMeta.from_montage(windows.montage)
    device = resolve_device(args.device)
    fit(model, FitData(windows.x, windows.y, meta, list(windows.classes), channel_mask=trained_mask,
                       distrust=masks if distrusted else None), settings,
        train_index=np.flatnonzero(train_mask & keep), val_index=np.flatnonzero(val_mask & keep),
        run=FitRun(device=device))
    test_idx = np.flatnonzero(test_mask & keep)
    rows = []
    # Test-time options: as trained (a distrust variant distrusts at test too, as predict does with its
    # bundle), "+mask" (predict --mask-bad-channels), "+distrust@test" (predict --distrust-bad-channels).
    scorings = [("", lonely if uncorrelated else None, masks if distrusted else None)]
    if not distrusted:
        scorings += [("+mask", masks, None), ("+distrust@test", None, masks)]
    for suffix, channel_mask, distrust in scorings:
        proba = predict_proba(model, windows.x, meta, index=test_idx, batch_size=64, channel_mask=channel_mask,
                              distrust=distrust, device=device)
        m = classification_metrics(windows.y[test_idx], proba.argmax(1), list(windows.classes), proba)
        rows.append({"variant": variant + suffix, "subject": test_subject,
                     "group": "bad" if test_subject in args.bad_list else "clean", "kappa": m.kappa,
                     "balanced_accuracy": m.balanced_accuracy, "windows": int(len(test_idx)),
                     "masked_channel_windows": 0 if channel_mask is None else int(channel_mask[test_idx].sum()),
                     "distrusted_channel_windows": 0 if distrust is None else int(distrust[test_idx].sum())})
    return rows


def summarise(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Return one row per variant: mean kappa over bad-channel subjects, clean subjects and all."""
    out = []
    for variant in dict.fromkeys(r["variant"] for r in rows):
        mine = [r for r in rows if r["variant"] == variant]
        row: dict[str, Any] = {"variant": variant}
        for group in ("bad", "clean"):
            values = [r["kappa"] for r in mine if r["group"] == group]
            row[f"kappa_{group}_subjects"] = float(np.mean(values)) if values else None
        row["kappa_all"] = float(np.mean([r["kappa"] for r in mine]))
        row["folds"] = len(mine)
        out.append(row)
    return out


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; print and write the tables."""
    import torch

    from passport_kit.checkpoint import load_base_checkpoint
    from passport_kit.montage import get_montage
    from passport_kit.signals import load_dataset
    from passport_kit.onboard.run import dataset_channel_masks, dataset_preprocess

    args = parse_args(argv)
    args.bad_list = bad_subjects(args.bad_channels)
    torch.set_num_threads(args.threads)
    out = Path(args.out)
    record = RunRecord(out, args.threads, {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()})
    data = ensure_simulated(MONTAGE, out / "data", n_subjects=args.subjects, hours=args.hours, seed=args.seed,
                            bad_channels=args.bad_channels)
    record.stage("simulate")
    variants = args.variants.split(",")
    montage = get_montage(MONTAGE)
    loaded: dict[str, Any] = {}
    checkpoints: dict[str, Any] = {}
    for key in sorted({VARIANTS[v][0] for v in variants}):
        backbone, info = load_base_checkpoint(CHECKPOINTS[key])
        windows = load_dataset(data, montage, dataset_preprocess(info, data, instance_norm=args.instance_norm),
                               raw_quality=True)
        qualities = windows.raw_quality
        masks, _ = dataset_channel_masks(qualities, windows, mask_below=args.mask_threshold)
        lonely, _ = dataset_channel_masks(qualities, windows, mask_uncorrelated=args.uncorrelated)
        loaded[key] = (backbone, windows, masks, lonely)
        checkpoints[key] = {"name": info.name, "sha256": info.weights_sha256}
    record.stage("load data and quality")
    subjects = sorted(set(next(iter(loaded.values()))[1].subject.tolist()))
    rows: list[dict[str, Any]] = []
    for variant in variants:
        t0 = time.perf_counter()
        for subject in subjects:
            rows.extend(run_fold(variant, subject, loaded, args))
        print(f"{variant}: {len(subjects)} folds in {time.perf_counter() - t0:.0f} s", flush=True)
        write_outputs(out, "robustness", rows)
    record.stage("LOSO")
    summary = summarise(rows)
    write_outputs(out, "summary", summary)
    text = markdown_table(summary)
    atomic_write_text(out / "summary.md", text + "\n")
    print(text)
    record.finish({"checkpoints": checkpoints, "bad_subjects": args.bad_list})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
