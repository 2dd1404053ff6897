"""``adapt``: onboard a device: train the mixture adapter and a head, write an adapter bundle.

The base checkpoint's backbone and experts stay frozen; only what the freezing policy names
(``adapter``: the mixture network + head; ``head``; ``full``) is trained, with the recipe of
:mod:`passport_kit.training.finetune`. Windows are preprocessed exactly as the base checkpoint
expects (its preprocessing contract), with the dataset's window length; the contract used is
recorded in the bundle so that ``predict`` repeats it.

Example (a notebook)::

    import passport_kit as pk
    result = pk.adapt(montage="eesm17-ear", data="./eesm17", out="runs/ear", max_steps=200)
    result.bundle, result.metrics["validation"]["kappa"]
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, TypeVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from passport_kit.errors import ConfigError, DataError, PassportWarning
from passport_kit.model.heads import PROBE_LAYER
from passport_kit.training.finetune import (
    Balance,
    FinetuneSettings,
    FitResult,
    TrainPolicy,
    fit,
    near_chance,
    selection_metric,
)
from passport_kit.training.splits import SubjectSplit, subsample_training, unique_subjects, with_validation

#: The shipped Device Passport checkpoint that ``adapt`` starts from when none is named.
DEFAULT_CHECKPOINT = "passport-small-mlp"
#: Resumable state inside the output folder; removed once the bundle is written.
STATE_FILE = "adapt-state.safetensors"

_Options = TypeVar("_Options", bound=BaseModel)
#: How ``adapt`` trains (docs/onboarding.md § Recipes): the cross-validated probe, or gradient fine-tuning.
Recipe = Literal["probe", "finetune"]
#: Options only the ``finetune`` recipe uses, with their "not set" values.
FINETUNE_ONLY: dict[str, Any] = {"max_steps": None, "eval_every": None, "corrupt_prob": 0.0, "quality_gate": False,
                                 "channel_dropout": 0.0}
ProgressFn = Callable[[int, int, dict[str, Any]], None]


#: Default ``distrust_bad_channels``: the quality score under which a channel counts as bad.
#: On by default (issue 8, docs/RESULTS.md § Robustness): it changes nothing where no channel is
#: flagged, and it kept Device Passport level with or ahead of ACPE on subjects with poor contacts.
DEFAULT_DISTRUST = 0.5
#: Default ``mask_uncorrelated_channels``: the 1–40 Hz neighbour correlation under which a
#: channel is noise rather than a weak contact (where the quality score's neighbour-correlation
#: sub-score reaches 0: ``QualityThresholds.min_corr - corr_width``). Chosen in session 5 (see
#: docs/RESULTS.md): with distrust it kept Device Passport level with or ahead of ACPE on
#: subjects with poor contacts on both robustness benchmarks, and changed nothing on clean data.
DEFAULT_UNCORRELATED = 0.2


class RecipeOptions(BaseModel):
    """Options shared by ``adapt`` and ``evaluate``: what is trained, how, and on what signal."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    recipe: Recipe = Field("probe", description="'probe': a linear read-out of frozen pooled features and band "
                           "powers, regularisation chosen by cross-validation over subjects (default, issue 18); "
                           "'finetune': the paper's recipe (AdamW on the adapter and an MLP head, early stopping "
                           "on validation subjects). Not given: 'finetune' when an option only it uses is set "
                           "(FINETUNE_ONLY), else 'probe'")
    context: int | None = Field(None, ge=0, le=20, description="probe recipe: windows of temporal context on each "
                                "side of a sleep epoch; None: chosen by cross-validation among 0 and 2 for sleep "
                                "staging, 0 otherwise")
    probe_layer: int = Field(PROBE_LAYER, ge=0, description="probe recipe: the backbone layer the read-out reads "
                             "(0: the patch and channel embedding, before any criss-cross layer; the backbone's "
                             "layer count: its output)")
    probe_pooling: Literal["auto", "mean", "meanstd"] = Field("auto", description="probe recipe: pool the backbone "
                                                              "features by their mean, or mean and spread over the "
                                                              "window's patches; auto: chosen by cross-validation")
    train: TrainPolicy = "adapter"
    validation_fraction: float = Field(0.2, gt=0, lt=1)
    max_steps: int | None = Field(None, gt=0)
    epochs: int = Field(50, gt=0)
    batch_size: int = Field(64, gt=0)
    lr: float = Field(1e-4, gt=0)
    head_lr: float | None = Field(None, gt=0)
    patience: int = Field(5, ge=1)
    eval_every: int | None = Field(None, gt=0)
    balance: Balance = "weights"
    dropout: float = Field(0.1, ge=0, lt=1)
    instance_norm: bool | None = Field(None, description="None: keep the checkpoint's contract")
    notch_freq: float | None = Field(50.0, gt=0, description="mains frequency; None: no notch")
    skip_flagged: bool = True
    corrupt_prob: float = Field(0.0, ge=0, le=1, description="share of training windows given synthetic channel "
                                "faults (noise, drift, flat, line); 0 = the paper's recipe")
    quality_gate: bool = Field(False, description="expert kinds: gate each channel's code toward a learned noise "
                               "expert by its quality score")
    channel_dropout: float = Field(0.0, ge=0, le=1, description="share of training windows in which 1 to a quarter "
                                   "of the channels are replaced by the mask token")
    mask_bad_channels: float | None = Field(None, gt=0, lt=1, description="mask channels whose raw quality score is "
                                            "below this in a window, in training and at predict time; None: never")
    distrust_bad_channels: float | None = Field(DEFAULT_DISTRUST, gt=0, lt=1, description="expert kinds: channels "
                                                "whose raw quality score is below this in a window keep their "
                                                "signal, but their expert mixture reads the nearest good channel's "
                                                "activity instead of their own, in training and at predict time; "
                                                "None: never (the paper's recipe)")
    mask_uncorrelated_channels: float | None = Field(DEFAULT_UNCORRELATED, gt=0, lt=1, description="also mask a "
                                                     "channel in the windows where its 1-40 Hz correlation with its "
                                                     "neighbours is below this (its signal is noise), in training "
                                                     "and at predict time; None: never")
    device: str = "auto"
    precision: str = "auto"
    threads: int | None = Field(None, gt=0)

    @model_validator(mode="before")
    @classmethod
    def _resolve_recipe(cls, data: Any) -> Any:
        # Gradient-only options say which recipe is meant; given with an explicit 'probe' they are a mistake.
        if not isinstance(data, dict):
            return data
        given = [k for k, off in FINETUNE_ONLY.items() if data.get(k, off) != off]
        if data.get("recipe") is None:
            data = {**data, "recipe": "finetune" if given else "probe"}
        elif data["recipe"] == "probe" and given:
            raise ValueError(f"{', '.join(given)} only apply to recipe 'finetune' (gradient training); "
                             "drop them or pass --recipe finetune")
        if data["recipe"] == "finetune" and data.get("context") is not None:
            raise ValueError("context applies to recipe 'probe' only; drop it or drop the finetune options")
        for key, default in (("probe_layer", PROBE_LAYER), ("probe_pooling", "auto")):
            if data["recipe"] == "finetune" and data.get(key, default) != default:
                raise ValueError(f"{key} applies to recipe 'probe' only; drop it or drop the finetune options")
        return data

    def settings(self, seed: int) -> FinetuneSettings:
        """Return the optimisation settings of one training run with ``seed``."""
        return FinetuneSettings(
            batch_size=self.batch_size, lr=self.lr, head_lr=self.head_lr, epochs=self.epochs,
            max_steps=self.max_steps, eval_every=self.eval_every, patience=self.patience,
            balance=self.balance, corrupt_prob=self.corrupt_prob, quality_gate=self.quality_gate,
            drop_prob=self.channel_dropout, seed=seed,
        )

    def quality_masks(self, windows: Any, data: Path, *,
                      distrust: bool = True) -> tuple[np.ndarray | None, np.ndarray | None]:
        """Return the ``(N, C)`` low-quality channels of ``windows`` to mask and to distrust (None: option off).

        ``mask_bad_channels``, ``mask_uncorrelated_channels`` and ``distrust_bad_channels`` (the
        raw recordings are scored once; predict's rule, :func:`~passport_kit.inference.predict.channel_masks`);
        ``distrust=False`` (a model whose channel codes do not read channel activity:
        ``ChannelEmbedding.reads_activity``) skips the second.
        """
        distrust_below = self.distrust_bad_channels if distrust else None
        if self.mask_bad_channels is None and self.mask_uncorrelated_channels is None and distrust_below is None:
            return None, None
        return dataset_channel_masks(dataset_window_quality(windows, data), windows, mask_below=self.mask_bad_channels,
                                     distrust_below=distrust_below,
                                     mask_uncorrelated=self.mask_uncorrelated_channels)


class AdaptConfig(RecipeOptions):
    """Everything ``adapt`` needs (the CLI's options; validated, one-line errors)."""

    montage: str = Field(description="registered montage name or a montage YAML path")
    data: Path = Field(description="dataset folder (dataset.yaml or BIDS)")
    out: Path | None = Field(None, description="output folder of the adapter bundle (default runs/<montage>)")
    checkpoint: str = DEFAULT_CHECKPOINT
    subjects: int | None = Field(None, gt=0, description="train on this many subjects (seeded draw)")
    train_subjects: tuple[str, ...] | None = Field(None, description="restrict training to these subjects")
    seed: int = 0
    resume: bool = True
    overwrite: bool = Field(False, description="replace a finished adapter bundle in out trained with other settings")
    h_freq: float | None = Field(None, gt=0, description="band-pass top in Hz; None: dataset.yaml's h_freq, else the "
                                 "checkpoint's, lowered below the Nyquist frequency of recordings too slow for it")


def parse_options(model: type[_Options], command: str, config: _Options | None, options: dict[str, Any]) -> _Options:
    """Return ``model`` built from ``config`` updated with ``options``; ConfigError if invalid."""
    try:
        return model(**({**config.model_dump(), **options} if config is not None else options))
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "options"
        raise ConfigError(f"invalid {command} option {where}: {err['msg']}; fix it and retry") from None


class AdaptResult(BaseModel):
    """What ``adapt`` produced: the bundle folder and its metrics (also in adapter.json)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    bundle: Path
    metrics: dict[str, Any]
    trainable: list[str]
    summary: str
    #: True when ``out`` already held a bundle finished with the same settings: nothing was trained.
    reused: bool = False


def make_config(config: AdaptConfig | None = None, **options: Any) -> AdaptConfig:
    """Return an AdaptConfig from an existing one and/or keyword options (ConfigError if invalid)."""
    return parse_options(AdaptConfig, "adapt", config, options)


def usable_windows(windows: Any, *, skip_flagged: bool = True) -> np.ndarray:
    """Return a (N,) bool mask of windows fit for training: labeled, and not NaN/flat if asked.

    NaN and flat channels carry no signal (NaN is zeroed by preprocessing); a window with one
    is skipped. Clipped or over-limit windows are kept: poor-contact channels are part of the
    device the adapter must learn to handle, as the paper's EESM17 subjects show.
    """
    from passport_kit.signals.windows import FLAG_FLAT, FLAG_NAN

    keep = np.asarray(windows.y) >= 0
    if skip_flagged:
        bad = (np.asarray(windows.flags) & (FLAG_NAN | FLAG_FLAT)).any(axis=1)
        keep &= ~bad
    return keep


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


def training_record(cfg: AdaptConfig) -> dict[str, Any]:
    """Return the ``training`` block of adapter.json: every setting of ``cfg`` and the resolved head learning rate."""
    return cfg.model_dump(mode="json", exclude={"out"}) | {"head_lr": cfg.settings(cfg.seed).resolved_head_lr}


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
    differ = [k for k, v in wanted.items() if k not in _RUN_ONLY and stored.get(k, defaults.get(k)) != v]
    if differ:
        shown = ", ".join(f"{k} {stored.get(k, defaults.get(k))!r} there, {wanted[k]!r} now" for k in differ[:3])
        raise ConfigError(f"--out '{out}' already holds a finished adapter bundle trained with other settings "
                          f"({shown}{', ...' if len(differ) > 3 else ''}); choose a new --out, or pass --overwrite "
                          "(overwrite=True) to replace it")
    return AdaptResult(bundle=out, metrics=meta.metrics, trainable=list(meta.tensors or []), reused=True,
                       summary=f"'{out}' already holds an adapter bundle finished with these settings; nothing to "
                               "train (pass --overwrite to train it again)")


def build_classifier(backbone: Any, n_classes: int, policy: str, *, dropout: float = 0.1, recipe: Recipe = "finetune",
                     n_channels: int | None = None, probe_layer: int = PROBE_LAYER) -> Any:
    """Return a Classifier over ``backbone`` with ``policy`` applied and checked.

    The ``probe`` recipe gets a :class:`~passport_kit.model.heads.ProbeHead` over ``n_channels``
    channels reading the backbone after ``probe_layer`` criss-cross layers, ``finetune`` the
    paper's MLP head.
    """
    from passport_kit.model import Classifier, apply_policy, check_policy

    if recipe == "probe":
        n_layers = backbone.config.n_layers
        if probe_layer > n_layers:
            raise ConfigError(f"probe_layer {probe_layer} is beyond this backbone's {n_layers} layers; "
                              f"choose 0..{n_layers}")
        model = Classifier(backbone, n_classes, kind="probe", n_channels=n_channels, layer=probe_layer)
    else:
        model = Classifier(backbone, n_classes, dropout=dropout)
    apply_policy(model, policy)
    check_policy(model, policy)
    return model


def adapt(config: AdaptConfig | None = None, *, progress: ProgressFn | None = None,
          progress_quality: Callable[[dict[str, Any]], None] | None = None, **options: Any) -> AdaptResult:
    """Return the adapter bundle trained on a labeled dataset for one montage.

    Parameters are the fields of :class:`AdaptConfig`, given as a config or as keywords
    (``adapt(montage="eesm17-ear", data="ds", out="runs/ear")``). ``progress(step, total,
    info)`` is called after every optimisation step; ``progress_quality(summary)`` once, with
    the channel quality of every recording (:func:`dataset_quality`) before training starts.
    The same summary is stored in the bundle's metrics under ``channel_quality``.
    """
    from passport_kit.checkpoint import load_base_checkpoint
    from passport_kit.model import ChannelMeta, trainable_summary
    from passport_kit.montage import resolve_montage
    from passport_kit.signals import load_dataset
    from passport_kit.signals.amplitude import amplitude_profile
    from passport_kit.signals.quality import windowset_quality
    from passport_kit.runtime import resolve_device, resolve_precision, seed_everything, set_threads

    cfg = make_config(config, **options)
    device = resolve_device(cfg.device)
    precision = resolve_precision(cfg.precision, device)
    set_threads(cfg.threads)
    seed_everything(cfg.seed)

    montage = resolve_montage(cfg.montage)
    if cfg.out is None:
        cfg = cfg.model_copy(update={"out": Path("runs") / montage.name})
    check_output_folder(cfg.out)
    finished = finished_bundle(cfg)
    if finished is not None:
        return finished
    cfg.out.mkdir(parents=True, exist_ok=True)  # an unwritable --out fails now, not after loading the data
    backbone, info = load_base_checkpoint(cfg.checkpoint)
    preprocess = dataset_preprocess(info, cfg.data, instance_norm=cfg.instance_norm, notch_freq=cfg.notch_freq,
                                    h_freq=cfg.h_freq)
    windows = load_dataset(cfg.data, montage, preprocess)
    window_qualities = windowset_quality(windows)
    quality = dataset_quality(windows, window_qualities)
    if progress_quality is not None:
        progress_quality(quality)
    keep = usable_windows(windows, skip_flagged=cfg.skip_flagged)
    split = training_split(windows.subject[keep], train_subjects=cfg.train_subjects, n_subjects=cfg.subjects,
                           validation_fraction=None if cfg.recipe == "probe" else cfg.validation_fraction,
                           seed=cfg.seed)
    train_mask, val_mask, _ = split.masks(windows.subject)
    train_idx, val_idx = np.flatnonzero(train_mask & keep), np.flatnonzero(val_mask & keep)
    if cfg.recipe == "finetune" and not len(val_idx):  # the probe recipe says so itself (fit_probe)
        warnings.warn(f"no validation subject ({len(split.train)} training subject(s) in the data): nothing selects "
                      "the best step or stops the training early, and no validation score exists; add recordings "
                      "of more subjects", PassportWarning, stacklevel=2)

    model = build_classifier(backbone, len(windows.classes), cfg.train, dropout=cfg.dropout, recipe=cfg.recipe,
                             n_channels=len(montage.channels), probe_layer=cfg.probe_layer)
    meta = ChannelMeta.from_montage(montage)
    cfg.out.mkdir(parents=True, exist_ok=True)
    state_path = cfg.out / STATE_FILE
    if not cfg.resume:
        state_path.unlink(missing_ok=True)
    channel_mask, distrust = cfg.quality_masks(windows, cfg.data,
                                               distrust=backbone.channel_embedding.reads_activity)
    run_config = {"adapt": cfg.model_dump(mode="json", exclude={"resume", "device", "threads"}),
                  "base_sha256": info.weights_sha256, "montage_hash": montage.content_hash}
    result, selection, notes = train_classifier(
        cfg, model, windows, meta, train_idx, val_idx, seed=cfg.seed, device=device, precision=precision,
        state_path=state_path, run_config=run_config, progress=progress, channel_mask=channel_mask, distrust=distrust)
    contacts = poor_contact_counts(channel_mask, distrust, np.concatenate([train_idx, val_idx]))
    metrics = run_metrics(result, split, windows, train_idx, val_idx) | {"channel_quality": quality,
                                                                         "poor_contacts": contacts,
                                                                         "selection": selection, "warnings": notes}
    # What predict compares new recordings with, to refuse unit errors (signals/amplitude.py).
    metrics["amplitude"] = amplitude_profile(window_qualities.values())
    bundle = write_bundle(model, cfg, info=info, montage=montage, preprocess=preprocess,
                          classes=list(windows.classes), task=windows.info.get("task"), metrics=metrics)
    state_path.unlink(missing_ok=True)
    summary = trainable_summary(model)
    if cfg.recipe == "probe":  # the policy's tensors are stored, but only the read-out was fitted
        fitted = sum(p.numel() for p in model.head.parameters())
        summary = (f"fitted: the read-out head.linear ({fitted:,} params); backbone, experts and mixture adapter as "
                   f"pretrained (stored with it: {summary})")
    return AdaptResult(bundle=bundle, metrics=metrics, trainable=sorted(
        n for n, p in model.named_parameters() if p.requires_grad), summary=summary)


def train_classifier(
    cfg: RecipeOptions, model: Any, windows: Any, meta: Any, train_idx: np.ndarray, val_idx: np.ndarray, *, seed: int,
    device: Any, precision: Any, state_path: Path | None = None, run_config: dict[str, Any] | None = None,
    progress: ProgressFn | None = None, channel_mask: np.ndarray | None = None, distrust: np.ndarray | None = None,
) -> tuple[FitResult, dict[str, Any], list[str]]:
    """Return the fit of ``model`` by ``cfg.recipe``, its selection block and the warnings for the user.

    The one training step of ``adapt`` and ``evaluate``. ``probe``: the head is fitted on the
    training and validation rows together, selecting by cross-validation over their subjects
    (:func:`~passport_kit.training.probe.fit_probe`); ``finetune``: gradient steps on the
    training rows, selection on the validation rows (:func:`~passport_kit.training.finetune.fit`).
    """
    from passport_kit.training.probe import CONTEXTS, POOLINGS, class_warnings, fit_probe, probe_summary

    classes = list(windows.classes)
    if cfg.recipe == "probe":
        rows = np.sort(np.concatenate([train_idx, val_idx]))
        # Temporal context only where windows are consecutive epochs of a night (sleep staging).
        sleep = windows.info.get("task") == "sleep-staging"
        contexts = (cfg.context,) if cfg.context is not None else CONTEXTS if sleep else (0,)
        probe = fit_probe(model, windows.x, windows.y, meta, classes, rows, windows.subject, seed=seed,
                          batch_size=max(cfg.batch_size, 64), device=device, channel_mask=channel_mask,
                          distrust=distrust, recordings=windows.recording, contexts=contexts,
                          poolings=POOLINGS if cfg.probe_pooling == "auto" else (cfg.probe_pooling,))
        if progress is not None:
            progress(1, 1, {} if probe.selection_score is None else {"val": probe.selection_score})
        result = FitResult(best_step=0, steps=0, best_score=probe.selection_score, validation=probe.validation,
                           seconds=probe.seconds)
        return result, probe_summary(probe), probe.warnings
    result = fit(
        model, windows.x, windows.y, meta, classes, cfg.settings(seed), train_index=train_idx, val_index=val_idx,
        device=device, precision=precision, state_path=state_path, run_config=run_config, progress=progress,
        channel_mask=channel_mask, distrust=distrust,
    )
    metric = selection_metric(len(classes))
    n_val = len(unique_subjects(windows.subject[val_idx])) if len(val_idx) else 0
    notes = class_warnings(np.asarray(windows.y)[train_idx], classes)
    if n_val < 2:
        notes.append(f"{n_val} validation subject(s): the kept state was chosen on "
                     f"{len(val_idx)} windows of one person or none; its score says little")
    if result.best_score is not None and near_chance(result.best_score, metric):
        notes.append(f"validation {metric} {result.best_score:.3f} is near chance")
    selection = {"recipe": "finetune", "metric": metric,
                 "score": None if result.best_score is None else round(result.best_score, 4),
                 "method": f"best of every evaluation on {n_val} validation subject(s)", "best_step": result.best_step}
    return result, selection, notes


def dataset_quality(windows: Any, qualities: dict[str, Any] | None = None) -> dict[str, Any]:
    """Return the channel quality of every recording of a WindowSet, per recording with its subject.

    ``qualities``: the :func:`~passport_kit.signals.quality.windowset_quality` of ``windows``
    when already computed.

    Scored from the preprocessed windows (flat, variance against the other channels, variance
    against the channel's own typical window, neighbour correlation; line noise and drift were
    filtered away, and instance normalisation leaves only flatness and correlation):
    :func:`passport_kit.signals.quality.windowset_quality`.
    """
    from passport_kit.signals.quality import quality_summary, windowset_quality

    subjects = dict(zip(windows.recording.tolist(), windows.subject.tolist()))
    return quality_summary(qualities if qualities is not None else windowset_quality(windows), subjects)


def dataset_channel_masks(qualities: dict[str, Any], windows: Any, *, mask_below: float | None = None,
                          distrust_below: float | None = None,
                          mask_uncorrelated: float | None = None) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Return the ``(N, C)`` channels of ``windows`` to mask and to distrust (None: option off).

    ``qualities`` from :func:`dataset_window_quality`; per recording, predict's rule
    (:func:`passport_kit.inference.predict.channel_masks`), so a model is trained the way it is used.
    """
    from passport_kit.inference.predict import channel_masks

    out: list[np.ndarray | None] = [None, None]
    for name, quality in qualities.items():
        rows = np.flatnonzero(windows.recording == name)
        parts = channel_masks(quality, windows.onset_s[rows], windows.config.window_seconds, mask_below=mask_below,
                              distrust_below=distrust_below, mask_uncorrelated=mask_uncorrelated)
        for k, part in enumerate(parts):
            if part is not None:
                if out[k] is None:
                    out[k] = np.zeros(windows.flags.shape, dtype=bool)
                out[k][rows] = part  # type: ignore[index]
    return out[0], out[1]


def dataset_window_quality(windows: Any, data: Path) -> dict[str, Any]:
    """Return the raw-recording :class:`~passport_kit.signals.quality.ChannelQuality` of every recording of ``windows``.

    By file name; :func:`passport_kit.signals.quality.recording_quality` of the unfiltered
    file, as ``predict`` scores it. Reads every recording of the dataset folder ``data`` once more.
    """
    from passport_kit.signals.dataset_spec import load_dataset_spec
    from passport_kit.signals.quality import recording_quality

    spec = load_dataset_spec(data)
    recordings = {rec.file: rec for rec in spec.recordings}
    qualities = {}
    for name in dict.fromkeys(windows.recording.tolist()):
        rec = recordings[name]
        q = recording_quality(spec.path_of(rec.file), windows.montage, renames=rec.channels or None, sfreq=rec.sfreq,
                              window_seconds=windows.config.window_seconds, mains_freq=windows.config.notch_freq,
                              bids=spec.origin == "bids")
        qualities[name] = q
    return qualities


#: Mains frequencies (Hz); a notch elsewhere is almost certainly a typo.
MAINS_HZ = (50.0, 60.0)


def dataset_preprocess(info: Any, data: Path, *, instance_norm: bool | None = None,
                       notch_freq: float | None | str = "keep", h_freq: float | None = None) -> Any:
    """Return the preprocessing of a run: the checkpoint's contract, the dataset's window length.

    The dataset folder decides the window (30-s sleep epochs, N-s windows), the checkpoint
    everything about the signal (rate, filters, units). ``instance_norm`` overrides the
    checkpoint's choice when given (the paper normalises ear-EEG per window); ``notch_freq``
    is the mains frequency of the recording site (``None``: no notch; ``"keep"``: default).
    ``h_freq`` (Hz), else dataset.yaml's ``h_freq``, replaces the checkpoint's band-pass top;
    with neither, a top that the most slowly sampled recording cannot carry is lowered below
    its Nyquist frequency (:func:`~passport_kit.signals.preprocess.fit_band_to_rate`), with a
    :class:`~passport_kit.errors.PassportWarning`; the model's 200 Hz input stays.
    """
    from passport_kit.signals import PreprocessConfig
    from passport_kit.signals.dataset import fit_band_to_dataset
    from passport_kit.signals.dataset_spec import load_dataset_spec

    fields = PreprocessConfig.model_fields
    # The checkpoint's contract also documents things PreprocessConfig does not set (units,
    # patch length); keep the settings it shares with PreprocessConfig.
    contract = {k: v for k, v in dict(info.preprocessing).items() if k in fields}
    spec = load_dataset_spec(data)
    if spec.window_seconds is not None:
        contract["window_seconds"] = spec.window_seconds
    if instance_norm is not None:
        contract["instance_norm"] = instance_norm
    if notch_freq != "keep":
        contract["notch_freq"] = notch_freq
        if notch_freq is not None and notch_freq not in MAINS_HZ:
            warnings.warn(f"notch at {notch_freq:g} Hz: mains power is {' or '.join(f'{f:g}' for f in MAINS_HZ)} Hz "
                          f"everywhere, so this notch removes EEG at {notch_freq:g} Hz and leaves the hum; use "
                          "--notch 50 (Europe, Asia, Africa, Australia) or 60 (the Americas), or 'none'",
                          PassportWarning, stacklevel=2)
    h_freq = h_freq if h_freq is not None else spec.h_freq
    if h_freq is not None:
        contract["h_freq"] = h_freq
    config = PreprocessConfig.from_dict(contract)
    return fit_band_to_dataset(config, spec) if h_freq is None else config


def run_metrics(result: FitResult, split: SubjectSplit, windows: Any, train_idx: np.ndarray,
                 val_idx: np.ndarray) -> dict[str, Any]:
    """Return the metrics block of adapter.json: data summary, selection and validation scores."""
    counts = np.bincount(windows.y[train_idx], minlength=len(windows.classes))
    return {
        "train_subjects": list(split.train),
        "validation_subjects": list(split.validation),
        "train_windows": int(len(train_idx)),
        "validation_windows": int(len(val_idx)),
        "train_class_counts": {c: int(n) for c, n in zip(windows.classes, counts)},
        "steps": result.steps,
        "best_step": result.best_step,
        "stopped_early": result.stopped_early,
        "seconds": round(result.seconds, 2),
        "validation": result.validation.model_dump() if result.validation else None,
        "history": result.history,
    }


def poor_contact_counts(masked: np.ndarray | None, distrusted: np.ndarray | None, rows: np.ndarray) -> dict[str, Any]:
    """Return how many of the ``rows``' channel-windows were masked and distrusted (None: that option off)."""
    counted = masked if masked is not None else distrusted
    return {"channel_windows": None if counted is None else int(len(rows) * counted.shape[1]),
            "masked": None if masked is None else int(masked[rows].sum()),
            "distrusted": None if distrusted is None else int(distrusted[rows].sum())}


def write_bundle(model: Any, cfg: AdaptConfig, *, info: Any, montage: Any, preprocess: Any,
                 classes: list[str], task: str | None, metrics: dict[str, Any]) -> Path:
    """Write the adapter bundle (DESIGN.md §5) for a trained classifier; return its folder."""
    from passport_kit import __version__
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
        metrics={k: v for k, v in metrics.items() if k != "history"},
        package_version=__version__,
    )
    bundle = save_adapter_bundle(model, cfg.out, meta, overwrite=True)
    from passport_kit.inference.reports import plot_history, write_table

    if metrics.get("history"):
        write_table(Path(cfg.out) / "history.csv", metrics["history"])
        plot_history(Path(cfg.out) / "history.png", metrics["history"])
    return Path(bundle)


__all__ = ["AdaptConfig", "AdaptResult", "DEFAULT_CHECKPOINT", "adapt", "build_classifier", "dataset_channel_masks",
           "dataset_quality", "dataset_window_quality", "make_config",
           "training_split", "usable_windows"]
