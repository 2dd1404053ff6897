"""Real EEG, few labels: default ``adapt`` + ``predict`` against the classic baselines, on the same folds.

Two real tasks from ``../shared/data`` (issue 18):

- ``eegmat``: rest vs mental arithmetic, 10-s windows, the temporal chain T3 T4 T5 T6 plus the
  ear-to-ear derivation A2-A1 (``benchmarks/montages/eegmat-temporal.yaml``), leave-one-subject-out
  over subjects 00-11. ``h_freq: 30`` in the dataset description, as a user of this data would
  set it: three subjects carry different prefilters above 45 Hz in their two recordings
  (``../shared/data/README.md``), a shortcut no method here may use. Metric: AUROC.
- ``dreams``: sleep staging, 30-s epochs, the single channel C3-A1 of DREAMS excerpts 1 (100 Hz)
  and 3 (50 Hz), converted in code to FIF (the originals stay untouched); R&K 5-s scores become
  AASM epochs by majority (S3 + S4 = N3). Leave one recording out (2 folds). Metric: Cohen's kappa.

Methods, all trained on exactly the training subjects of each fold and scored on its test subject:

- ``passport-kit``: ``passport_kit.adapt`` with DEFAULT settings (checkpoint passport-small-mlp,
  recipe ``probe``), then ``passport_kit.predict`` on the test recordings; probabilities read
  back from predict's CSV.
- ``passport-kit finetune``: the same with ``recipe='finetune'`` (the paper's recipe, the
  default before issue 18), ``--with-finetune``.
- ``random backbone``: the default recipe on a randomly initialised backbone of the same
  architecture (``--random-seeds`` initialisations), written as a base checkpoint; if the
  pretrained one does not beat it, pretraining is not helping.
- ``bandpower-logreg``: the textbook: log10 absolute and relative power in the standard bands up to
  45 Hz (clipped to the data's band-pass top) per channel (scipy Welch, 4-s segments) +
  standardisation + logistic regression (balanced class weights), scikit-learn, on the same
  preprocessed windows (since issue 24; before: log absolute power in 6 bands to 30 Hz).
- ``bandpower-logreg, z-scored per subject``: the same features z-scored within each subject,
  test subjects included (needs all of a subject's windows at once; an ablation of per-subject
  normalisation, which ``predict`` does not do: it sees one recording at a time, and an eegmat
  recording holds one class).
- ``frozen probe (backbone only)``: logistic regression on the frozen backbone's mean-pooled
  output features alone (the issue's diagnostic), C = 1; ``(backbone only, layer 0)``: the same
  on the mean-pooled patch and channel embedding, the layer the default probe head reads;
  ``..., random i``: the same on each random initialisation.
- ``passport-kit, read-out at layer N``: the default with the probe head reading the
  backbone's output (after its N criss-cross layers) instead of layer 0: the ablation of the
  read-out layer. ``passport-kit, pooling mean``: the default with the pooling of the backbone
  features fixed to their mean (the default chooses mean or mean + spread by the inner
  cross-validation): the ablation of the spread.
- ``probe (spectral only)``: the probe head's own log band powers alone, with the probe's inner
  cross-validation (ablation of the backbone block).
- ``passport-kit, context 0`` / ``context 2`` (sleep only): the default with the temporal
  context of the probe head forced off, or to ±2 epochs (the default chooses it by the inner
  cross-validation, which needs two training recordings).
- ``yasa``: YASA's pretrained sleep staging (``dreams`` only; pip ``yasa``), on the raw signal.

Per-fold and pooled scores, paired differences (passport-kit minus each method) per fold with
a t-interval, and a paired bootstrap over windows of the pooled difference::

    .venv/bin/python benchmarks/real_data.py --out runs/real-data                 # ~3 min on 2 cores
    .venv/bin/python benchmarks/real_data.py --out runs/real-data --with-finetune  # + the old recipe

Skips cleanly (exit 0, one line) when ``../shared/data`` is absent.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
DEFAULT_DATA = ROOT.parent / "shared" / "data"
CHECKPOINT = "passport-small-mlp"
EEGMAT_MONTAGE = HERE / "montages" / "eegmat-temporal.yaml"
DREAMS_MONTAGE = HERE / "montages" / "dreams-c3.yaml"
#: R&K score of a 5-s DREAMS segment → AASM stage (S3 and S4 merge into N3).
RK_TO_AASM = {5: "W", 4: "REM", 3: "N1", 2: "N2", 1: "N3", 0: "N3"}
DREAMS_RATES = {1: 100.0, 3: 50.0}
SLEEP_CLASSES = ["W", "N1", "N2", "N3", "REM"]


# ----------------------------------------------------------------------------- data folders
def eegmat_folder(eegmat: Path, folder: Path, h_freq: float = 30.0) -> Path:
    """Return a dataset folder describing eegmat rest (``_1``) vs arithmetic (``_2``), low-passed at ``h_freq`` Hz."""
    files = sorted(Path(eegmat).glob("Subject*_[12].edf"))
    lines = ["task: classification", "window_seconds: 10", "classes: [rest, arithmetic]", f"h_freq: {h_freq:g}",
             "allow_outside_paths: true", "recordings:"]
    for f in files:
        subject, part = f.stem.split("_")
        lines += [f"  - subject: {subject}", f"    file: {f.resolve().as_posix()}",
                  f"    label: {'rest' if part == '1' else 'arithmetic'}"]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "dataset.yaml").write_text("\n".join(lines) + "\n")
    return folder


def dreams_epochs(hypnogram: Path) -> list[str]:
    """Return AASM 30-s stages from a DREAMS R&K hypnogram (one score per 5 s; majority of six)."""
    scores = [int(v) for v in hypnogram.read_text().split()[1:]]
    stages = []
    for start in range(0, len(scores) - 5, 6):
        names = [RK_TO_AASM[v] for v in scores[start : start + 6] if v in RK_TO_AASM]
        stages.append(max(set(names), key=names.count) if names else "?")
    return stages


def dreams_folder(dreams: Path, folder: Path) -> Path:
    """Return a dataset folder of DREAMS excerpts 1 and 3 as FIF files + 30-s label CSVs (originals untouched)."""
    import mne

    folder.mkdir(parents=True, exist_ok=True)
    lines = ["task: sleep-staging", "window_seconds: 30", f"classes: [{', '.join(SLEEP_CLASSES)}]",
             "on_unknown_label: drop", "recordings:"]
    for n, sfreq in DREAMS_RATES.items():
        text = (dreams / f"excerpt{n}.txt").read_text().split()
        name = text[0].strip("[]")
        signal = np.asarray(text[1:], dtype=np.float64) * 1e-6  # µV → V
        fif = folder / f"excerpt{n}_raw.fif"
        if not fif.exists():
            raw = mne.io.RawArray(signal[None], mne.create_info([name], sfreq, "eeg"), verbose="error")
            raw.save(fif, verbose="error")
        stages = dreams_epochs(dreams / f"Hypnogram_excerpt{n}.txt")
        (folder / f"excerpt{n}_stages.csv").write_text("stage\n" + "\n".join(stages) + "\n")
        lines += [f"  - subject: excerpt{n}", f"    file: {fif.name}", f"    labels: excerpt{n}_stages.csv"]
    (folder / "dataset.yaml").write_text("\n".join(lines) + "\n")
    return folder


# ----------------------------------------------------------------------------- methods
def band_power(x: np.ndarray, top_hz: float = 45.0) -> np.ndarray:
    """Return the textbook's log absolute + relative band powers ``(N, C · 2 · bands)`` of windows ``(N, C, P, 200)``.

    The standard bands up to 45 Hz clipped to ``top_hz`` (the data's band-pass top), scipy's Welch with 4-s
    segments (:func:`passport_kit.model.spectral.band_power_features`, the probe head's own spectral block).
    """
    import torch

    from passport_kit.model.spectral import band_power_features, carried_bands

    return band_power_features(torch.from_numpy(np.asarray(x, dtype=np.float32)), carried_bands(top_hz)).double().numpy()


def logreg_proba(features: np.ndarray, y: np.ndarray, train: np.ndarray, test: np.ndarray, n_classes: int,
                 c: float = 1.0) -> np.ndarray:
    """Return test probabilities of a standardised, class-balanced logistic regression."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    model = make_pipeline(StandardScaler(), LogisticRegression(C=c, max_iter=3000, class_weight="balanced"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(features[train], y[train])
    out = np.zeros((len(test), n_classes))
    out[:, model.classes_] = model.predict_proba(features[test])
    return out


def per_subject_z(features: np.ndarray, subjects: np.ndarray) -> np.ndarray:
    """Return ``features`` z-scored within each subject (a test-time normalisation over that subject's windows)."""
    out = np.empty_like(features)
    for s in np.unique(subjects):
        rows = subjects == s
        out[rows] = (features[rows] - features[rows].mean(0)) / (features[rows].std(0) + 1e-8)
    return out


def random_base(folder: Path, seed: int, checkpoint: str = CHECKPOINT) -> Path:
    """Return a base checkpoint folder: ``checkpoint``'s architecture, randomly initialised."""
    import torch

    from passport_kit.checkpoint import find_checkpoint, save_base_checkpoint
    from passport_kit.model import build_backbone

    if (folder / "config.json").exists():
        return folder
    info = find_checkpoint(checkpoint)
    torch.manual_seed(seed)
    backbone = build_backbone(info.model)
    return save_base_checkpoint(backbone, folder, name=f"random-{seed}", preprocessing=info.preprocessing,
                                card=f"Random initialisation (seed {seed}) of {info.name}'s architecture: a control.")


def passport_proba(data: Path, montage: Path, train: list[str], test_files: list[Path], rows: dict[tuple[str, float], int],
                   n_windows: int, n_classes: int, out: Path, **options: Any) -> np.ndarray:
    """Return ``(N, n_classes)`` probabilities (NaN rows: not predicted) of adapt + predict through the public API."""
    import csv

    import passport_kit as pk

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = pk.adapt(montage=str(montage), data=str(data), out=str(out / "adapter"), train_subjects=tuple(train),
                          resume=False, overwrite=True, **options)
        # A base given as a folder is not found by name: predict is told where it is.
        preds = pk.predict(result.bundle, [str(f) for f in test_files], out=str(out / "pred"),
                           base=options.get("checkpoint"))
    proba = np.full((n_windows, n_classes), np.nan)
    for pred in preds:
        with open(pred.files["predictions"], newline="") as fh:
            for row in csv.DictReader(fh):
                key = (pred.recording.name, round(float(row["onset_s"]), 3))
                if key in rows:
                    proba[rows[key]] = [float(row[f"p_{c}"]) for c in pred.classes]
    return proba


def backbone_features(checkpoint: str, x: np.ndarray, montage: Any, depth: int | None = None) -> np.ndarray:
    """Return the frozen backbone's mean-pooled features ``(N, D)`` after ``depth`` layers (None: all; no head)."""
    import torch

    from passport_kit.checkpoint import load_base_checkpoint
    from passport_kit.model import ChannelMeta

    backbone, _ = load_base_checkpoint(checkpoint)
    meta = ChannelMeta.from_montage(montage)
    out = []
    with torch.inference_mode():
        for start in range(0, len(x), 64):
            out.append(backbone(torch.from_numpy(np.array(x[start : start + 64], dtype=np.float32)), meta,
                                depth=depth).mean(dim=(1, 2)).numpy())
    return np.concatenate(out)


def spectral_probe_proba(x: np.ndarray, y: np.ndarray, groups: np.ndarray, train: np.ndarray, test: np.ndarray,
                         classes: list[str], top_hz: float = 45.0) -> np.ndarray:
    """Return test probabilities of the ladder on the probe head's log band powers alone (no backbone block)."""
    import torch
    from torch import nn

    from passport_kit.model.heads import ProbeHead
    from passport_kit.model.spectral import carried_bands
    from passport_kit.onboard.fitting import FitData
    from passport_kit.onboard.ladder import fit_probe

    class SpectralOnly(nn.Module):
        """The probe head with a backbone block of width 0: its read-out sees the band powers only."""

        def __init__(self, n_channels: int) -> None:
            super().__init__()
            self.head = ProbeHead(0, len(classes), n_channels, bands=carried_bands(top_hz))

        def read_out_features(self, xb: torch.Tensor, meta: Any, pooling: str | None = None, **_: Any) -> torch.Tensor:
            return self.head.features(xb.new_zeros(*xb.shape[:3], 0), xb, pooling)

        def forward(self, xb: torch.Tensor, meta: Any) -> torch.Tensor:
            return self.head(xb.new_zeros(*xb.shape[:3], 0), xb)

    model = SpectralOnly(x.shape[1])
    fit_probe(model, FitData(x, y, _NoMeta(), classes), train, groups, poolings=("mean",))
    with torch.inference_mode():
        logits = model(torch.from_numpy(np.array(x[test], dtype=np.float32)), None)
    return torch.softmax(logits.double(), dim=-1).numpy()


class _NoMeta:
    def to(self, _device: Any) -> _NoMeta:
        return self


def yasa_proba(folder: Path, recordings: np.ndarray, onsets: np.ndarray, n_classes: int) -> np.ndarray | None:
    """Return YASA's pretrained stage probabilities per window, or None when yasa is not installed."""
    try:
        import mne
        import yasa
    except ImportError:
        return None
    proba = np.full((len(recordings), n_classes), np.nan)
    for rec in np.unique(recordings):
        raw = mne.io.read_raw_fif(folder / rec, preload=True, verbose="error")
        if raw.info["sfreq"] < 100:
            raw.resample(100.0, verbose="error")  # YASA refuses rates below 80 Hz (excerpt 3: 50 Hz)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            stager = yasa.SleepStaging(raw, eeg_name=raw.ch_names[0])
            table = stager.predict().proba  # a yasa.Hypnogram; .proba: one row per 30-s epoch
        cols = {"W": "WAKE", "N1": "N1", "N2": "N2", "N3": "N3", "REM": "REM"}
        rows = np.flatnonzero(recordings == rec)
        epochs = np.round(onsets[rows] / 30).astype(int)
        ok = epochs < len(table)
        for k, c in enumerate(SLEEP_CLASSES):
            proba[rows[ok], k] = table[cols[c]].to_numpy()[epochs[ok]]
    return proba


# ----------------------------------------------------------------------------- scoring
def score(y: np.ndarray, proba: np.ndarray, classes: list[str]) -> float:
    """Return AUROC (two classes) or Cohen's kappa of ``proba`` against ``y``."""
    from sklearn.metrics import cohen_kappa_score, roc_auc_score

    if len(classes) == 2:
        return float(roc_auc_score(y, proba[:, 1])) if len(np.unique(y)) == 2 else float("nan")
    return float(cohen_kappa_score(y, proba.argmax(1), labels=list(range(len(classes)))))


def paired_bootstrap(y: np.ndarray, a: np.ndarray, b: np.ndarray, classes: list[str], n: int = 1000,
                     seed: int = 0) -> tuple[float, float]:
    """Return the 95 % interval of score(a) - score(b) over windows resampled with replacement."""
    rng = np.random.default_rng(seed)
    diffs = []
    for _ in range(n):
        idx = rng.integers(0, len(y), len(y))
        if len(classes) == 2 and len(np.unique(y[idx])) < 2:
            continue
        diffs.append(score(y[idx], a[idx], classes) - score(y[idx], b[idx], classes))
    lo, hi = np.percentile(diffs, [2.5, 97.5])
    return float(lo), float(hi)


def t_interval(values: list[float]) -> tuple[float, float] | None:
    """Return the 95 % t-interval of the mean of ``values`` (None for fewer than 3)."""
    from scipy import stats

    v = np.asarray([x for x in values if np.isfinite(x)])
    if len(v) < 3:
        return None
    half = stats.t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / np.sqrt(len(v))
    return float(v.mean() - half), float(v.mean() + half)


# ----------------------------------------------------------------------------- one task
def run_task(name: str, data: Path, montage_path: Path, out: Path, *, random_seeds: int, with_finetune: bool,
             log: Callable[[str], None], checkpoint: str = CHECKPOINT) -> dict[str, Any]:
    """Return the per-fold and pooled table of one task (all methods on the same folds)."""
    from passport_kit.checkpoint import find_checkpoint
    from passport_kit.montage import Montage
    from passport_kit.signals import load_dataset
    from passport_kit.signals.dataset_spec import load_dataset_spec
    from passport_kit.onboard.adapt import dataset_preprocess, usable_windows

    montage = Montage.from_yaml(montage_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        preprocess = dataset_preprocess(find_checkpoint(checkpoint), data)
        windows = load_dataset(data, montage, preprocess)
    spec = load_dataset_spec(data)
    keep = usable_windows(windows)
    classes = list(windows.classes)
    y = np.asarray(windows.y)
    subjects = np.asarray(windows.subject)
    recordings = np.asarray(windows.recording)
    onsets = np.asarray(windows.onset_s)
    # By file name: dataset.yaml may give absolute paths, predict reports the file it read.
    rows = {(Path(r).name, round(float(o), 3)): i for i, (r, o) in enumerate(zip(recordings, onsets))}
    files = {rec.subject: [] for rec in spec.recordings}
    for rec in spec.recordings:
        files[rec.subject].append(spec.path_of(rec.file))
    x = np.asarray(windows.x)
    bp = band_power(x, preprocess.h_freq)
    feats = backbone_features(checkpoint, x, montage)
    feats0 = backbone_features(checkpoint, x, montage, depth=0)
    n_layers = find_checkpoint(checkpoint).model.n_layers
    randoms = [random_base(out / "bases" / f"random-{s}", s, checkpoint) for s in range(random_seeds)]
    feats0_random = [backbone_features(str(b), x, montage, depth=0) for b in randoms]
    methods: dict[str, np.ndarray] = {}

    def slot(method: str) -> np.ndarray:
        return methods.setdefault(method, np.full((len(y), len(classes)), np.nan))

    folds = sorted(np.unique(subjects[keep]))
    for k, test_subject in enumerate(folds):
        train = [s for s in folds if s != test_subject]
        train_rows = np.flatnonzero(keep & np.isin(subjects, train))
        test_rows = np.flatnonzero(keep & (subjects == test_subject))
        t0 = time.perf_counter()
        fold_out = out / name / test_subject
        base = {} if checkpoint == CHECKPOINT else {"checkpoint": checkpoint}
        runs = {"passport-kit": base} | {f"random backbone {i}": {"checkpoint": str(b)} for i, b in enumerate(randoms)}
        if len(classes) > 2:  # the sleep sequence context, forced off and on (the default chooses by inner CV)
            runs |= {"passport-kit, context 0": base | {"context": 0}, "passport-kit, context 2": base | {"context": 2}}
        runs[f"passport-kit, read-out at layer {n_layers}"] = base | {"probe_layer": n_layers}
        runs["passport-kit, pooling mean"] = base | {"probe_pooling": "mean"}
        if with_finetune:
            runs["passport-kit finetune"] = base | {"recipe": "finetune"}
        for method, options in runs.items():
            proba = passport_proba(data, montage_path, train, files[test_subject], rows, len(y), len(classes),
                                   fold_out / method.replace(" ", "-"), **options)
            slot(method)[test_rows] = proba[test_rows]
        slot("bandpower-logreg")[test_rows] = logreg_proba(bp, y, train_rows, test_rows, len(classes))
        bp_z = per_subject_z(bp, subjects)
        slot("bandpower-logreg, z-scored per subject")[test_rows] = logreg_proba(bp_z, y, train_rows, test_rows,
                                                                                  len(classes))
        slot("frozen probe (backbone only)")[test_rows] = logreg_proba(feats, y, train_rows, test_rows, len(classes))
        slot("frozen probe (backbone only, layer 0)")[test_rows] = logreg_proba(feats0, y, train_rows, test_rows,
                                                                                len(classes))
        for i, f0 in enumerate(feats0_random):
            slot(f"frozen probe (backbone only, layer 0), random {i}")[test_rows] = logreg_proba(
                f0, y, train_rows, test_rows, len(classes))
        slot("probe (spectral only)")[test_rows] = spectral_probe_proba(x, y, subjects, train_rows, test_rows, classes,
                                                                   preprocess.h_freq)
        log(f"{name} fold {k + 1}/{len(folds)} ({test_subject}): {time.perf_counter() - t0:.0f} s")
    if len(classes) > 2:
        yasa = yasa_proba(data, recordings, onsets, len(classes))
        if yasa is not None:
            methods["yasa (pretrained)"] = yasa
    if random_seeds:
        methods["random backbone (mean of seeds)"] = np.full((len(y), len(classes)), np.nan)  # filled as a score below
    return summarise(name, methods, y, subjects, keep, folds, classes, random_seeds)


def summarise(name: str, methods: dict[str, np.ndarray], y: np.ndarray, subjects: np.ndarray, keep: np.ndarray,
              folds: list[str], classes: list[str], random_seeds: int) -> dict[str, Any]:
    """Return per-fold scores, pooled scores and paired differences to passport-kit."""
    metric = "auroc" if len(classes) == 2 else "kappa"
    scored = keep & ~np.isnan(methods["passport-kit"]).any(axis=1)
    table: list[dict[str, Any]] = []
    per_fold: dict[str, list[float]] = {}
    pooled: dict[str, float] = {}
    random_names = [m for m in methods if m.startswith("random backbone ") and m[-1].isdigit()]
    for method, proba in methods.items():
        if method == "random backbone (mean of seeds)":
            per_fold[method] = list(np.mean([per_fold[m] for m in random_names], axis=0))
            pooled[method] = float(np.mean([pooled[m] for m in random_names]))
            continue
        ok = scored & ~np.isnan(proba).any(axis=1)
        pooled[method] = score(y[ok], proba[ok], classes)
        per_fold[method] = [score(y[ok & (subjects == s)], proba[ok & (subjects == s)], classes) for s in folds]
    ref = methods["passport-kit"]
    for method in methods:
        diffs = [a - b for a, b in zip(per_fold["passport-kit"], per_fold[method])]
        row = {"task": name, "method": method, f"pooled {metric}": round(pooled[method], 3),
               f"mean per-fold {metric}": round(float(np.nanmean(per_fold[method])), 3),
               "windows": int((scored & ~np.isnan(methods[method]).any(axis=1)).sum())
               if method in methods and not np.isnan(methods[method]).all() else None}
        if method != "passport-kit":
            ci = t_interval(diffs)
            row["passport-kit minus this, per fold"] = round(float(np.nanmean(diffs)), 3)
            row["95% t-interval (folds)"] = None if ci is None else f"[{ci[0]:+.3f}, {ci[1]:+.3f}]"
            if method == "random backbone (mean of seeds)" and len(random_names) >= 3:
                # Over initialisations: the pretrained backbone's mean per-fold score minus each seed's.
                by_seed = [float(np.nanmean(per_fold["passport-kit"]) - np.nanmean(per_fold[m])) for m in random_names]
                ci = t_interval(by_seed)
                row["95% t-interval (random seeds)"] = None if ci is None else f"[{ci[0]:+.3f}, {ci[1]:+.3f}]"
            other = methods[method]
            ok = scored & ~np.isnan(other).any(axis=1)
            if ok.any():
                lo, hi = paired_bootstrap(y[ok], ref[ok], other[ok], classes)
                row["95% bootstrap (windows, pooled)"] = f"[{lo:+.3f}, {hi:+.3f}]"
        table.append(row)
    folds_table = [{"task": name, "fold": s, **{m: round(v[i], 3) for m, v in per_fold.items()}}
                   for i, s in enumerate(folds)]
    return {"task": name, "metric": metric, "classes": classes, "table": table, "per_fold": folds_table,
            "random_seeds": random_seeds}


def markdown(rows: list[dict[str, Any]]) -> str:
    """Return ``rows`` as a Markdown table."""
    keys = list(dict.fromkeys(k for r in rows for k in r))
    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    lines += ["| " + " | ".join("" if r.get(k) is None else str(r.get(k)) for k in keys) + " |" for r in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder holding eegmat/ and dreams-spindles/")
    parser.add_argument("--out", type=Path, default=Path("runs/real-data"))
    parser.add_argument("--tasks", default="eegmat,dreams")
    parser.add_argument("--random-seeds", type=int, default=3)
    parser.add_argument("--with-finetune", action="store_true", help="also the paper's fine-tuning recipe")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--checkpoint", default=CHECKPOINT, help="base checkpoint of 'passport-kit' (name or folder; "
                        "default: adapt's default); the random control copies its architecture")
    args = parser.parse_args(argv)
    if not (args.data / "eegmat").is_dir() and not (args.data / "dreams-spindles").is_dir():
        print(f"real_data: no real recordings under {args.data} (eegmat/, dreams-spindles/); skipped")
        return 0
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    args.out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    results = []
    for task in args.tasks.split(","):
        if task == "eegmat" and (args.data / "eegmat").is_dir():
            data = eegmat_folder(args.data / "eegmat", args.out / "data-eegmat")
            results.append(run_task("eegmat", data, EEGMAT_MONTAGE, args.out, random_seeds=args.random_seeds,
                                    with_finetune=args.with_finetune, log=print, checkpoint=args.checkpoint))
        elif task == "dreams" and (args.data / "dreams-spindles").is_dir():
            data = dreams_folder(args.data / "dreams-spindles", args.out / "data-dreams")
            results.append(run_task("dreams", data, DREAMS_MONTAGE, args.out, random_seeds=args.random_seeds,
                                    with_finetune=args.with_finetune, log=print, checkpoint=args.checkpoint))
    sys.path.insert(0, str(HERE))
    import torch
    from machine import machine_line

    report = {"machine": machine_line(torch.get_num_threads()), "command": " ".join(["benchmarks/real_data.py", *(argv if argv is not None else sys.argv[1:])]),
              "seconds": round(time.perf_counter() - start, 1), "results": results}
    (args.out / "real_data.json").write_text(json.dumps(report, indent=2))
    text = []
    for r in results:
        text += [f"## {r['task']} ({r['metric']})", "", markdown(r["table"]), "", markdown(r["per_fold"]), ""]
    (args.out / "real_data.md").write_text("\n".join(text))
    print("\n".join(text))
    print(f"done in {report['seconds']} s; {args.out / 'real_data.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
