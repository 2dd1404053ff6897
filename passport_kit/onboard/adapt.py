"""``adapt``: onboard a device: train the mixture adapter and a head, write an adapter bundle.

The base checkpoint's backbone and experts stay frozen; only what the freezing policy names
(``adapter``: the mixture network + head; ``head``; ``full``) is trained, with the recipe of
:mod:`passport_kit.onboard.finetune`. Windows are preprocessed exactly as the base checkpoint
expects (its preprocessing contract), with the dataset's window length; the contract used is
recorded in the bundle so that ``predict`` repeats it.

Example (a notebook)::

    import passport_kit as pk
    result = pk.adapt(montage="eesm17-ear", data="./eesm17", out="runs/ear", max_steps=200)
    result.bundle, result.metrics.validation.kappa
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from passport_kit.checkpoint import DEFAULT_CHECKPOINT  # adapt's public name too (evaluate reads it here)
from passport_kit.checkpoint.adapter_metrics import AdapterMetrics
from passport_kit.errors import ConfigError, DataError, warn
from passport_kit.output_lock import output_lock
from passport_kit.onboard.fitting import FitResult, FitRun
from passport_kit.onboard.recipe import (  # noqa: F401 - DEFAULT_*, RecipeOptions: adapt's public names too
    DEFAULT_DISTRUST,
    DEFAULT_UNCORRELATED,
    ProgressFn,
    RecipeOptions,
    naming_metric,
    parse_options,
)
from passport_kit.onboard.run import (  # noqa: F401 - re-exported: adapt's public names before run.py
    build_classifier,
    dataset_channel_masks,
    dataset_preprocess,
    dataset_quality,
    prepare_run,
    train_once,
    usable_windows,
)
from passport_kit.onboard.recipes import get_recipe
from passport_kit.onboard.splits import SubjectSplit, subsample_training, unique_subjects, with_validation

log = logging.getLogger(__name__)
#: Resumable state inside the output folder; removed once the bundle is written.
STATE_FILE = "adapt-state.safetensors"


class AdaptConfig(RecipeOptions):
    """Everything ``adapt`` needs (the CLI's options; validated, one-line errors)."""

    montage: str = Field(description="registered montage name or a montage YAML path")
    data: Path = Field(description="dataset folder (dataset.yaml or BIDS)")
    out: Path | None = Field(None, description="output folder of the adapter bundle (default runs/<montage>)")
    checkpoint: str = DEFAULT_CHECKPOINT
    subjects: int | None = Field(None, gt=0, description="train on this many subjects (seeded draw)")
    train_subjects: tuple[str, ...] | None = Field(None, description="restrict training to these subjects")
    seed: int = Field(0, ge=0, lt=2**32, description="random seed, 0 to 2**32 - 1 (splits, initialisation, batches)")
    resume: bool = True
    overwrite: bool = Field(False, description="replace a finished adapter bundle in out trained with other settings")
    h_freq: float | None = Field(None, gt=0, description="band-pass top in Hz; None: dataset.yaml's h_freq, else the "
                                 "checkpoint's, lowered below the Nyquist frequency of recordings too slow for it")
    l_freq: float | None = Field(None, gt=0, description="band-pass bottom in Hz; None: dataset.yaml's l_freq, else "
                                 "the checkpoint's (0.3)")


class AdaptResult(BaseModel):
    """What ``adapt`` produced: the bundle folder and its metrics (also in adapter.json)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    bundle: Path
    metrics: AdapterMetrics
    trainable: list[str]
    summary: str
    #: True when ``out`` already held a bundle finished with the same settings: nothing was trained.
    reused: bool = False


def make_config(config: AdaptConfig | None = None, **options: Any) -> AdaptConfig:
    """Return an AdaptConfig from an existing one and/or keyword options (ConfigError if invalid)."""
    return parse_options(AdaptConfig, "adapt", config, options)


def training_split(
    subjects: np.ndarray,
    *,
    train_subjects: tuple[str, ...] | None,
    n_subjects: int | None,
    validation_fraction: float | None,
    seed: int,
) -> SubjectSplit:
    """Return the subject-disjoint train/validation split of an ``adapt`` run.

    Validation subjects are drawn first from the pool, then ``n_subjects`` training subjects
    from the rest, so a one-subject run still has a validation set when the pool allows.
    ``validation_fraction=None`` (the probe recipe, which cross-validates inside the training
    subjects): no validation subjects.
    """
    pool = unique_subjects(subjects)
    if train_subjects is not None:
        unknown = sorted(set(train_subjects) - set(pool))
        if unknown:
            raise DataError(f"training subjects {unknown} are not in the dataset (it has {pool})")
        pool = sorted(train_subjects)
    split = SubjectSplit(name="adapt", train=tuple(pool), test=())
    if validation_fraction is not None:
        split = with_validation(split, fraction=validation_fraction, seed=seed)
    if n_subjects is not None:
        split = subsample_training(split, n_subjects, seed=seed)
    return split


def interrupted_note(out: Path | None, montage: str) -> str:
    """Return what to tell a user who stopped ``adapt`` (Ctrl-C): whether the same command continues or starts over.

    ``out`` and ``montage`` as given to adapt (``out`` None: ``runs/<montage name>``).
    """
    from passport_kit.errors import PassportError
    from passport_kit.montage import resolve_montage

    if out is None:
        try:
            out = Path("runs") / resolve_montage(montage).name
        except PassportError:
            return "interrupted"
    if (Path(out) / STATE_FILE).is_file():
        return f"interrupted; the last evaluation's state is in {out}: run the same command to continue from it"
    return f"interrupted before the first evaluation, so nothing was saved in {out}: the same command starts over"


#: Files an adapt run may find in its output folder: its own bundle, history or resumable state.
_OWN_FILES = frozenset({STATE_FILE, "adapter.json", "adapter.safetensors", "history.csv", "history.png"})


def check_output_folder(out: Path) -> None:
    """Raise ConfigError when ``out`` holds files that ``adapt`` did not write.

    Writing the bundle replaces the folder as a whole (atomically), so a folder with other
    content (say, the dataset itself) must never be used as the output.
    """
    out = Path(out)
    if out.is_file():
        raise ConfigError(f"--out '{out}' is a file; give a folder for the adapter bundle")
    if out.is_dir():
        foreign = sorted(p.name for p in out.iterdir() if p.name not in _OWN_FILES and not p.name.startswith("."))
        if foreign:
            raise ConfigError(
                f"--out '{out}' already holds other files ({', '.join(foreign[:3])}); the bundle replaces "
                "the whole folder, so choose a new or empty folder"
            )


#: Settings that do not change what a run trains: a rerun differing only in these is the same run.
_RUN_ONLY = frozenset({"out", "resume", "overwrite", "device", "threads"})


def changed_data(cfg: AdaptConfig, recorded: dict[str, str]) -> list[str]:
    """Return the training files of ``cfg.data`` whose content differs from the ``recorded`` hashes (none recorded: [])."""
    from passport_kit.signals.data_hashes import changed_files, dataset_hashes
    from passport_kit.signals.dataset_spec import load_dataset_spec

    if not recorded:  # a bundle written before the hashes were recorded: nothing to compare
        return []
    return changed_files(recorded, dataset_hashes(load_dataset_spec(cfg.data)))


def check_resumable(state_path: Path, run_config: dict[str, Any]) -> None:
    """Raise ConfigError when ``state_path`` holds an interrupted run with other settings than ``run_config``.

    Resuming it would mix two runs, and starting over silently would discard its progress
    (issue 28): the user chooses, with the interrupted command or ``--restart``.
    """
    from passport_kit.engine.state import load_training_state

    if not state_path.is_file():
        return
    stored = load_training_state(state_path).config
    if stored == run_config:
        return
    old, new = stored.get("adapt", {}), run_config.get("adapt", {})
    differ = [k for k in new if old.get(k) != new[k]]
    shown = ", ".join(f"{k} {old.get(k)!r} there, {new[k]!r} now" for k in differ[:3]) or "the base or the montage"
    raise ConfigError(f"'{state_path.parent}' holds an interrupted adapt run with other settings ({shown}); run the "
                      "interrupted command again to continue it, or pass --restart (resume=False) to start over "
                      "with these settings")


def training_record(cfg: AdaptConfig) -> dict[str, Any]:
    """Return the ``training`` block of adapter.json: every setting of ``cfg`` and the resolved head learning rate."""
    # The probe has no learning rate: its head_lr stays unset (an adapter.json given to --config must not turn a
    # probe run into a finetune one).
    return cfg.model_dump(mode="json", exclude={"out"}) | {"head_lr": get_recipe(cfg.recipe).recorded_head_lr(
        cfg, cfg.seed)}


def finished_bundle(cfg: AdaptConfig) -> AdaptResult | None:
    """Return the finished bundle in ``cfg.out`` when it was trained with ``cfg``'s settings (a rerun: no-op).

    None when there is no finished bundle there (or an interrupted run's state, which
    ``adapt`` resumes), or when ``cfg.overwrite`` lets it be replaced. A finished bundle
    trained with other settings is never replaced silently: :class:`ConfigError` names the
    settings that differ.
    """
    from passport_kit.checkpoint import read_adapter_meta

    out = Path(cfg.out)  # type: ignore[arg-type]
    if cfg.overwrite or not (out / "adapter.json").is_file() or (out / STATE_FILE).exists():
        return None
    meta = read_adapter_meta(out)
    stored, wanted = meta.training, training_record(cfg)
    defaults = {k: f.default for k, f in AdaptConfig.model_fields.items()}
    # Bundles of the probe written before issue 27 recorded a resolved head_lr the probe never used.
    ignored = _RUN_ONLY | ({"head_lr"} if "head_lr" not in get_recipe(cfg.recipe).takes else set())
    differ = [k for k, v in wanted.items() if k not in ignored and stored.get(k, defaults.get(k)) != v]
    if differ:
        shown = ", ".join(f"{k} {stored.get(k, defaults.get(k))!r} there, {wanted[k]!r} now" for k in differ[:3])
        raise ConfigError(f"--out '{out}' already holds a finished adapter bundle trained with other settings "
                          f"({shown}{', ...' if len(differ) > 3 else ''}); choose a new --out, or pass --overwrite "
                          "(overwrite=True) to replace it")
    changed = changed_data(cfg, meta.training_data)
    if changed:
        more = f" and {len(changed) - 3} more" if len(changed) > 3 else ""
        raise ConfigError(f"--out '{out}' already holds an adapter bundle finished with these settings on other data "
                          f"({', '.join(changed[:3])}{more} changed since); pass --overwrite (overwrite=True) to train "
                          "it anew on the data as it is, or choose a new --out")
    return AdaptResult(bundle=out, metrics=meta.metrics, trainable=list(meta.tensors or []), reused=True,
                       summary=f"'{out}' already holds an adapter bundle finished with these settings; nothing to "
                               "train (pass --overwrite to train it again)")


def adapt(config: AdaptConfig | None = None, *, progress: ProgressFn | None = None,
          progress_quality: Callable[[dict[str, Any]], None] | None = None, **options: Any) -> AdaptResult:
    """Return the adapter bundle trained on a labeled dataset for one montage.

    Parameters are the fields of :class:`AdaptConfig`, given as a config or as keywords
    (``adapt(montage="eesm17-ear", data="ds", out="runs/ear")``). ``progress(step, total,
    info)`` is called after every optimisation step; ``progress_quality(summary)`` once, with
    the channel quality of every recording (:func:`~passport_kit.onboard.run.dataset_quality`) before
    training starts.
    The same summary is stored in the bundle's metrics under ``channel_quality``.
    """
    from passport_kit.montage import resolve_montage
    from passport_kit.runtime import resolve_device, resolve_precision, seed_everything, set_threads

    cfg = make_config(config, **options)
    device = resolve_device(cfg.device)
    precision = resolve_precision(cfg.precision, device)
    log.info("adapt: recipe %s on %s (%s), threads %s", cfg.recipe, device, precision, cfg.threads or "default")
    set_threads(cfg.threads)
    seed_everything(cfg.seed)

    montage = resolve_montage(cfg.montage)
    cfg.check_prior_channels(montage)
    if cfg.out is None:
        cfg = cfg.model_copy(update={"out": Path("runs") / montage.name})
    check_output_folder(cfg.out)
    # One writer per output folder (issue 28): a second adapt into it exits at once, naming this one.
    with output_lock(cfg.out, "adapt"):
        created = not cfg.out.exists()
        try:
            return _adapt_locked(cfg, device=device, precision=precision, montage=montage, progress=progress,
                                 progress_quality=progress_quality)
        except BaseException:
            if created and cfg.out.is_dir() and not any(cfg.out.iterdir()):
                cfg.out.rmdir()  # a failed first run leaves no empty folder behind
            raise


def _adapt_locked(cfg: AdaptConfig, *, device: Any, precision: Any, montage: Any, progress: ProgressFn | None,
                  progress_quality: Callable[[dict[str, Any]], None] | None) -> AdaptResult:
    """Return :func:`adapt`'s result, once it holds the lock of ``cfg.out``."""
    from passport_kit.checkpoint import load_base_checkpoint
    from passport_kit.model import trainable_summary
    from passport_kit.signals.amplitude import amplitude_profile
    from passport_kit.signals.data_hashes import dataset_hashes
    from passport_kit.signals.dataset import RecordingReader
    from passport_kit.signals.fingerprint import training_fingerprints
    from passport_kit.signals.dataset_spec import load_dataset_spec
    from passport_kit.signals.recording import with_high_pass

    finished = finished_bundle(cfg)
    if finished is not None:
        return finished
    cfg.out.mkdir(parents=True, exist_ok=True)  # an unwritable --out fails now, not after loading the data
    backbone, info = load_base_checkpoint(cfg.checkpoint)
    spec = load_dataset_spec(cfg.data)
    reader = RecordingReader(spec)
    preprocess = with_high_pass(dataset_preprocess(info, spec, instance_norm=cfg.instance_norm,
                                                   notch_freq=cfg.notch_freq, h_freq=cfg.h_freq, reader=reader),
                                cfg.l_freq, spec)
    run = prepare_run(cfg, info, montage, spec, distrust=backbone.channel_embedding.reads_activity, reader=reader,
                      preprocess=preprocess)
    windows = run.windows
    if progress_quality is not None:
        progress_quality(run.quality)
    recipe = get_recipe(cfg.recipe)
    validation = recipe.validation_fraction(cfg)  # None: the recipe cross-validates within the training subjects
    split = training_split(windows.subject[run.keep], train_subjects=cfg.train_subjects, n_subjects=cfg.subjects,
                           validation_fraction=validation, seed=cfg.seed)
    train_mask, val_mask, _ = split.masks(windows.subject)
    train_idx, val_idx = np.flatnonzero(train_mask & run.keep), np.flatnonzero(val_mask & run.keep)
    if validation is not None and not len(val_idx):  # the probe recipes say so themselves (the ladder's folds)
        warn(f"no validation subject ({len(split.train)} training subject(s) in the data): nothing selects "
             "the best step or stops the training early, and no validation score exists; add recordings "
             "of more subjects")
    # Before training (issue 46): a subject at x10 lowered the expected kappa from 0.82 to 0.51 without a word.
    amplitude_lines = subject_amplitude_warnings(run, np.concatenate([train_idx, val_idx]))
    for line in amplitude_lines:
        warn(line)

    state_path = cfg.out / STATE_FILE
    if not cfg.resume:
        state_path.unlink(missing_ok=True)
    run_config = {"adapt": cfg.model_dump(mode="json", exclude=set(_RUN_ONLY)),
                  "base_sha256": info.weights_sha256, "montage_hash": montage.content_hash}
    check_resumable(state_path, run_config)
    trained = train_once(cfg, backbone, run, train_idx, val_idx, seed=cfg.seed, where=FitRun(
        device=device, precision=precision, state_path=state_path, run_config=run_config,
        progress=naming_metric(progress, len(windows.classes))))
    model = trained.model
    from passport_kit.onboard.class_outputs import class_output_notes  # what the shipped model outputs (issue 58)

    contacts = poor_contact_counts(run.channel_mask, run.distrust, np.concatenate([train_idx, val_idx]))
    metrics = run_metrics(
        trained.fit, split, windows, train_idx, val_idx, channel_quality=run.quality, poor_contacts=contacts,
        selection=trained.selection,
        warnings=[*class_output_notes(trained.warnings, model.head, list(windows.classes)), *amplitude_lines,
                  *recording_setup_warnings(windows, spec, reader, montage, preprocess)],
        # What predict compares new recordings with, to refuse unit errors (signals/amplitude.py).
        amplitude=amplitude_profile(run.window_quality.values()),
        # What predict scores each recording against: unlike the training data -> statistics withheld.
        distribution=training_distribution(run, np.concatenate([train_idx, val_idx])),
        # What predict recognises a training recording by when it is read from another file (issue 45).
        fingerprints=training_fingerprints(windows.x, windows.recording, windows.onset_s))
    bundle = write_bundle(model, cfg, info=info, montage=montage, preprocess=run.preprocess,
                          classes=list(windows.classes), task=windows.info.get("task"), metrics=metrics,
                          training_data=dataset_hashes(run.spec))
    state_path.unlink(missing_ok=True)
    summary = recipe.fitted_summary(model, trained.selection, trainable_summary(model))
    return AdaptResult(bundle=bundle, metrics=metrics, trainable=sorted(
        n for n, p in model.named_parameters() if p.requires_grad), summary=summary)


def scored_qualities(run: Any) -> dict[str, Any] | None:
    """Return ``{recording: ChannelQuality}`` whose amplitudes describe ``run``'s data: the raw recordings' where they
    were scored, else the windows' (None: instance-normalised windows carry no amplitude)."""
    return run.raw_quality or (None if run.windows.config.instance_norm else run.window_quality)


def subject_amplitude_warnings(run: Any, rows: np.ndarray) -> list[str]:
    """Return one warning line per training subject (of ``rows``) whose amplitude is far from the other subjects'.

    Such a subject (a wrong unit or scale in its files, another amplifier) is trained on as it is,
    and loosens the bundle's amplitude profile and the distribution guard built from it.
    """
    from passport_kit.signals.amplitude import SUBJECT_RATIO_LIMIT, subject_amplitude_outliers

    scored = scored_qualities(run)
    if scored is None:
        return []
    windows = run.windows
    subject_of = dict(zip(windows.recording[rows].tolist(), windows.subject[rows].tolist()))
    return [f"training subject {subject}'s 1-40 Hz amplitude (median {median:.3g} µV) is {median / others:.2g}x that "
            f"of the other subjects ({others:.3g} µV; beyond x{SUBJECT_RATIO_LIMIT:g} either way, more than people "
            "differ): a wrong unit or scale in its recordings? It is trained on as it is and loosens the adapter's "
            "amplitude checks; fix its 'units:' in dataset.yaml, or leave it out"
            for subject, (median, others) in subject_amplitude_outliers(scored, subject_of).items()]


def _with_options_listed(function: Callable[..., Any], config: type[BaseModel]) -> None:
    """Give ``function``, which takes ``**options`` of ``config``'s fields, a signature and a docstring listing them:
    ``help(passport_kit.adapt)`` showed only ``**options`` (issue 45)."""
    import inspect

    from pydantic_core import PydanticUndefined

    signature = inspect.signature(function)
    params = [p for p in signature.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    lines = []
    for name, field in config.model_fields.items():
        default = inspect.Parameter.empty if field.default is PydanticUndefined else field.default
        params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default,
                                        annotation=field.annotation))
        lines.append(f"    {name}: {field.description or ''}".rstrip(": "))
    function.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
    listed = "\n".join(lines)
    function.__doc__ = f"{function.__doc__ or ''}\n    Options (the fields of {config.__name__}):\n\n{listed}\n"


_with_options_listed(adapt, AdaptConfig)


def recording_setup_warnings(windows: Any, spec: Any, reader: Any, montage: Any, preprocess: Any) -> list[str]:
    """Return the warning ``check`` gives when the recordings' headers (rate, prefilters, units) tell the classes apart
    (:func:`~passport_kit.onboard.confounds.header_confound`), as a list (empty: none, or a header cannot be read)."""
    from passport_kit.errors import PassportError
    from passport_kit.onboard.confounds import header_confound, recording_classes

    if len(set(recording_classes(windows).values())) < 2:  # classes vary within recordings (sleep): no header to read
        return []
    try:
        headers = {rec.file: reader.header(rec, montage) for rec in spec.recordings}
    except PassportError:  # a recording the windows were read from has a header; this is a second look only
        return []
    confound = header_confound(windows, spec, headers, preprocess)
    # adapt said nothing of what check found (issue 45): the model may have learned the setup, not the task.
    return [] if confound is None else [f"the recordings' headers differ between classes: {confound}"]


def training_distribution(run: Any, rows: np.ndarray) -> dict[str, Any] | None:
    """Return the description of the training windows ``rows`` that predict's distribution guard compares with.

    :func:`~passport_kit.signals.distribution.distribution_profile` of the windows, with the raw
    recordings' amplitudes where they were scored (else the windows', unless instance normalised);
    for sleep staging also each stage's spectrum and the training nights' stage transitions, for
    predict's checks of what the adapter says.
    """
    from passport_kit.signals.distribution import distribution_profile, transition_record

    windows = run.windows
    used = set(windows.recording[rows].tolist())
    scored = scored_qualities(run)
    qualities = None if scored is None else [q for rec, q in scored.items() if rec in used]
    sleep = {}
    if windows.info.get("task") == "sleep-staging":
        rows_sorted = np.sort(rows)
        sleep = {"stages": list(windows.classes), "labels": windows.y,
                 "transitions": transition_record(windows.classes, windows.y[rows_sorted],
                                                  windows.recording[rows_sorted], windows.onset_s[rows_sorted],
                                                  windows.config.window_seconds)}
    return distribution_profile(windows.x, list(run.montage.ch_names), top_hz=windows.config.h_freq,
                                sfreq=windows.config.sfreq, qualities=qualities, groups=windows.subject, rows=rows,
                                **sleep)


def run_metrics(result: FitResult, split: SubjectSplit, windows: Any, train_idx: np.ndarray,
                val_idx: np.ndarray, **blocks: Any) -> AdapterMetrics:
    """Return the metrics block of adapter.json: the data summary and validation scores of ``result``, and
    ``blocks``, the other fields of :class:`~passport_kit.checkpoint.adapter_metrics.AdapterMetrics` (the selection
    record, warnings, what predict's guards compare with)."""
    counts = np.bincount(windows.y[train_idx], minlength=len(windows.classes))
    return AdapterMetrics(
        train_subjects=list(split.train),
        validation_subjects=list(split.validation),
        train_windows=int(len(train_idx)),
        validation_windows=int(len(val_idx)),
        train_class_counts={c: int(n) for c, n in zip(windows.classes, counts)},
        steps=result.steps,
        best_step=result.best_step,
        stopped_early=result.stopped_early,
        seconds=round(result.seconds, 2),
        validation=result.validation,
        history=result.history,
        **blocks,
    )


def poor_contact_counts(masked: np.ndarray | None, distrusted: np.ndarray | None, rows: np.ndarray) -> dict[str, Any]:
    """Return how many of the ``rows``' channel-windows were masked and distrusted (None: that option off)."""
    counted = masked if masked is not None else distrusted
    return {"channel_windows": None if counted is None else int(len(rows) * counted.shape[1]),
            "masked": None if masked is None else int(masked[rows].sum()),
            "distrusted": None if distrusted is None else int(distrusted[rows].sum())}


def write_bundle(model: Any, cfg: AdaptConfig, *, info: Any, montage: Any, preprocess: Any,
                 classes: list[str], task: str | None, metrics: AdapterMetrics,
                 training_data: dict[str, str] | None = None) -> Path:
    """Write the adapter bundle (DESIGN.md §5) for a trained classifier; return its folder.

    ``training_data``: the content hashes of the training files (:func:`~passport_kit.signals.data_hashes.dataset_hashes`).
    """
    from passport_kit.version import __version__
    from passport_kit.checkpoint import AdapterMeta, save_adapter_bundle

    meta = AdapterMeta(
        base_name=info.name,
        base_sha256=info.weights_sha256,
        montage=montage,
        montage_hash=montage.content_hash,
        classes=classes,
        preprocessing=preprocess,
        window={"seconds": preprocess.window_seconds, "task": task or "classification"},
        training=training_record(cfg),
        training_data=training_data or {},
        metrics=metrics,
        package_version=__version__,
    )
    bundle = save_adapter_bundle(model, cfg.out, meta, overwrite=True)
    from passport_kit.reports import plot_history, write_table

    if metrics.history:  # never in adapter.json (the field is excluded there)
        write_table(Path(cfg.out) / "history.csv", metrics.history)
        plot_history(Path(cfg.out) / "history.png", metrics.history)
    return Path(bundle)


__all__ = ["AdaptConfig", "AdaptResult", "DEFAULT_CHECKPOINT", "adapt", "build_classifier", "dataset_channel_masks",
           "dataset_quality", "make_config", "training_split", "usable_windows"]
