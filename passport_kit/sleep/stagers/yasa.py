"""YASA's sleep stager as a prior (built in; YASA is BSD-3-licensed and a dependency).

Vallat & Walker (2021), eLife 10:e70092: a LightGBM classifier over per-epoch and rolling
night-level features of one central EEG channel (optionally EOG and EMG), trained on
thousands of PSG nights. :class:`YasaPrior` hands it the night as an MNE Raw in volts; YASA
resamples to 100 Hz, filters 0.4–30 Hz and scores 30-s epochs from the start.

YASA loads its classifier with joblib (a pickle) from the files it ships inside its own
installed package: the same trust as importing YASA, never a file a user or a data set gives.
"""

from __future__ import annotations

import logging
import warnings
from typing import ClassVar

import numpy as np

from passport_kit.sleep.priors import STAGES, SleepPrior, floored_log

#: YASA's names of :data:`~passport_kit.sleep.priors.STAGES` in its probability table.
_YASA_COLUMNS = {"W": ("WAKE", "W"), "N1": ("N1",), "N2": ("N2",), "N3": ("N3",), "REM": ("REM", "R")}


class YasaPrior(SleepPrior):
    """YASA ``SleepStaging`` (its shipped LightGBM classifiers) as a :class:`SleepPrior`."""

    name: ClassVar[str] = "yasa"
    licence: ClassVar[str] = "BSD-3-Clause"
    origin: ClassVar[str] = "built in, BSD-3"
    auto_order: ClassVar[int | None] = 0
    min_rate: ClassVar[float] = 80.0
    #: YASA resamples every recording to 100 Hz before its features (``SleepStaging``).
    native_rate: ClassVar[float] = 100.0

    @classmethod
    def unavailable(cls) -> str | None:
        try:
            import yasa  # noqa: F401
        except ImportError:  # pragma: no cover - a dependency; only a broken install lacks it
            return "the yasa package is not installed (pip install yasa)"
        return None

    def night_log_proba(self, eeg_uv: np.ndarray, sfreq: float, *, eog_uv: np.ndarray | None = None,
                        emg_uv: np.ndarray | None = None) -> np.ndarray:
        import mne
        import yasa

        import_antropy_cached()

        channels = [("EEG", eeg_uv, "eeg")] + [(n, s, k) for n, s, k in (("EOG", eog_uv, "eog"), ("EMG", emg_uv, "emg"))
                                               if s is not None]
        data = np.vstack([np.asarray(s, dtype=np.float64) * 1e-6 for _, s, _ in channels])  # µV -> V (MNE's unit)
        raw = mne.io.RawArray(data, mne.create_info([n for n, _, _ in channels], sfreq, [k for _, _, k in channels]),
                              verbose=False)
        quiet = logging.getLogger("yasa")
        level = quiet.level
        quiet.setLevel(logging.ERROR)  # "fewer than 5 minutes" is said by our own checks, once
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # scikit-learn's version note on YASA's pickled label encoder
                staging = yasa.SleepStaging(raw, eeg_name="EEG", eog_name="EOG" if eog_uv is not None else None,
                                            emg_name="EMG" if emg_uv is not None else None)
                proba, names = _stage_probabilities(staging)
        finally:
            quiet.setLevel(level)
        columns = [next(names.index(c) for c in _YASA_COLUMNS[s] if c in names) for s in STAGES]
        return floored_log(proba[:, columns])


def _stage_probabilities(staging: object) -> tuple[np.ndarray, list[str]]:
    """Return ``(proba (n_epochs, K), stage names)``: what ``staging.predict().proba`` holds, from YASA's classifier
    loaded once per process.

    Why not ``predict()``: YASA 0.8 loads its classifier from its pickle at every call (0.15 s of CPU, half of
    a half-hour night's staging, and ``adapt`` stages every night once per channel option) and then runs it
    twice, for the stages and for their probabilities. The same classifier's ``predict_proba`` on the same
    features (``get_features``, in the classifier's feature order) gives the very numbers ``predict`` puts
    in its table (tested), under the classifier's own stage names (``W``/``R`` where the table says
    ``WAKE``/``REM``). A YASA without the private loader this relies on is asked through ``predict()``.
    """
    load = getattr(staging, "_load_model", None)
    if load is None:  # pragma: no cover - another YASA: its public path
        table = staging.predict().proba  # type: ignore[attr-defined]
        return table.to_numpy(), [str(c) for c in table.columns]
    features = staging.get_features()  # type: ignore[attr-defined]  # first: loading checks the feature names
    clf = _classifier(tuple(staging.ch_types), staging.metadata is not None, load)  # type: ignore[attr-defined]
    staging._validate_predict(clf)  # type: ignore[attr-defined]  # as predict() does on every load
    return np.asarray(clf.predict_proba(features[clf.feature_name_])), [str(c) for c in clf.classes_]


_CLASSIFIERS: dict[tuple[tuple[str, ...], bool], object] = {}


def _classifier(channel_types: tuple[str, ...], demographics: bool, load: object) -> object:
    """Return YASA's classifier for these channel types (and demographics), loaded once per process by ``load``."""
    key = (channel_types, demographics)
    if key not in _CLASSIFIERS:
        _CLASSIFIERS[key] = load("auto")  # type: ignore[operator]
    return _CLASSIFIERS[key]


def import_antropy_cached() -> None:
    """Import antropy (YASA's features) with numba's on-disk cache for its compiled functions.

    Why: antropy compiles five numba functions when it is imported (explicit signatures: compiled
    eagerly) and does not ask numba to cache them, so every process that staged a night with YASA
    spent ~9 s of CPU compiling before its first epoch (measured: importing antropy 10.6 s of CPU, 2.4 s
    with the cache; YASA itself then takes ~0.6 s for a 2-h night). ``cache=True`` is added to those
    decorators while antropy is imported; numba keeps the cache beside antropy's sources (its
    ``__pycache__``). Where numba cannot cache there, antropy is imported as it is.
    """
    import sys

    if "antropy" in sys.modules:
        return
    try:
        import numba
    except ImportError:  # pragma: no cover - antropy needs numba
        return
    original = numba.jit

    def jit(*args: object, **kwargs: object) -> object:
        kwargs.setdefault("cache", True)
        return original(*args, **kwargs)

    numba.jit = jit
    try:
        import antropy  # noqa: F401
    except Exception:  # noqa: BLE001 - no cache locator: drop the half-imported module, import it plainly
        for name in [m for m in sys.modules if m == "antropy" or m.startswith("antropy.")]:
            del sys.modules[name]
        numba.jit = original
        import antropy  # noqa: F401
    finally:
        numba.jit = original


__all__ = ["YasaPrior", "import_antropy_cached"]
