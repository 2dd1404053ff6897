"""``evaluate``: subject-wise evaluation of one or more base checkpoints on a labeled dataset.

For every method (base checkpoint), fold, training-set size and seed, a fresh classifier is
adapted exactly as ``adapt`` does (same recipe, same split rules) and scored on the held-out
subjects, **per subject**:

- ``protocol='loso'``: leave-one-subject-out, the paper's EESM17 protocol (one fold per
  subject; the rest trains: under the finetune recipe with a subject-disjoint validation set
  drawn from it, under the probe all of it, cross-validated inside).
- ``protocol='split'``: one fixed subject-disjoint train/test split (``split_seed``); the
  fine-tuning seeds vary initialisation, batches, validation and sweep draws only.
- ``subjects_sweep=(1, 2, 4)``: the sample-efficiency curve: in each fold, train on that many
  randomly drawn training subjects (a different draw per seed), validation fixed.

Outputs (in ``out``): ``results.csv`` (one row per method × fold × size × seed × test
subject, every metric; rewritten after every run, so a stopped evaluation keeps its rows), ``per_subject.csv`` (test subjects × methods, mean over seeds at the
largest training set: the paper's table), ``summary.json`` (configuration, every row, mean ±
SD per method), ``confusion_<method>.png`` (pooled over folds), and with a sweep
``sweep.csv`` + ``sweep.png`` (metric vs training subjects, mean ± SD over seeds and folds).
Every row names what its fold's model shipped (``shipped``: 'band power + sleep prior'; summary.json counts them per
method), and a sleep-staging evaluation scores the zero-shot stager (``zero-shot yasa``) as a method of its own.
A sleep-staging evaluation also writes ``validation/`` (issue 44, :mod:`passport_kit.validation`): for each
method and the zero-shot stager, the held-out nights' epoch-by-epoch agreement and the Bland–Altman discrepancy of
their sleep measures, as JSON, CSV, PNG and one offline ``validation.html``.
"""

from __future__ import annotations

import copy
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from passport_kit.errors import ConfigError, DataError
from passport_kit.output_lock import output_lock
from passport_kit import reports
from passport_kit.engine.forward import predict_proba
from passport_kit.signals.dataset import RecordingReader
from passport_kit.signals.dataset_spec import load_dataset_spec
from passport_kit.signals.recording import with_high_pass
from passport_kit.onboard.adapt import DEFAULT_CHECKPOINT
from passport_kit.onboard.fitting import FitRun
from passport_kit.onboard.recipe import RecipeOptions, naming_metric, parse_options
from passport_kit.onboard.recipes import get_recipe, shipped_read_out
from passport_kit.onboard.ladder_inputs import spec_prior
from passport_kit.onboard.held_out_nights import HeldOutNights
from passport_kit.onboard.run import RunData, dataset_preprocess, prepare_run, train_once
from passport_kit.onboard.metrics import METRIC_NAMES, classification_metrics
from passport_kit.onboard.splits import (
    SubjectSplit,
    fixed_split,
    loso_folds,
    subsample_training,
    unique_subjects,
    with_validation,
)

#: Called as ``progress(done_runs, total_runs, description)`` between training runs, and
#: ``progress(step, total_steps, info)`` inside them through ``step_progress``.
RunProgress = Callable[[int, int, str], None]


class EvaluateConfig(RecipeOptions):
    """Everything ``evaluate`` needs (the CLI's options; validated, one-line errors)."""

    montage: str
    data: Path
    out: Path
    checkpoints: tuple[str, ...] = (DEFAULT_CHECKPOINT,)
    protocol: Literal["loso", "split"] = "loso"
    test_fraction: float = Field(0.2, gt=0, lt=1)
    split_seed: int = Field(0, description="seed of the fixed split (the same for every fine-tuning seed)")
    test_subjects: tuple[str, ...] | None = Field(None, description="only these held-out subjects (folds)")
    subjects_sweep: tuple[int, ...] | None = None
    seeds: int = Field(1, ge=1)
    metric: str = "kappa"
    save_adapters: bool = Field(False, description="also write each run's adapter bundle under out/adapters/")
    h_freq: float | None = Field(None, gt=0, description="band-pass top in Hz; None: as adapt's h_freq")
    l_freq: float | None = Field(None, gt=0, description="band-pass bottom in Hz; None: as adapt's l_freq")


#: The method name of the band-power reference in evaluate's tables (probe recipe): the read-out of band power
#: alone that the probe's inner cross-validation found best, fitted on the same training subjects.
BANDPOWER = "band power"


class EvaluationReport(BaseModel):
    """Every score of an evaluation and where its files are."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    rows: list[dict[str, Any]]
    per_subject: list[dict[str, Any]]
    summary: dict[str, dict[str, Any]]
    files: dict[str, Path]
    metric: str


def make_config(config: EvaluateConfig | None = None, **options: Any) -> EvaluateConfig:
    """Return an EvaluateConfig from a config and/or keyword options (ConfigError if invalid)."""
    cfg = parse_options(EvaluateConfig, "evaluate", config, options)
    if cfg.metric not in METRIC_NAMES:
        raise ConfigError(f"unknown metric {cfg.metric!r}; choose one of {', '.join(METRIC_NAMES)}")
    if not cfg.checkpoints:
        raise ConfigError("no checkpoint to evaluate; pass --checkpoint NAME at least once")
    return cfg


def folds_for(cfg: EvaluateConfig, subjects: np.ndarray) -> list[SubjectSplit]:
    """Return the test folds of the protocol, restricted to ``cfg.test_subjects`` if given."""
    if cfg.protocol == "loso":
        folds = loso_folds(subjects)
    else:
        folds = [fixed_split(subjects, test_fraction=cfg.test_fraction, seed=cfg.split_seed)]
    if cfg.test_subjects is None:
        return folds
    known = unique_subjects(subjects)
    unknown = sorted(set(cfg.test_subjects) - set(known))
    if unknown:
        raise DataError(f"test subjects {unknown} are not in the dataset (it has {known})")
    if cfg.protocol == "split":
        rest = tuple(s for s in known if s not in cfg.test_subjects)
        return [SubjectSplit(name="split-fixed", train=rest, test=tuple(sorted(cfg.test_subjects)))]
    return [f for f in folds if set(f.test) <= set(cfg.test_subjects)]


def _method_name(checkpoint: str, info: Any) -> str:
    """Return the column name of a method: the checkpoint name (its embedding kind if a path)."""
    name = str(getattr(info, "name", "") or Path(checkpoint).name)
    return name


def evaluate(
    config: EvaluateConfig | None = None,
    *,
    progress: RunProgress | None = None,
    step_progress: Callable[[int, int, dict[str, Any]], None] | None = None,
    **options: Any,
) -> EvaluationReport:
    """Return per-subject scores of every checkpoint under the chosen protocol; write reports.

    Parameters are the fields of :class:`EvaluateConfig`, as a config or keywords
    (``evaluate(montage="eesm17-ear", data="ds", out="runs/eval", checkpoints=("a", "b"))``).
    """
    cfg = make_config(config, **options)
    # One writer per output folder (issue 28): a second run into it exits at once, naming this one.
    with output_lock(cfg.out, "evaluate"):
        return _evaluate_locked(cfg, progress=progress, step_progress=step_progress)


def _evaluate_locked(cfg: EvaluateConfig, *, progress: RunProgress | None,
                     step_progress: Callable[[int, int, dict[str, Any]], None] | None) -> EvaluationReport:
    """Return :func:`evaluate`'s report, once it holds the lock of ``cfg.out``."""
    from passport_kit.checkpoint import load_base_checkpoint
    from passport_kit.montage import resolve_montage
    from passport_kit.runtime import resolve_device, resolve_precision, seed_everything, set_threads

    device = resolve_device(cfg.device)
    precision = resolve_precision(cfg.precision, device)
    set_threads(cfg.threads)
    montage = resolve_montage(cfg.montage)
    cfg.check_prior_channels(montage)
    bases = [load_base_checkpoint(name) for name in cfg.checkpoints]
    methods = [_method_name(name, info) for name, (_, info) in zip(cfg.checkpoints, bases)]
    if len(set(methods)) != len(methods):
        raise ConfigError(f"checkpoints {list(cfg.checkpoints)} repeat a name; list each once")
    sizes: list[int | None] = list(cfg.subjects_sweep) if cfg.subjects_sweep else [None]

    rows: list[dict[str, Any]] = []
    pooled: dict[str, tuple[list[int], list[int]]] = defaultdict(lambda: ([], []))
    plans = []
    # One RunData per preprocessing contract: checkpoints that share one share the windows.
    runs: dict[str, RunData] = {}
    distrust = any(b.channel_embedding.reads_activity for b, _ in bases)
    spec = load_dataset_spec(cfg.data)
    reader = RecordingReader(spec)
    for method, ckpt, (backbone, info) in zip(methods, cfg.checkpoints, bases):
        # h_freq: e.g. eegmat, whose recordings carry different prefilters above 45 Hz (../shared/data/README.md).
        preprocess = with_high_pass(dataset_preprocess(info, spec, instance_norm=cfg.instance_norm,
                                                       notch_freq=cfg.notch_freq, h_freq=cfg.h_freq, reader=reader),
                                    cfg.l_freq, spec)
        key = preprocess.model_dump_json()
        if key not in runs:
            runs[key] = prepare_run(cfg, info, montage, spec, distrust=distrust, reader=reader, preprocess=preprocess)
        run = runs[key]
        for seed in range(cfg.seeds):
            for fold in folds_for(cfg, run.windows.subject[run.keep]):
                for n in sizes:
                    plans.append((method, ckpt, backbone, info, run, fold, n, seed))
    total = len(plans)
    report_methods = list(methods)
    stagers: set[str] = set()  # the zero-shot stagers scored beside the methods
    first = next(iter(runs.values())).windows
    nights = HeldOutNights(first.classes, window_seconds=first.config.window_seconds, task=first.info.get("task"),
                           groups={rec.file: dict(rec.groups) for rec in spec.recordings if rec.groups})
    for done, (method, ckpt, backbone, info, run, fold, n, seed) in enumerate(plans):
        if progress is not None:
            progress(done, total, f"{method} {fold.name} n={n or 'all'} seed={seed}")
        windows, keep = run.windows, run.keep
        # The probe cross-validates inside the training subjects and fits on all of them (as adapt does): no
        # validation subjects, so n_train_subjects counts every subject it was fitted on (issue 27).
        fraction = get_recipe(cfg.recipe).validation_fraction(cfg)
        split = fold if fraction is None else with_validation(fold, fraction=fraction, seed=seed)
        if n is not None:
            split = subsample_training(split, n, seed=seed)
        train_mask, val_mask, test_mask = split.masks(windows.subject)
        train_idx = np.flatnonzero(train_mask & keep)
        val_idx = np.flatnonzero(val_mask & keep)
        test_idx = np.flatnonzero(test_mask & keep)
        seed_everything(seed)
        # A fresh copy per run: the adapter policy trains tensors inside the backbone.
        trained = train_once(cfg, copy.deepcopy(backbone), run, train_idx, val_idx, seed=seed, where=FitRun(
            device=device, precision=precision, progress=naming_metric(step_progress, len(windows.classes))))
        model = trained.model
        if cfg.save_adapters:
            _save_run_adapter(cfg, trained, run, method=method, checkpoint=ckpt, info=info, split=split, n=n, seed=seed,
                              rows=(train_idx, val_idx))
        # Test windows masked by the same rule as training: what predict does with the bundle.
        prior = spec_prior(windows, model.head.prior) if getattr(model.head, "n_prior", 0) else None
        proba = predict_proba(model, windows.x, run.meta, index=test_idx, groups=windows.recording[test_idx],
                              batch_size=max(cfg.batch_size, 64),
                              device=device, precision=precision, channel_mask=run.channel_mask,
                              distrust=run.distrust, prior=prior)
        scored = [(method, proba, shipped_read_out(trained.selection))]
        if trained.bandpower_head is not None and method == methods[0]:
            # The band-power reference (issue 24): the probe's best read-out of band power alone, fitted on the
            # same training rows, scored on the same test windows (it reads no backbone feature, so once).
            chosen, model.head = model.head, trained.bandpower_head
            try:
                scored.append((BANDPOWER, predict_proba(
                    model, windows.x, run.meta, index=test_idx, groups=windows.recording[test_idx],
                    batch_size=max(cfg.batch_size, 64), device=device, precision=precision,
                    channel_mask=run.channel_mask, distrust=run.distrust), BANDPOWER))
            finally:
                model.head = chosen
            if BANDPOWER not in report_methods:
                report_methods.append(BANDPOWER)
        if n == sizes[-1] and seed == 0 and method == methods[0]:
            # The zero-shot stager (the ladder's base) scored like every method: in results.csv and summary.json too.
            for name, stager in nights.zero_shot(windows, test_idx, cfg.prior).items():
                stagers.add(name)
                scored.append((name, stager, name))
                report_methods += [] if name in report_methods else [name]
        for name, proba, shipped in scored:
            pred = proba.argmax(1)
            for subject in split.test:
                sel = windows.subject[test_idx] == subject
                if not sel.any():
                    continue
                m = classification_metrics(windows.y[test_idx][sel], pred[sel], list(windows.classes), proba[sel])
                rows.append({
                    "method": name, "shipped": shipped, "fold": fold.name, "test_subject": subject,
                    # A zero-shot stager is fitted on none of them (its point on a sweep curve sits at 0).
                    "n_train_subjects": 0 if name in stagers else len(split.train), "sweep_size": n, "seed": seed,
                    "n_windows": m.n, "accuracy": m.accuracy, "balanced_accuracy": m.balanced_accuracy,
                    "kappa": m.kappa, "macro_f1": m.macro_f1, "auroc": m.auroc,
                    **{f"f1_{c}": v for c, v in m.per_class_f1.items()},
                })
            if n == sizes[-1]:
                pooled[name][0].extend(windows.y[test_idx].tolist())
                pooled[name][1].extend(pred.tolist())
                if seed == 0:  # the validation report: one staging per night and method
                    nights.add(name, windows, test_idx, pred, shipped=shipped)
        if rows:
            # Rows so far, after every run: a long evaluation stopped midway keeps what it scored.
            reports.write_table(Path(cfg.out) / "results.csv", rows)
    if progress is not None:
        progress(total, total, "done")
    if not rows:
        raise DataError("no test windows were scored; check --test-subject and the dataset labels")
    classes = list(next(iter(runs.values())).windows.classes)
    report = _write_reports(cfg, rows, pooled, classes, report_methods, sizes)
    report.files |= nights.write(Path(cfg.out) / "validation", context=(
        f"evaluate --protocol {cfg.protocol} on {cfg.data}: each held-out night staged by a model fitted without it "
        "(first seed, largest training set), against the dataset's labels as the reference scorer"))
    return report


def adapter_folder(out: Path, method: str, fold: str, n: int | None, seed: int) -> Path:
    """Return where ``save_adapters`` puts the bundle of one run."""
    return Path(out) / "adapters" / f"{method}_{fold}_n{n or 'all'}_seed{seed}"


def _save_run_adapter(cfg: EvaluateConfig, trained: Any, data: RunData, *, method: str, checkpoint: str, info: Any,
                      split: SubjectSplit, n: int | None, seed: int, rows: tuple[np.ndarray, np.ndarray]) -> Path:
    """Write the adapter bundle of one evaluation run (``trained`` on ``rows``: its training and validation rows of
    ``data``), described as the equivalent ``adapt`` call: with its selection (the ladder) and what predict's
    amplitude and distribution guards compare recordings with."""
    from passport_kit.onboard.adapt import AdaptConfig, run_metrics, training_distribution, write_bundle
    from passport_kit.signals.amplitude import amplitude_profile

    out = adapter_folder(cfg.out, method, split.name, n, seed)
    options = cfg.model_dump(include=set(RecipeOptions.model_fields))
    adapt_cfg = AdaptConfig(montage=cfg.montage, data=cfg.data, out=out, checkpoint=checkpoint,
                            train_subjects=split.train, seed=seed, **options)
    train_idx, val_idx = rows
    windows = data.windows
    metrics = run_metrics(trained.fit, split, windows, train_idx, val_idx, test_subjects=list(split.test),
                          selection=trained.selection, warnings=trained.warnings,
                          amplitude=amplitude_profile(data.window_quality.values()),
                          distribution=training_distribution(data, np.concatenate([train_idx, val_idx])))
    return write_bundle(trained.model, adapt_cfg, info=info, montage=data.montage, preprocess=data.preprocess,
                        classes=list(windows.classes), task=windows.info.get("task"), metrics=metrics)


def _mean_sd(values: list[float | None]) -> tuple[float | None, float | None]:
    arr = np.array([v for v in values if v is not None], dtype=float)
    if arr.size == 0:
        return None, None
    return float(arr.mean()), float(arr.std())


def _write_reports(cfg: EvaluateConfig, rows: list[dict[str, Any]], pooled: dict[str, tuple[list[int], list[int]]],
                   classes: list[str], methods: list[str], sizes: list[int | None]) -> EvaluationReport:
    """Write results/per-subject/summary files and plots; return the report."""
    out = Path(cfg.out)
    files: dict[str, Path] = {"results": reports.write_table(out / "results.csv", rows)}
    final = [r for r in rows if r["sweep_size"] == sizes[-1]]
    subjects = sorted({r["test_subject"] for r in final})
    per_subject: list[dict[str, Any]] = []
    for subject in subjects:
        row: dict[str, Any] = {"subject": subject}
        for method in methods:
            vals = [r[cfg.metric] for r in final if r["method"] == method and r["test_subject"] == subject]
            row[method], row[f"{method}_sd"] = _mean_sd(vals)
        per_subject.append(row)
    mean_row: dict[str, Any] = {"subject": "mean"}
    for method in methods:
        mean_row[method], mean_row[f"{method}_sd"] = _mean_sd([r[method] for r in per_subject])
    files["per_subject"] = reports.write_table(out / "per_subject.csv", per_subject + [mean_row])

    summary: dict[str, dict[str, Any]] = {}
    for method in methods:
        mine = [r for r in final if r["method"] == method]
        # What the method shipped, fold by fold (one model per fold and seed): {"band power": 12}.
        entry: dict[str, Any] = {"shipped": dict(Counter({(r["fold"], r["seed"]): r["shipped"]
                                                          for r in mine if r.get("shipped")}.values()))}
        for name in METRIC_NAMES:
            mean, sd = _mean_sd([r[name] for r in mine])
            entry[name] = {"mean": mean, "sd": sd}
        y_true, y_pred = pooled[method]
        if y_true:
            confusion = classification_metrics(np.array(y_true), np.array(y_pred), classes).confusion
            entry["confusion_pooled"] = confusion
            # File names without spaces ('band power' -> confusion_band-power.png): shells and URLs need no quoting.
            stem = f"confusion_{method.replace(' ', '-')}"
            files[stem] = reports.plot_confusion(out / f"{stem}.png", confusion, classes, title=method)
        summary[method] = entry
    if cfg.subjects_sweep:
        curves: dict[str, dict[int, list[float]]] = {m: defaultdict(list) for m in methods}
        sweep_rows = []
        for r in rows:
            curves[r["method"]][r["n_train_subjects"]].append(r[cfg.metric])
        for method, points in curves.items():
            for n, vals in sorted(points.items()):
                mean, sd = _mean_sd(vals)
                sweep_rows.append({"method": method, "n_train_subjects": n, cfg.metric: mean, "sd": sd,
                                   "n_runs": len(vals)})
        files["sweep"] = reports.write_table(out / "sweep.csv", sweep_rows)
        files["sweep_plot"] = reports.plot_sweep(out / "sweep.png", {m: dict(v) for m, v in curves.items()},
                                                 metric=cfg.metric)
    files["summary"] = reports.write_json(out / "summary.json", {
        "config": cfg.model_dump(mode="json"), "classes": classes, "metric": cfg.metric,
        "methods": summary, "per_subject": per_subject, "rows": rows,
    })
    return EvaluationReport(rows=rows, per_subject=per_subject, summary=summary, files=files, metric=cfg.metric)
