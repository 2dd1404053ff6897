"""One recording: the contract's preprocessing fitted to it, and its windows, quality and start from one read.

Two rules that adapt, evaluate, check, predict, pretrain and ``data inspect`` must apply alike,
written once so that training and prediction cannot drift apart:

- :func:`fit_preprocessing`: an input contract (a base checkpoint's ``InputContract``, or a
  bundle's :class:`~passport_kit.signals.preprocess.PreprocessConfig`) + this data (its window
  length, the options given, its sampling rate) → the preprocessing settings. The contract
  fixes the signal (rate, band, units); the data fixes the window; a band-pass top given
  (option or ``dataset.yaml``) replaces the contract's, and without one a top that the
  recording's rate cannot carry is lowered below its Nyquist frequency
  (:func:`~passport_kit.signals.preprocess.fit_band_to_rate`), with a
  :class:`~passport_kit.errors.PassportWarning`.
- :func:`read_windows`: an opened recording → :class:`RecordingWindows` (windows ``(N, C, P,
  200)``, flags, the raw recording's quality, start time, annotations), the header's checks
  first, then the mapped samples preprocessed and, side by side in a second thread, scored;
  and, for the sleep stagers' rates asked for, the same mapped samples as a stager reads them
  (:mod:`passport_kit.signals.stager_input`: µV at its own rate, none of the windows' filters).

Example::

    config = fit_preprocessing(info.preprocessing, rate=lambda: (256.0, "n1.edf"), window_seconds=30)
    night = read_windows(read_recording("n1.edf"), montage, config, quality=True)
    night.x.shape  # (N, C, 30, 200)
"""

from __future__ import annotations
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from passport_kit.errors import warn
from passport_kit.signals.channels import mapped_data
from passport_kit.signals.preprocess import PreprocessConfig, Preprocessing, check_sampling_rate, fit_band_to_rate
from passport_kit.signals.quality import ChannelQuality, channel_quality
from passport_kit.signals.stager_input import StagerSignal, stager_signal
from passport_kit.signals.windows import check_length, instance_normalise, window_flags

#: Mains power frequencies (Hz): a notch elsewhere removes EEG and leaves the hum.
MAINS_HZ = (50.0, 60.0)

#: ``notch_freq=KEEP``: the contract's notch (PreprocessConfig's default where the contract sets none).
KEEP = "keep"


def fit_preprocessing(contract: Any, *, rate: Callable[[], tuple[float, str | Sequence[str]]],
                      window_seconds: float | None = None, instance_norm: bool | None = None,
                      notch_freq: float | None | str = KEEP, h_freq: float | None = None,
                      advice: str = "") -> PreprocessConfig:
    """Return the preprocessing of this data: ``contract``'s signal settings, this data's window, band and rate.

    ``contract``: a base checkpoint's ``InputContract`` or a bundle's ``PreprocessConfig`` (its
    settings that PreprocessConfig shares; the rest, such as units or the patch length, only
    document the model; a checkpoint's ``notch_freq`` is its pretraining site's, not kept). ``rate()`` returns
    ``(sfreq, name)`` of the most slowly sampled recording, in Hz (or ``(sfreq, names)`` of every recording at that
    rate, all named in the warning); it is called only when no ``h_freq`` is given, so that no header is read
    for nothing. ``window_seconds`` (the dataset's), ``instance_norm`` and ``notch_freq`` (the
    mains frequency of the recording site in Hz, ``None``: no notch, :data:`KEEP`: the
    contract's) replace the contract's when given; a notch off :data:`MAINS_HZ` is warned
    about. ``h_freq`` (Hz) replaces the band-pass top; ``advice`` is appended to the warning
    about a lowered top.
    """
    fields = PreprocessConfig.model_fields
    items = contract.model_dump() if hasattr(contract, "model_dump") else dict(contract)
    settings = {k: v for k, v in items.items() if k in fields}
    if not isinstance(contract, PreprocessConfig):
        # A base checkpoint's contract: its notch_freq says where its pretraining data was
        # recorded; this data is notched at its own site's mains (notch_freq, else the default).
        settings.pop("notch_freq", None)
    if window_seconds is not None:
        settings["window_seconds"] = window_seconds
    if instance_norm is not None:
        settings["instance_norm"] = instance_norm
    if notch_freq != KEEP:
        settings["notch_freq"] = notch_freq
        if notch_freq is not None and notch_freq not in MAINS_HZ:
            warn(f"notch at {notch_freq:g} Hz: mains power is {' or '.join(f'{f:g}' for f in MAINS_HZ)} Hz "
                 f"everywhere, so this notch removes EEG at {notch_freq:g} Hz and leaves the hum; use "
                 "--notch 50 (Europe, Asia, Africa, Australia) or 60 (the Americas), or 'none'")
    if h_freq is not None:
        return PreprocessConfig.from_dict(settings | {"h_freq": h_freq, "h_freq_note": None})
    config = PreprocessConfig.from_dict(settings)
    sfreq, name = rate()
    fitted = fit_band_to_rate(config, sfreq, source=recordings_named(name))
    if fitted.h_freq != config.h_freq:
        warn(f"{fitted.h_freq_note}{advice}")
    return fitted


#: Recordings a message names one by one; the rest it counts.
NAMED_RECORDINGS = 8


def recordings_named(names: str | Sequence[str]) -> str:
    """Return how a message names one recording or several: ``recording 'a.edf'``, ``each of 3 recordings ('a.edf',
    'b.edf', 'c.edf')`` (every one up to :data:`NAMED_RECORDINGS`; issue 58: eight nights at 50 Hz, one named)."""
    if isinstance(names, str) or len(names) == 1:
        return f"recording '{names if isinstance(names, str) else names[0]}'"
    shown = ", ".join(f"'{n}'" for n in names[:NAMED_RECORDINGS])
    more = f" and {len(names) - NAMED_RECORDINGS} more" if len(names) > NAMED_RECORDINGS else ""
    return f"each of {len(names)} recordings ({shown}{more})"


def with_high_pass(config: PreprocessConfig, l_freq: float | None, spec: Any = None) -> PreprocessConfig:
    """Return ``config`` with its band-pass bottom at ``l_freq`` Hz, else at ``spec.l_freq`` (dataset.yaml's), else as is.

    A higher bottom (e.g. 1 Hz) removes slow drifts that differ between recording setups: a
    high-pass in the recordings' headers that differs between classes lets a model learn the
    setup instead of the task (``check`` says so). ConfigError when it does not lie below the top.
    """
    if l_freq is None and spec is not None:
        l_freq = getattr(spec, "l_freq", None)
    if l_freq is None or l_freq == config.l_freq:
        return config
    if not 0 < l_freq < config.h_freq:
        from passport_kit.errors import ConfigError

        raise ConfigError(f"the band-pass bottom l_freq (--l-freq, or 'l_freq:' in dataset.yaml) is {l_freq:g} Hz; it "
                          f"must lie between 0 and the band's top, {config.h_freq:g} Hz - give e.g. 0.5 or 1")
    return PreprocessConfig.from_dict(config.model_dump() | {"l_freq": float(l_freq)})


@dataclass(frozen=True)
class RecordingWindows:
    """One recording read once: its windows and what the same read says about it."""

    x: np.ndarray                       # (N, C, P, 200) float32, 100 µV units
    flags: np.ndarray                   # (N, C) uint8 bit flags (signals.windows)
    onset_s: np.ndarray                 # (N,) float64, each window's onset in seconds from the first sample
    quality: ChannelQuality | None      # the raw recording's channel quality, when asked for
    config: PreprocessConfig            # the preprocessing applied
    start: datetime | None = None       # the recording's start (meas_date), None when unknown
    annotations: list[tuple[float, float, str]] = field(default_factory=list)   # (onset_s, duration_s,
    # description), onsets from the first sample
    #: What a sleep stager reads of the recording, per rate asked for (``stager_rates`` of :func:`read_windows`).
    stager: dict[float, StagerSignal] = field(default_factory=dict)

    def stager_signal(self, rate: float) -> StagerSignal:
        """Return what a stager reads of this recording at ``rate`` Hz (read with ``stager_rates`` holding it)."""
        return self.stager[rate]


def read_windows(raw: Any, montage: Any, config: PreprocessConfig, *, renames: dict[str, str] | None = None,
                 quality: bool = False, source: str = "recording", name: str | None = None,
                 stager_rates: tuple[float, ...] = ()) -> RecordingWindows:
    """Return the windows of the opened recording ``raw`` (an MNE Raw in volts), and its quality when asked.

    The header's checks first (rate, length), so a recording too slow or too short is refused
    before any work on its samples; then the montage channels' samples
    (:func:`~passport_kit.signals.channels.mapped_data`) are preprocessed and windowed
    (:func:`windows_from_data`) while, with ``quality``, a second
    thread scores the same samples (:func:`~passport_kit.signals.quality.channel_quality`;
    numpy and FFTs release the GIL, and neither writes the samples). ``config``: the
    preprocessing already fitted to this recording (:func:`fit_preprocessing`); ``source``
    names the recording in errors, ``name`` in the quality report. ``stager_rates``: the rates
    (Hz) of the sleep stagers that will read this recording; for each, the same mapped samples
    are kept as a stager reads them (:func:`~passport_kit.signals.stager_input.stager_signal`).
    """
    sfreq = float(raw.info["sfreq"])
    check_sampling_rate(sfreq, config, source=source)
    check_length(raw.n_times, sfreq, config, source=source)
    data = mapped_data(raw, montage, renames, source=source)
    scores = None
    if quality:
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="passport-kit-quality") as pool:
            scoring = pool.submit(_score, data, sfreq, montage, config, name or source)
            x, flags = windows_from_data(data, sfreq, config, source=source)
            scores = scoring.result()
    else:
        x, flags = windows_from_data(data, sfreq, config, source=source)
    stager = {rate: stager_signal(data, sfreq, list(montage.ch_names), list(montage.kinds), rate)
              for rate in stager_rates}
    return RecordingWindows(x=x, flags=flags, onset_s=np.arange(len(x), dtype=np.float64) * config.window_seconds,
                            quality=scores, config=config, start=recording_start(raw), annotations=annotations(raw),
                            stager=stager)


def windows_from_data(data: np.ndarray, sfreq: float, config: PreprocessConfig, *,
                      source: str = "recording") -> tuple[np.ndarray, np.ndarray]:
    """Return ``(x (N, C, P, 200) float32, flags (N, C) uint8)`` of mapped raw samples ``data``.

    ``data`` is ``(C, T)`` in volts at ``sfreq`` Hz, channels in montage order
    (:func:`~passport_kit.signals.channels.mapped_data`); preprocessing, windows, flags and
    instance normalisation follow ``config``. The one path from samples to windows of
    :func:`read_windows`, and so of ``load_dataset``, ``load_recording`` and ``predict``.
    """
    preprocessing = Preprocessing(data, sfreq, config, source=source)
    # The windows written straight from the filter (a night's (C, T) signal is never made).
    n = check_length(preprocessing.n_samples, config.sfreq, config)
    x = preprocessing.windows(n, config.window_samples).reshape(n, len(data), config.n_patches,
                                                                config.samples_per_patch)
    # Flags look at the raw samples and at µV amplitudes, so before instance normalisation.
    flags = window_flags(data, sfreq, x, config)
    if config.instance_norm:
        x = instance_normalise(x)
    return x, flags


def read_quality(raw: Any, montage: Any, config: PreprocessConfig, *, renames: dict[str, str] | None = None,
                 source: str = "recording", name: str | None = None) -> ChannelQuality:
    """Return the channel quality of the opened recording ``raw``, scored on ``config``'s windows and mains."""
    data = mapped_data(raw, montage, renames, source=source)
    return _score(data, float(raw.info["sfreq"]), montage, config, name or source)


def _score(data: np.ndarray, sfreq: float, montage: Any, config: PreprocessConfig, name: str) -> ChannelQuality:
    """Return the quality of mapped raw samples ``data`` ``(C, T)`` volts, windows and mains as ``config``'s."""
    return channel_quality(data, sfreq, montage, window_seconds=config.window_seconds, notch_freq=config.notch_freq,
                           source=name)


def recording_start(raw: Any) -> datetime | None:
    """Return the start of the opened recording ``raw`` (``meas_date`` as MNE reads it), or None when unknown.

    EDF stores local time without a zone; MNE labels it UTC. The value is carried through
    unchanged, so annotation files line up with the recording in any viewer.
    """
    meas_date = raw.info.get("meas_date")
    return meas_date if isinstance(meas_date, datetime) else None


def annotations(raw: Any) -> list[tuple[float, float, str]]:
    """Return ``(onset_s, duration_s, description)`` of raw's annotations, onsets from the first sample."""
    ann = raw.annotations
    offset = raw.first_time if ann.orig_time is not None else 0.0
    return [(float(o - offset), float(d), str(s)) for o, d, s in zip(ann.onset, ann.duration, ann.description)]
