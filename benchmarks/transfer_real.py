"""Layout transfer on real EEG: eegmat rest vs mental arithmetic on a temporal + ear-to-ear montage.

The shipped checkpoints (``passport-small-mlp``, ``-xattn``, ``-acpe``; pretrained on the 19
monopolar 10-20 sites) are adapted to a layout they did not see in that form: eegmat's temporal
chain T3 T4 T5 T6 plus the bipolar ear-to-ear derivation A2-A1
(``benchmarks/montages/eegmat-temporal.yaml``, read by path: nothing is registered). The task
is rest vs serial subtraction on 10-s windows, leave-one-subject-out over the 12 subjects of
``../shared/data/eegmat``. A log-band-power + logistic-regression baseline (scikit-learn) is
trained and scored on exactly the same training and test subjects of every fold::

    .venv/bin/python benchmarks/transfer_real.py --quick --out runs/transfer-real-quick
    .venv/bin/python benchmarks/transfer_real.py --out runs/transfer-real              # ~20-60 min on 2 cores

Everything is low-passed at 30 Hz (models and baseline): in three eegmat subjects (08, 10, 11)
the rest and the arithmetic recording carry different prefilters (LP 45 Hz vs 250 Hz), a
shortcut a model would learn instead of the task (``../shared/data/README.md``); a first
baseline with a 30-45 Hz band scored AUROC 0.00 and 0.06 on subjects 08 and 10, i.e. it had
learned the filter. Those three subjects are also reported apart. Metric: AUROC per held-out subject (both
classes occur in every subject: 18 rest and 6 arithmetic windows).

Output (``--out``): ``per_subject.csv/json`` (AUROC per held-out subject and method, mean ± SD
over fine-tuning seeds), ``difference_to_acpe.csv/json``, ``transfer_real.png`` (per-subject
AUROC of every method), ``transfer_real_diff.png`` (difference to ACPE), ``rows.csv``,
``run.json`` (with the SHA-256 of each checkpoint used). The dataset description the script
writes (``out/data/dataset.yaml``) points at the EDF files where they are; nothing is copied.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import transfer_common as tc

ROOT = Path(__file__).resolve().parents[1]
MONTAGE = Path(__file__).resolve().parent / "montages" / "eegmat-temporal.yaml"
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "eegmat"
CHECKPOINTS = ("passport-small-acpe", "passport-small-mlp", "passport-small-xattn")
BASELINE = "bandpower-logreg"
#: Bands of the baseline (Hz), all below the low-pass.
BANDS = ((1.0, 4.0), (4.0, 8.0), (8.0, 13.0), (13.0, 20.0), (20.0, 30.0))
WINDOW_SECONDS = 10
LOW_PASS_HZ = 30.0
#: Subjects whose rest and arithmetic recordings carry different prefilters (HP 0.5/LP 45 Hz vs
#: HP 0/LP 250 Hz in the EDF headers): a filter difference that can pass for a task difference.
MIXED_PREFILTER = ("Subject08", "Subject10", "Subject11")

SCALES = {
    "quick": {"ft_steps": 30, "ft_batch": 16, "seeds": 3},
    "default": {"ft_steps": 150, "ft_batch": 32, "seeds": 5},
}


def write_dataset_yaml(eegmat: Path, folder: Path) -> Path:
    """Return a folder whose ``dataset.yaml`` describes eegmat (rest / arithmetic per recording).

    File paths are absolute, so the recordings stay where they are.
    """
    from passport_kit.atomic_io import atomic_write_text
    from passport_kit.errors import DataError

    files = sorted(Path(eegmat).glob("Subject*_[12].edf"))
    if not files:
        raise DataError(f"no eegmat recordings (SubjectNN_1.edf / _2.edf) in {eegmat}; pass --data")
    lines = ["task: classification", f"window_seconds: {WINDOW_SECONDS}", "classes: [rest, arithmetic]",
             "allow_outside_paths: true", "recordings:"]
    for f in files:
        subject, part = f.stem.split("_")
        label = "rest" if part == "1" else "arithmetic"
        lines += [f"  - subject: {subject}", f"    file: {f.resolve().as_posix()!s}", f"    label: {label}"]
    atomic_write_text(Path(folder) / "dataset.yaml", "\n".join(lines) + "\n")
    return Path(folder)


def band_power_features(x: np.ndarray, sfreq: float = 200.0) -> np.ndarray:
    """Return log10 band powers ``(N, C * len(BANDS))`` of windows ``x`` ``(N, C, P, 200)``."""
    from scipy.signal import welch

    signal = np.asarray(x, dtype=np.float64).reshape(x.shape[0], x.shape[1], -1)
    freqs, psd = welch(signal, fs=sfreq, nperseg=int(2 * sfreq), axis=-1)
    powers = [psd[..., (freqs >= lo) & (freqs < hi)].mean(-1) for lo, hi in BANDS]
    return np.log10(np.stack(powers, axis=-1) + 1e-12).reshape(x.shape[0], -1)


def baseline_rows(windows: Any, *, seeds: int, validation_fraction: float) -> list[dict[str, Any]]:
    """Return per-subject scores of the band-power baseline on evaluate's LOSO folds and seeds.

    The training subjects of each fold and seed are exactly those the adapters trained on
    (evaluate's validation subjects are left out here too: the baseline needs no model selection).
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from passport_kit.onboard.adapt import usable_windows
    from passport_kit.onboard.metrics import classification_metrics
    from passport_kit.onboard.splits import loso_folds, with_validation

    keep = usable_windows(windows)
    features = band_power_features(windows.x)
    classes = list(windows.classes)
    rows = []
    for seed in range(seeds):
        for fold in loso_folds(windows.subject[keep]):
            split = with_validation(fold, fraction=validation_fraction, seed=seed)
            train_mask, _, test_mask = split.masks(windows.subject)
            train, test = np.flatnonzero(train_mask & keep), np.flatnonzero(test_mask & keep)
            model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000, class_weight="balanced"))
            model.fit(features[train], windows.y[train])
            proba = model.predict_proba(features[test])
            m = classification_metrics(windows.y[test], proba.argmax(1), classes, proba)
            rows.append({"method": BASELINE, "fold": fold.name, "test_subject": split.test[0],
                         "n_train_subjects": len(split.train), "sweep_size": None, "seed": seed,
                         "n_windows": m.n, "accuracy": m.accuracy, "balanced_accuracy": m.balanced_accuracy,
                         "kappa": m.kappa, "macro_f1": m.macro_f1, "auroc": m.auroc,
                         "layout": "-", "kind": BASELINE, "pretrain_seed": 0})
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = tc.common_parser(__doc__.splitlines()[0], default_out="runs/transfer-real")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the eegmat folder")
    parser.add_argument("--checkpoint", action="append", default=None,
                        help="base checkpoint (repeatable); default: the three shipped ones")
    parser.add_argument("--ft-steps", type=int, default=None, help="fine-tuning step budget (overrides the scale)")
    parser.add_argument("--balance", default="weights", choices=("none", "weights", "sampler"))
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args(argv)
    scale = dict(SCALES["quick" if args.quick else "default"])
    n_ft = args.seeds[1] if args.seeds else scale["seeds"]
    ft_steps = args.ft_steps or scale["ft_steps"]
    out = Path(args.out)

    from passport_kit.checkpoint import load_base_checkpoint
    from passport_kit.montage import resolve_montage
    from passport_kit.signals import load_dataset
    from passport_kit.onboard.adapt import dataset_preprocess

    data = write_dataset_yaml(args.data, out / "data")
    names = tuple(args.checkpoint or CHECKPOINTS)
    infos = {name: load_base_checkpoint(name)[1] for name in names}
    runs = {name: tc.PretrainRun("shipped", info.model.embedding, 0) for name, info in infos.items()}
    record = tc.RunRecord(out, args.threads, {
        "scale": "quick" if args.quick else "default", "finetune_seeds": n_ft, "ft_steps": ft_steps,
        "ft_batch": scale["ft_batch"], "balance": args.balance, "window_seconds": WINDOW_SECONDS,
        "low_pass_hz": LOW_PASS_HZ, "montage": str(MONTAGE.relative_to(ROOT)),
        "checkpoints": {n: {"kind": i.model.embedding, "sha256": i.weights_sha256} for n, i in infos.items()},
    })
    options = {"protocol": "loso", "seeds": n_ft, "max_steps": ft_steps, "batch_size": scale["ft_batch"],
               "train": "adapter", "balance": args.balance, "metric": "auroc", "notch_freq": 50.0,
               "h_freq": LOW_PASS_HZ, "device": args.device, "threads": args.threads}
    rows = tc.evaluate_grid({n: n for n in names}, runs, out, montage=str(MONTAGE), data=data, **options)
    record.stage("adapt + score (LOSO)")

    # The baseline sees the windows the adapters saw: same montage, same preprocessing.
    preprocess = dataset_preprocess(infos[names[0]], data, notch_freq=50.0)
    preprocess = type(preprocess).from_dict(preprocess.model_dump() | {"h_freq": LOW_PASS_HZ})
    windows = load_dataset(data, resolve_montage(MONTAGE), preprocess)
    rows += baseline_rows(windows, seeds=n_ft, validation_fraction=0.2)
    record.stage("baseline")

    metric = "auroc"
    kinds = [runs[n].kind for n in names]
    methods = [*kinds, BASELINE]
    table = tc.per_subject_table(rows, methods=methods, metric=metric)
    same_filter = [r for r in rows if r["test_subject"] not in MIXED_PREFILTER]
    table.append(tc.per_subject_table(same_filter, methods=methods, metric=metric)[-1]
                 | {"subject": f"mean without {', '.join(s[-2:] for s in MIXED_PREFILTER)}"})
    tc.write_outputs(out, "per_subject", table)
    tc.write_outputs(out, "rows", rows)
    tag = f"{'quick' if args.quick else 'default'} scale, {n_ft} fine-tuning seed(s)"
    tc.plot_subject_scores(table, out / "transfer_real.png", metric=metric, methods=methods,
                           title=f"eegmat rest vs arithmetic, T3-T6 + A2-A1, LOSO, {tag}")
    if "acpe" in kinds:
        others = [m for m in methods if m != "acpe"]
        diffs = tc.differences_to(rows, reference="acpe", methods=others, metric=metric)
        tc.write_outputs(out, "difference_to_acpe", diffs)
        tc.plot_difference_bars(diffs, out / "transfer_real_diff.png", metric=metric, reference="acpe",
                                methods=others, outline=MIXED_PREFILTER, outline_label="mixed prefilters",
                                title=f"eegmat, difference to ACPE, {tag}")
    record.stage("tables + figures")
    record.finish({"windows": len(windows.y), "subjects": sorted(set(windows.subject.tolist()))})
    print(tc.markdown_table(table))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
