"""One recording through an adapter: the bundle loaded once, the recording read once (the next one read ahead),
its windows classified, and its folder of reports written whole.

:func:`load_for_prediction` loads the bundle (model on its device, montage, preprocessing,
contact policy); :func:`read_for_prediction` reads one recording as the bundle's
preprocessing says, and :func:`prefetched` reads the next in a thread meanwhile;
:func:`predict_recording` runs the model over its windows (:func:`window_probabilities`: the
contact policy's masks, dead channels, a sleep prior where the head stacks one) and writes its
night report (:mod:`passport_kit.inference.night_report`).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from passport_kit.checkpoint.adapter_metrics import LadderSelection, Selection
from passport_kit.contacts import ContactPolicy
from passport_kit.engine.forward import predict_proba
from passport_kit.errors import ChannelMappingError
from passport_kit.inference.files import write_folder_whole
from passport_kit.inference.night_report import (
    AdapterFacts,
    ChannelMasks,
    PredictionResult,
    band_too_narrow,
    distribution_verdict,
    import_plotting_soon,
    TrainingChecks,
    stages_night,
    write_prediction,
)
from passport_kit.inference.options import ContactOptions, OutputOptions, ReadOptions, RunOptions, ScorerFiles
from passport_kit.signals.dead_channels import DeadChannels, dead_channel_windows
from passport_kit.signals.recording import RecordingWindows, fit_preprocessing, read_windows
from passport_kit.sleep.hypnogram import is_sleep_staging

#: What a scorer reads a recording as (:func:`prefetched` hands it on as it is).
Night = TypeVar("Night")


@dataclass(frozen=True)
class LoadedAdapter:
    """An adapter bundle loaded for prediction: its model on the device, and what reading and the reports need."""

    model: Any                    # the Classifier, on ``device``
    meta: Any                     # its AdapterMeta (adapter.json)
    montage: Any                  # the bundle's own copy of the montage
    config: Any                   # the PreprocessConfig it was trained with
    channel_meta: Any             # ChannelMeta of the montage
    policy: ContactPolicy         # the contact policy applied
    facts: AdapterFacts           # what the reports say about it
    device: Any
    precision: Any


def load_for_prediction(adapter: str | Path, contacts: ContactOptions, run: RunOptions) -> LoadedAdapter:
    """Return the bundle ``adapter`` loaded (on ``run.base`` where given), its model on ``run``'s device, with the
    contact policy of ``contacts`` and what the reports say about it."""
    from passport_kit.checkpoint import load_adapter_bundle
    from passport_kit.model import ChannelMeta
    from passport_kit.montage import Montage
    from passport_kit.runtime import resolve_device, resolve_precision, set_threads
    from passport_kit.signals import PreprocessConfig

    model, meta = load_adapter_bundle(adapter, base=run.base)
    policy = contacts.policy(meta.training, adapter=adapter,
                             reads_activity=model.backbone.channel_embedding.reads_activity)
    montage = Montage.from_dict(meta.montage)
    config = PreprocessConfig.from_dict(meta.preprocessing)
    device = resolve_device(run.device)
    precision = resolve_precision(run.precision, device)
    set_threads(None)  # torch's own choice, logged (--verbose) as adapt and evaluate log theirs
    model.to(device)
    _warn_if_skewed(model.head, meta.metrics.selection, adapter)
    untrained, silent = class_outputs(model.head, list(meta.classes), meta.metrics.train_class_counts)
    facts = AdapterFacts(classes=list(meta.classes), window_seconds=config.window_seconds,
                         task=str(meta.window.get("task", "")), adapter=Path(adapter), base_name=meta.base_name,
                         not_learned=silent, untrained=untrained)
    return LoadedAdapter(model=model, meta=meta, montage=montage, config=config,
                         channel_meta=ChannelMeta.from_montage(montage), policy=policy, facts=facts, device=device,
                         precision=precision)


def _warn_if_skewed(head: Any, selection: Selection | None, adapter: str | Path) -> None:
    """Warn where a bundle written before issue 55 runs another model than adapt scored: a read-out fitted around the
    stager with per-night scaling, whose head scales the stager's block per night (its fit had it unscaled)."""
    import warnings

    from passport_kit.errors import PassportWarning

    if (getattr(head, "n_prior", 0) and getattr(head, "scaling", "none") == "recording"
            and getattr(head, "scales_prior", False) and isinstance(selection, LadderSelection)
            and selection.offset is True):
        warnings.warn(PassportWarning(
            f"adapter '{adapter}' was written by a passport-kit whose per-night scaled read-outs around the sleep "
            "stager ran another model than adapt scored (far below the stager on real nights); re-run adapt with "
            "this version to get the model it selected"), stacklevel=2)


def class_outputs(head: Any, classes: list[str], train_counts: dict[str, int] | None
                  ) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Return ``(untrained, silent)``: the classes without a training window, and those the shipped model cannot output.

    A class without a training window is output only where a stacked sleep stager reaches it
    (:meth:`~passport_kit.model.heads.Head.stager_classes`; issue 58: a stager shipped as it is outputs REM though
    the training nights had none); the others the model cannot output.
    """
    untrained = tuple(c for c, n in (train_counts or {}).items() if n == 0)
    reached = {classes[k] for k in head.stager_classes()}
    return untrained, tuple(c for c in untrained if c not in reached)


def read_night(path: Path, loaded: LoadedAdapter, reading: ReadOptions, memory: dict[Path, Any]) -> RecordingWindows:
    """Return recording ``path`` read for ``loaded`` (:func:`read_for_prediction`), from ``memory`` where it is there."""
    return read_for_prediction(path, loaded.montage, loaded.config, reading,
                               amplitude=loaded.meta.metrics.amplitude, raw=raw_in_memory(path, memory, reading),
                               stager_rates=head_stager_rates(loaded.model.head))


def raw_in_memory(path: Path, memory: dict[Path, Any], reading: ReadOptions) -> Any:
    """Return recording ``path`` as an MNE Raw when it was given in memory (``reading``'s corrections), else None."""
    if path not in memory:
        return None
    from passport_kit.signals.readers import raw_from_memory

    return raw_from_memory(memory[path], units=reading.units, scale=reading.scale, sfreq=reading.sfreq)


def read_for_prediction(path: Path, montage: Any, config: Any, reading: ReadOptions = ReadOptions(), *,
                        amplitude: dict[str, Any] | None = None, raw: Any = None,
                        stager_rates: tuple[float, ...] = ()) -> RecordingWindows:
    """Return one recording read, mapped and preprocessed once, with its quality scored from the same samples.

    Open the file (header), fit the bundle's preprocessing ``config`` to its rate
    (:func:`~passport_kit.signals.recording.fit_preprocessing`, the rule of adapt), read its
    windows and raw quality side by side (:func:`~passport_kit.signals.recording.read_windows`,
    the path of ``load_dataset``); last, refuse an implausible amplitude against the bundle's
    profile ``amplitude`` (:func:`~passport_kit.signals.amplitude.check_amplitude`;
    ``reading.amplitude_check=False`` skips it). Nothing is cached: the file is opened once per
    call. ``reading``: renames, the header's corrections (``sfreq``, ``units``, ``scale``: as
    :func:`~passport_kit.signals.readers.read_recording`) and the band top ``h_freq``; ``raw``:
    the recording already in memory (an MNE Raw in volts; ``path`` then only names it);
    ``stager_rates``: the rates of the sleep stagers that read it (what they read is kept beside
    the windows, ``RecordingWindows.stager``).
    """
    from passport_kit.signals import read_recording
    from passport_kit.signals.amplitude import check_amplitude

    source = f"recording '{path}'"
    if raw is None:
        raw = read_recording(path, sfreq=reading.sfreq, units=reading.units, scale=reading.scale)
    rec_config = fit_preprocessing(config, rate=lambda: (float(raw.info["sfreq"]), str(path)), h_freq=reading.h_freq,
                                   advice=f"; the adapter was trained with the band up to {config.h_freq:g} Hz, so "
                                          "expect less reliable predictions (adapt on recordings at this rate for "
                                          "the best)")
    try:
        night = read_windows(raw, montage, rec_config, renames=reading.renames, quality=True, source=source,
                             name=str(path), stager_rates=stager_rates)
    except ChannelMappingError as exc:
        if not exc.missing:
            raise
        # predict reads no dataset.yaml and uses the bundle's montage: advise what works here.
        n_montage = len(montage.ch_names)
        if len(exc.missing) >= 3 and len(exc.missing) > n_montage / 2:
            # Most of the montage absent is another device, not names to map one by one (issue 45: 19 --renames
            # suggested for a one-channel recording).
            raise ChannelMappingError(
                f"recording '{path}' lacks {len(exc.missing)} of the {n_montage} channels of the adapter's montage "
                f"'{montage.name}' ({', '.join(exc.missing[:4])}{', ...' if len(exc.missing) > 4 else ''}): it is "
                f"probably from another device or montage; use an adapter trained on this device (adapt --montage "
                f"<its montage>), or map names that differ with --rename CHANNEL='<name in file>'",
                missing=exc.missing, detail=exc.detail) from None
        raise ChannelMappingError(f"{exc.detail}; map them with --rename {exc.missing[0]}='<name in file>' "
                                  f"(renames={{'{exc.missing[0]}': ...}} in Python), once per channel",
                                  missing=exc.missing, detail=exc.detail) from None
    if reading.amplitude_check:
        check_amplitude(night.quality, amplitude, source=source, units=reading.units)
    return night


def prefetched(files: Sequence[Path], prepare: Callable[[Path], Night], *,
                ahead: bool) -> Iterator[tuple[Path, Callable[[], Night]]]:
    """Yield ``(path, get)`` per file in order; ``get()`` returns ``prepare(path)`` or raises its error.

    With ``ahead``, once file k is prepared the preparation of file k+1 starts in a worker
    thread, so it overlaps the caller's work on file k (the model, the reports); at most two
    recordings are in memory. The first file is prepared in the calling thread.
    """
    if not ahead or len(files) < 2:
        for path in files:
            yield path, functools.partial(prepare, path)
        return
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="passport-kit-read") as pool:
        started: dict[int, Future[Night]] = {}

        def get(i: int) -> Night:
            try:
                return started.pop(i).result() if i in started else prepare(files[i])
            finally:
                if i + 1 < len(files):
                    started[i + 1] = pool.submit(prepare, files[i + 1])

        for i, path in enumerate(files):
            yield path, functools.partial(get, i)


@dataclass(frozen=True)
class AdapterScorer:
    """An adapter bundle scoring recordings (:class:`~passport_kit.inference.scoring.Scorer`): each read as the
    bundle's preprocessing says, its windows classified by the bundle's model."""

    loaded: LoadedAdapter
    reading: ReadOptions
    run: RunOptions
    output: OutputOptions
    scorer: ScorerFiles
    memory: dict[Path, Any]   # the recordings given in memory, by name

    @property
    def source(self) -> Path:
        """Return the bundle's folder: what the predictions' summaries name as their adapter."""
        return self.loaded.facts.adapter

    def read(self, path: Path) -> RecordingWindows:
        """Return recording ``path`` read for the bundle (:func:`read_night`)."""
        return read_night(path, self.loaded, self.reading, self.memory)

    def score(self, path: Path, night: RecordingWindows, *, folder: Path, label_file: Path | None) -> PredictionResult:
        """Return the result of recording ``path`` after predicting it and writing ``folder`` (:func:`predict_recording`)."""
        return predict_recording(path, night, self.loaded, folder=folder, label_file=label_file, scorer=self.scorer,
                                 run=self.run, output=self.output, guard=self.reading.amplitude_check,
                                 in_memory=path in self.memory)


def predict_recording(path: Path, night: RecordingWindows, loaded: LoadedAdapter, *, folder: Path,
                      label_file: Path | None, scorer: ScorerFiles, run: RunOptions, output: OutputOptions,
                      guard: bool, in_memory: bool) -> PredictionResult:
    """Return the result of recording ``path`` (read as ``night``) after predicting it and writing ``folder`` whole.

    ``label_file``: the scorer's labels of it (read with ``scorer``'s label map); ``guard`` and
    ``in_memory``: as :func:`training_checks` takes them.
    """
    # Read first: a label file that does not fit the recording fails before the model runs.
    labels = scorer.read(label_file, loaded.facts.classes, n_windows=len(night.x),
                         window_seconds=loaded.config.window_seconds)
    proba, contacts = window_probabilities(loaded, night, batch_size=run.batch_size)
    checks = training_checks(path, night, proba, loaded, guard=guard, in_memory=in_memory)
    # The recording's folder is written as a whole (temp folder + rename): a full disk or Ctrl-C
    # leaves the earlier one or none, never a part (issue 28).
    return write_folder_whole(folder, functools.partial(
        write_prediction, recording=path, proba=proba, night=night, adapter=loaded.facts, contacts=contacts,
        scorer=labels, output=output, checks=checks))


def training_checks(path: Path, night: RecordingWindows, proba: np.ndarray, loaded: LoadedAdapter, *, guard: bool,
                    in_memory: bool) -> TrainingChecks:
    """Return how recording ``path`` (read as ``night``, predicted as ``proba``) compares with the adapter's training
    data, for :func:`~passport_kit.inference.night_report.write_prediction`.

    ``band_short``: why its band is too narrow for the adapter's (or None); ``distribution``: how
    far it lies from the training data, None unless ``guard`` (withhold the statistics of a
    recording unlike it); ``in_sample``: its files' hashes (unless ``in_memory``: given as an
    array or a Raw, so no training file's hash can match it) or its signal (the bundle's
    ``metrics.fingerprints``: the same night read from another file) are among the adapter's
    training data.
    """
    from passport_kit.signals.fingerprint import same_signal

    band_short = band_too_narrow(night.config.h_freq, loaded.config.h_freq)
    hashed = not in_memory and in_training_data(path, loaded.meta.training_data)
    predicted = proba.argmax(1) if stages_night(loaded.facts) else None
    distribution = distribution_verdict(loaded.meta.metrics.distribution, night,
                                        predicted=predicted) if guard else None
    in_sample = hashed or same_signal(night.x, loaded.meta.metrics.fingerprints) is not None
    if in_sample and distribution is not None:  # a training recording cannot be unlike the training data (issue 58)
        distribution = dataclasses.replace(distribution, in_sample=True)
    return TrainingChecks(band_short=band_short, distribution=distribution, in_sample=in_sample)


def window_probabilities(loaded: LoadedAdapter, night: RecordingWindows, *,
                         batch_size: int) -> tuple[np.ndarray, ChannelMasks]:
    """Return the ``(N, n_classes)`` class probabilities of ``night``'s windows and the channels masked in them."""
    # The model's inputs besides the windows first: a stacked prior, the dead channels, the contact policy's masks.
    prior = night_prior(loaded.model.head, night, loaded.montage)
    dead = night_dead_channels(loaded, night)
    masked, distrusted = loaded.policy.masks(night.quality, night.onset_s, loaded.config.window_seconds)
    imputed = loaded.model.head.imputes_dead_channels
    if is_sleep_staging(loaded.facts.classes):
        import_plotting_soon()  # while the model runs: the hypnogram's PNG needs matplotlib next
    # Nothing to mask: the model's plain path (under bf16 the mask path differs in the last digits).
    proba = predict_proba(loaded.model, night.x, loaded.channel_meta, batch_size=batch_size, device=loaded.device,
                          precision=loaded.precision, channel_mask=masked if masked is not None and masked.any() else None,
                          distrust=distrusted, prior=prior, dead=dead if imputed else None)
    return proba, ChannelMasks(loaded.policy, masked, distrusted, dead, imputed)


def night_dead_channels(loaded: LoadedAdapter, night: RecordingWindows) -> DeadChannels:
    """Return the dead (flat, NaN, near-dead) channel-windows of ``night``, judged against each channel's training
    amplitude where the bundle's distribution profile has one for this montage."""
    profile = loaded.meta.metrics.distribution or {}
    same_channels = profile.get("channels") == list(loaded.montage.ch_names)
    return dead_channel_windows(night.flags, night.quality, night.onset_s, loaded.config.window_seconds,
                                expected_uv=profile.get("amplitude_uv") if same_channels else None)



def night_prior(head: Any, night: RecordingWindows, montage: Any) -> np.ndarray | None:
    """Return the sleep prior's log-probabilities ``(N, 5)`` for a night's windows when ``head`` stacks a prior
    (:mod:`passport_kit.sleep`), else None.

    The stager reads the recording's own signal kept at its rate (``night.stager``: read with
    :func:`head_stager_rates`), as ``adapt`` gave it; a night read without it, the windows.
    """
    if not head.n_prior:
        return None
    from passport_kit.sleep import StagerChoice, get_prior, prior_log_proba

    spec = StagerChoice.from_dict(head.prior)
    return prior_log_proba(get_prior(spec.name), night.x, night.onset_s, list(montage.ch_names), spec,
                           window_seconds=night.config.window_seconds,
                           raw=night.stager_signal if night.stager else None)


def head_stager_rates(head: Any) -> tuple[float, ...]:
    """Return the rates (Hz) of the sleep stagers ``head`` stacks (none when it stacks no prior)."""
    if not head.n_prior:
        return ()
    from passport_kit.sleep import native_rates

    return native_rates(str(head.prior["name"]))


def in_training_data(path: Path, training_data: dict[str, str]) -> bool:
    """Return whether recording ``path`` is one the adapter was trained on: every file it is read from has a content
    hash among ``training_data`` (the bundle's ``{file: SHA-256}``), wherever it lies now."""
    from passport_kit.signals.cache import file_sha256
    from passport_kit.signals.readers import content_files

    trained = set(training_data.values())
    return bool(trained) and all(file_sha256(f) in trained for f in content_files(path))

