"""GSSC's sleep stager as a prior: a plugin, used only where the user installed ``gssc`` (AGPL-3.0).

Hanna & Flöel (2023), *An accessible and versatile deep learning-based sleep stage classifier*,
Front. Neuroinform. 17:1086634 (the Greifswald Sleep Stage Classifier, pip ``gssc`` 0.0.9): a
residual CNN turns each 30-s epoch of one EEG (optionally one EOG) channel into a
representation, and a 5-layer bidirectional GRU reads those over the whole night. Its trained
networks ship inside its wheel (``gssc/nets/sig_net_v1.pt``, ``gru_net_v1.pt``).

GSSC is AGPL-3.0: passport-kit never depends on it, bundles, vendors or copies its code or
weights. :class:`GsscPrior` imports the user's own installation and calls its network modules.

What it does, in GSSC's own order (its ``EEGInfer.mne_infer`` and ``utils``, read as facts):
filter the night 0.3–30 Hz where the recording is wider (MNE's default FIR; the low-pass only
when the Nyquist frequency is above 30 Hz), cut it into 30-s epochs from the start, resample to
2560 samples per epoch (85.33 Hz), z-score each channel over the whole night, run the signal
network on every epoch (``rep_output="rep_only"``) and the GRU over the sequence of
representations from a zero hidden state. With an EOG channel, GSSC scores three channel
combinations (EEG, EOG, both) and keeps, per epoch, the one whose top stage is most probable
(its "loudest vote"); the same is done here. GSSC reads no EMG.

Where it differs from ``mne_infer``, and why:

- log-probabilities, not its arg-max (the read-out stacks them), floored as YASA's are
  (:func:`~passport_kit.sleep.priors.floored_log`);
- every whole 30-s epoch is scored: ``mne_infer`` drops the last one when a night is an exact
  multiple of 30 s (it crops to ``raw.times[-1]``, one sample short);
- the night is resampled once (MNE's FFT resampling, as GSSC's) rather than epoch by epoch, and
  never filtered in place; since issue 55 the package hands it the recording already at 85.33 Hz
  (:attr:`GsscPrior.native_rate`, scipy's polyphase resampling, as every stager's input), so it is
  filtered at that rate and not resampled again (on DREAMS excerpt 3, issue 43 found the arg-max
  of FFT resampling closer to ``mne_infer``'s than polyphase's: 58 against 56 of 59 epochs; not
  re-measured, GSSC is not installed here);
- ``EEGInfer()`` loads its networks with a bare ``torch.load``, which fails under torch ≥ 2.6
  (``weights_only`` became the default) and would otherwise unpickle anything. The networks are
  whole pickled modules, so they are loaded here with ``weights_only=True`` and an explicit
  allow-list of exactly the classes they are made of (GSSC's network classes, the torch layers
  inside them, and the NumPy integer scalars some layers keep as sizes): the file can build those
  objects and nothing else. Never ``weights_only=False``.
"""

from __future__ import annotations

import functools
import warnings
from typing import Any, ClassVar

import numpy as np

from passport_kit.sleep.priors import STAGES, SleepPrior, floored_log

#: Samples per 30-s epoch GSSC's networks read (85.33 Hz).
_EPOCH_SAMPLES = 2560
_EPOCH_SECONDS = 30.0
#: GSSC's training band (Hz).
_BAND = (0.3, 30.0)
#: GRU hidden state: 5 layers x 2 directions, batch 1, 256 units (GSSC's ``torch.zeros(10, 1, 256)``).
_HIDDEN_SHAPE = (10, 1, 256)
#: Epochs per pass of the signal network (bounds memory on a whole night; the result does not depend on it).
_CHUNK = 128
_WEIGHT_FILES = ("sig_net_v1.pt", "gru_net_v1.pt")
_NOT_INSTALLED = ("GSSC is AGPL-3.0 and never a dependency of passport-kit: install it yourself "
                  "(pip install gssc==0.0.9) to use it")


class GsscPrior(SleepPrior):
    """GSSC (CNN + bidirectional GRU over the night) as a :class:`SleepPrior`; needs the user's own ``gssc``."""

    name: ClassVar[str] = "gssc"
    licence: ClassVar[str] = "AGPL-3.0"
    origin: ClassVar[str] = "if you installed it; AGPL-3.0, never a dependency"
    auto_order: ClassVar[int | None] = 1
    #: GSSC resamples to 85.33 Hz itself; slower recordings reach it upsampled to that rate.
    min_rate: ClassVar[float] = _EPOCH_SAMPLES / _EPOCH_SECONDS
    #: The rate its networks read (2560 samples per 30-s epoch); a recording reaches it resampled there, and
    #: :func:`_epochs` then filters it (0.3-30 Hz) and finds nothing left to resample.
    native_rate: ClassVar[float] = _EPOCH_SAMPLES / _EPOCH_SECONDS

    @classmethod
    def unavailable(cls) -> str | None:
        try:
            import gssc.networks  # noqa: F401
        except ImportError:
            return _NOT_INSTALLED
        from importlib.resources import files

        missing = [n for n in _WEIGHT_FILES if not files("gssc.nets").joinpath(n).is_file()]
        if missing:
            return f"the installed gssc lacks its trained networks ({', '.join(missing)}): reinstall gssc==0.0.9"
        return None

    def night_log_proba(self, eeg_uv: np.ndarray, sfreq: float, *, eog_uv: np.ndarray | None = None,
                        emg_uv: np.ndarray | None = None) -> np.ndarray:
        """Return ``(floor(T / 30 s), 5)`` log-probabilities of :data:`STAGES` (EMG is ignored: GSSC reads none)."""
        import torch

        eeg = np.asarray(eeg_uv, dtype=np.float64).reshape(-1)
        n_epochs = int(np.floor(len(eeg) / (sfreq * _EPOCH_SECONDS) + 1e-9))  # 1e-9: an exact night at an odd rate
        if n_epochs == 0:
            return np.zeros((0, len(STAGES)))
        signals = {"eeg": _epochs(eeg, sfreq, n_epochs)}
        if eog_uv is not None:
            signals["eog"] = _epochs(np.asarray(eog_uv, dtype=np.float64).reshape(-1), sfreq, n_epochs)
        combos = [("eeg",)] if eog_uv is None else [("eeg",), ("eog",), ("eeg", "eog")]
        sig_net, gru = _networks()
        with torch.inference_mode():
            runs = np.stack([_run(sig_net, gru, {k: signals[k] for k in combo}) for combo in combos])
        # GSSC's loudest vote: per epoch, the combination whose most probable stage is most probable.
        best = np.argmax(runs.max(axis=2), axis=0)
        logp = runs[best, np.arange(n_epochs)]
        # Floored as every prior's are, so that a stacked block's scale does not depend on the stager.
        return floored_log(np.exp(logp))


def _epochs(signal: np.ndarray, sfreq: float, n_epochs: int) -> np.ndarray:
    """Return ``(n_epochs, 2560)`` of ``signal`` (any unit): band-passed, at 85.33 Hz, z-scored over the night."""
    import mne

    low = _BAND[0]
    high = _BAND[1] if sfreq / 2.0 > _BAND[1] else None  # GSSC low-passes only a recording wider than 30 Hz
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # MNE's "filter_length longer than the signal" on a short night
        filtered = mne.filter.filter_data(signal[: int(round(n_epochs * _EPOCH_SECONDS * sfreq))], sfreq, low, high,
                                          verbose=False)
    # MNE's FFT resampling, as GSSC's own Epochs.resample: on DREAMS excerpt 3 (50 Hz) the arg-max then agrees with
    # mne_infer's on 58 of 59 epochs, with scipy's polyphase resampling on 56
    rate = _EPOCH_SAMPLES / _EPOCH_SECONDS
    # a recording read for GSSC arrives at its rate already (GsscPrior.native_rate): nothing to resample
    resampled = filtered if sfreq == rate else mne.filter.resample(filtered, up=rate, down=sfreq, verbose=False)
    need = n_epochs * _EPOCH_SAMPLES
    if len(resampled) < need:  # rounding of the resampled length can leave it a sample short
        resampled = np.pad(resampled, (0, need - len(resampled)), mode="edge")
    x = resampled[:need]
    std = x.std()
    x = (x - x.mean()) / (std if std > 0 else 1.0)
    return x.reshape(n_epochs, _EPOCH_SAMPLES)


def _run(sig_net: Any, gru: Any, signals: dict[str, np.ndarray]) -> np.ndarray:
    """Return GSSC's ``(n_epochs, 5)`` log-softmax for one combination of channels (each ``(n_epochs, 2560)``)."""
    import torch

    n = len(next(iter(signals.values())))
    reps = []
    for start in range(0, n, _CHUNK):
        batch = {k: torch.as_tensor(v[start:start + _CHUNK, None, :], dtype=torch.float32) for k, v in signals.items()}
        reps.append(sig_net(batch, rep_output="rep_only").swapaxes(-1, 1))  # (n, 1, 512): the night is the sequence
    y, _ = gru(torch.cat(reps), torch.zeros(_HIDDEN_SHAPE))
    return y[:, 0].double().numpy()


@functools.lru_cache(maxsize=1)
def _networks() -> tuple[Any, Any]:
    """Return GSSC's signal network and GRU from its installed wheel, in ``eval()`` mode (loaded once)."""
    import gssc.networks as nets
    import torch
    from importlib.resources import files
    from torch import nn

    allowed = [nets.ResSleep, nets.ResSignal, nets.ResBlock, nets.ResBottleneck, nets.ResMixer, nets.ResDecision,
               nets.SleepGRU, nn.Sequential, nn.ModuleDict, nn.Conv1d, nn.GroupNorm, nn.LeakyReLU, nn.Dropout,
               nn.Identity, nn.AvgPool1d, nn.LogSoftmax, nn.GRU, nn.Linear, *_numpy_int_scalars()]
    loaded = []
    with torch.serialization.safe_globals(allowed):
        for name in _WEIGHT_FILES:
            with files("gssc.nets").joinpath(name).open("rb") as f:
                loaded.append(torch.load(f, map_location="cpu", weights_only=True).eval())
    return loaded[0], loaded[1]


def _numpy_int_scalars() -> list[Any]:
    """Return what unpickling a NumPy int64 needs (GSSC's layer sizes are partly ``np.int64``, pickled by NumPy 1)."""
    try:
        from numpy._core.multiarray import scalar  # NumPy 2
    except ImportError:  # pragma: no cover - NumPy 1
        from numpy.core.multiarray import scalar
    return [(scalar, "numpy.core.multiarray.scalar"), np.dtype, type(np.dtype(np.int64))]


__all__ = ["GsscPrior"]
