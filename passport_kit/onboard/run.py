"""One run from its parts: :func:`prepare_run` (the data) and :func:`train_once` (one model), shared by every command.

``adapt``, ``evaluate`` and ``check`` assemble a run the same way, here:

1. the dataset spec is parsed once (:func:`~passport_kit.signals.load_dataset_spec`);
2. the preprocessing is the checkpoint's contract with the dataset's window
   (:func:`dataset_preprocess`), its band fitted to the slowest recording, whose header is
   read by a :class:`~passport_kit.signals.dataset.RecordingReader` that keeps it open;
   a data set without labels is refused there, from the spec and those headers
   (:func:`~passport_kit.signals.dataset.missing_labels`);
3. every recording is read **once**: windows, flags and, when a contact option needs them,
   the raw-recording quality scores come from the same pass
   (:func:`~passport_kit.signals.load_dataset` with ``raw_quality=True``; a cached recording
   is read only for its quality);
4. the masked and distrusted channel-windows follow predict's rule
   (:func:`~passport_kit.contacts.channel_masks`), so a model is trained the way it is used.

:func:`train_once` builds a classifier over a backbone (rows for a ``channel-id`` table's
unseen channels added first) and fits it by the recipe (:mod:`passport_kit.onboard.recipes`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from passport_kit.checkpoint.adapter_metrics import Selection
from passport_kit.contacts import channel_masks
from passport_kit.errors import DataError, LabelError
from passport_kit.model import ChannelMeta, Classifier, apply_policy, check_policy
from passport_kit.model.heads import PROBE_LAYER
from passport_kit.model.spectral import STANDARD_BANDS, carried_bands
from passport_kit.signals import PreprocessConfig, WindowSet, load_dataset
from passport_kit.signals.dataset import RecordingReader, lowest_sampling_rate, missing_labels
from passport_kit.signals.dataset_spec import DatasetSpec, load_dataset_spec
from passport_kit.signals.quality import ChannelQuality, quality_summary, windowset_quality
from passport_kit.signals.recording import KEEP, fit_preprocessing
from passport_kit.signals.windows import FLAG_FLAT, FLAG_NAN
from passport_kit.onboard.fitting import FitData, FitResult, FitRun
from passport_kit.onboard.recipe import ProgressFn, Recipe, RecipeOptions
from passport_kit.onboard.recipes import FitJob, get_recipe


@dataclass
class RunData:
    """Return-value object of :func:`prepare_run`: everything a run knows about its data, read once.

    ``windows`` ``(N, C, P, 200)`` with labels, subjects and flags; ``keep`` ``(N,)`` the windows
    fit for training (:func:`usable_windows`); ``channel_mask`` / ``distrust`` ``(N, C)`` the
    poor contacts to mask / to distrust (None: that option off). ``raw_quality``: per recording,
    the raw-recording :class:`~passport_kit.signals.quality.ChannelQuality` (None when no
    contact option asked for it).
    """

    spec: DatasetSpec
    montage: Any
    preprocess: PreprocessConfig
    windows: WindowSet
    keep: np.ndarray
    channel_mask: np.ndarray | None = None
    distrust: np.ndarray | None = None

    @property
    def raw_quality(self) -> dict[str, ChannelQuality] | None:
        """Return ``{recording: ChannelQuality}`` of the raw recordings (None: not scored)."""
        return self.windows.raw_quality

    @cached_property
    def window_quality(self) -> dict[str, ChannelQuality]:
        """Return ``{recording: ChannelQuality}`` scored from the preprocessed windows (computed on first use)."""
        return windowset_quality(self.windows)

    @cached_property
    def quality(self) -> dict[str, Any]:
        """Return the per-recording channel quality summary (:func:`dataset_quality`) of the windows."""
        return dataset_quality(self.windows, self.window_quality)

    @cached_property
    def meta(self) -> ChannelMeta:
        """Return the channel metadata of the run's montage, as the model reads it."""
        return ChannelMeta.from_montage(self.montage)


def prepare_run(options: RecipeOptions, info: Any, montage: Any, data: Path | DatasetSpec, *,
                distrust: bool = True, h_freq: float | None = None, reader: RecordingReader | None = None,
                preprocess: PreprocessConfig | None = None) -> RunData:
    """Return the data of one run: spec, preprocessing, windows, usable rows and poor contacts, each recording read once.

    ``options`` gives the signal settings (``instance_norm``, ``notch_freq``), ``skip_flagged``
    and the contact thresholds (``mask_bad_channels``, ``mask_uncorrelated_channels``,
    ``distrust_bad_channels``); ``info`` is the base checkpoint's (its preprocessing
    contract); ``distrust=False`` (a model whose channel codes do not read channel activity:
    ``ChannelEmbedding.reads_activity``) skips the distrusted channels; ``h_freq`` as
    :func:`dataset_preprocess`'s. A caller that already parsed the spec, opened recordings for
    their rates or chose the preprocessing passes them (``data`` as a spec, ``reader``,
    ``preprocess``), so nothing is parsed or opened twice.
    """
    spec = data if isinstance(data, DatasetSpec) else load_dataset_spec(data)
    reader = reader or RecordingReader(spec)
    if preprocess is None:
        preprocess = dataset_preprocess(info, spec, instance_norm=options.instance_norm,
                                        notch_freq=options.notch_freq, h_freq=h_freq, reader=reader)
    unlabelled = missing_labels(spec, reader)
    if unlabelled:  # before the read of every recording, not as an empty class list after it (issue 49)
        raise LabelError(unlabelled)
    policy = options.for_model(distrust)
    windows = load_dataset(spec, montage, preprocess, raw_quality=policy.scores_needed, reader=reader)
    masked = distrusted = None
    if policy.scores_needed:
        masked, distrusted = dataset_channel_masks(windows.raw_quality or {}, windows,
                                                   mask_below=policy.mask_bad_channels,
                                                   distrust_below=policy.distrust_bad_channels,
                                                   mask_uncorrelated=policy.mask_uncorrelated_channels)
    return RunData(spec=spec, montage=montage, preprocess=preprocess, windows=windows,
                   keep=usable_windows(windows, skip_flagged=options.skip_flagged), channel_mask=masked,
                   distrust=distrusted)


@dataclass
class TrainedRun:
    """Return-value object of :func:`train_once`: the trained classifier, its fit, selection and warnings."""

    model: Any
    fit: FitResult
    selection: Selection
    warnings: list[str]
    #: The probe recipe's band-power read-out (backbone weight 0), fitted on the same rows: the reference
    #: ``evaluate`` scores next to the model (None for the finetune recipe).
    bandpower_head: Any = None


def train_once(options: RecipeOptions, backbone: Any, run: RunData, train_idx: np.ndarray, val_idx: np.ndarray, *,
               seed: int, where: FitRun) -> TrainedRun:
    """Return a classifier over ``backbone`` built for ``run`` and trained by ``options.recipe`` on its rows.

    The one model step of ``adapt`` and ``evaluate``: a ``channel-id`` table gets freshly
    initialised rows for the montage's channels it has never seen (no-op for other kinds),
    the classifier is built under ``options.train`` (:func:`build_classifier`) and fitted
    by the recipe (:meth:`~passport_kit.onboard.recipes.Recipe.fit`) where ``where`` says (device,
    precision, resumable state, progress). ``backbone`` is changed in place: pass a copy to keep it.
    """
    backbone.add_channels(run.meta.names)
    model = build_classifier(backbone, len(run.windows.classes), options.train, dropout=options.dropout,
                             recipe=options.recipe, n_channels=len(run.meta.names), probe_layer=options.probe_layer,
                             bands=carried_bands(run.preprocess.h_freq))
    # On the fit's device from the start: the ladder's read-outs run the backbone where ``where`` says, before any
    # gradient step would move it (``adapt --device cuda`` failed in the backbone rung with the model on the CPU).
    model.to(where.device)
    windows = run.windows
    data = FitData(windows.x, windows.y, run.meta, list(windows.classes), channel_mask=run.channel_mask,
                   distrust=run.distrust)
    job = FitJob(windows, data, where, train_idx, val_idx, seed)
    fitted = get_recipe(options.recipe).fit(options, model, job)
    return TrainedRun(model=model, fit=fitted.result, selection=fitted.selection, warnings=fitted.warnings,
                      bandpower_head=fitted.bandpower_head)


def usable_windows(windows: Any, *, skip_flagged: bool = True) -> np.ndarray:
    """Return a (N,) bool mask of windows fit for training: labeled, and not NaN/flat if asked.

    NaN and flat channels carry no signal (NaN is zeroed by preprocessing); a window with one
    is skipped. Clipped or over-limit windows are kept: poor-contact channels are part of the
    device the adapter must learn to handle, as the paper's EESM17 subjects show.
    """
    keep = np.asarray(windows.y) >= 0
    if skip_flagged:
        dead = (np.asarray(windows.flags) & (FLAG_NAN | FLAG_FLAT)) != 0
        bad = dead.any(axis=1)
        if keep.any() and not (keep & ~bad).any():
            # Issue 46: this read "no labeled training windows; check the labels" - the labels were fine.
            labeled = dead[keep]
            always = [str(n) for n, d in zip(windows.montage.ch_names, labeled.all(axis=0)) if d]
            which = f" ({', '.join(always[:4])} in every one)" if always else ""
            raise DataError(f"every labeled window has a flat or NaN channel{which}, and such windows are skipped; "
                            "fix that channel's contact or leave it out of the montage, or train on them with "
                            "skip_flagged: false in a run file (--config)")
        keep &= ~bad
    return keep


def build_classifier(backbone: Any, n_classes: int, policy: str, *, dropout: float = 0.1, recipe: Recipe = "finetune",
                     n_channels: int | None = None, probe_layer: int = PROBE_LAYER,
                     bands: tuple[tuple[float, float], ...] = STANDARD_BANDS) -> Any:
    """Return a Classifier over ``backbone`` with the head of ``recipe`` and ``policy`` applied and checked.

    The probe recipes get a :class:`~passport_kit.model.heads.ProbeHead` over ``n_channels``
    channels reading the backbone after ``probe_layer`` criss-cross layers and the log absolute
    and relative power of each channel in ``bands`` (Hz: the standard bands the data carries,
    :func:`~passport_kit.model.spectral.carried_bands`); ``finetune`` the paper's MLP head.
    """
    head = get_recipe(recipe).head_options(n_channels=n_channels, dropout=dropout, probe_layer=probe_layer,
                                           bands=bands)
    model = Classifier(backbone, n_classes, **head)
    apply_policy(model, policy)
    check_policy(model, policy)
    return model


def dataset_quality(windows: Any, qualities: dict[str, Any] | None = None) -> dict[str, Any]:
    """Return the channel quality of every recording of a WindowSet, per recording with its subject.

    ``qualities``: the :func:`~passport_kit.signals.quality.windowset_quality` of ``windows``
    when already computed.

    Scored from the preprocessed windows (flat, variance against the other channels, variance
    against the channel's own typical window, neighbour correlation; line noise and drift were
    filtered away, and instance normalisation leaves only flatness and correlation):
    :func:`passport_kit.signals.quality.windowset_quality`.
    """
    subjects = dict(zip(windows.recording.tolist(), windows.subject.tolist()))
    return quality_summary(qualities if qualities is not None else windowset_quality(windows), subjects)


def dataset_channel_masks(qualities: dict[str, Any], windows: Any, *, mask_below: float | None = None,
                          distrust_below: float | None = None,
                          mask_uncorrelated: float | None = None) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Return the ``(N, C)`` channels of ``windows`` to mask and to distrust (None: option off).

    ``qualities``: the raw-recording quality per recording (``WindowSet.raw_quality``); per recording, predict's rule
    (:func:`passport_kit.contacts.channel_masks`), so a model is trained the way it is used.
    """
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


def dataset_preprocess(info: Any, data: Path | DatasetSpec, *, instance_norm: bool | None = None,
                       notch_freq: float | None | str = KEEP, h_freq: float | None = None,
                       reader: RecordingReader | None = None) -> PreprocessConfig:
    """Return the preprocessing of a run: the checkpoint's contract fitted to the dataset.

    :func:`~passport_kit.signals.recording.fit_preprocessing` (the rule of predict and pretrain
    too) with the dataset's window, ``h_freq`` (else dataset.yaml's) and its most slowly sampled
    recording; ``data``: the dataset folder or its parsed spec; ``reader`` keeps the recordings
    opened for their rates, for :func:`~passport_kit.signals.load_dataset`.
    """
    spec = data if isinstance(data, DatasetSpec) else load_dataset_spec(data)
    return fit_preprocessing(info.preprocessing, rate=lambda: lowest_sampling_rate(spec, reader),
                             window_seconds=spec.window_seconds, instance_norm=instance_norm, notch_freq=notch_freq,
                             h_freq=h_freq if h_freq is not None else spec.h_freq)


__all__ = ["RunData", "TrainedRun", "build_classifier", "dataset_channel_masks", "dataset_preprocess", "dataset_quality",
           "prepare_run", "train_once", "usable_windows"]
